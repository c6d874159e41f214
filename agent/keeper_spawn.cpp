#include "agent/keeper_spawn.hpp"

#include <fcntl.h>
#include <spawn.h>
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
  int err = 0;
  posix_spawn_file_actions_t actions;
  if (report < 0 || control < 0) {
    err = errno;
  } else if ((err = posix_spawn_file_actions_init(&actions)) == 0) {
    // The stdio sources are above 2 (the supervisor moved them there), so
    // the first three cannot overwrite one another's source; the pipes are
    // above 4, so the last two cannot either.
    for (auto [from, to] : {std::pair{a.stdin_fd, 0}, {a.stdout_fd, 1}, {a.stderr_fd, 2}, {report, kReportFd},
                            {control, kControlFd}})
      if (err == 0) err = posix_spawn_file_actions_adddup2(&actions, from, to);
    pid_t pid = 0;
    if (err == 0) err = posix_spawn(&pid, keeper_binary.c_str(), &actions, nullptr, argv.data(), a.envp);
    posix_spawn_file_actions_destroy(&actions);
    for (int fd : copies) ::close(fd);
    return err == 0 ? pid : -err;
  }
  for (int fd : copies) ::close(fd);
  return -err;
}

}  // namespace claimsched::agent
