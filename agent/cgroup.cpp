#include "agent/cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/duration.hpp"

namespace claimsched::agent::cgroup {

namespace {

/// The controllers a task's limits use.
constexpr std::string_view kControllers[] = {"memory", "cpu", "pids"};
/// cpu.max's period: 100 ms, the kernel's default.
constexpr int64_t kCpuPeriodUs = 100000;

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `value` to a cgroup interface file (one write: the kernel parses
/// each write whole).
core::Status write_text(const std::string& path, std::string_view value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return core::make_error(core::Errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return core::make_error(core::Errc::io_error,
                            "cannot write '" + std::string(value) + "' to " + path + ": " + std::strerror(err));
  return core::Status::ok();
}

bool has_word(std::string_view text, std::string_view word) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \n\t", pos);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \n\t", start);
    if (text.substr(start, end - start) == word) return true;
    pos = end == std::string_view::npos ? text.size() : end;
  }
  return false;
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

/// The n-th (from 0) space-separated field of `line`.
std::string_view field(std::string_view line, size_t n) {
  for (size_t i = 0;; ++i) {
    size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) return {};
    line.remove_prefix(start);
    size_t end = line.find(' ');
    if (i == n) return line.substr(0, end);
    if (end == std::string_view::npos) return {};
    line.remove_prefix(end);
  }
}

uint64_t read_number(const std::string& path) {
  auto text = read_text(path);
  uint64_t v = 0;
  if (!text) return 0;
  std::from_chars(text->data(), text->data() + text->size(), v);
  return v;
}

}  // namespace

std::optional<std::string> v2_mount(std::string_view mountinfo) {
  // "36 35 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw" (proc(5)):
  // the mount point is field 4, the type follows the " - " separator.
  for (auto line : lines(mountinfo)) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    if (field(line.substr(dash + 3), 0) != "cgroup2") continue;
    auto point = field(line.substr(0, dash), 4);
    if (!point.empty()) return std::string(point);
  }
  return std::nullopt;
}

std::optional<std::string> own_path(std::string_view proc_cgroup) {
  for (auto line : lines(proc_cgroup))
    if (line.substr(0, 3) == "0::") return std::string(line.substr(3));
  return std::nullopt;
}

core::Status check_delegated(const std::string& dir) {
  auto controllers = read_text(dir + "/cgroup.controllers");
  if (!controllers) return core::make_error(core::Errc::unavailable, dir + " is not a cgroup v2 directory");
  for (auto c : kControllers)
    if (!has_word(*controllers, c))
      return core::make_error(core::Errc::unavailable,
                              dir + " does not offer the " + std::string(c) + " controller (its cgroup.controllers: '" +
                                  std::string(lines(*controllers).empty() ? "" : lines(*controllers)[0]) +
                                  "'; on a hybrid or v1 machine it is bound to v1)");
  for (const char* file : {"cgroup.subtree_control", "cgroup.procs"})
    if (::access((dir + "/" + file).c_str(), W_OK) != 0)
      return core::make_error(core::Errc::unavailable,
                              dir + "/" + file + " is not writable by this agent: the tree is not delegated to it");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return core::make_error(core::Errc::unavailable, "cannot create cgroups in " + dir + ": not delegated");
  return core::Status::ok();
}

core::Expected<std::string> find_delegated(const std::string& configured, const std::string& proc_self) {
  std::string dir = configured;
  if (dir.empty()) {
    auto mountinfo = read_text(proc_self + "/mountinfo");
    auto mount = mountinfo ? v2_mount(*mountinfo) : std::nullopt;
    if (!mount) return core::make_error(core::Errc::unavailable, "no cgroup v2 hierarchy is mounted");
    auto cgroups = read_text(proc_self + "/cgroup");
    auto own = cgroups ? own_path(*cgroups) : std::nullopt;
    if (!own) return core::make_error(core::Errc::unavailable, "this process is in no cgroup v2 group");
    dir = *mount + (*own == "/" ? "" : *own);
    // Restarted in the leaf it made before: its tasks go beside it.
    if (dir.size() > 6 && dir.substr(dir.size() - 6) == "/agent") dir.resize(dir.size() - 6);
  }
  if (auto ok = check_delegated(dir); !ok) return ok.error();
  return dir;
}

std::string cpu_max(int64_t millicores) {
  if (millicores <= 0) return "max " + std::to_string(kCpuPeriodUs);
  // The kernel's floor for a quota is 1 ms.
  int64_t quota = std::max<int64_t>(millicores * kCpuPeriodUs / 1000, 1000);
  return std::to_string(quota) + " " + std::to_string(kCpuPeriodUs);
}

core::Expected<Tree> Tree::open(const std::string& dir) {
  Tree tree;
  tree.dir_ = dir;
  std::string leaf = dir + "/agent";
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST)
    return core::make_error(core::Errc::io_error, "cannot create " + leaf + ": " + std::strerror(errno));
  // Writing a pid moves its whole thread group.
  if (auto ok = write_text(leaf + "/cgroup.procs", std::to_string(::getpid())); !ok) return ok.error();
  std::string enable;
  for (auto c : kControllers) enable += (enable.empty() ? "+" : " +") + std::string(c);
  if (auto ok = write_text(dir + "/cgroup.subtree_control", enable); !ok) return ok.error();
  return tree;
}

core::Expected<std::string> Tree::create(const std::string& name, const Limits& limits) const {
  std::string path = dir_ + "/task-" + name;
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return core::make_error(core::Errc::io_error, "cannot create " + path + ": " + std::strerror(errno));
  auto set = [&](const char* file, const std::string& value) { return write_text(path + "/" + file, value); };
  core::Status ok = core::Status::ok();
  if (limits.memory_bytes > 0) {
    ok = set("memory.max", std::to_string(limits.memory_bytes));
    // Swap would let it hold more than it asked for; absent without swap
    // accounting, which is fine.
    if (ok && ::access((path + "/memory.swap.max").c_str(), F_OK) == 0) ok = set("memory.swap.max", "0");
    if (ok) ok = set("memory.oom.group", "1");
  }
  if (ok) ok = set("cpu.max", cpu_max(limits.cpu_millicores));
  if (ok && limits.pids > 0) ok = set("pids.max", std::to_string(limits.pids));
  if (!ok) {
    ::rmdir(path.c_str());
    return ok.error();
  }
  return path;
}

Usage Tree::usage(const std::string& path) {
  Usage u;
  if (auto events = read_text(path + "/memory.events"))
    for (auto line : lines(*events)) {
      uint64_t n = 0;
      auto value = field(line, 1);
      std::from_chars(value.data(), value.data() + value.size(), n);
      if ((field(line, 0) == "oom_kill" || field(line, 0) == "oom_group_kill") && n > 0) u.oom_killed = true;
    }
  u.peak_bytes = read_number(path + "/memory.peak");
  return u;
}

bool Tree::remove(const std::string& path) {
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
  // Something escaped the process group kills: the cgroup holds it.
  const std::string kill_file = path + "/cgroup.kill";  // Linux 5.14+
  bool killed = ::access(kill_file.c_str(), F_OK) == 0 && write_text(kill_file, "1").is_ok();
  if (!killed) {
    if (auto procs = read_text(path + "/cgroup.procs"))
      for (auto line : lines(*procs)) {
        pid_t pid = 0;
        if (std::from_chars(line.data(), line.data() + line.size(), pid).ec == std::errc{} && pid > 0)
          ::kill(pid, SIGKILL);
      }
  }
  return ::rmdir(path.c_str()) == 0 || errno == ENOENT;
}

std::optional<Tree> open_for_tasks(const std::string& configured, core::Duration memory_sample_interval) {
  auto fallback = [&](const std::string& why) {
    spdlog::warn(
        "process-supervisor: tasks run without cgroups: {}. Their memory limit is enforced by sampling "
        "each task's process group every {} (agent/memory_limit.hpp); their cpu is not limited",
        why, core::format_duration(memory_sample_interval));
    return std::nullopt;
  };
  auto dir = find_delegated(configured);
  if (!dir) return fallback(dir.error().message);
  auto tree = Tree::open(*dir);
  if (!tree) return fallback(tree.error().message);
  spdlog::info("process-supervisor: each task runs in a cgroup of its own under {} (memory.max, cpu.max, pids.max)",
               *dir);
  return std::move(*tree);
}

}  // namespace claimsched::agent::cgroup
