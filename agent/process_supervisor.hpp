#pragma once

// Runs a task's command as a real process and reports how it ended. Plain C++
// (no CAF): the node actor owns a ProcessSupervisor, calls start/kill from its
// own thread and forwards the on_exit callbacks to itself as messages.
//
// Threads. The supervisor owns one thread. It starts every child (several
// at a time: start_async) - a fork
// of the claimsched-keeper zygote it started (a child of this process all the
// same, agent/keeper.hpp), an exec of that program without the zygote, or a
// fork of the agent without the program (so the
// children's PR_SET_PDEATHSIG, which fires when the *forking thread* exits,
// is tied to a thread that lives exactly as long as the supervisor), reaps
// them (waitpid on its own pids only, woken by a pidfd per child; it never
// calls waitpid(-1) and never touches SIGCHLD), enforces max_run_time and
// the SIGTERM -> SIGKILL escalation, and invokes on_exit. The thread blocks
// every signal, so process-directed signals (SIGTERM/SIGINT handlers of the
// agent) are never delivered to it.
//
// Environment of a child: the agent's environment (read at start()) minus
// every variable whose name starts with CLAIMSCHED_ (the agent's own settings,
// which may hold a token, and a stale task identity if the agent itself runs as
// a task), plus spec.env (later entries win). Anything else in the agent's
// environment reaches every task: keep secrets out of it.
//
// A child runs in a session and process group of its own (setsid: pgid = its
// pid, no controlling terminal, so a Ctrl-C at the agent's terminal does not
// reach tasks), with stdin from /dev/null, every inherited descriptor above 2
// closed, all signal dispositions at their defaults and an empty signal mask
// (an agent that ignores SIGPIPE does not pass that on). When the process
// ends, whatever is left of its process group (background children) is killed
// with SIGKILL before the exit is reported: a finished task holds nothing.
//
// Caveats:
// - PDEATHSIG kills the *direct* child when the agent dies without running the
//   destructor (SIGKILL, crash). Grandchildren of a killed child survive as
//   orphans; only a cgroup could catch them. The kernel also clears PDEATHSIG
//   when the child execs a set-uid/set-gid or file-capability binary.
// - A task's descendants that leave its process group (setsid, setpgid)
//   escape the group kills.
// - Orphans are reparented to pid 1 (or a subreaper), which must reap them:
//   in a container, run the agent under an init (tini, docker --init).
// - If another part of the process sets SIGCHLD to SIG_IGN or calls
//   waitpid(-1), the exit status of a child is lost; it is still reported,
//   once, as exited with exit_code -1 and a detail saying so.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/resources.hpp"
#include "core/task_end.hpp"

namespace claimsched::agent {

/// What to run. Strings must not contain NUL bytes.
struct LaunchSpec {
  /// argv[0] is the command: a path if it contains '/', else looked up in the
  /// PATH of the child's environment (default /usr/local/bin:/usr/bin:/bin).
  /// A relative path is relative to workdir.
  std::vector<std::string> argv;
  /// Added to the inherited environment (see the file comment); a name must
  /// be non-empty and contain no '='; a later duplicate wins.
  std::vector<std::pair<std::string, std::string>> env;
  /// Must be an existing directory (see make_workdir); empty means the
  /// agent's working directory.
  std::string workdir;
  /// The task's keeper makes `workdir` (one level: its parent must exist;
  /// 0777 & ~umask) if it does not exist, before the task starts; the start
  /// fails if it cannot. The start then touches nothing under it: no check
  /// of the directory or of lazy output files directly in it (they are the
  /// keeper's to make), no removal of an older exit file (the keeper's too).
  /// For a directory of the agent's own (ProcessExecutor's job directory):
  /// one file-system call fewer for the agent per start of every task.
  bool make_workdir = false;
  /// Appended to (O_APPEND), created 0666 & ~umask with missing parent
  /// directories. A relative path is relative to workdir. Empty means
  /// /dev/null. Both may name the same file.
  std::string stdout_path, stderr_path;
  /// The output files are made only when the task writes to them: the task's
  /// stdout and stderr are pipes its keeper copies into the files, created at
  /// the first byte (keeper.hpp). A task that prints nothing costs no file.
  /// Their directories are still created (and must be writable) at the
  /// start, except the working directory its keeper makes (make_workdir).
  bool lazy_output = false;
  /// Measured from the fork; when exceeded the process group is terminated
  /// (SIGTERM, SIGKILL after the grace) and the exit is How::timed_out.
  /// Zero means no limit; negative is invalid.
  core::Duration max_run_time{0};
  /// The most resident memory the task's process group may hold, in bytes
  /// (the job's `memory`); over it, the group is killed with SIGKILL and the
  /// exit is How::oom_killed (agent/memory_limit.hpp says how it is
  /// measured). Zero means no limit.
  uint64_t memory_limit_bytes = 0;
  /// The job's cpu, in millicores: the task's cpu.max where it runs in a
  /// cgroup (SupervisorOptions::cgroups); not limited otherwise. Zero: none.
  int64_t cpu_millicores = 0;
  /// Where the task's keeper records its wait status when the task ends,
  /// for an agent that did not hear of it (detached, or killed right after):
  /// an attribute of this file's directory where the file system takes one,
  /// else this file (keeper::Args::exit_path); empty: nowhere.
  std::string exit_path;
};

/// How a started process ended. `how` says why it ended; exit_code and signal
/// say what was observed, also for timed_out and killed_on_request (a task
/// that handles SIGTERM and exits 0 is timed_out with exit_code 0).
struct TaskExit {
  enum class How {
    /// Exited on its own; exit_code is its status.
    exited,
    /// Killed by a signal nobody here sent; signal is that signal.
    killed_by_signal,
    /// Exceeded LaunchSpec::max_run_time and was terminated.
    timed_out,
    /// Never ran. ProcessSupervisor::start reports this as its error, never
    /// through on_exit; start_failure() lets a caller report both the same way.
    failed_to_start,
    /// Terminated by kill() or by the supervisor's destructor; detail holds
    /// the reason.
    killed_on_request,
    /// Held more memory than LaunchSpec::memory_limit_bytes and was killed
    /// (SIGKILL to its process group).
    oom_killed,
  };
  How how = How::exited;
  /// The exit status if the process exited, else -1.
  int exit_code = -1;
  /// The terminating signal if a signal ended the process, else 0.
  int signal = 0;
  /// One line for people: "exited with status 3", "killed by signal 9
  /// (SIGKILL)", "exceeded its maximum run time of 200ms; killed by ...".
  std::string detail;
  /// The most memory the task held, in bytes: the larger of its processes'
  /// own peak resident set (wait4; spawned keepers only: a forked keeper's
  /// includes the agent's pages) and the supervisor's samples of its
  /// process group's total. 0: not measured (adopted tasks without samples).
  uint64_t peak_memory_bytes = 0;

  /// True if the process exited on its own with status 0.
  bool succeeded() const { return how == How::exited && exit_code == 0; }
  /// The exit to report for a task whose start() failed.
  static TaskExit start_failure(const core::Error& error);
  /// How the task ended, typed (core/task_end.hpp).
  core::TaskEnd end() const;
};

std::string_view to_string(TaskExit::How how);

/// Why a start failed, typed: the Error (code and one line for people) plus
/// what failed and the errno, which a task's end reason carries
/// (core::TaskEnd::spawn_failed).
struct StartError : core::Error {
  core::SpawnStage stage = core::SpawnStage::system;
  /// The errno behind it, 0 if none.
  int error_number = 0;
};

/// A running task whose keeper was told to outlive this agent
/// (ProcessSupervisor::detach_all); the next agent adopts it.
/// How a task ended, from its wait status, when nobody asked it to end
/// (exited, or killed by a signal nobody here sent).
TaskExit exit_from_status(int status);

struct DetachedTask {
  uint64_t handle = 0;
  /// The keeper's pid, and its start time in clock ticks since boot (which
  /// tells it from a later process that got the same pid).
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  std::string exit_path;
  std::string command;
  /// When its max_run_time runs out, wall clock ns since the Unix epoch; 0: never.
  int64_t deadline_unix_ns = 0;
};

struct SupervisorOptions {
  /// Between SIGTERM and SIGKILL to the process group, for kill(), timeouts
  /// and the destructor. Negative counts as zero (SIGKILL at once).
  core::Duration kill_grace = std::chrono::seconds(2);
  /// How long start() waits for the child to reach execve before it kills it
  /// and fails (a chdir into a hung network mount, say).
  core::Duration exec_timeout = std::chrono::seconds(10);
  /// The claimsched-keeper program each task's keeper runs as (spawned, so
  /// the agent is never copied: keeper_spawn.hpp). Empty: the one beside
  /// this process's executable; none there (or this one not executable):
  /// keepers are forked copies of this process, as before, which costs the
  /// agent a copy of its page tables per task.
  std::string keeper_binary;
  /// Fork keepers even where a keeper program is found.
  bool fork_keepers = false;
  /// Where the keeper program is used: start it once as a zygote and fork
  /// each task's keeper from it (a child of this process all the same)
  /// instead of exec'ing it per task, which cost about as much CPU as the
  /// task's own exec (agent/keeper.hpp, "The zygote"). If the zygote cannot
  /// start or stops answering, keepers are exec'd as without it.
  bool keeper_zygote = true;
  /// How often the resident memory of tasks with a memory limit is sampled
  /// (agent/memory_limit.hpp); zero turns the sampling, and so the limit,
  /// off. Every sample reads /proc/<pid>/stat of every process once.
  core::Duration memory_sample_interval = std::chrono::milliseconds(100);
  /// Run each task in a cgroup v2 of its own (agent/cgroup.hpp) if a
  /// delegated tree is found: `cgroup_dir`, or else this process's own
  /// cgroup. Where none is, a warning says why and the memory limit is
  /// sampled as above. Off by default: it moves this process into a leaf
  /// cgroup of its own.
  bool cgroups = false;
  std::string cgroup_dir;
  /// A task's pids.max where it runs in a cgroup (a fork bomb stops there).
  uint64_t task_pids_max = 4096;
};

class ProcessSupervisor {
 public:
  /// Called once per successful start(), on the supervisor's thread, after
  /// running() stopped counting the process. It may call start() and kill()
  /// (they run inline on that thread) but must not destroy the supervisor,
  /// and should return quickly: no other exit is reported meanwhile.
  /// Exceptions it throws are logged and dropped.
  using OnExit = std::function<void(uint64_t handle, TaskExit)>;
  /// Called on the supervisor's thread after each round of its loop that
  /// called on_exit or a start_async's done at least once, before it waits
  /// again: a caller that gathers what those told it passes it on here, once
  /// per burst instead of once per task. Same rules as on_exit.
  using OnRoundEnd = std::function<void()>;

  explicit ProcessSupervisor(OnExit on_exit, SupervisorOptions options = {});
  ProcessSupervisor(OnExit on_exit, OnRoundEnd on_round_end, SupervisorOptions options = {});
  /// Terminates every running process group (SIGTERM, SIGKILL after the
  /// grace), reports each through on_exit (killed_on_request, "supervisor
  /// shutting down") and returns when all are reaped. No start() or kill()
  /// may run concurrently with or after it.
  ~ProcessSupervisor();

  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  /// Forks and execs `spec`; returns a handle (never 0, never reused) once the
  /// child has successfully called execve. Every failure to get there is the
  /// returned error and no callback follows: invalid_argument for a malformed
  /// spec (empty argv, NUL bytes, bad env names, negative max_run_time),
  /// io_error for the rest (command not found or not executable, missing
  /// workdir, unwritable output files, fork or execve failure, with the errno
  /// text), wrong_state once the destructor has begun. On success exactly one
  /// on_exit for the handle follows. Thread-safe; blocks until the child has
  /// exec'd (typically a millisecond, at most exec_timeout).
  core::Expected<uint64_t, StartError> start(const LaunchSpec& spec);

  /// A start that does not wait for its result (start_async).
  struct AsyncStart {
    LaunchSpec spec;
    /// Asked on the supervisor's thread right before the start: false drops
    /// it, and nothing more is called for it. Empty: always wanted.
    std::function<bool()> wanted;
    /// The start's result, as start() returns it, on the supervisor's thread
    /// (exactly once, unless `wanted` said no): the handle, whose on_exit
    /// comes later, or why it did not start (no on_exit follows).
    std::function<void(core::Expected<uint64_t, StartError>)> done;
  };
  /// Queues `start` and returns at once; the supervisor's thread prepares
  /// and starts it. Starts queued meanwhile are started together: every
  /// keeper asked of its zygote first, then their execs awaited together,
  /// which costs the thread one wake-up for each instead of two per task.
  /// Each start ends as start() would have ended it. Called on the thread
  /// (from on_exit), it starts at once. Thread-safe.
  void start_async(AsyncStart start);

  /// Terminates the process group of `handle` (SIGTERM, SIGKILL after the
  /// grace); its exit is reported as killed_on_request with `reason`. Does
  /// not wait. Unknown or already finished handles and repeated kills are
  /// ignored (the first reason to terminate a process wins, also against a
  /// timeout). Thread-safe.
  void kill(uint64_t handle, std::string reason);

  /// Processes started and not yet reported. Thread-safe.
  size_t running() const;

  /// Tells every running task's keeper to outlive the agent and stops
  /// watching them: no on_exit follows for them and the destructor kills
  /// none of them. Tasks being killed are not detached. Thread-safe.
  std::vector<DetachedTask> detach_all();
  /// Watches a task an earlier agent detached: one on_exit follows, with the
  /// status its keeper recorded (at once if it already ended), or a status
  /// saying it was not recorded. kill() and max_run_time apply as for tasks
  /// started here. Thread-safe.
  uint64_t adopt(const DetachedTask& task);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The variables that tell a task who it is: CLAIMSCHED_JOB_ID,
/// CLAIMSCHED_TASK_INDEX, CLAIMSCHED_NODE (the node's name),
/// CLAIMSCHED_RESOURCES (Resources::to_string, e.g. "cpu=2,memory=4Gi"),
/// CLAIMSCHED_CPU_MILLICORES, CLAIMSCHED_MEMORY_BYTES, and CLAIMSCHED_GPU when
/// the task has GPUs. In that order.
std::vector<std::pair<std::string, std::string>> task_environment(core::JobId job,
                                                                  core::TaskIndex index,
                                                                  std::string_view node_name,
                                                                  const core::Resources& resources);

}  // namespace claimsched::agent
