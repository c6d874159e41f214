#pragma once

// Runs claimsched as a real process: to completion (capturing stdout), or in
// the background to be killed by PID.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace claimsched::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
};

/// Runs `command` through /bin/sh, capturing stdout (stderr passes through).
inline ProcessResult run_command(const std::string& command) {
  ProcessResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A process started in the background; killed (SIGKILL) and reaped when it
/// goes out of scope if still running.
class BackgroundProcess {
 public:
  /// Starts `argv` with stdout and stderr appended to `log`.
  explicit BackgroundProcess(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  ~BackgroundProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  /// True if it has not exited yet.
  bool running() {
    if (reaped_ || pid_ <= 0) return false;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return false;
    }
    return true;
  }
  void kill(int signal = SIGKILL) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, signal);
  }
  /// Waits for exit; returns the exit code (-1 if killed by a signal).
  int wait() {
    if (pid_ <= 0) return -1;
    if (!reaped_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

}  // namespace claimsched::testing
