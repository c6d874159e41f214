#include "agent/keeper_spawn.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

namespace claimsched::agent {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKeeperName = "claimsched-keeper";
/// Where the keeper expects the report and control pipes (keeper_main.cpp).
constexpr int kReportFd = 3;
constexpr int kControlFd = 4;

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

/// `fd` itself if it is above every descriptor the child's dup2s write to,
/// else a close-on-exec copy above them (closed by `copies`' owner).
int above_targets(int fd, std::vector<int>& copies) {
  if (fd > kControlFd) return fd;
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, kControlFd + 1);
  if (copy >= 0) copies.push_back(copy);
  return copy;
}

}  // namespace

core::Expected<std::string> find_keeper_binary(const std::string& configured) {
  if (!configured.empty()) {
    if (!executable_file(configured))
      return core::make_error(core::Errc::invalid_argument,
                              "keeper program '" + configured + "' is not an executable file");
    return configured;
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string();
  fs::path beside = self.parent_path() / kKeeperName;
  return executable_file(beside) ? beside.string() : std::string();
}

pid_t spawn_keeper(const std::string& keeper_binary, const keeper::Args& a) {
  // Arguments as keeper_main.cpp reads them.
  std::vector<std::string> head{keeper_binary,
                                std::to_string(a.parent),
                                std::to_string(a.max_fd),
                                a.workdir ? a.workdir : "",
                                a.exit_path ? a.exit_path : "",
                                a.exit_tmp_path ? a.exit_tmp_path : "",
                                a.cgroup_procs ? a.cgroup_procs : "",
                                a.stdout_path ? a.stdout_path : "",
                                a.stderr_path ? a.stderr_path : "",
                                a.make_workdir ? "1" : "",
                                a.path};
  std::vector<char*> argv;
  for (auto& s : head) argv.push_back(s.data());
  for (char* const* arg = a.argv; *arg != nullptr; ++arg) argv.push_back(*arg);
  argv.push_back(nullptr);

  std::vector<int> copies;
  int report = above_targets(a.report_fd, copies);
  int control = above_targets(a.control_fd, copies);
  if (report < 0 || control < 0) {
    int err = errno;
    for (int fd : copies) ::close(fd);
    return -err;
  }
  // The keeper's descriptors 0-4, in order. The stdio sources are above 2
  // (the supervisor moved them there), so the first three cannot overwrite
  // one another's source; the pipes are above 4, so the last two cannot
  // either; and no source is its own target (dup2 would keep its
  // close-on-exec flag).
  const int sources[] = {a.stdin_fd, a.stdout_fd, a.stderr_fd, report, control};
  const char* path = keeper_binary.c_str();
  char* const* child_argv = argv.data();
  char* const* child_envp = a.envp;
  // vfork rather than posix_spawn, which is a vfork too but maps and unmaps
  // a stack for its child on every call (the unmap flushes the TLB of every
  // CPU running one of the agent's threads: 40% of the supervisor thread's
  // time) and checks each descriptor against getrlimit twice. The child
  // borrows this thread's stack and memory until its execve: it only calls
  // dup2, execve and _exit, with every signal blocked (this thread's mask,
  // which the keeper keeps), and leaves the errno of a failure here.
  volatile int child_error = 0;
  pid_t pid = ::vfork();
  if (pid == 0) {
    for (int target = 0; target < 5; ++target)
      if (::dup2(sources[target], target) < 0) {
        child_error = errno;
        ::_exit(127);
      }
    ::execve(path, child_argv, child_envp);
    child_error = errno;
    ::_exit(127);
  }
  int err = pid < 0 ? errno : child_error;
  for (int fd : copies) ::close(fd);
  if (pid > 0 && err != 0) {
    // It never ran the keeper: reaped here, as posix_spawn would have.
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return err == 0 ? pid : -err;
}

}  // namespace claimsched::agent
