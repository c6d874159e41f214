// What a keeper per task costs against one keeper that starts many tasks
// (issue 17, agent side). Three ways to run N /bin/true tasks, K in flight:
//   direct   the parent vfork+execs each task itself (the bare ceiling)
//   per-task the parent vfork+execs this program (static) as a keeper per
//            task, which setsid()s, vfork+execs the task, waits for it and
//            exits with its status (today's claimsched-keeper, minus files)
//   zygote   one long-lived keeper-maker (this program) forks a keeper per
//            task without an exec, as a child of the parent (CLONE_PARENT);
//            the keeper then runs as in per-task
//   shared   one long-lived keeper (this program again) reads start
//            requests from a pipe, vfork+execs each task in a session of its
//            own, reaps it and writes its pid and status back
// Prints one JSON line per mode: tasks per second and CPU per task (the
// parent's own, and its children's: keepers and tasks).
//
//   keeper_probe [--tasks N] [--in-flight K] [--modes direct,per-task,zygote,shared]

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace {

char kTrue[] = "/bin/true";
char* kTrueArgv[] = {kTrue, nullptr};

pid_t vfork_exec(const char* path, char* const* argv, bool new_session) {
  pid_t pid = ::vfork();
  if (pid == 0) {
    // A process group of its own; a session too unless KEEPER_PROBE_PGID is set.
    if (new_session && std::getenv("KEEPER_PROBE_PGID") != nullptr)
      ::setpgid(0, 0);
    else if (new_session)
      ::setsid();
    ::execve(path, argv, environ);
    ::_exit(127);
  }
  return pid;
}

/// The per-task keeper: start the task, wait, end like it.
int keeper_once() {
  ::setsid();
  pid_t task = vfork_exec(kTrue, kTrueArgv, false);
  int status = 0;
  while (::waitpid(task, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/// The shared keeper: one byte in (start one), {pid, status} out per end;
/// woken by a signalfd of SIGCHLD or by a request.
int keeper_shared() {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  char buffer[64];
  long running = 0;
  bool open = true;
  while (open || running > 0) {
    pollfd pfd[2] = {{sfd, POLLIN, 0}, {open ? 0 : -1, POLLIN, 0}};
    ::poll(pfd, 2, -1);
    if ((pfd[0].revents & POLLIN) != 0) {
      signalfd_siginfo info;
      while (::read(sfd, &info, sizeof info) > 0) {
      }
    }
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      --running;
      int record[2] = {pid, status};
      if (::write(1, record, sizeof record) != sizeof record) return 1;
    }
    if ((pfd[1].revents & (POLLIN | POLLHUP)) != 0) {
      ssize_t got = ::read(0, buffer, sizeof buffer);
      if (got <= 0) open = false;
      for (ssize_t i = 0; i < got; ++i, ++running) vfork_exec(kTrue, kTrueArgv, true);
    }
  }
  return 0;
}

/// The zygote: one byte in (start one keeper), the keeper's pid out. Each
/// keeper is a fork of this small process (no exec) made a child of the
/// zygote's parent (CLONE_PARENT), which waits for it as for a spawned one.
int keeper_zygote() {
  char buffer[64];
  for (;;) {
    ssize_t got = ::read(0, buffer, sizeof buffer);
    if (got <= 0) return 0;
    for (ssize_t i = 0; i < got; ++i) {
      long pid = ::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
      if (pid == 0) ::_exit(keeper_once());
      int record[2] = {static_cast<int>(pid), 0};
      if (::write(1, record, sizeof record) != sizeof record) return 1;
    }
  }
}

struct Result {
  double seconds;
  double self_us, children_us;
};

double cpu_us(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

/// Starts this program again as `mode` (a keeper mode below), reading
/// requests from in[1] on its stdin and answering on out[0] from its stdout.
pid_t start_helper(const char* self, const char* mode, int in[2], int out[2]) {
  if (::pipe(in) != 0 || ::pipe(out) != 0) std::exit(1);
  char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    ::execve(self, argv, environ);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  return pid;
}

Result run(const std::string& mode, const char* self, long tasks, long in_flight) {
  double self0 = cpu_us(RUSAGE_SELF), children0 = cpu_us(RUSAGE_CHILDREN);
  auto start = std::chrono::steady_clock::now();
  if (mode == "zygote") {
    int in[2], out[2];
    pid_t zygote = start_helper(self, "--keeper-zygote", in, out);
    long started = 0, running = 0;
    while (started < tasks || running > 0) {
      while (started < tasks && running < in_flight) {
        char byte = 's';
        int record[2];
        if (::write(in[1], &byte, 1) != 1 || ::read(out[0], record, sizeof record) != sizeof record) std::exit(1);
        ++started, ++running;
      }
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, 0);
      if (pid > 0 && pid != zygote) --running;
    }
    ::close(in[1]);
    ::close(out[0]);
    int status = 0;
    ::waitpid(zygote, &status, 0);
  } else if (mode == "shared") {
    int in[2], out[2];
    pid_t keeper = start_helper(self, "--keeper-shared", in, out);
    long started = 0, ended = 0;
    while (ended < tasks) {
      if (started < tasks && started - ended < in_flight) {
        long n = std::min(in_flight - (started - ended), tasks - started);
        char bytes[64];
        std::memset(bytes, 's', sizeof bytes);
        if (::write(in[1], bytes, static_cast<size_t>(n)) != n) std::exit(1);
        started += n;
      }
      int record[2];
      if (::read(out[0], record, sizeof record) != sizeof record) std::exit(1);
      ++ended;
    }
    ::close(in[1]);
    int status = 0;
    ::waitpid(keeper, &status, 0);
    ::close(out[0]);
  } else {
    char mode_arg[] = "--keeper-once";
    char* keeper_argv[] = {const_cast<char*>(self), mode_arg, nullptr};
    bool per_task = mode == "per-task";
    long started = 0, running = 0;
    while (started < tasks || running > 0) {
      while (started < tasks && running < in_flight) {
        pid_t pid = per_task ? vfork_exec(self, keeper_argv, false) : vfork_exec(kTrue, kTrueArgv, true);
        if (pid < 0) std::exit(1);
        ++started, ++running;
      }
      int status = 0;
      if (::wait(&status) > 0) --running;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, cpu_us(RUSAGE_SELF) - self0, cpu_us(RUSAGE_CHILDREN) - children0};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--keeper-once") == 0) return keeper_once();
  if (argc == 2 && std::strcmp(argv[1], "--keeper-shared") == 0) return keeper_shared();
  if (argc == 2 && std::strcmp(argv[1], "--keeper-zygote") == 0) return keeper_zygote();
  long tasks = 2000, in_flight = 8;
  std::string modes = "direct,per-task,zygote,shared";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--tasks") == 0)
      tasks = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--in-flight") == 0)
      in_flight = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--modes") == 0)
      modes = argv[i + 1];
    else {
      std::fprintf(stderr, "keeper_probe: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (tasks <= 0 || in_flight <= 0 || in_flight > 64) {
    std::fprintf(stderr, "keeper_probe: --tasks > 0, 0 < --in-flight <= 64\n");
    return 2;
  }
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  size_t at = 0;
  while (at <= modes.size()) {
    size_t comma = modes.find(',', at);
    std::string mode = modes.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? modes.size() + 1 : comma + 1;
    Result r = run(mode, self, tasks, in_flight);
    std::printf(
        "{\"mode\": \"%s\", \"tasks\": %ld, \"in_flight\": %ld, \"tasks_per_sec\": %.1f, "
        "\"parent_cpu_us_per_task\": %.1f, \"children_cpu_us_per_task\": %.1f}\n",
        mode.c_str(), tasks, in_flight, tasks / r.seconds, r.self_us / tasks, r.children_us / tasks);
    std::fflush(stdout);
  }
  return 0;
}
