// Durability under kill -9: `claimsched sim --data-dir` is killed at random
// (seeded) moments while it places and runs a churning load, restarted with
// --resume each time, and finally allowed to finish. The resumed run's own
// check then proves: every acknowledged job is present exactly once, no task
// is allocated twice, no node is over capacity, no claim outlives its ttl,
// the schedulers' records agree with the nodes.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/claimsched-crash-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

std::vector<std::string> sim_args(const std::string& dir, bool resume, const std::string& sync) {
  std::vector<std::string> a{CLAIMSCHED_BINARY, "sim", "--quiet", "--json", "--data-dir", dir};
  if (resume) {
    a.push_back("--resume");
  } else {
    for (const char* x : {"--nodes", "150", "--partitions", "2", "--tasks", "30000", "--tasks-per-job",
                          "10", "--churn", "--waves", "6", "--task-runtime", "150ms", "--seed", "11"})
      a.push_back(x);
  }
  a.push_back("--sync");
  a.push_back(sync);
  return a;
}

uint64_t acknowledged(const std::string& dir) {
  std::error_code ec;
  auto size = fs::file_size(dir + "/acked.log", ec);
  return ec ? 0 : size / 8;
}

void kill_and_resume(const std::string& sync, uint64_t seed) {
  TempDir dir;
  std::string log = dir.path + "/runs.log";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> delay_ms(150, 1200);
  uint64_t acked_before = 0;
  for (int round = 0; round < 4; ++round) {
    BackgroundProcess p(sim_args(dir.path, round > 0, sync), log);
    ASSERT_TRUE(p.started());
    auto wait = std::chrono::milliseconds(delay_ms(rng));
    std::this_thread::sleep_for(wait);
    if (!p.running()) {
      // It finished before the kill: its own check must have passed.
      EXPECT_EQ(p.wait(), 0) << "round " << round << ", see " << log;
      break;
    }
    p.kill(SIGKILL);
    p.wait();
    uint64_t acked = acknowledged(dir.path);
    EXPECT_GE(acked, acked_before) << "the acknowledged log only grows";
    acked_before = acked;
  }
  // The last run finishes; its check covers everything acknowledged so far.
  auto args = sim_args(dir.path, true, sync);
  std::string command;
  for (const auto& a : args) command += a + " ";
  auto r = run_command(command + "2>>" + log);
  ASSERT_EQ(r.exit_code, 0) << r.out << "\n(see " << log << ")";
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_TRUE(j["resumed"].get<bool>());
  EXPECT_EQ(j["jobs"].get<uint64_t>(), 3000u) << "every job of the load, exactly once";
  EXPECT_EQ(j["unplaced"].get<uint64_t>(), 0u);
  EXPECT_GT(acknowledged(dir.path), 0u);
}

TEST(CrashTest, KilledRunsResumeWithoutLosingOrDoublingWork) {
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    kill_and_resume("batch", seed);
  }
}

TEST(CrashTest, SyncNoneSurvivesAKilledProcessToo) {
  // Without fsync the OS still has every write a killed process made.
  kill_and_resume("none", 3);
}

TEST(CrashTest, ADataDirectoryIsNotReusedByAccidentAndResumeNeedsOne) {
  TempDir dir;
  auto first = run_command(std::string(CLAIMSCHED_BINARY) +
                           " sim --quiet --nodes 20 --partitions 1 --tasks 200 --data-dir " + dir.path);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto again = run_command(std::string(CLAIMSCHED_BINARY) +
                           " sim --quiet --nodes 20 --tasks 200 --data-dir " + dir.path + " 2>&1");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.out.find("--resume"), std::string::npos) << again.out;
  TempDir empty;
  auto nothing = run_command(std::string(CLAIMSCHED_BINARY) + " sim --quiet --resume --data-dir " +
                             empty.path + " 2>&1");
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("no run to resume"), std::string::npos) << nothing.out;
}

}  // namespace
}  // namespace claimsched::testing
