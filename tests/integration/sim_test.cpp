// `claimsched sim` end to end at a small scale: the run finishes, places the
// load, and its own invariant check passes.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

nlohmann::json run_sim(const std::string& flags, int expected_exit = 0) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --json --quiet " + flags);
  EXPECT_EQ(r.exit_code, expected_exit) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
  return j;
}

void expect_required_keys(const nlohmann::json& j) {
  for (const char* key :
       {"placements", "placements_per_sec", "claims_per_placement", "conflicts_per_placement",
        "latency_p50_ms", "latency_p99_ms", "utilization", "peak_rss_bytes", "bytes_per_node",
        "bytes_per_pending_task", "invariants_ok"})
    EXPECT_TRUE(j.contains(key)) << "missing key " << key;
}

TEST(SimTest, PartitionedRunPlacesEverythingAndHoldsTheInvariants) {
  auto j = run_sim("--nodes 200 --partitions 2 --tasks 20000 --tasks-per-job 10 --seed 3");
  expect_required_keys(j);
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["placements"].get<uint64_t>(), 20000u);
  EXPECT_EQ(j["unplaced"].get<uint64_t>(), 0u);
  EXPECT_NEAR(j["utilization"].get<double>(), 0.9, 0.02);
  EXPECT_GT(j["placements_per_sec"].get<double>(), 0.0);
  EXPECT_LT(j["claims_per_placement"].get<double>(), 0.5) << "tasks are batched per claim";
}

TEST(SimTest, OverlappingSchedulersRaceWithoutOvercommitting) {
  for (const char* cas : {"fit", "strict"}) {
    auto j = run_sim(std::string("--nodes 100 --partitions 4 --overlap --same-start --tasks 10000 --cas ") + cas);
    EXPECT_TRUE(j["invariants_ok"].get<bool>()) << cas << ": " << j.dump(2);
    // Racing schedulers pack less tightly than one, so at 90% a few tasks may
    // find no node with room left; invariants_ok includes that none of them
    // would fit anywhere (not stranded by a stale view). How many depends on
    // how the races fall: 9,890 placed was seen under ASan on a loaded
    // machine, so the floor is a bound on the loss (2%), not a typical run.
    EXPECT_EQ(j["placements"].get<uint64_t>() + j["unplaced"].get<uint64_t>(), 10000u) << cas;
    EXPECT_GE(j["placements"].get<uint64_t>(), 9800u) << cas;
    EXPECT_GT(j["conflicts"].get<uint64_t>(), 0u) << cas << ": schedulers on one fill order must collide";
  }
}

TEST(SimTest, WithThePolicyOnEveryAllotmentHoldsAndEveryReservationGetsAWholeMachine) {
  auto j = run_sim("--nodes 400 --partitions 2 --tasks 40000 --policy --policy-interval 100ms --seed 5");
  // invariants_ok includes the policy's: no user past an allotment, each
  // reservation alone on a machine of its memory; what waits for an
  // allotment is not stranded.
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_TRUE(j["policy"].get<bool>());
  EXPECT_GT(j["reserved_machines"].get<uint64_t>(), 0u) << j.dump(2);
  EXPECT_GT(j["non_preemptible_tasks"].get<uint64_t>(), 0u) << j.dump(2);
  EXPECT_GT(j["jobs_refused_by_allotment"].get<uint64_t>(), 0u) << "user0's own allotment binds: " << j.dump(2);
  // A reservation is one task where other jobs have ten.
  EXPECT_EQ(j["placements"].get<uint64_t>() + j["unplaced"].get<uint64_t>(), j["tasks"].get<uint64_t>());
  EXPECT_LT(j["tasks"].get<uint64_t>(), 40000u) << j.dump(2);
}

TEST(SimTest, ThePolicyIsRefusedWithOverlappingPartitions) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --policy --overlap --quiet 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--policy cannot be combined with --overlap"), std::string::npos) << r.out;
}

TEST(SimTest, ChurnPlacesMoreTasksThanTheClusterHoldsAtOnce) {
  auto j = run_sim("--nodes 50 --partitions 2 --tasks 8000 --churn --waves 4 --task-runtime 100ms");
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["placements"].get<uint64_t>(), 8000u);
}

TEST(SimTest, GangsArePlacedWhole) {
  auto j = run_sim("--nodes 60 --partitions 2 --tasks 6000 --tasks-per-job 20 --gang-fraction 0.5 --utilization 0.7");
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["placements"].get<uint64_t>(), 6000u);
}

TEST(SimTest, BadFlagsGiveAClearErrorAndExitCode) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --utilization 1.5 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--utilization"), std::string::npos) << r.out;
  r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --cas maybe 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--cas"), std::string::npos) << r.out;
  r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --node-sync-interval 2s 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--node-sync-interval must be in [0s, 1s]"), std::string::npos) << r.out;
}

// A durable run: the node store's bursts share fsyncs (its commit delay), the
// placements' CPU time is reported, and the run holds its invariants.
TEST(SimTest, ADurableRunsNodeStoreGathersItsBatchesAndItsCpuIsReported) {
  char tmpl[] = "/tmp/claimsched-simtest-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  auto started = std::chrono::steady_clock::now();
  auto j = run_sim("--nodes 200 --partitions 2 --tasks 20000 --data-dir " + dir + "/data --sync batch");
  auto lived = std::chrono::steady_clock::now() - started;
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["placements"].get<uint64_t>(), 20000u);
  auto batches = j["node_store"]["batches"].get<uint64_t>();
  auto syncs = j["node_store"]["syncs"].get<uint64_t>();
  EXPECT_GT(batches, 1000u) << "one node store batch per confirmed claim";
  // At most one fsync per 10 ms (kNodeStoreSyncInterval) of the process's
  // life; without the delay this run made ~40 in ~150 ms.
  EXPECT_LE(syncs, static_cast<uint64_t>(lived / std::chrono::milliseconds(10)) + 1) << j["node_store"].dump();
  EXPECT_GT(j["placement_cpu_s"].get<double>(), 0.0);
  EXPECT_GT(j["cpu_us_per_placement"].get<double>(), 0.0);
}

// Bug 7 of issue 13: `sim --nodes 10 --tasks 1000000` reported 801,075 tasks
// "not placed" and exited 0. Tasks smaller than one millicore are rounded
// up, so such a load can never fit: it is refused before it runs, saying how
// many tasks would; an uneven split of nodes over pools is refused the same
// way.
TEST(SimTest, ALoadThatCannotFitIsRefusedNotReportedAsDone) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --quiet --nodes 10 --tasks 1000000 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("smaller than one cpu millicore"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Use at most 180000 tasks"), std::string::npos) << r.out;
  r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --quiet --nodes 10 --tasks 100000 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("leave pool-2 with"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
