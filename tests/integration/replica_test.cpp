// The replica stream end to end: standby replicas that start after the load
// began bootstrap from a checkpoint, follow their primary's change log, and
// end equal to it record by record (the sim's own check compares them).

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

TEST(ReplicaTest, LateReplicasBootstrapFollowAndEndEqualToTheirPrimaries) {
  char tmpl[] = "/tmp/claimsched-replica-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto r = run_command(std::string(CLAIMSCHED_BINARY) +
                       " sim --json --quiet --nodes 200 --partitions 2 --tasks 40000 --churn --waves 4"
                       " --task-runtime 150ms --data-dir " + dir + " --replicas --replica-delay 200ms");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_TRUE(j["invariants_ok"].get<bool>()) << j.dump(2);
  EXPECT_TRUE(j["replicas"].get<bool>());
  EXPECT_EQ(j["replica_bootstraps"].get<uint64_t>(), 2u) << "each late replica starts from a checkpoint";
  EXPECT_GT(j["replica_max_sequence_lag"].get<uint64_t>(), 0u) << "they did follow a moving primary";
  EXPECT_TRUE(j.contains("replica_lag_p99_ms"));
}

}  // namespace
}  // namespace claimsched::testing
