#pragma once

// What the ProcessSupervisor tests share: a temporary directory per test, a
// shell task whose output goes there, and looks at /proc with deadlines.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "agent/process_supervisor.hpp"
#include "tests/agent/exits.hpp"

namespace claimsched::agent::supervisor_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using How = TaskExit::How;
using Clock = std::chrono::steady_clock;

using test_support::Exits;

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 5s) {
  auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

/// The state letter and process group of `pid` from /proc, if it exists.
inline std::optional<std::pair<char, pid_t>> proc_stat(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(paren + 1));
  char state = 0;
  pid_t ppid = 0, pgrp = 0;
  rest >> state >> ppid >> pgrp;
  return std::pair{state, pgrp};
}

/// True if a process that is not a zombie has `pid` (zombies are dead; in a
/// container whose pid 1 does not reap, orphans stay zombies).
inline bool alive(pid_t pid) {
  auto st = proc_stat(pid);
  return st && st->first != 'Z';
}

/// True if a process that is not a zombie is in process group `pgid`.
/// (kill(-pgid, 0) also counts zombies, see alive().)
inline bool group_alive(pid_t pgid) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto st = proc_stat(std::stoi(name));
    if (st && st->second == pgid && st->first != 'Z') return true;
  }
  return false;
}

/// Waits for the first line of `path` (a task's `echo $$`) and returns it as
/// a pid.
inline pid_t wait_for_pid(const fs::path& path) {
  pid_t pid = 0;
  eventually([&] {
    std::string text = read_file(path);
    if (text.find('\n') == std::string::npos) return false;
    pid = std::stoi(text);
    return true;
  });
  return pid;
}

class ProcessSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("claimsched-agent-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  LaunchSpec shell(std::string script) const {
    LaunchSpec spec;
    spec.argv = {"/bin/sh", "-c", std::move(script)};
    spec.stdout_path = (dir_ / "out.txt").string();
    spec.stderr_path = (dir_ / "err.txt").string();
    return spec;
  }

  fs::path dir_;
};

}  // namespace claimsched::agent::supervisor_test
