#include "agent/launch.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <system_error>

#include "core/duration.hpp"

extern char** environ;

namespace claimsched::agent::launch {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
/// The fallback for close_range: descriptors 3 .. this - 1 are marked
/// close-on-exec one by one.
constexpr int kMaxFdScan = 65536;

/// Descriptors above this are closed in the keeper one by one where
/// close_range is missing.
int max_fd() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, kMaxFdScan));
  return kMaxFdScan;
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string errno_text(int err) { return std::system_category().message(err); }

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

StartError start_error(core::Errc code, core::SpawnStage stage, int error_number, std::string message) {
  StartError e;
  e.code = code;
  e.message = std::move(message);
  e.stage = stage;
  e.error_number = error_number;
  return e;
}
StartError io_error(std::string message, core::SpawnStage stage, int error_number) {
  return start_error(core::Errc::io_error, stage, error_number, std::move(message));
}
namespace {

StartError invalid(std::string message) {
  return start_error(core::Errc::invalid_argument, core::SpawnStage::system, 0, std::move(message));
}

/// The stage an exec's errno points to.
core::SpawnStage exec_stage(int err) {
  if (err == ENOENT || err == ENOTDIR) return core::SpawnStage::no_such_file;
  if (err == EACCES || err == EPERM) return core::SpawnStage::permission_denied;
  return core::SpawnStage::system;
}

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

}  // namespace

core::Expected<UniqueFd, StartError> above_stdio(UniqueFd fd) {
  if (fd.get() > 2) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return io_error("fcntl(F_DUPFD_CLOEXEC): " + errno_text(errno));
  return UniqueFd(moved);
}

using keeper::Stage;

namespace {

std::optional<StartError> validate(const LaunchSpec& spec) {
  auto no_command = [](std::string message) {
    return start_error(core::Errc::invalid_argument, core::SpawnStage::no_command, 0, std::move(message));
  };
  if (spec.argv.empty()) return no_command("argv is empty: there is no command to run");
  if (spec.argv.front().empty()) return no_command("argv[0] is empty: there is no command to run");
  for (size_t i = 0; i < spec.argv.size(); ++i)
    if (has_nul(spec.argv[i])) return invalid("argv[" + std::to_string(i) + "] contains a NUL byte");
  for (const auto& [name, value] : spec.env) {
    if (name.empty()) return invalid("an environment variable has an empty name");
    if (name.find('=') != std::string::npos || has_nul(name))
      return invalid("environment variable name " + in_quotes(name) + " contains '=' or a NUL byte");
    if (has_nul(value)) return invalid("environment variable " + name + " contains a NUL byte");
  }
  if (has_nul(spec.workdir)) return invalid("workdir contains a NUL byte");
  if (has_nul(spec.stdout_path)) return invalid("stdout_path contains a NUL byte");
  if (has_nul(spec.stderr_path)) return invalid("stderr_path contains a NUL byte");
  if (spec.max_run_time.count() < 0) return invalid("max_run_time is negative");
  return std::nullopt;
}

/// The agent's environment without CLAIMSCHED_*, then spec.env; sorted by name.
std::map<std::string, std::string> child_environment(const LaunchSpec& spec) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    auto name = kv.substr(0, eq);
    if (name.starts_with(kReservedPrefix)) continue;
    env.insert_or_assign(std::string(name), std::string(kv.substr(eq + 1)));
  }
  for (const auto& [name, value] : spec.env) env.insert_or_assign(name, value);
  return env;
}

/// execve's path for `command`: itself if it contains '/', else the first
/// executable regular file named so in `search_path`'s directories.
core::Expected<std::string, StartError> resolve_command(const std::string& command, std::string_view search_path,
                                            const std::string& workdir) {
  if (command.find('/') != std::string::npos) return command;  // execve reports what is wrong
  std::string denied;
  size_t begin = 0;
  while (begin <= search_path.size()) {
    size_t end = search_path.find(':', begin);
    if (end == std::string_view::npos) end = search_path.size();
    std::string_view dir = search_path.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / command;
    if (candidate.is_relative() && !workdir.empty()) candidate = fs::path(workdir) / candidate;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) != 0) {
      if (denied.empty()) denied = candidate.string();
      continue;
    }
    return candidate.string();
  }
  if (!denied.empty())
    return io_error("cannot run " + in_quotes(command) + ": " + in_quotes(denied) + " is not executable",
                    core::SpawnStage::permission_denied, EACCES);
  return io_error("command not found: " + in_quotes(command) + " (PATH=" + std::string(search_path) + ")",
                  core::SpawnStage::no_such_file, ENOENT);
}

core::Expected<UniqueFd, StartError> open_output(const std::string& given, const std::string& workdir,
                                                 const char* what) {
  if (given.empty()) {
    UniqueFd fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (!fd)
      return io_error(std::string("cannot open /dev/null for ") + what + ": " + errno_text(errno),
                      core::SpawnStage::output, errno);
    return above_stdio(std::move(fd));
  }
  fs::path path(given);
  if (path.is_relative() && !workdir.empty()) path = fs::path(workdir) / path;
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return io_error("cannot create the directory " + in_quotes(path.parent_path().string()) + " for " + what +
                          ": " + ec.message(),
                      core::SpawnStage::output, ec.value());
  }
  // O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of hanging.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666));
  if (!fd) {
    int err = errno;
    return io_error(std::string("cannot open the ") + what + " file " + in_quotes(path.string()) + ": " +
                        errno_text(err),
                    core::SpawnStage::output, err);
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return above_stdio(std::move(fd));
}

/// LaunchSpec::lazy_output: the absolute path the keeper creates at the
/// first byte, with its directory made and checked writable now; empty if the
/// file is opened now instead (no path given, or one that exists already:
/// opening it costs no new file, and a FIFO or a device keeps its meaning).
core::Expected<std::string, StartError> lazy_output_path(const std::string& given, const std::string& workdir,
                                                         bool made_by_keeper, const char* what) {
  if (given.empty()) return std::string();
  std::error_code ec;
  fs::path path(given);
  if (path.is_relative() && !workdir.empty()) path = fs::path(workdir) / path;
  path = fs::absolute(path, ec).lexically_normal();
  if (ec) return std::string();  // open_output says what is wrong
  // Directly in a working directory its keeper makes: nothing to look at
  // yet (LaunchSpec::make_workdir).
  if (made_by_keeper && path.parent_path() == fs::path(workdir)) return path.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 || errno != ENOENT) return std::string();
  fs::path parent = path.parent_path();
  fs::create_directories(parent, ec);
  if (ec)
    return io_error("cannot create the directory " + in_quotes(parent.string()) + " for " + what + ": " + ec.message(),
                    core::SpawnStage::output, ec.value());
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    int err = errno;
    return io_error(
        std::string("cannot create the ") + what + " file " + in_quotes(path.string()) + ": " + errno_text(err),
        core::SpawnStage::output, err);
  }
  return path.string();
}

}  // namespace

core::Expected<Prepared, StartError> prepare(const LaunchSpec& spec, const Shared& shared) {
  if (auto bad = validate(spec)) return *bad;
  Prepared p;
  p.command = spec.argv.front();
  p.max_run_time = spec.max_run_time;
  p.memory_limit_bytes = spec.memory_limit_bytes;
  p.cpu_millicores = spec.cpu_millicores;

  if (!spec.workdir.empty()) {
    std::error_code ec;
    fs::path abs = fs::absolute(spec.workdir, ec);
    const auto bad_workdir = core::SpawnStage::bad_workdir;
    if (ec) return io_error("working directory " + in_quotes(spec.workdir) + ": " + ec.message(), bad_workdir, ec.value());
    // One its keeper makes is checked there (LaunchSpec::make_workdir).
    struct stat st {};
    if (!spec.make_workdir && ::stat(abs.c_str(), &st) != 0) {
      int err = errno;
      if (err == ENOENT)
        return io_error("working directory " + in_quotes(spec.workdir) + " does not exist", bad_workdir, err);
      return io_error("working directory " + in_quotes(spec.workdir) + ": " + errno_text(err), bad_workdir, err);
    }
    if (!spec.make_workdir && !S_ISDIR(st.st_mode))
      return io_error("working directory " + in_quotes(spec.workdir) + " is not a directory", bad_workdir, ENOTDIR);
    p.workdir = abs.lexically_normal().string();
    p.make_workdir = spec.make_workdir;
  }

  auto env = child_environment(spec);
  auto path_var = env.find("PATH");
  auto path = resolve_command(p.command, path_var != env.end() ? std::string_view(path_var->second) : kDefaultPath,
                              p.workdir);
  if (!path) return path.error();
  p.path = std::move(*path);

  p.argv_storage = spec.argv;
  p.env_storage.reserve(env.size());
  for (auto& [name, value] : env) p.env_storage.push_back(name + "=" + value);
  for (auto& s : p.argv_storage) p.argv.push_back(s.data());
  p.argv.push_back(nullptr);
  for (auto& s : p.env_storage) p.envp.push_back(s.data());
  p.envp.push_back(nullptr);

  if (shared.null_read >= 0) {
    p.stdin_fd.borrow(shared.null_read);
  } else {
    UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!in) return io_error("cannot open /dev/null for stdin: " + errno_text(errno), core::SpawnStage::output, errno);
    auto stdin_fd = above_stdio(std::move(in));
    if (!stdin_fd) return stdin_fd.error();
    p.stdin_fd.own(std::move(*stdin_fd));
  }
  if (spec.lazy_output) {
    auto lazy_out = lazy_output_path(spec.stdout_path, p.workdir, p.make_workdir, "stdout");
    if (!lazy_out) return lazy_out.error();
    p.lazy_stdout = std::move(*lazy_out);
    auto lazy_err = lazy_output_path(spec.stderr_path, p.workdir, p.make_workdir, "stderr");
    if (!lazy_err) return lazy_err.error();
    p.lazy_stderr = std::move(*lazy_err);
  }
  // A stream the keeper creates lazily starts as /dev/null here: the keeper
  // puts its pipe in place.
  const std::string& stdout_file = p.lazy_stdout.empty() ? spec.stdout_path : "";
  const std::string& stderr_file = p.lazy_stderr.empty() ? spec.stderr_path : "";
  if (stdout_file.empty() && shared.null_write >= 0) {
    p.stdout_fd.borrow(shared.null_write);
  } else {
    auto out = open_output(stdout_file, p.workdir, "stdout");
    if (!out) return out.error();
    p.stdout_fd.own(std::move(*out));
  }
  if (stderr_file.empty() && shared.null_write >= 0) {
    p.stderr_fd.borrow(shared.null_write);
  } else {
    auto err = open_output(stderr_file, p.workdir, "stderr");
    if (!err) return err.error();
    p.stderr_fd.own(std::move(*err));
  }

  if (!spec.exit_path.empty()) {
    p.exit_path = spec.exit_path;
    p.exit_tmp_path = spec.exit_path + ".tmp";
    // An older run's is removed by the keeper, before the task starts.
  }
  p.max_fd = shared.max_fd > 0 ? shared.max_fd : max_fd();
  return p;
}

Shared open_shared(UniqueFd& null_read, UniqueFd& null_write) {
  Shared shared;
  shared.max_fd = max_fd();
  // Failures leave -1: each start then opens its own and reports what fails.
  auto in = above_stdio(UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)));
  auto out = above_stdio(UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC)));
  if (in && *in && out && *out) {
    null_read = std::move(*in);
    null_write = std::move(*out);
    shared.null_read = null_read.get();
    shared.null_write = null_write.get();
  }
  return shared;
}

std::string describe_stage(Stage stage, const Prepared& p) {
  switch (stage) {
    case Stage::setsid:
      return "setsid";
    case Stage::pdeathsig:
      return "prctl(PR_SET_PDEATHSIG)";
    case Stage::fork:
      return "vfork of the task";
    case Stage::parent_gone:
      return "the supervisor died during the start";
    case Stage::dup_stdin:
      return "redirecting stdin";
    case Stage::dup_stdout:
      return "redirecting stdout";
    case Stage::dup_stderr:
      return "redirecting stderr";
    case Stage::chdir:
      return "chdir to " + in_quotes(p.workdir);
    case Stage::exec:
      return "execve of " + in_quotes(p.path);
    case Stage::cgroup:
      return "joining its cgroup";
    case Stage::mkdir_workdir:
      return "creating the working directory " + in_quotes(p.workdir);
  }
  return "starting";
}

core::SpawnStage typed_stage(Stage stage, int err) {
  switch (stage) {
    case Stage::chdir:
      return core::SpawnStage::bad_workdir;
    case Stage::mkdir_workdir:
      // Made for the task (the job's directory): where its output goes.
      return core::SpawnStage::output;
    case Stage::exec:
      return exec_stage(err);
    case Stage::dup_stdin:
    case Stage::dup_stdout:
    case Stage::dup_stderr:
      return core::SpawnStage::output;
    default:
      return core::SpawnStage::system;
  }
}

}  // namespace claimsched::agent::launch
