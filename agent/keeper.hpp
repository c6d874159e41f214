#pragma once

// A task's keeper: the process the supervisor starts for every task. It sets
// the task's session, files and directory up, starts the task (vfork +
// execve) and waits for it, then ends the way the task ended (same exit
// code, same signal), so the supervisor sees the task's own status. With
// Args::stdout_path (stderr_path) it also copies the task's output from a
// pipe into its file, made at the first byte (LaunchSpec::lazy_output).
//
// Why a process between the agent and the task: so that a task can outlive
// its agent. When the agent stops on purpose (drain, `local-cluster.sh
// stop`) it tells each keeper to detach (one byte on the keeper's control
// pipe); a detached keeper keeps waiting for its task and, when the task
// ends, records the wait status (Args::exit_path: an attribute of the job's
// directory, or a file) for the next agent, which adopts the keeper by pid. When the agent dies without detaching
// (kill -9, a crash), the control pipe reaches end of file and the keeper
// kills its task's whole process group at once: a task never outlives an
// agent that did not mean it to (it would run a second time elsewhere).
//
// The keeper blocks every signal (the supervisor thread's mask), so the
// SIGTERM that stops a task's process group stops only the task; SIGKILL
// ends both, and the task also has PR_SET_PDEATHSIG tied to its keeper.
// Between fork and exit it uses only async-signal-safe calls.
//
// The zygote. Exec'ing claimsched-keeper per task cost about as much CPU as
// exec'ing the task itself (glibc's start-up reads the CPU's cache sizes
// through cpuid, which traps to the hypervisor on a VM; page faults of a
// fresh image). So the supervisor starts the program once, as a zygote
// (`claimsched-keeper --zygote`, keeper_main.cpp), and each keeper is a
// fork of it - no exec - made a child of the agent itself (CLONE_PARENT):
// the agent reaps it, watches it by pidfd, detaches and adopts it exactly
// as an exec'd keeper, which it is in every other respect (same code, same
// descriptors 0-4, same argv). keeper_probe (bench/micro) measures the
// three ways. A request on the zygote's socket (SOCK_SEQPACKET, descriptor
// 0) is one message: uint32 argc, uint32 envc, then argc + envc strings
// each ending in NUL (the keeper's argv as keeper_main.cpp reads it, then
// its environment), with kZygoteFds descriptors (SCM_RIGHTS) that become
// the keeper's 0-4. The answer is an int32: the keeper's pid, or minus an
// errno.

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace claimsched::agent::keeper {

/// What failed when the start failed (sent on the report pipe with errno).
enum class Stage : int32_t {
  setsid,
  parent_gone,
  dup_stdin,
  dup_stdout,
  dup_stderr,
  chdir,
  fork,
  pdeathsig,
  exec,
  /// Moving the task into its cgroup (agent/cgroup.hpp).
  cgroup,
  /// Making its working directory (Args::make_workdir).
  mkdir_workdir,
};

struct Report {
  Stage stage;
  int32_t error;
};

/// Everything the keeper needs, prepared before the fork.
struct Args {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* workdir;  // nullptr: stay
  int stdin_fd, stdout_fd, stderr_fd;
  /// Written a Report on failure; closed when the task has exec'd.
  int report_fd;
  /// Read end of the control pipe (kDetach, or end of file).
  int control_fd;
  pid_t parent;
  int max_fd;
  /// Where the keeper records the task's wait status when it ends (synced
  /// when detached): the attribute `user.claimsched.<file name>` of the
  /// file's directory where its file system takes extended attributes (no
  /// new inode per task), else this file (tmp first); nullptr: nowhere.
  /// read_exit_file reads either. An older record of the run is removed
  /// before the task starts.
  const char* exit_path;
  const char* exit_tmp_path;
  /// The cgroup.procs file of the task's own cgroup, which the task joins
  /// before its exec (so that no instruction of it runs unlimited);
  /// nullptr: none (agent/memory_limit.hpp limits it from outside).
  const char* cgroup_procs = nullptr;
  /// Set: the task's standard output (error) is a pipe the keeper copies
  /// into this file, which it creates (O_APPEND, 0666 & ~umask) only when the
  /// first byte comes: a task that prints nothing leaves no file. The same
  /// path for both: one pipe, so their lines interleave as written. Unset:
  /// the task gets stdout_fd (stderr_fd) itself.
  const char* stdout_path = nullptr;
  const char* stderr_path = nullptr;
  /// The keeper makes `workdir` (one level, 0777 & ~umask) if it does not
  /// exist, before it moves there (LaunchSpec::make_workdir).
  bool make_workdir = false;
};

/// The zygote's mode argument, the descriptors a request carries and the
/// largest request it reads (a larger one is started by an exec instead).
inline constexpr char kZygoteArg[] = "--zygote";
inline constexpr int kZygoteFds = 5;
inline constexpr size_t kZygoteMaxRequest = 128 * 1024;

/// Room for a request's descriptors (SCM_RIGHTS), and a message of `iov`
/// with that room, for the agent's sendmsg and the zygote's recvmsg.
using ZygoteControl = char[CMSG_SPACE(sizeof(int) * kZygoteFds)];
inline msghdr zygote_message(iovec& iov, ZygoteControl& control) {
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  return msg;
}

/// The byte that tells a keeper to outlive the agent.
inline constexpr char kDetach = 'D';

/// Runs the keeper (in the forked child); never returns.
[[noreturn]] void run(const Args& args);

/// The wait status a keeper recorded for `path` (Args::exit_path: the
/// attribute of its directory, or the file), if it did.
std::optional<int> read_exit_file(const std::string& path);

}  // namespace claimsched::agent::keeper
