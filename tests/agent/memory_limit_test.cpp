// Task memory limits without cgroups (agent/memory_limit.hpp): parsing
// /proc/<pid>/stat, summing a process group from a made-up /proc, and the
// supervisor killing a real task that holds more than its limit while the
// others run on.

#include "agent/memory_limit.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "agent/process_supervisor.hpp"
#include "tests/agent/exits.hpp"

namespace claimsched::agent::memory_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using How = TaskExit::How;

constexpr uint64_t kMiB = 1024 * 1024;

/// A stat line as Linux writes it: pid (comm) then fields 3.. (pgrp is 5,
/// rss 24).
std::string stat_line(pid_t pid, const std::string& comm, pid_t pgrp, uint64_t rss_pages) {
  std::string line = std::to_string(pid) + " (" + comm + ") S 1 " + std::to_string(pgrp) + " " + std::to_string(pgrp) +
                     " 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 10000000 " + std::to_string(rss_pages) +
                     " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  return line;
}

TEST(MemoryLimit, ParsesTheProcessGroupAndResidentPagesOfAStatLine) {
  auto st = parse_proc_stat(stat_line(42, "sleep", 40, 123));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pgrp, 40);
  EXPECT_EQ(st->start_ticks, 12345u);
  EXPECT_EQ(st->rss_pages, 123u);
  // A command may hold spaces and parentheses: the last ')' ends it.
  st = parse_proc_stat(stat_line(43, "a) b (c", 41, 7));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pgrp, 41);
  EXPECT_EQ(st->rss_pages, 7u);
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("42 (x) S 1"));  // cut short
  EXPECT_FALSE(parse_proc_stat("42 (x) S 1 notanumber 2 3"));
}

TEST(MemoryLimit, SumsAGroupWithoutItsLeaderFromAMadeUpProc) {
  fs::path root = fs::temp_directory_path() / ("claimsched-proc-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto process = [&](pid_t pid, pid_t pgrp, uint64_t pages) {
    fs::create_directories(root / std::to_string(pid));
    std::ofstream(root / std::to_string(pid) / "stat") << stat_line(pid, "task", pgrp, pages);
  };
  process(100, 100, 100000);  // the keeper: a fork of a big agent, not counted
  process(101, 100, 10);
  process(102, 100, 5);
  process(200, 200, 7);  // another group, not asked for
  process(201, 200, 7);
  process(300, 300, 1);  // a group with its leader only
  fs::create_directories(root / "self");
  fs::create_directories(root / "103");  // vanished: no stat
  auto sampled = sample_groups(root.string(), {100, 300});
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  ASSERT_EQ(sampled.size(), 1u);
  EXPECT_EQ(sampled[100].resident_bytes, 15 * page);
  EXPECT_EQ(sampled[100].processes, 2u);
  EXPECT_TRUE(sample_groups((root / "missing").string(), {100}).empty());
  fs::remove_all(root);
}

using test_support::Exits;

/// Holds `mib` MiB in a child of the shell (tail keeps a line without an
/// end in memory) until killed: the group's sum, not the leader's, counts.
LaunchSpec holding(int mib, uint64_t limit) {
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "(head -c " + std::to_string(mib) + "M /dev/zero; sleep 30) | tail"};
  spec.memory_limit_bytes = limit;
  return spec;
}

TEST(MemoryLimit, ATaskOverItsLimitIsKilledAndTheOthersRunOn) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  LaunchSpec quiet;
  quiet.argv = {"/bin/sleep", "30"};
  quiet.memory_limit_bytes = 64 * kMiB;
  auto other = supervisor.start(quiet);
  ASSERT_TRUE(other) << other.error().message;
  auto hog = supervisor.start(holding(256, 32 * kMiB));
  ASSERT_TRUE(hog) << hog.error().message;
  auto exit = exits.wait(*hog);
  ASSERT_TRUE(exit) << "the task over its limit was not killed";
  EXPECT_EQ(exit->how, How::oom_killed) << exit->detail;
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_NE(exit->detail.find("exceeded its memory limit of 32 MiB"), std::string::npos) << exit->detail;
  EXPECT_GT(exit->peak_memory_bytes, 32 * kMiB);
  EXPECT_EQ(exit->end().reason, core::EndReason::oom_killed);
  EXPECT_EQ(exit->end().peak_memory_bytes, exit->peak_memory_bytes);
  // The other task is untouched.
  EXPECT_FALSE(exits.ended(*other));
  EXPECT_EQ(supervisor.running(), 1u);
  supervisor.kill(*other, "test over");
  auto other_exit = exits.wait(*other);
  ASSERT_TRUE(other_exit);
  EXPECT_EQ(other_exit->how, How::killed_on_request);
}

TEST(MemoryLimit, ATaskUnderItsLimitEndsOnItsOwnWithItsPeak) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 24M /dev/zero | tail > /dev/null"};
  spec.memory_limit_bytes = 512 * kMiB;
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().message;
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::exited) << exit->detail;
  EXPECT_EQ(exit->exit_code, 0);
  // tail's own peak, through the keeper's wait4 (or a sample).
  EXPECT_GE(exit->peak_memory_bytes, 24 * kMiB);
  EXPECT_LT(exit->peak_memory_bytes, 512 * kMiB);
}

TEST(MemoryLimit, NoLimitWhenSamplingIsOff) {
  Exits exits;
  SupervisorOptions options;
  options.memory_sample_interval = core::Duration::zero();
  ProcessSupervisor supervisor(exits.callback(), options);
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 48M /dev/zero | tail > /dev/null"};
  spec.memory_limit_bytes = 8 * kMiB;
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().message;
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::exited) << exit->detail;
}

}  // namespace
}  // namespace claimsched::agent::memory_test
