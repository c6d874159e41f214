// claimsched-keeper: a task's keeper as a program of its own (agent/keeper.hpp
// says what a keeper does). The supervisor forks it from its zygote (below)
// or starts it with vfork + exec, so the agent never copies itself: a fork()
// of the agent costs page tables and faults in proportion to its size, a
// fork or an exec of this small program does not.
//
// The supervisor sets it up so (ProcessSupervisor, spawn_keeper):
//   descriptors  0, 1, 2: the task's stdin, stdout, stderr
//                3: the report pipe's write end, 4: the control pipe's read end
//   environment  the task's
//   signal mask  every signal blocked (the supervisor thread's)
//   argv         claimsched-keeper PARENT MAX_FD WORKDIR EXIT_PATH EXIT_TMP CGROUP_PROCS STDOUT_FILE STDERR_FILE
//                MAKE_WORKDIR PATH ARGV0 ARGS...
//                (WORKDIR, EXIT_PATH, EXIT_TMP, CGROUP_PROCS empty for none; STDOUT_FILE, STDERR_FILE
//                empty: the task gets descriptor 1 (2) as is, else the file the keeper creates at the
//                first byte, keeper.hpp; MAKE_WORKDIR "1": the keeper makes WORKDIR if missing, else empty)
// Anything else it is given is a usage error: exit 127 with a report on fd 3.
//
// With `claimsched-keeper --zygote PARENT [PADDING]` it is instead the keepers' maker
// (keeper.hpp, "The zygote"): it reads start requests from the socket on
// descriptor 0, forks a keeper per request as a child of PARENT
// (CLONE_PARENT), which then runs exactly as an exec'd keeper would, and
// answers with the keeper's pid. A fork of this small static process costs
// a fraction of an exec of it (no loading, no start-up of the C library).

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "agent/keeper.hpp"

namespace {

constexpr int kArgsBeforeTask = 11;

/// A decimal in [1, INT_MAX], or -1.
long number(const char* text) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v <= 0 || v > 0x7fffffff) return -1;
  return v;
}

const char* or_null(const char* text) { return *text == '\0' ? nullptr : text; }

/// Runs a keeper with descriptors 0-4 set up and `argv` as documented above.
int keeper_main(int argc, char** argv, char** envp) {
  using namespace claimsched::agent::keeper;
  long parent = argc > kArgsBeforeTask ? number(argv[1]) : -1;
  long max_fd = argc > kArgsBeforeTask ? number(argv[2]) : -1;
  if (parent < 0 || max_fd < 0) {
    // Started by hand, or by a supervisor of another version.
    Report report{Stage::exec, EINVAL};
    [[maybe_unused]] ssize_t n = ::write(3, &report, sizeof report);
    return 127;
  }
  Args args{argv[10],
            argv + kArgsBeforeTask,
            envp,
            or_null(argv[3]),
            0,
            1,
            2,
            3,
            4,
            static_cast<pid_t>(parent),
            static_cast<int>(max_fd),
            or_null(argv[4]),
            or_null(argv[5]),
            or_null(argv[6]),
            or_null(argv[7]),
            or_null(argv[8]),
            *argv[9] != '\0'};
  run(args);
}

/// The zygote's own argument strings (argv[0] to the last one's NUL), which
/// /proc/<pid>/cmdline and `ps` show: a forked keeper writes its own
/// arguments over its copy, so that it looks as an exec'd one would
/// (truncated to this length: the supervisor pads the zygote's arguments).
char* g_arg_area = nullptr;
size_t g_arg_size = 0;

void show_arguments(char* const* argv) {
  if (g_arg_area == nullptr || g_arg_size == 0) return;
  size_t at = 0;
  for (char* const* arg = argv; *arg != nullptr && at < g_arg_size; ++arg) {
    size_t n = std::min(std::strlen(*arg) + 1, g_arg_size - at);
    std::memcpy(g_arg_area + at, *arg, n);
    at += n;
  }
  std::memset(g_arg_area + at, 0, g_arg_size - at);
  g_arg_area[g_arg_size - 1] = '\0';  // the kernel reads past a last byte that is not NUL
}

/// In the keeper forked by the zygote: the request's descriptors become 0-4
/// and its strings the keeper's argv and environment. Never returns.
[[noreturn]] void run_forked(char* data, size_t size, const int (&fds)[claimsched::agent::keeper::kZygoteFds]) {
  using namespace claimsched::agent::keeper;
  // First above every target, so that no dup2 overwrites a later source.
  int high[kZygoteFds];
  for (int i = 0; i < kZygoteFds; ++i) {
    high[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
    if (high[i] < 0) ::_exit(127);
  }
  for (int i = 0; i < kZygoteFds; ++i)
    if (::dup2(high[i], i) < 0) ::_exit(127);
  uint32_t counts[2];
  std::memcpy(counts, data, sizeof counts);
  std::vector<char*> strings;
  for (size_t at = sizeof counts; at < size; at += std::strlen(data + at) + 1) strings.push_back(data + at);
  if (strings.size() != size_t{counts[0]} + counts[1]) ::_exit(127);
  std::vector<char*> argv(strings.begin(), strings.begin() + counts[0]);
  std::vector<char*> envp(strings.begin() + counts[0], strings.end());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  show_arguments(argv.data());
  ::_exit(keeper_main(static_cast<int>(counts[0]), argv.data(), envp.data()));
}

/// The zygote's loop: one request in, one keeper forked, its pid (or minus
/// an errno) out; ends when the supervisor closes the socket.
int zygote(pid_t parent) {
  using namespace claimsched::agent::keeper;
  // Gone with the supervisor's thread that started it (and so with the
  // agent); the keepers it made are the agent's children, not its own.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) return 127;
  if (::close_range(3, ~0U, 0) != 0)
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  std::vector<char> data(kZygoteMaxRequest);
  for (;;) {
    alignas(cmsghdr) ZygoteControl control;
    iovec iov{data.data(), data.size()};
    msghdr msg = zygote_message(iov, control);
    ssize_t got = ::recvmsg(0, &msg, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return 0;  // the supervisor is gone, or closed its end
    int fds[kZygoteFds];
    int nfds = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
          if (nfds < kZygoteFds) {
            fds[nfds++] = fd;
          } else {
            ::close(fd);  // more than a request carries: not kept
          }
        }
      }
    int32_t answer = 0;
    auto size = static_cast<size_t>(got);
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || nfds != kZygoteFds || size < 2 * sizeof(uint32_t) ||
        data[size - 1] != '\0') {
      answer = -EINVAL;
    } else {
      // A plain fork but for the parent: the keeper is the supervisor's
      // child, which reaps it, watches it by pidfd and reads its wait4 usage
      // as it does an exec'd keeper's. This process is single-threaded and
      // holds no lock here, so the child may use all of the C library.
      long pid = ::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
      if (pid == 0) run_forked(data.data(), size, fds);
      answer = pid < 0 ? -errno : static_cast<int32_t>(pid);
    }
    for (int i = 0; i < nfds; ++i) ::close(fds[i]);
    while (::send(0, &answer, sizeof answer, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], claimsched::agent::keeper::kZygoteArg) == 0) {
    long parent = number(argv[2]);
    g_arg_area = argv[0];
    g_arg_size = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
    return parent < 0 ? 127 : zygote(static_cast<pid_t>(parent));
  }
  return keeper_main(argc, argv, environ);
}
