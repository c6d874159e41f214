#include "agent/keeper.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>

namespace claimsched::agent::keeper {

namespace {

// Fixed descriptors in the keeper (both close-on-exec: the task gets 0-2 only).
constexpr int kReportFd = 3;
constexpr int kControlFd = 4;
/// How often a keeper without a pidfd looks at its task.
constexpr int kPollMs = 50;
/// The exit record's attribute name is this and the exit file's name.
constexpr char kRecordPrefix[] = "user.claimsched.";

[[noreturn]] void fail(int report_fd, Stage stage) {
  Report report{stage, errno};
  // Nothing to do if this fails: the agent then sees a keeper that exited
  // 127 without a report, which it reports as a failed start too.
  [[maybe_unused]] ssize_t n = ::write(report_fd, &report, sizeof report);
  ::_exit(127);
}

/// Moves the report and control pipes to 3 and 4 and closes everything else
/// above 2: the keeper holds no other task's control pipe (its end of file
/// must mean the agent is gone) and no descriptor of the agent's libraries.
void settle_descriptors(const Args& a) {
  int report = ::fcntl(a.report_fd, F_DUPFD_CLOEXEC, 64);
  int control = ::fcntl(a.control_fd, F_DUPFD_CLOEXEC, 64);
  if (report < 0 || control < 0) fail(a.report_fd, Stage::dup_stdin);
  if (::dup3(report, kReportFd, O_CLOEXEC) < 0) fail(report, Stage::dup_stdin);
  if (::dup3(control, kControlFd, O_CLOEXEC) < 0) fail(kReportFd, Stage::dup_stdin);
  if (::close_range(kControlFd + 1, ~0U, 0) != 0)
    for (int fd = kControlFd + 1; fd < a.max_fd; ++fd) ::close(fd);
}

/// The task: runs in the vfork child, so only execve or _exit end it.
[[noreturn]] void run_task(const Args& a, pid_t keeper) {
  if (a.cgroup_procs != nullptr) {
    // "0": the writer itself. The keeper stays in the agent's cgroup.
    int fd = ::open(a.cgroup_procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) fail(kReportFd, Stage::cgroup);
    ::close(fd);
  }
  // Killed with its keeper (and so with an agent that died undetached).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(kReportFd, Stage::pdeathsig);
  if (::getppid() != keeper) {
    errno = ESRCH;
    fail(kReportFd, Stage::parent_gone);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(a.path, a.argv, a.envp);
  fail(kReportFd, Stage::exec);
}

/// The exit record's attribute: `user.claimsched.<file name>` on the exit
/// file's directory (into `name`), and that directory (into `dir`). False if
/// `path` does not fit. Async-signal-safe.
bool record_names(const char* path, char (&dir)[4096], char (&name)[256]) {
  const char* slash = std::strrchr(path, '/');
  const char* base = slash == nullptr ? path : slash + 1;
  size_t dir_len = slash == nullptr ? 0 : static_cast<size_t>(slash - path);
  size_t base_len = std::strlen(base);
  if (dir_len + 1 >= sizeof dir || sizeof kRecordPrefix - 1 + base_len + 1 > sizeof name) return false;
  if (slash == nullptr) {
    dir[0] = '.';
    dir[1] = '\0';
  } else {
    std::memcpy(dir, path, dir_len == 0 ? 1 : dir_len);  // "/x.exit": the root
    dir[dir_len == 0 ? 1 : dir_len] = '\0';
  }
  std::memcpy(name, kRecordPrefix, sizeof kRecordPrefix - 1);
  std::memcpy(name + sizeof kRecordPrefix - 1, base, base_len + 1);
  return true;
}

/// Removes an older record of this run (the same run started again).
void remove_exit_record(const Args& a) {
  if (a.exit_path == nullptr) return;
  static char dir[4096], name[256];
  if (record_names(a.exit_path, dir, name)) ::removexattr(dir, name);
  ::unlink(a.exit_path);
}

/// Records `status` in decimal: as an attribute of the exit file's directory
/// where the file system takes one (no new inode: on an ext4 without a
/// journal a new file cost about a millisecond of CPU a task), else in the
/// exit file (tmp, then rename: a reader sees all of it or nothing); with
/// `durable`, synced first.
void write_exit_file(const Args& a, int status, bool durable) {
  if (a.exit_path == nullptr || a.exit_tmp_path == nullptr) return;
  char buf[16];
  int n = 0;
  unsigned v = static_cast<unsigned>(status);
  char digits[16];
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < 15);
  for (int i = 0; i < n; ++i) buf[i] = digits[n - 1 - i];
  buf[n++] = '\n';
  static char dir[4096], name[256];
  if (record_names(a.exit_path, dir, name) && ::setxattr(dir, name, buf, static_cast<size_t>(n), 0) == 0) {
    if (durable) {
      int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
      }
    }
    return;
  }
  int fd = ::open(a.exit_tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t w = ::write(fd, buf, static_cast<size_t>(n));
  if (durable) ::fsync(fd);
  ::close(fd);
  ::rename(a.exit_tmp_path, a.exit_path);
}

/// Ends the keeper the way its task ended.
[[noreturn]] void end_like(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(127);
}

/// One stream the keeper copies from the task's pipe into its file, which
/// it creates at the first byte (Args::stdout_path).
struct Relay {
  int pipe = -1;  // read end, non-blocking; -1: none
  const char* path = nullptr;
  int file = -1;  // -1: not created yet
};

/// Sets `relay` up as the task's descriptor(s) `targets` (1, 2 or both): a
/// pipe whose write end the task gets. The keeper keeps its own copy of the
/// write end, so the read end never reports a hang-up while the task lives.
void open_relay(Relay& relay, const char* path, Stage stage, std::initializer_list<int> targets) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) fail(kReportFd, stage);
  // The write end blocks: a task that prints faster than the keeper copies waits.
  if (::fcntl(fds[1], F_SETFL, 0) != 0) fail(kReportFd, stage);
  for (int target : targets)
    if (::dup2(fds[1], target) < 0) fail(kReportFd, stage);
  ::close(fds[1]);
  relay.pipe = fds[0];
  relay.path = path;
}

/// Copies what the pipe holds into the file (created now if need be), at
/// most `max_rounds` pipe-fuls. If the file cannot be created or written
/// (a full disk), the rest of the stream is read and dropped, as the task's
/// own writes to such a file would have failed.
void pump(Relay& relay, int max_rounds) {
  static char buffer[1 << 16];
  for (int round = 0; relay.pipe >= 0 && round < max_rounds; ++round) {
    ssize_t got = ::read(relay.pipe, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;  // drained (EAGAIN), or no writer left
    if (relay.file == -1) {
      relay.file = ::open(relay.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
      if (relay.file < 0) relay.file = -2;  // nowhere to write: dropped
    }
    for (ssize_t done = 0; relay.file >= 0 && done < got;) {
      ssize_t n = ::write(relay.file, buffer + done, static_cast<size_t>(got - done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += n;
    }
  }
}

}  // namespace

[[noreturn]] void run(const Args& a) {
  if (::setsid() < 0) fail(a.report_fd, Stage::setsid);
  // No PDEATHSIG here: a detached keeper outlives the agent. An agent that
  // dies before the keeper starts is caught here, one that dies later by the
  // control pipe's end of file.
  if (::getppid() != a.parent) {
    errno = ESRCH;
    fail(a.report_fd, Stage::parent_gone);
  }
  // The task inherits dispositions: ignored ones survive execve, so all go
  // back to the default. The keeper itself keeps every signal blocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);  // EINVAL for glibc's own: fine
  if (::dup2(a.stdin_fd, 0) < 0) fail(a.report_fd, Stage::dup_stdin);
  if (::dup2(a.stdout_fd, 1) < 0) fail(a.report_fd, Stage::dup_stdout);
  if (::dup2(a.stderr_fd, 2) < 0) fail(a.report_fd, Stage::dup_stderr);
  // Made here rather than by the agent: an inode allocation is among the
  // dearest calls of a start (ext4 without a journal probes every inode
  // deleted lately), and the agent starts every task of its node.
  if (a.workdir != nullptr && a.make_workdir && ::mkdir(a.workdir, 0777) != 0 && errno != EEXIST)
    fail(a.report_fd, Stage::mkdir_workdir);
  if (a.workdir != nullptr && ::chdir(a.workdir) != 0) fail(a.report_fd, Stage::chdir);
  // An older run's record (the same run started again) never speaks for this one.
  remove_exit_record(a);
  settle_descriptors(a);
  Relay out, err;
  if (a.stdout_path != nullptr && a.stderr_path != nullptr && std::strcmp(a.stdout_path, a.stderr_path) == 0) {
    open_relay(out, a.stdout_path, Stage::dup_stdout, {1, 2});
  } else {
    if (a.stdout_path != nullptr) open_relay(out, a.stdout_path, Stage::dup_stdout, {1});
    if (a.stderr_path != nullptr) open_relay(err, a.stderr_path, Stage::dup_stderr, {2});
  }

  const pid_t self = ::getpid();
  pid_t task = ::vfork();
  if (task < 0) fail(kReportFd, Stage::fork);
  if (task == 0) run_task(a, self);
  // The task has exec'd (or failed and said so): the agent's start is done.
  ::close(kReportFd);

  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, task, 0));
  bool detached = false;
  bool control_open = true;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(task, &status, WNOHANG);
    if (r == task) break;
    if (r < 0 && errno != EINTR) {
      status = 127 << 8;  // cannot happen for our own child; end as "not run"
      break;
    }
    pollfd fds[4];
    nfds_t n = 0;
    if (control_open) fds[n++] = {kControlFd, POLLIN, 0};
    if (pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
    const nfds_t relays = n;
    for (Relay* r : {&out, &err})
      if (r->pipe >= 0) fds[n++] = {r->pipe, POLLIN, 0};
    ::poll(fds, n, pidfd >= 0 ? -1 : kPollMs);
    for (nfds_t i = relays; i < n; ++i)
      if (fds[i].revents != 0) pump(fds[i].fd == out.pipe ? out : err, 4);
    if (control_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char byte = 0;
      ssize_t got = ::read(kControlFd, &byte, 1);
      if (got == 1 && byte == kDetach) {
        detached = true;
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        control_open = false;
        ::close(kControlFd);
        // The agent is gone. Detached: its successor adopts the task.
        // Otherwise it died without meaning to (kill -9, a crash): the task
        // must not run on unwatched, so its whole group dies now, keeper
        // included - unless the task has just ended: then its end is
        // recorded below for the next agent, which must not run it again.
        if (!detached) {
          if (::waitpid(task, &status, WNOHANG) == task) break;
          ::kill(0, SIGKILL);
        }
      }
    }
  }
  // What the task wrote last; a pipe that stays full (a leftover of the
  // task that keeps writing) holds the keeper back a bounded while only.
  pump(out, 64);
  pump(err, 64);
  // Recorded before the keeper ends: an agent killed after the task ended
  // but before it heard so learns the end from here when it comes back,
  // instead of running a finished task again. Durable only when no agent
  // watches (a machine crash takes an attached task's agent with it anyway).
  write_exit_file(a, status, detached);
  if (detached) {
    // No agent watches this group any more: what the task left behind dies
    // with the keeper, as the agent would have killed it.
    ::kill(0, SIGKILL);
  }
  end_like(status);
}

std::optional<int> read_exit_file(const std::string& path) {
  char dir[4096], name[256];
  if (record_names(path.c_str(), dir, name)) {
    char value[32];
    ssize_t got = ::getxattr(dir, name, value, sizeof value - 1);
    if (got > 0) {
      value[got] = '\0';
      char* end = nullptr;
      long long status = std::strtoll(value, &end, 10);
      if (end != value && status >= 0 && status <= 0xffff) return static_cast<int>(status);
      return std::nullopt;
    }
  }
  std::ifstream in(path);
  long long status = 0;
  if (!(in >> status) || status < 0 || status > 0xffff) return std::nullopt;
  return static_cast<int>(status);
}

}  // namespace claimsched::agent::keeper
