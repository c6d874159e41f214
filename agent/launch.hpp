#pragma once

// Preparing a task's start, on the caller's thread (ProcessSupervisor::start)
// or the supervisor's (start_async):
// the LaunchSpec checked, its command found, its files opened, its argv and
// environment laid out - everything the keeper's start needs, so that the
// supervisor's thread only starts it. Internal to agent/.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/keeper.hpp"
#include "agent/process_supervisor.hpp"

namespace claimsched::agent::launch {

/// Variables the agent keeps from its tasks (its own settings).
inline constexpr std::string_view kReservedPrefix = "CLAIMSCHED_";

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

std::string errno_text(int err);
std::string in_quotes(std::string_view s);
StartError start_error(core::Errc code, core::SpawnStage stage, int error_number, std::string message);
StartError io_error(std::string message, core::SpawnStage stage = core::SpawnStage::system, int error_number = 0);
/// Moves `fd` above 0..2 so that the child's dup2 onto 0..2 cannot clobber
/// it (an agent started with stdin closed gets fd 0 from open()).
core::Expected<UniqueFd, StartError> above_stdio(UniqueFd fd);

/// A descriptor of a start: its own (closed with it) or one the supervisor
/// shares among starts (Shared).
class StdioFd {
 public:
  int get() const { return fd_; }
  void own(UniqueFd fd) {
    fd_ = fd.get();
    owned_ = std::move(fd);
  }
  void borrow(int fd) {
    owned_.reset();
    fd_ = fd;
  }
  void reset() { borrow(-1); }

 private:
  UniqueFd owned_;
  int fd_ = -1;
};

/// What every start may use instead of getting its own: a descriptor the
/// keeper only dup2s is the same file for every task (/dev/null), and the
/// descriptor limit does not move. -1 (0): each start opens (reads) its own.
struct Shared {
  /// /dev/null, read-only and write-only, above 2 and close-on-exec.
  int null_read = -1, null_write = -1;
  int max_fd = 0;
};
/// Opens what Shared holds; the caller keeps the descriptors.
Shared open_shared(UniqueFd& null_read, UniqueFd& null_write);

/// A validated LaunchSpec with its files open: everything the start needs.
struct Prepared {
  std::string command;  // argv[0] as given, for messages
  std::string path;     // what execve gets
  std::string workdir;  // absolute; empty: the agent's
  bool make_workdir = false;  // LaunchSpec::make_workdir
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  StdioFd stdin_fd, stdout_fd, stderr_fd;
  core::Duration max_run_time{0};
  uint64_t memory_limit_bytes = 0;
  int64_t cpu_millicores = 0;
  int max_fd = 0;
  std::string exit_path, exit_tmp_path;  // empty: the keeper writes none
  /// LaunchSpec::lazy_output: the files the keeper creates at the first byte
  /// (absolute); empty: stdout_fd (stderr_fd) is the task's.
  std::string lazy_stdout, lazy_stderr;
};

core::Expected<Prepared, StartError> prepare(const LaunchSpec& spec, const Shared& shared = {});

/// What failed, in words, when the keeper reports a failure at `stage`.
std::string describe_stage(keeper::Stage stage, const Prepared& p);
/// What a failure in the child at `stage` means for the task's end reason.
core::SpawnStage typed_stage(keeper::Stage stage, int err);

}  // namespace claimsched::agent::launch
