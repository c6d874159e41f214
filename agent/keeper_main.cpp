// claimsched-keeper: a task's keeper as a program of its own (agent/keeper.hpp
// says what a keeper does). The supervisor starts it with vfork + exec, so
// the agent never copies itself: a fork() of the agent costs page tables and
// faults in proportion to its size, an exec of this small program does not.
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

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

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

}  // namespace

int main(int argc, char** argv) {
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
            environ,
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
