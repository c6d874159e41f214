// The policy's model of a pool's nodes: whether any node can hold one task
// of a job is asked of the Pareto front of the nodes' capacities, not of
// every node.

#include <gtest/gtest.h>

#include <string>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

// Whether any node can hold one task of a job is asked of the pool's node
// shapes (the Pareto front of their capacities). Many nodes of few shapes and
// many distinct shapes are kept apart differently; in both, a job that only
// the one largest node in a dimension can hold is placeable, and one no node
// can hold is unresolvable.
TEST(PolicyModel, AJobFitsWhenAnyNodeShapeHoldsIt) {
  for (uint32_t shapes : {3u, 24u}) {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "root");
    // Node i has i cpus and (shapes + 1 - i) GiB: no shape dominates another.
    // Every shape twice, in two runs, so repeats are not next to each other.
    for (uint32_t round = 0; round < 2; ++round)
      for (uint32_t i = 1; i <= shapes; ++i)
        s.node(round * shapes + i, "root",
               "cpu=" + std::to_string(i) + ",memory=" + std::to_string(shapes + 1 - i) + "Gi");
    s.job(1, "u1", "batch").per_task("cpu=" + std::to_string(shapes) + ",memory=1Gi").pending(1);
    s.job(2, "u2", "batch").per_task("cpu=1,memory=" + std::to_string(shapes) + "Gi").pending(1);
    s.job(3, "u3", "batch").per_task("cpu=" + std::to_string(shapes) + ",memory=2Gi").pending(1);
    auto r = run(s.build());
    EXPECT_EQ(job(r, 1).pending_reason.find("unresolvable"), std::string::npos)
        << shapes << " shapes: " << job(r, 1).pending_reason;
    EXPECT_EQ(job(r, 2).pending_reason.find("unresolvable"), std::string::npos)
        << shapes << " shapes: " << job(r, 2).pending_reason;
    EXPECT_NE(job(r, 3).pending_reason.find("unresolvable"), std::string::npos)
        << shapes << " shapes: " << job(r, 3).pending_reason;
  }
}

// Shapes that others dominate are dropped from a pool's front (in place,
// each compared with the ones kept and those not yet looked at): a chain of
// dominated shapes between two that none dominates leaves every job the
// largest of each can hold placeable, and one none holds unresolvable.
TEST(PolicyModel, DominatedNodeShapesLeaveTheFrontWhole) {
  SnapshotBuilder s;
  s.pool("root").cls("batch", "root");
  s.node(1, "root", "cpu=1,memory=6Gi");
  for (uint32_t i = 1; i <= 4; ++i)
    s.node(1 + i, "root", "cpu=" + std::to_string(i) + ",memory=" + std::to_string(i) + "Gi");
  s.node(6, "root", "cpu=6,memory=1Gi");
  s.job(1, "u1", "batch").per_task("cpu=1,memory=6Gi").pending(1);
  s.job(2, "u2", "batch").per_task("cpu=4,memory=4Gi").pending(1);
  s.job(3, "u3", "batch").per_task("cpu=6,memory=1Gi").pending(1);
  s.job(4, "u4", "batch").per_task("cpu=5,memory=2Gi").pending(1);
  s.job(5, "u5", "batch").per_task("cpu=2,memory=5Gi").pending(1);
  auto r = run(s.build());
  for (uint64_t id : {1, 2, 3})
    EXPECT_EQ(job(r, id).pending_reason.find("unresolvable"), std::string::npos)
        << id << ": " << job(r, id).pending_reason;
  for (uint64_t id : {4, 5})
    EXPECT_NE(job(r, id).pending_reason.find("unresolvable"), std::string::npos)
        << id << ": " << job(r, id).pending_reason;
}

}  // namespace
}  // namespace claimsched::core::policy
