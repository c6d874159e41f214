// Scenario tests of the fair-share and preemption policy, from the two source
// documents' own examples (DUCC's share quantum, YTsaurus's
// aggressive_preemption_satisfaction_threshold = 0.5) and from cases computed
// by hand. Shares are fixed point: share(3, 8) is exactly 0.375.

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

// ---------------------------------------------------------------------------
// DUCC: "suppose the share quantum is 15GB. A job that declares it requires
// 14GB per process is assigned one quantum share per process. If that job is
// assigned 20 shares, it will be allocated 20 processes across the cluster. A
// job that declares 28GB per process would be assigned two quanta per process.
// If that job is assigned 20 shares, it is allocated 10 processes."
//
// 5 machines of 120Gi = 40 quanta. Two users, one job each, equal shares:
// 20 quanta each. 14Gi rounds up to 1 quantum: 20 processes; 28Gi rounds up to
// 2 quanta: 10 processes. Both hold 300Gi (20 x 15Gi).
TEST(DuccScenario, QuantumExampleTwentySharesAreTwentyOrTenProcesses) {
  SnapshotBuilder s;
  s.settings().quantum = 15LL << 30;
  s.pool("root").cls("normal", "root").nodes(1, 5, "root", "memory=120Gi");
  s.job(1, "u1", "normal").per_task("memory=14Gi").pending(100);
  s.job(2, "u2", "normal").per_task("memory=28Gi").pending(100);
  auto r = run(s.build());

  const auto& small = job(r, 1);
  const auto& big = job(r, 2);
  EXPECT_EQ(small.task_share, share(1, 40));  // one quantum of 40
  EXPECT_EQ(big.task_share, share(2, 40));    // two quanta
  EXPECT_EQ(small.fair_share_share, share(1, 2));
  EXPECT_EQ(big.fair_share_share, share(1, 2));
  EXPECT_DOUBLE_EQ(small.fair_tasks, 20.0);
  EXPECT_DOUBLE_EQ(big.fair_tasks, 10.0);
  EXPECT_EQ(small.fair_share, res("memory=300Gi"));
  EXPECT_EQ(big.fair_share, res("memory=300Gi"));
  // The what-of phase finds the machines: 8 + 8 + 4 small ones, then 2 + 4 + 4
  // big ones; the cluster is then full.
  EXPECT_EQ(placed(r, 1), 20u);
  EXPECT_EQ(placed(r, 2), 10u);
  EXPECT_TRUE(r.plan.removals.empty());
}

// ---------------------------------------------------------------------------
// YTsaurus: "Suppose aggressive preemption is on and
// aggressive_preemption_satisfaction_threshold is 0.5. Then at least half of
// all allocations on the cluster (by resources) are preemptible, so there is a
// node where half of the resources are aggressively preemptible, and an
// aggressively starving operation whose allocations are at most half a node
// can be scheduled."
//
// 4 nodes of 8 cpu. Jobs 1 and 2 (users a, b) run 16 tasks of 1 cpu each; task
// i started at i s on node i%4+1, so every node holds 4 tasks of each. Job 3
// (user c) wants 2 tasks of 4 cpu (half a node) and has been below its fair
// share for 10 minutes.
//
// How much: three users, equal shares of 1/3; c needs only 8/32 = 1/4, the
// 3/4 left split equally: a and b get 3/8 = 12 tasks each, c 1/4 = 2 tasks.
// Classes of job 1's allocations, by the usage of the allocations before them:
//   k < 0.5 * 12 = 6            -> non_preemptible          (6 tasks, 0-5)
//   6 <= k < 1.0 * 12           -> aggressively_preemptible (6 tasks, 6-11)
//   k >= 12                     -> preemptible              (4 tasks, 12-15)
// Each node has only 2 preemptible cpu (tasks 12-15 of a and b are spread),
// so regular preemption cannot make room for 4 cpu; aggressive preemption
// can: node 1 has 2 preemptible + 2 aggressively preemptible cpu.
SnapshotBuilder ytsaurus_threshold_example() {
  SnapshotBuilder s;
  s.preemption().aggressive_preemption_satisfaction_threshold = 0.5;
  s.preemption().preemption_satisfaction_threshold = 1.0;
  s.preemption().enable_aggressive_starvation = true;
  s.settings().defragmentation = false;
  s.now(sec(600)).pool("root").cls("batch", "root").nodes(1, 4, "root", "cpu=8");
  auto a = s.job(1, "a", "batch").per_task("cpu=1");
  for (int i = 0; i < 16; ++i) a.running(static_cast<uint32_t>(i % 4 + 1), sec(i));
  auto b = s.job(2, "b", "batch").per_task("cpu=1");
  for (int i = 0; i < 16; ++i) b.running(static_cast<uint32_t>(i % 4 + 1), sec(i));
  s.job(3, "c", "batch").per_task("cpu=4").pending(2);
  return s;
}

PolicyState below_since(uint64_t job, TimePoint since) {
  PolicyState st;
  st.job_below_fair_share_since.emplace_back(JobId{job}, since);
  return st;
}

TEST(YtsaurusScenario, ThresholdExampleClassifiesAllocationsByPrefix) {
  auto r = run(ytsaurus_threshold_example().build(), below_since(3, sec(0)));
  for (uint64_t id : {1, 2}) {
    EXPECT_EQ(job(r, id).fair_share_share, share(3, 8)) << id;
    EXPECT_DOUBLE_EQ(job(r, id).fair_tasks, 12.0);
    auto cls = classes_of(r, id);
    ASSERT_EQ(cls.size(), 16u);
    for (size_t k = 0; k < 16; ++k) {
      auto want = k < 6    ? AllocationClass::non_preemptible
                  : k < 12 ? AllocationClass::aggressively_preemptible
                           : AllocationClass::preemptible;
      EXPECT_EQ(cls[k], want) << "job " << id << " allocation " << k;
    }
    // "At least half of the allocations are (aggressively) preemptible."
    EXPECT_GE(count_class(r, id, AllocationClass::aggressively_preemptible) +
                  count_class(r, id, AllocationClass::preemptible),
              8u);
  }
  EXPECT_EQ(job(r, 3).fair_share_share, share(1, 4));
  EXPECT_EQ(job(r, 3).scheduling, SchedulingStatus::below_fair_share);
  EXPECT_EQ(job(r, 3).starvation, StarvationStatus::aggressively_starving);
  EXPECT_EQ(r.pool("root")->fair_share_share, kShareOne);
}

TEST(YtsaurusScenario, ThresholdExampleAggressiveStageSchedulesHalfNodeAllocations) {
  auto r = run(ytsaurus_threshold_example().build(), below_since(3, sec(0)));
  // One new allocation per node and stage: node 1, then node 2.
  ASSERT_EQ(r.plan.placements.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& p = r.plan.placements[i];
    EXPECT_EQ(p.job, JobId{3});
    EXPECT_EQ(p.node, NodeId{static_cast<uint32_t>(i + 1)});
    EXPECT_EQ(p.stage, Stage::aggressive);
    EXPECT_EQ(p.waits_for.size(), 4u);
  }
  // On each node: the preemptible tasks of b and a (newest first, b before a at
  // equal start), then their aggressively preemptible ones. 8 in all.
  ASSERT_EQ(r.plan.removals.size(), 8u);
  std::vector<std::string> removed;
  for (const auto& rm : r.plan.removals) {
    EXPECT_EQ(rm.kind, RemovalKind::preemption);
    EXPECT_EQ(rm.reason, RemovalReason::aggressive_starvation);
    ASSERT_TRUE(rm.preemptor.has_value());
    EXPECT_EQ(*rm.preemptor, JobId{3});
    removed.push_back(std::to_string(rm.task.job.value) + "." + std::to_string(rm.task.index));
  }
  EXPECT_EQ(removed, (std::vector<std::string>{"2.12", "1.12", "2.8", "1.8", "2.13", "1.13", "2.9", "1.9"}));
  EXPECT_EQ(r.plan.stats.preemptions, 8u);
  EXPECT_EQ(r.plan.stats.by_reason[static_cast<size_t>(RemovalReason::aggressive_starvation)], 8u);
  // a and b keep exactly their fair share of 12 tasks.
  EXPECT_EQ(job(r, 1).removed, 4u);
  EXPECT_EQ(job(r, 2).removed, 4u);
}

TEST(YtsaurusScenario, WithoutAggressiveStarvationTheHalfNodeJobWaits) {
  auto s = ytsaurus_threshold_example();
  s.preemption().enable_aggressive_starvation = false;
  auto r = run(s.build(), below_since(3, sec(0)));
  EXPECT_EQ(job(r, 3).starvation, StarvationStatus::starving);
  EXPECT_TRUE(r.plan.placements.empty());
  EXPECT_TRUE(r.plan.removals.empty());
  EXPECT_NE(job(r, 3).pending_reason.find("no preemptible allocations make room"), std::string::npos)
      << job(r, 3).pending_reason;
}

// ---------------------------------------------------------------------------
// DRF with complementary demands. One pool of 15 cpu and 40Gi; two classes of
// equal weight: "cache" tasks take <1 cpu, 4Gi> (dominant: memory, 1/10 of
// the pool per task), "analytics" tasks <3 cpu, 1Gi> (dominant: cpu, 1/5).
// Equal dominant shares t: cache runs 10t tasks, analytics 5t; cpu binds first:
// 10t + 3 * 5t = 15 -> t = 0.6. Both get 0.6 of their dominant resource
// (more than half: their demands complement each other): cache 6 tasks (6 cpu,
// 24Gi), analytics 3 tasks (9 cpu, 3Gi).
TEST(DrfScenario, ComplementaryDemandsBothGetMoreThanHalfOfTheirDominantResource) {
  SnapshotBuilder s;
  s.pool("root").cls("cache", "root").cls("analytics", "root").node(1, "root", "cpu=15,memory=40Gi");
  s.job(1, "alice", "cache").per_task("cpu=1,memory=4Gi").pending(100);
  s.job(2, "bob", "analytics").per_task("cpu=3,memory=1Gi").pending(100);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, share(6, 10));
  EXPECT_EQ(job(r, 2).fair_share_share, share(6, 10));
  EXPECT_EQ(job(r, 1).fair_share, res("cpu=6,memory=24Gi"));
  EXPECT_EQ(job(r, 2).fair_share, res("cpu=9,memory=3Gi"));
  EXPECT_EQ(placed(r, 1), 6u);
  EXPECT_EQ(placed(r, 2), 3u);
  ASSERT_EQ(r.classes.size(), 2u);
  for (const auto& c : r.classes) EXPECT_EQ(c.fair_share_share, share(6, 10)) << c.name;
}

// Progressive filling: when cpu runs out the jobs that use it stop, and the
// job that needs only memory keeps growing. 4 cpu, 16Gi; three users:
// X <1 cpu, 1Gi> and Z <1 cpu> (dominant cpu, 1/4 per task), Y <1Gi> (1/16).
// Equal t: cpu 4t + 4t = 4 -> t = 1/2: X and Z 2 tasks each. Memory left:
// 16 - 2 = 14Gi, all for Y: 14 tasks, dominant share 14/16 = 7/8.
TEST(DrfScenario, ProgressiveFillingGivesWhatCpuJobsCannotUseToTheMemoryJob) {
  SnapshotBuilder s;
  s.pool("root").cls("batch", "root").node(1, "root", "cpu=4,memory=16Gi");
  s.job(1, "x", "batch").per_task("cpu=1,memory=1Gi").pending(100);
  s.job(2, "y", "batch").per_task("memory=1Gi").pending(100);
  s.job(3, "z", "batch").per_task("cpu=1").pending(100);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, share(1, 2));
  EXPECT_EQ(job(r, 3).fair_share_share, share(1, 2));
  EXPECT_EQ(job(r, 2).fair_share_share, share(7, 8));
  EXPECT_DOUBLE_EQ(job(r, 2).fair_tasks, 14.0);
  EXPECT_EQ(placed(r, 1), 2u);
  EXPECT_EQ(placed(r, 2), 14u);
  EXPECT_EQ(placed(r, 3), 2u);
}

// ---------------------------------------------------------------------------
// Priority tiers (DUCC: the best priority gets all it can use, the rest goes to
// the next) and weights within a tier. 20 cpu. urgent (priority 10) wants 4 ->
// 0.2. Tier 0: heavy (weight 3) and light (weight 1) both want everything:
// the 16 cpu left split 3:1 -> heavy 12 (0.6), light 4 (0.2).
TEST(DuccScenario, PriorityTiersThenWeights) {
  SnapshotBuilder s;
  s.pool("root").node(1, "root", "cpu=20");
  s.cls("urgent", "root", 10).cls("heavy", "root", 0, 3).cls("light", "root", 0, 1);
  s.job(1, "ops", "urgent").pending(4);
  s.job(2, "ann", "heavy").pending(100);
  s.job(3, "bob", "light").pending(100);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, share(2, 10));
  EXPECT_EQ(job(r, 2).fair_share_share, share(6, 10));
  EXPECT_EQ(job(r, 3).fair_share_share, share(2, 10));
  EXPECT_EQ(placed(r, 1), 4u);
  EXPECT_EQ(placed(r, 2), 12u);
  EXPECT_EQ(placed(r, 3), 4u);
}

// When the best tier wants everything, the next gets nothing.
TEST(DuccScenario, BestPriorityTakesAllItCanUse) {
  SnapshotBuilder s;
  s.pool("root").node(1, "root", "cpu=8").cls("urgent", "root", 10).cls("batch", "root", 0);
  s.job(1, "ops", "urgent").pending(100);
  s.job(2, "bob", "batch").pending(100);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, kShareOne);
  EXPECT_EQ(job(r, 2).fair_share_share, 0);
  EXPECT_EQ(placed(r, 1), 8u);
  EXPECT_NE(job(r, 2).pending_reason.find("fair share is 0"), std::string::npos) << job(r, 2).pending_reason;
}

// Users in a class share equally, then jobs of a user equally; a capped entity
// leaves its part to the others (water-filling). 12 cpu, one class; alice has
// jobs 1 and 2, bob job 3 (wants 2). bob: 2; alice: 10, split 5 + 5... but job
// 2 wants only 1: job 1 gets 9.
TEST(DuccScenario, UsersThenJobsWithWaterFilling) {
  SnapshotBuilder s;
  s.pool("root").cls("batch", "root").node(1, "root", "cpu=12");
  s.job(1, "alice", "batch").pending(100);
  s.job(2, "alice", "batch").pending(1);
  s.job(3, "bob", "batch").pending(2);
  auto r = run(s.build());
  EXPECT_DOUBLE_EQ(job(r, 1).fair_tasks, 9.0);
  EXPECT_DOUBLE_EQ(job(r, 2).fair_tasks, 1.0);
  EXPECT_DOUBLE_EQ(job(r, 3).fair_tasks, 2.0);
  ASSERT_EQ(r.users.size(), 2u);
  EXPECT_EQ(r.users[0].user, "alice");
  EXPECT_EQ(r.users[0].fair_share_share, share(10, 12));
}

// ---------------------------------------------------------------------------
// Allotment (DUCC): non-preemptible requests are capped per user; the class's
// allotment with per-user overrides, and the global allotment with the users'
// registry overrides. Two machines of 16 cpu, 64Gi; tasks of 16Gi.
TEST(DuccScenario, AllotmentCapsFixedShareRequests) {
  SnapshotBuilder s;
  s.settings().global_allotment = limits("memory=100Gi");
  s.user("bob", "memory=16Gi");
  s.pool("root").nodes(1, 2, "root", "cpu=16,memory=64Gi");
  s.cls("svc", "root", 10, 1, ClassPolicy::fixed_share);
  s.last_class().allotment = limits("memory=32Gi");
  s.last_class().user_allotments = {{"vip", limits("memory=64Gi")}};
  s.job(1, "alice", "svc").per_task("cpu=1,memory=16Gi").pending(2).submitted(sec(1));  // 32Gi: fits 32Gi
  s.job(2, "alice", "svc").per_task("cpu=1,memory=16Gi").pending(1).submitted(sec(2));  // 48Gi > 32Gi
  s.job(3, "vip", "svc").per_task("cpu=1,memory=16Gi").pending(3).submitted(sec(3));    // 48Gi <= 64Gi
  s.job(4, "bob", "svc").per_task("cpu=1,memory=16Gi").pending(2).submitted(sec(4));    // 32Gi > bob's 16Gi
  auto r = run(s.build());
  EXPECT_EQ(placed(r, 1), 2u);
  EXPECT_EQ(placed(r, 2), 0u);
  EXPECT_EQ(placed(r, 3), 3u);
  EXPECT_EQ(placed(r, 4), 0u);
  EXPECT_NE(job(r, 2).pending_reason.find("allotment memory=32Gi of class 'svc'"), std::string::npos)
      << job(r, 2).pending_reason;
  EXPECT_NE(job(r, 4).pending_reason.find("allotment memory=16Gi"), std::string::npos)
      << job(r, 4).pending_reason;
  // Fair shares of granted requests are the whole request: 2 x 16Gi of 128Gi.
  EXPECT_EQ(job(r, 1).fair_share_share, share(1, 4));
  EXPECT_EQ(job(r, 3).fair_share_share, share(3, 8));
  for (const auto& p : r.plan.placements) EXPECT_EQ(p.stage, Stage::non_preemptible);
}

// A fixed_share request is one allocation: all its tasks or none. It takes the
// room of fair-share work (which is preempted for it), never the other way
// round, and its own allocations are never preemptible.
TEST(DuccScenario, FixedShareRequestPreemptsFairShareWorkAndIsNeverPreempted) {
  SnapshotBuilder s;
  s.pool("root")
      .node(1, "root", "cpu=4")
      .cls("svc", "root", 10, 1, ClassPolicy::fixed_share)
      .cls("batch", "root");
  auto b = s.job(1, "bob", "batch").pending(10);
  for (int i = 0; i < 4; ++i) b.running(1, sec(i));
  s.job(2, "ann", "svc").pending(2);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 2).fair_share_share, share(1, 2));
  EXPECT_EQ(job(r, 1).fair_share_share, share(1, 2));
  ASSERT_EQ(r.plan.removals.size(), 2u);
  for (const auto& rm : r.plan.removals) {
    EXPECT_EQ(rm.reason, RemovalReason::non_preemptible_request);
    EXPECT_EQ(rm.task.job, JobId{1});
    EXPECT_EQ(*rm.preemptor, JobId{2});
  }
  // Newest first: tasks 3 and 2.
  EXPECT_EQ(r.plan.removals[0].task.index, 3u);
  EXPECT_EQ(r.plan.removals[1].task.index, 2u);
  ASSERT_EQ(r.plan.placements.size(), 1u);
  EXPECT_EQ(r.plan.placements[0].count, 2u);
  EXPECT_EQ(r.plan.placements[0].waits_for.size(), 2u);

  // Next cycle the service runs; its allocations are non_preemptible.
  auto next = apply_plan(s.build(), r, sec(610));
  auto r2 = run(next, r.next_state);
  for (const auto& a : job(r2, 2).allocations) EXPECT_EQ(a.cls, AllocationClass::non_preemptible);
  EXPECT_TRUE(r2.plan.removals.empty());
}

// ---------------------------------------------------------------------------
// Reserve (DUCC): a whole machine whose memory matches the request within one
// quantum (15Gi), never a bigger one. Machines: n1 30Gi and n2 44Gi (2 quanta,
// rounded down), n3 60Gi (4), n4 16Gi (1). Requests of 28Gi are 2 quanta: n1
// or n2, never n3. n1 runs a fair-share task, so the first reserve takes the
// free n2, the second n1 (preempting that task), the third finds no 2-quanta
// machine left and waits. 50Gi is 4 quanta: n3. 100Gi matches nothing.
TEST(DuccScenario, ReserveMatchesMachineSizeWithinOneQuantum) {
  SnapshotBuilder s;
  s.settings().quantum = 15LL << 30;
  s.pool("root").cls("res", "root", 10, 1, ClassPolicy::reserve).cls("batch", "root");
  s.node(1, "root", "cpu=8,memory=30Gi").node(2, "root", "cpu=8,memory=44Gi");
  s.node(3, "root", "cpu=8,memory=60Gi").node(4, "root", "cpu=8,memory=16Gi");
  s.job(1, "u1", "res").per_task("memory=28Gi").pending(1).submitted(sec(1));
  s.job(2, "u2", "res").per_task("memory=28Gi").pending(1).submitted(sec(2));
  s.job(3, "u3", "res").per_task("memory=28Gi").pending(1).submitted(sec(3));
  s.job(4, "u4", "res").per_task("memory=50Gi").pending(1).submitted(sec(4));
  s.job(5, "u5", "res").per_task("memory=100Gi").pending(1).submitted(sec(5));
  s.job(6, "u6", "batch").per_task("cpu=1,memory=2Gi").running(1, sec(0));
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).reserved_node, NodeId{2});
  EXPECT_EQ(job(r, 2).reserved_node, NodeId{1});
  EXPECT_FALSE(job(r, 3).reserved_node.has_value());
  EXPECT_EQ(job(r, 4).reserved_node, NodeId{3});
  EXPECT_NE(job(r, 3).pending_reason.find("every machine of the requested size"), std::string::npos)
      << job(r, 3).pending_reason;
  EXPECT_NE(job(r, 5).pending_reason.find("unresolvable"), std::string::npos) << job(r, 5).pending_reason;
  std::vector<std::pair<uint64_t, uint32_t>> places;
  for (const auto& p : r.plan.placements) {
    places.emplace_back(p.job.value, p.node.value);
    if (p.job.value == 1) {
      EXPECT_EQ(p.per_task, res("cpu=8,memory=44Gi"));  // the whole machine
    }
  }
  // The queue claims the free machines (jobs 1 and 4); the policy empties
  // node 1 for job 2.
  std::sort(places.begin(), places.end());
  EXPECT_EQ(places, (std::vector<std::pair<uint64_t, uint32_t>>{{1, 2}, {2, 1}, {4, 3}}));
  ASSERT_EQ(r.plan.removals.size(), 1u);
  EXPECT_EQ(r.plan.removals[0].task.job, JobId{6});
  EXPECT_EQ(r.plan.removals[0].reason, RemovalReason::non_preemptible_request);
}

// ---------------------------------------------------------------------------
// Node pools (DUCC): preemptible work that exhausts its pool squats in
// subpools; squatters go before residents. root has n1 (4 cpu); its subpool
// gpu has n2 (4 cpu). batch (bound to root) runs 4 tasks on n1 and 3 on n2
// (squatters); ml (bound to gpu): job 3 runs 1 task on n2 (started last), job 2
// arrives wanting 2.
// How much: gpu first: ml jobs 2 and 3 get what they want (2 + 1 of 4 cpu),
// leaving 1; root: batch gets its 4 plus that 1 = 5 of 8 cpu.
// Job 1's allocations by start: fair share 5 tasks, so the 6th and 7th (both
// squatters on n2) are preemptible. Job 2 is starving: it preempts the newest
// squatter, not job 3's newer resident task. Next cycle, the next squatter.
TEST(DuccScenario, SquattersArePreemptedBeforeResidents) {
  SnapshotBuilder s;
  s.pool("root").pool("gpu", "root").cls("batch", "root").cls("ml", "gpu");
  s.node(1, "root", "cpu=4").node(2, "gpu", "cpu=4");
  auto b = s.job(1, "a", "batch");
  for (int i = 0; i < 4; ++i) b.running(1, sec(1 + i), /*interruptible=*/true);
  for (int i = 0; i < 3; ++i) b.running(2, sec(5 + i), /*interruptible=*/true);
  s.job(2, "b", "ml").pending(2);
  s.job(3, "c", "ml").running(2, sec(9));
  s.preemption().allocation_preemption_timeout = 30s;
  auto r = run(s.build(), below_since(2, sec(0)));

  EXPECT_EQ(job(r, 1).fair_share_share, share(5, 8));
  EXPECT_EQ(job(r, 2).fair_share_share, share(2, 4));
  EXPECT_EQ(r.pool("gpu")->fair_share_share, share(3, 4));
  auto cls = classes_of(r, 1);
  EXPECT_EQ(cls[5], AllocationClass::preemptible);
  EXPECT_EQ(cls[6], AllocationClass::preemptible);
  EXPECT_TRUE(job(r, 1).allocations[6].squatter);
  EXPECT_FALSE(job(r, 1).allocations[3].squatter);

  ASSERT_EQ(r.plan.removals.size(), 1u);
  const auto& rm = r.plan.removals[0];
  EXPECT_EQ(rm.task, (TaskRef{JobId{1}, 6}));
  EXPECT_TRUE(rm.squatter);
  EXPECT_EQ(rm.reason, RemovalReason::starvation);
  EXPECT_EQ(*rm.preemptor, JobId{2});
  EXPECT_TRUE(rm.interrupt);  // interruptible: a signal, then 30s to finish
  EXPECT_EQ(rm.kill_after, Duration{30s});
  ASSERT_EQ(r.plan.placements.size(), 1u);
  EXPECT_EQ(r.plan.placements[0].stage, Stage::preemptive);
  EXPECT_EQ(r.plan.placements[0].node, NodeId{2});

  // Next cycle (after the backoff): the next squatter, the resident untouched.
  auto r2 = run(apply_plan(s.build(), r, sec(610)), r.next_state);
  ASSERT_EQ(r2.plan.removals.size(), 1u);
  EXPECT_EQ(r2.plan.removals[0].task, (TaskRef{JobId{1}, 5}));
  EXPECT_EQ(placed(r2, 2), 1u);
  // Then everyone is at its fair share: nothing more happens.
  auto r3 = run(apply_plan(apply_plan(s.build(), r, sec(610)), r2, sec(620)), r2.next_state);
  EXPECT_TRUE(r3.plan.removals.empty());
  EXPECT_TRUE(r3.plan.placements.empty());
}

// A pool belongs to its residents: a resident takes back a squatter's task
// even when that task is within its job's fair share (non-preemptible for
// anyone else). root has n1 (4 cpu), its subpool gpu has n2 (4 cpu). batch
// job 1 squats with 2 tasks on n2 and wants 10 more; ml job 2 (resident of
// gpu) wants 4 and has been below its fair share for long.
// How much: gpu first: ml gets all of n2 (1/1 of gpu); root: batch gets n1's
// 4 cpu (4 of 8 = 1/2). Job 1 runs 2 < 4: its tasks are protected by their
// classes (non-preemptible, aggressively preemptible), but not against the
// resident: the preemptive stage on n2 takes the newest squatter.
TEST(DuccScenario, ResidentsReclaimTheirPoolFromSquattersWhateverTheirClass) {
  SnapshotBuilder s;
  s.pool("root").pool("gpu", "root").cls("batch", "root").cls("ml", "gpu");
  s.node(1, "root", "cpu=4").node(2, "gpu", "cpu=4");
  s.job(1, "a", "batch").pending(10).running(2, sec(1)).running(2, sec(2));
  s.job(2, "b", "ml").pending(4);
  auto r = run(s.build(), below_since(2, sec(0)));
  EXPECT_EQ(job(r, 2).fair_share_share, kShareOne);
  EXPECT_EQ(job(r, 1).fair_share_share, share(1, 2));
  EXPECT_NE(job(r, 1).allocations[1].cls, AllocationClass::preemptible);
  EXPECT_EQ(placed(r, 1), 4u);  // n1, all of it
  ASSERT_EQ(r.plan.removals.size(), 1u);
  EXPECT_EQ(r.plan.removals[0].task, (TaskRef{JobId{1}, 1}));
  EXPECT_TRUE(r.plan.removals[0].squatter);
  EXPECT_EQ(*r.plan.removals[0].preemptor, JobId{2});
  EXPECT_EQ(placed(r, 2), 3u);  // 2 in free room, 1 in the squatter's
}

// Non-preemptible work never squats: it waits for its own pool.
TEST(DuccScenario, NonPreemptibleWorkOnlyInItsOwnPool) {
  SnapshotBuilder s;
  s.pool("root").pool("sub", "root").cls("batch", "root").node(1, "sub", "cpu=4");
  s.job(1, "a", "batch").pending(2).preemptible(false);
  s.job(2, "b", "batch").pending(2);
  auto r = run(s.build());
  EXPECT_EQ(placed(r, 1), 0u);
  EXPECT_NE(job(r, 1).pending_reason.find("unresolvable"), std::string::npos) << job(r, 1).pending_reason;
  EXPECT_EQ(placed(r, 2), 2u);
}

// ---------------------------------------------------------------------------
// Starvation (YTsaurus): below_fair_share with tolerance, starving after
// fair_share_starvation_timeout, preemptive stages at most once per
// preemptive_scheduling_backoff per node. One node of 4 cpu full of job 1;
// job 2 arrives at 100s: fair shares 2 + 2.
TEST(YtsaurusScenario, StarvationTimeoutThenOneAllocationPerStageWithBackoff) {
  SnapshotBuilder s;
  s.now(sec(100)).pool("root").cls("batch", "root").node(1, "root", "cpu=4");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 4; ++i) a.running(1, sec(i));
  s.job(2, "b", "batch").pending(2);

  auto r1 = run(s.build());
  EXPECT_EQ(job(r1, 2).scheduling, SchedulingStatus::below_fair_share);
  EXPECT_EQ(job(r1, 2).starvation, StarvationStatus::non_starving);
  EXPECT_EQ(job(r1, 2).below_since, sec(100));
  EXPECT_TRUE(r1.plan.removals.empty());
  EXPECT_NE(job(r1, 2).pending_reason.find("starving (and preempting) in 30.0s"), std::string::npos)
      << job(r1, 2).pending_reason;

  s.now(sec(129));
  auto r2 = run(s.build(), r1.next_state);
  EXPECT_EQ(job(r2, 2).starvation, StarvationStatus::non_starving);
  EXPECT_TRUE(r2.plan.removals.empty());

  s.now(sec(130));
  auto r3 = run(s.build(), r2.next_state);
  EXPECT_EQ(job(r3, 2).starvation, StarvationStatus::starving);
  ASSERT_EQ(r3.plan.removals.size(), 1u);  // one allocation per stage
  EXPECT_EQ(r3.plan.removals[0].task, (TaskRef{JobId{1}, 3}));
  EXPECT_FALSE(r3.plan.removals[0].interrupt);
  EXPECT_EQ(r3.plan.removals[0].kill_after, Duration{0});
  ASSERT_EQ(r3.next_state.node_last_preemptive_scheduling.size(), 1u);
  EXPECT_EQ(r3.next_state.node_last_preemptive_scheduling[0].second, sec(130));

  // 2s later the node is in its backoff: nothing, though job 2 still starves
  // (usage 1/4 < 1/2 * 0.8).
  auto s4 = apply_plan(s.build(), r3, sec(132));
  auto r4 = run(s4, r3.next_state);
  EXPECT_EQ(job(r4, 2).starvation, StarvationStatus::starving);
  EXPECT_TRUE(r4.plan.removals.empty());
  EXPECT_EQ(r4.plan.stats.nodes_in_backoff, 1u);
  EXPECT_NE(job(r4, 2).pending_reason.find("preemptive_scheduling_backoff"), std::string::npos)
      << job(r4, 2).pending_reason;

  s4.now = sec(135);
  auto r5 = run(s4, r4.next_state);
  ASSERT_EQ(r5.plan.removals.size(), 1u);
  EXPECT_EQ(r5.plan.removals[0].task, (TaskRef{JobId{1}, 2}));
}

// Usage within the tolerance is "normal": 3 of a fair share of 4 tasks with
// tolerance 0.7 is 0.75 >= 0.7, so no starvation and no preemption.
TEST(YtsaurusScenario, WithinToleranceIsNotBelowFairShare) {
  SnapshotBuilder s;
  s.preemption().fair_share_starvation_tolerance = 0.7;
  s.pool("root").cls("batch", "root").node(1, "root", "cpu=8");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 5; ++i) a.running(1, sec(i));
  auto b = s.job(2, "b", "batch").pending(1);
  for (int i = 0; i < 3; ++i) b.running(1, sec(10 + i));
  auto r = run(s.build(), below_since(2, sec(0)));
  EXPECT_EQ(job(r, 2).fair_share_share, share(1, 2));
  EXPECT_EQ(job(r, 2).scheduling, SchedulingStatus::normal);
  EXPECT_EQ(job(r, 2).starvation, StarvationStatus::non_starving);
  EXPECT_TRUE(job(r, 2).below_since == kNever);
  EXPECT_TRUE(r.plan.removals.empty());
  EXPECT_TRUE(r.next_state.job_below_fair_share_since.empty());
}

// A job whose usage is below non_preemptible_resource_usage_threshold is never
// preempted, even far above its fair share.
TEST(YtsaurusScenario, NonPreemptibleResourceUsageThresholdProtectsSmallJobs) {
  SnapshotBuilder s;
  s.preemption().non_preemptible_resource_usage_threshold = limits("cpu=3");
  s.pool("root").cls("batch", "root").cls("prio", "root", 10).node(1, "root", "cpu=4");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 2; ++i) a.running(1, sec(i));
  s.job(2, "b", "prio").pending(4);
  auto r = run(s.build(), below_since(2, sec(0)));
  EXPECT_EQ(job(r, 1).fair_share_share, 0);
  EXPECT_EQ(count_class(r, 1, AllocationClass::non_preemptible), 2u);
  EXPECT_TRUE(r.plan.removals.empty());
  EXPECT_EQ(placed(r, 2), 2u);  // the free half
}

// Pool starvation: a job below its fair share starves with its pool.
TEST(YtsaurusScenario, JobsInheritTheStarvationOfTheirPool) {
  SnapshotBuilder s;
  s.pool("root").cls("batch", "root").node(1, "root", "cpu=4");
  s.job(1, "a", "batch").per_task("cpu=3").pending(1);
  s.job(2, "b", "batch").per_task("cpu=2").pending(1).running(1, sec(0));
  PolicyState st;
  st.pool_below_fair_share_since.emplace_back("root", sec(0));
  auto r = run(s.build(), st);
  EXPECT_EQ(r.pool("root")->starvation, StarvationStatus::starving);
  EXPECT_EQ(job(r, 1).own_starvation, StarvationStatus::non_starving);
  EXPECT_EQ(job(r, 1).starvation, StarvationStatus::starving);
}

// ---------------------------------------------------------------------------
// DUCC defragmentation: "if the what-of phase cannot allocate space according
// to the output of the how-much phase", preempt a few processes of "rich" jobs
// so that every job gets at least one. Two nodes of 4 cpu; job 1 (user a) runs
// 3 tasks on each, so each node has 1 cpu free: 2 in all, but job 2 (user c)
// needs 2 cpu in one piece. Job 3 (user b) wants 2 tasks of 1 cpu.
// How much: b and c want 1/4 each and get it; a gets the other 1/2 (4 tasks),
// so its 5th and 6th tasks (both on n2) are preemptible: a is rich.
// The regular stage finds no node for job 2 (fragmented), gives b the two free
// cpus; defragmentation then takes a's two preemptible tasks on n2 for job 2,
// at once (job 2 is not starving: no timeout applies to fragmentation).
TEST(DuccScenario, DefragmentationMakesRoomForOneTask) {
  SnapshotBuilder s;
  s.pool("root").cls("batch", "root").nodes(1, 2, "root", "cpu=4");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 3; ++i) a.running(1, sec(1 + i));
  for (int i = 0; i < 3; ++i) a.running(2, sec(4 + i));
  s.job(2, "c", "batch").per_task("cpu=2").pending(1);
  s.job(3, "b", "batch").pending(2);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, share(1, 2));
  EXPECT_EQ(job(r, 2).fair_share_share, share(1, 4));
  EXPECT_EQ(job(r, 3).fair_share_share, share(1, 4));
  EXPECT_EQ(job(r, 2).starvation, StarvationStatus::non_starving);
  EXPECT_EQ(placed(r, 3), 2u);
  ASSERT_EQ(r.plan.removals.size(), 2u);
  EXPECT_EQ(r.plan.removals[0].task, (TaskRef{JobId{1}, 5}));
  EXPECT_EQ(r.plan.removals[1].task, (TaskRef{JobId{1}, 4}));
  for (const auto& rm : r.plan.removals) {
    EXPECT_EQ(rm.reason, RemovalReason::defragmentation);
    EXPECT_EQ(rm.node, NodeId{2});
    EXPECT_EQ(*rm.preemptor, JobId{2});
  }
  ASSERT_EQ(r.plan.placements.size(), 3u);
  EXPECT_EQ(r.plan.placements[2].job, JobId{2});
  EXPECT_EQ(r.plan.placements[2].stage, Stage::defragmentation);
  EXPECT_EQ(r.plan.placements[2].node, NodeId{2});

  s.settings().defragmentation = false;
  auto off = run(s.build());
  EXPECT_EQ(placed(off, 2), 0u);
  EXPECT_TRUE(off.plan.removals.empty());
}

// A full cluster is not fragmented: a new job waits for its starvation
// timeout instead (see StarvationTimeoutThenOneAllocationPerStageWithBackoff).

// ---------------------------------------------------------------------------
// DUCC expand-by-doubling, initialization cap, prediction: caps on a job's
// demand in the how-much phase. Plenty of room (100 cpu).
TEST(DuccScenario, ExpandByDoublingInitializationCapAndPrediction) {
  SnapshotBuilder s;
  s.pool("root").node(1, "root", "cpu=100");
  s.cls("dbl", "root").last_class().expand_by_doubling = true;
  s.cls("init", "root").last_class().initialization_cap = 2;
  s.cls("pred", "root").last_class().prediction = true;
  // Doubling: 2 running -> at most 4 this cycle.
  s.job(1, "a", "dbl").pending(100).running(1, sec(0)).running(1, sec(1));
  // Doubling from nothing: one task.
  s.job(2, "b", "dbl").pending(100).initialized();
  // Initialization cap: 2 tasks until one has passed initialization.
  s.job(3, "c", "init").pending(10);
  // Prediction: 2 running tasks finish 12 of the 10 items left before a new
  // task (60s of initialization, 10s per item) would start working: no growth.
  s.job(4, "d", "pred").pending(10).running(1, sec(0)).running(1, sec(0)).prediction(10, 10s, 60s);
  // 16 items left: 4 remain after 60s, so at most 4 tasks.
  s.job(5, "e", "pred").pending(10).running(1, sec(0)).running(1, sec(0)).prediction(16, 10s, 60s);
  // 30 left: 18 remain, more than its 12 tasks: no cap.
  s.job(6, "f", "pred").pending(10).running(1, sec(0)).running(1, sec(0)).prediction(30, 10s, 60s);
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).cap, 4u);
  EXPECT_EQ(job(r, 1).cap_reason, CapReason::expand_by_doubling);
  EXPECT_EQ(placed(r, 1), 2u);
  EXPECT_EQ(job(r, 2).cap, 1u);
  EXPECT_EQ(placed(r, 2), 1u);
  EXPECT_EQ(job(r, 3).cap, 2u);
  EXPECT_EQ(job(r, 3).cap_reason, CapReason::initialization_cap);
  EXPECT_EQ(placed(r, 3), 2u);
  EXPECT_EQ(job(r, 4).cap, 2u);
  EXPECT_EQ(job(r, 4).cap_reason, CapReason::prediction);
  EXPECT_EQ(placed(r, 4), 0u);
  EXPECT_EQ(job(r, 5).cap, 4u);
  EXPECT_EQ(placed(r, 5), 2u);
  EXPECT_EQ(job(r, 6).cap, 12u);
  EXPECT_EQ(placed(r, 6), 10u);
  EXPECT_NE(job(r, 1).pending_reason.find("expand-by-doubling"), std::string::npos)
      << job(r, 1).pending_reason;

  // Once a task has passed initialization the initialization cap is gone.
  auto next = apply_plan(s.build(), r, sec(610));
  auto r2 = run(next, r.next_state);
  EXPECT_EQ(job(r2, 3).cap, 10u);
  EXPECT_EQ(placed(r2, 3), 8u);
  EXPECT_EQ(job(r2, 1).cap, 8u);  // doubling again from 4
}

// ---------------------------------------------------------------------------
// YTsaurus's other two reasons, and evictions.
TEST(YtsaurusScenario, NodeOverItsResourcesPreemptsFairShareWorkFirst) {
  SnapshotBuilder s;
  s.pool("root")
      .cls("batch", "root")
      .cls("svc", "root", 10, 1, ClassPolicy::fixed_share)
      .node(1, "root", "cpu=4");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 4; ++i) a.running(1, sec(i));
  auto b = s.job(2, "b", "svc");
  for (int i = 0; i < 2; ++i) b.running(1, sec(10 + i));
  auto r = run(s.build());
  ASSERT_EQ(r.plan.removals.size(), 2u);
  for (const auto& rm : r.plan.removals) {
    EXPECT_EQ(rm.kind, RemovalKind::preemption);
    EXPECT_EQ(rm.reason, RemovalReason::node_overcommitted);
    EXPECT_EQ(rm.task.job, JobId{1});
    EXPECT_FALSE(rm.preemptor.has_value());
  }
}

TEST(YtsaurusScenario, NodeOverItsResourcesWithOnlyNonPreemptibleWorkEvicts) {
  SnapshotBuilder s;
  s.pool("root").cls("svc", "root", 10, 1, ClassPolicy::fixed_share).node(1, "root", "cpu=2");
  auto b = s.job(1, "b", "svc");
  for (int i = 0; i < 3; ++i) b.running(1, sec(i));
  auto r = run(s.build());
  ASSERT_EQ(r.plan.removals.size(), 1u);
  EXPECT_EQ(r.plan.removals[0].kind, RemovalKind::eviction);
  EXPECT_EQ(r.plan.removals[0].task.index, 2u);  // newest
  EXPECT_EQ(r.plan.stats.evictions, 1u);
  EXPECT_EQ(r.plan.stats.preemptions, 0u);
}

// resource_limits cpu=2 on a pool whose work runs 4 tasks: the 2 newest go;
// the fair share respects the limits too.
TEST(YtsaurusScenario, PoolResourceLimitsViolationPreempts) {
  SnapshotBuilder s;
  s.pool("root").pool("capped", "root", "cpu=2").cls("c", "capped").node(1, "capped", "cpu=8");
  auto a = s.job(1, "a", "c").pending(4);
  for (int i = 0; i < 4; ++i) a.running(1, sec(i));
  auto r = run(s.build());
  EXPECT_EQ(job(r, 1).fair_share_share, share(2, 8));
  ASSERT_EQ(r.plan.removals.size(), 2u);
  EXPECT_EQ(r.plan.removals[0].reason, RemovalReason::pool_resource_limits);
  EXPECT_EQ(r.plan.removals[0].pool, "capped");
  EXPECT_EQ(r.plan.removals[0].task.index, 3u);
  EXPECT_EQ(r.plan.removals[1].task.index, 2u);
  EXPECT_EQ(placed(r, 1), 0u);  // the pending tasks wait: the limit is reached
  EXPECT_NE(job(r, 1).pending_reason.find("resource_limits"), std::string::npos) << job(r, 1).pending_reason;
}

// Eviction is not preemption: a class moved to another pool evicts its work
// from nodes that are no longer its pool's, with its own reason and counter.
TEST(DuccScenario, ClassMovedToAnotherPoolEvictsItsWork) {
  SnapshotBuilder s;
  s.pool("a").pool("b").cls("svc", "a", 10, 1, ClassPolicy::fixed_share).cls("batch", "a");
  s.node(1, "a", "cpu=4").node(2, "b", "cpu=4");
  s.job(1, "u", "svc").running(2, sec(0));
  s.job(2, "u", "batch").running(2, sec(0)).running(1, sec(1));
  auto r = run(s.build());
  ASSERT_EQ(r.plan.removals.size(), 2u);
  for (const auto& rm : r.plan.removals) {
    EXPECT_EQ(rm.kind, RemovalKind::eviction);
    EXPECT_EQ(rm.reason, RemovalReason::outside_pool);
    EXPECT_EQ(rm.node, NodeId{2});
  }
  EXPECT_EQ(r.plan.stats.evictions, 2u);
  EXPECT_EQ(r.plan.stats.preemptions, 0u);
}

// ---------------------------------------------------------------------------
// Words.
TEST(PolicyWords, ExplainAndDescribeSayWhyInWords) {
  auto r = run(ytsaurus_threshold_example().build(), below_since(3, sec(0)));
  std::string e = explain_job(r, JobId{3});
  EXPECT_NE(e.find("aggressively_starving"), std::string::npos) << e;
  EXPECT_NE(e.find("place 1 x job 3 on node 1 [aggressive]"), std::string::npos) << e;
  EXPECT_NE(e.find("for it: preemption of task 2.12"), std::string::npos) << e;
  std::string d = describe(r.plan.removals[0]);
  EXPECT_NE(d.find("preemption of task 2.12 on node 1 (aggressive_starvation, for job 3)"), std::string::npos)
      << d;
  EXPECT_NE(d.find("job 3 (user c, class batch) is aggressively_starving"), std::string::npos) << d;
  EXPECT_NE(d.find("allocation preemptible"), std::string::npos) << d;
  std::string victim = explain_job(r, JobId{1});
  EXPECT_NE(victim.find("next cycle: preemption of task 1.12"), std::string::npos) << victim;
  std::string text = render_text(r);
  EXPECT_NE(text.find("POOLS"), std::string::npos);
  EXPECT_NE(text.find("aggressively_preemptible"), std::string::npos);
  EXPECT_NE(text.find("summary: 2 placements (2 tasks), 8 preemptions, 0 evictions"), std::string::npos)
      << text;
  EXPECT_EQ(explain_job(r, JobId{99}), "job 99 is not in the snapshot");
}

// The same input in another order gives the same output.
TEST(PolicyDeterminism, InputOrderDoesNotMatter) {
  auto s = ytsaurus_threshold_example();
  s.job(4, "d", "batch").pending(3).per_task("cpu=2");
  auto a = run(s.build(), below_since(3, sec(0)));
  Snapshot shuffled = s.build();
  std::reverse(shuffled.jobs.begin(), shuffled.jobs.end());
  std::reverse(shuffled.nodes.begin(), shuffled.nodes.end());
  for (auto& j : shuffled.jobs) std::reverse(j.allocations.begin(), j.allocations.end());
  auto b = run(shuffled, below_since(3, sec(0)));
  EXPECT_EQ(render_text(a), render_text(b));
  EXPECT_EQ(a.next_state, b.next_state);
}

}  // namespace
}  // namespace claimsched::core::policy
