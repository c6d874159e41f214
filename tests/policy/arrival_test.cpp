// The policy's figures over many cycles in virtual time: how soon a job that
// arrives in a full cluster reaches its fair share, at what preemption cost.

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

// The "done" figures, at the policy level (the lead's actor-level sim
// test runs the same policy through the scheduler actor): a job that arrives
// when the cluster is full reaches 90% of its fair share within a bounded
// number of cycles after its starvation timeout, with about one preemption per
// reclaimed task. 20 nodes of 16 cpu full of user a's 1-cpu tasks; user b
// arrives at t=0 wanting as many: fair share 160 tasks each. Cycles every
// second (virtual time); 30s timeout, 5s backoff, no aggressive starvation:
// each node can start one preempting task per 5s.
struct SimFigures {
  int seconds_to_90 = -1;
  uint32_t preemptions = 0;
};

/// `churn`: a's tasks end after 60s (and are queued again: demand unchanged).
SimFigures arrival_in_a_full_cluster(double tolerance, bool churn) {
  SnapshotBuilder s;
  s.preemption().fair_share_starvation_tolerance = tolerance;
  s.now(sec(60)).pool("root").cls("batch", "root").nodes(1, 20, "root", "cpu=16");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 320; ++i) a.running(static_cast<uint32_t>(1 + i % 20), sec(1 + i % 60), true);
  s.job(2, "b", "batch").pending(320);
  Snapshot snap = s.build();
  PolicyState state;
  SimFigures out;
  for (int t = 0; t < 300 && out.seconds_to_90 < 0; ++t) {
    auto r = run(snap, state);
    out.preemptions += r.plan.stats.preemptions;
    const auto& b = job(r, 2);
    EXPECT_EQ(b.fair_tasks, 160.0);
    if (b.running >= 0.9 * b.fair_tasks) out.seconds_to_90 = t;
    snap = apply_plan(snap, r, snap.now + 1s);
    state = r.next_state;
    if (churn) {
      auto& allocs = snap.jobs[0].allocations;
      auto done = std::remove_if(allocs.begin(), allocs.end(),
                                 [&](const AllocationInfo& x) { return snap.now - x.start >= 60s; });
      snap.jobs[0].pending += static_cast<uint32_t>(allocs.end() - done);
      allocs.erase(done, allocs.end());
    }
  }
  return out;
}

TEST(PolicySim, ArrivalInAFullClusterReachesNinetyPercentOfItsFairShare) {
  // Without churn, preemption alone: it stops when b is within the tolerance,
  // so the tolerance must be above 0.9 for b to reach 90% this way.
  auto f = arrival_in_a_full_cluster(0.95, false);
  std::printf(
      "[policy sim] no churn, tolerance 0.95: 90%% of fair share after %ds (timeout 30s), %u preemptions "
      "for 144 tasks: %.2f per reclaimed quantum\n",
      f.seconds_to_90, f.preemptions, f.preemptions / 144.0);
  // Nothing moves before the starvation timeout; then every node starts one
  // task for b per 5s backoff while it has preemptible allocations of a (a's
  // newest 160 tasks: 5 to 11 per node, as a's start times fall): 41s in all.
  ASSERT_GE(f.seconds_to_90, 30);
  EXPECT_LE(f.seconds_to_90, 30 + 45);
  EXPECT_LE(f.preemptions / 144.0, 1.1);

  // With a's tasks ending after 60s, YTsaurus's default tolerance (0.8): the
  // room that frees up goes to b first (least satisfied), preemption does the rest.
  auto g = arrival_in_a_full_cluster(0.8, true);
  std::printf("[policy sim] churn (60s tasks), tolerance 0.8: 90%% of fair share after %ds, %u preemptions\n",
              g.seconds_to_90, g.preemptions);
  ASSERT_GE(g.seconds_to_90, 0);
  EXPECT_LE(g.seconds_to_90, 60);
  EXPECT_LE(g.preemptions / 144.0, 1.1);
}

}  // namespace
}  // namespace claimsched::core::policy
