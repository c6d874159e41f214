// Durability under kill -9: bench/crash_loop.sh runs `claimsched sim
// --data-dir` on a churning load, kills it at seeded moments chosen by the
// run's progress (right after start, while a store is being made, at the
// first acknowledged job, at a fraction of the load's writes), resumes it
// after every kill and finally lets it finish. The resumed run's own check
// then proves: every acknowledged job is present exactly once, no task is
// allocated twice, no node is over capacity, no claim outlives its ttl, the
// schedulers' records agree with the nodes. Progress, not milliseconds,
// places the kills, so the test means the same on a slow and a fast machine.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/claimsched-crash-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

/// Runs the crash loop; returns its JSON summary.
nlohmann::json crash_loop(const std::string& options) {
  auto r = run_command(std::string(CLAIMSCHED_SOURCE_DIR) + "/bench/crash_loop.sh --json --tasks 12000 --waves 4 " +
                       options + " --binary " + CLAIMSCHED_BINARY);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return j.is_discarded() ? nlohmann::json::object() : j;
}

void expect_nothing_lost(const nlohmann::json& j) {
  EXPECT_EQ(j.value("failures", -1), 0) << j.dump(2);
  EXPECT_EQ(j.value("lost_acked_jobs", -1), 0) << j.dump(2);
  EXPECT_EQ(j.value("double_allocations", -1), 0) << j.dump(2);
}

TEST(CrashTest, KilledRunsResumeWithoutLosingOrDoublingWork) {
  // 8 runs x 3 kills: a couple of dozen kills across every stage.
  auto j = crash_loop("--runs 8 --kills 3 --seed 1 --sync batch");
  expect_nothing_lost(j);
  EXPECT_GE(j.value("kills", 0), 16) << j.dump(2);
  for (const char* stage : {"start", "create", "first_ack", "mid"})
    EXPECT_GE(j["kills_by_stage"].value(stage, 0), 1) << "no kill at stage " << stage << ": " << j.dump(2);
}

TEST(CrashTest, SyncNoneSurvivesAKilledProcessToo) {
  // Without fsync the OS still has every write a killed process made.
  auto j = crash_loop("--runs 3 --kills 3 --seed 2 --sync none");
  expect_nothing_lost(j);
  EXPECT_GE(j.value("kills", 0), 6) << j.dump(2);
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
