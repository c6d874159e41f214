// The policy stage's rule for which cycles run (PolicyStage::due): the
// server and the replay skip a cycle whose input is the last cycle's and
// whose timers have not passed. The property pinned here is what makes that
// safe: such a cycle, run anyway, would decide nothing new (no removal, no
// room held, the same queue ranks and caps).

#include <gtest/gtest.h>

#include "core/policy/stage.hpp"
#include "core/random.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::batch_and_prod_partition;
using testing::batch_and_prod_policy;
using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::SimCluster;

policy::PolicyConfig fair_share_config() {
  policy::PolicyConfig p = batch_and_prod_policy();
  p.settings.preemption.fair_share_starvation_timeout = ms(300);
  p.settings.preemption.fair_share_aggressive_starvation_timeout = ms(900);
  p.settings.preemption.fair_share_starvation_tolerance = 0.9;
  p.settings.preemption.preemptive_scheduling_backoff = ms(200);
  p.interval = ms(50);
  return p;
}

/// What a cycle decided that the scheduler acts on: per job its queue rank
/// and cap, and the plan's removals and placements.
std::string decisions(const policy::CycleResult& r) {
  std::string out;
  for (const auto& row : r.jobs)
    out += std::to_string(row.id.value) + ":" + std::to_string(policy::queue_rank(row)) + "/" +
           std::to_string(row.cap) + " ";
  for (const auto& rm : r.plan.removals) out += "-" + std::to_string(rm.task.job.value);
  for (const auto& pl : r.plan.placements) out += "+" + std::to_string(pl.job.value);
  return out;
}

class PolicyDue : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PolicyDue, ASkippedCycleWouldHaveDecidedNothingNew) {
  SimCluster cluster;
  for (uint32_t n = 1; n <= 3; ++n) cluster.add_node(NodeBuilder(n).capacity("cpu=4,memory=16Gi").build());
  size_t s = cluster.add_scheduler(batch_and_prod_partition());
  Scheduler& sched = cluster.scheduler(s);
  policy::PolicyStage stage(fair_share_config());
  Rng rng(GetParam());
  uint64_t next_job = 1;
  uint32_t ran = 0, skipped = 0, checked_idle = 0;  // checked_idle: skipped with work waiting
  for (int tick = 0; tick < 400; ++tick) {
    // Now and then a job arrives or a task ends; most ticks nothing happens.
    if (rng.below(5) == 0) {
      auto job = JobBuilder(next_job++)
                     .user("u" + std::to_string(rng.below(3)))
                     .job_class(rng.below(2) ? "prod" : "batch")
                     .count(1 + static_cast<uint32_t>(rng.below(6)))
                     .cpu(rng.below(2) ? "1" : "2")
                     .submitted(cluster.now())
                     .build();
      job.preemptible = rng.below(3) != 0;
      ASSERT_TRUE(cluster.submit(s, std::move(job)));
    }
    if (rng.below(4) == 0) {
      size_t n = rng.below(cluster.node_count());
      const auto& allocations = cluster.ledger(n).allocations();
      if (!allocations.empty()) {
        TaskRef task = allocations[rng.below(allocations.size())].task;
        cluster.finish_task(n, task, TaskState::succeeded, 0);
      }
    }
    cluster.run();
    Outbox out;
    if (stage.due(sched, cluster.now())) {
      ++ran;
      ASSERT_TRUE(stage.cycle(sched, cluster.now(), out));
    } else {
      ++skipped;
      // Run it anyway, on a copy of the stage: the scheduler sees the same
      // marks again, and nothing may be taken or held.
      ASSERT_TRUE(stage.last());
      policy::PolicyStage anyway = stage;
      auto summary = anyway.cycle(sched, cluster.now(), out);
      ASSERT_TRUE(summary);
      EXPECT_EQ(summary->preemptions + summary->evictions + summary->held, 0u) << "tick " << tick;
      EXPECT_EQ(decisions(*anyway.last()), decisions(*stage.last())) << "tick " << tick;
      checked_idle += sched.pending_tasks() > 0;
    }
    for (auto& r : out.releases) cluster.send_to_node(s, static_cast<size_t>(r.node.value - 1), r);
    cluster.run();
    cluster.advance_by(ms(50));
    cluster.run();
  }
  EXPECT_EQ(cluster.check_all(), "");
  // Both kinds of tick happened, or the property was not exercised.
  EXPECT_GT(ran, 20u);
  EXPECT_GT(skipped, 20u);
  EXPECT_GT(checked_idle, 0u);
}

/// Every field of a snapshot the policy reads, in words: two snapshots with
/// the same words would give the same cycle.
std::string words_of(const policy::Snapshot& snap) {
  std::string out = "now " + std::to_string(snap.now.count()) + " default " + snap.settings.default_class + "\n";
  for (const auto& p : snap.pools) out += "pool " + p.name + "<" + p.parent + "\n";
  for (const auto& c : snap.classes) out += "class " + c.name + "@" + c.pool + "\n";
  for (const auto& u : snap.users) out += "user " + u.name + (u.allotment ? " allotted" : "") + "\n";
  for (const auto& n : snap.nodes) {
    out += "node " + std::to_string(n.id.value) + " " + n.name + " " + n.pool + " " + n.capacity.to_string() +
           " free " + (n.free ? n.free->to_string() : "-") + " " + std::string(to_string(n.state));
    for (const auto& l : n.labels) out += " " + l;
    out += "\n";
  }
  for (const auto& j : snap.jobs) {
    out += "job " + std::to_string(j.id.value) + " " + j.name + " " + j.user + " " + j.job_class + " [" + j.pool +
           "] " + j.per_task.to_string() + " pending " + std::to_string(j.pending) + " " +
           std::to_string(j.preemptible) + std::to_string(j.initialized) + std::to_string(j.fragmented) + " " +
           std::to_string(j.submit_time.count()) + (j.prediction ? " predicted" : "");
    for (const auto& c : j.constraints) out += " " + c;
    for (const auto& a : j.allocations)
      out += " (" + std::to_string(a.index) + "@" + std::to_string(a.node.value) + " " +
             std::to_string(a.start.count()) + " " + std::to_string(a.interruptible) + std::to_string(a.initialized) +
             std::to_string(a.landing) + ")";
    out += "\n";
  }
  return out;
}

// A cycle refills the last cycle's snapshot in place (its strings and
// vectors reused): over random arrivals, ends and cancellations, with jobs
// coming and going between cycles, what it ran on is what a snapshot taken
// from scratch holds.
TEST_P(PolicyDue, ACycleRunsOnTheSnapshotAFreshOneWouldBe) {
  SimCluster cluster;
  for (uint32_t n = 1; n <= 3; ++n)
    cluster.add_node(NodeBuilder(n).capacity("cpu=4,memory=16Gi").label(n == 2 ? "ssd" : "hdd").build());
  size_t s = cluster.add_scheduler(batch_and_prod_partition());
  Scheduler& sched = cluster.scheduler(s);
  policy::PolicyStage stage(fair_share_config());
  Rng rng(GetParam());
  uint64_t next_job = 1;
  uint32_t cycles = 0;
  size_t most_jobs = 0, fewest_after_most = SIZE_MAX;
  for (int tick = 0; tick < 300; ++tick) {
    if (rng.below(3) == 0) {
      auto b = JobBuilder(next_job++)
                   .user("user-with-a-name-past-the-small-string-" + std::to_string(rng.below(3)))
                   .job_class(rng.below(2) ? "prod" : "batch")
                   .count(1 + static_cast<uint32_t>(rng.below(6)))
                   .cpu(rng.below(2) ? "1" : "2")
                   .submitted(cluster.now());
      if (rng.below(4) == 0) b.constraint("ssd");
      auto job = b.build();
      job.preemptible = rng.below(3) != 0;
      ASSERT_TRUE(cluster.submit(s, std::move(job)));
    }
    if (rng.below(3) == 0) {
      size_t n = rng.below(cluster.node_count());
      const auto& allocations = cluster.ledger(n).allocations();
      if (!allocations.empty()) {
        TaskRef task = allocations[rng.below(allocations.size())].task;
        cluster.finish_task(n, task, TaskState::succeeded, 0);
      }
    }
    Outbox out;
    if (rng.below(6) == 0 && next_job > 1) (void)sched.cancel(JobId{1 + rng.below(next_job - 1)}, cluster.now(), out);
    if (rng.below(10) == 0)
      stage.observe_name(NodeId{static_cast<uint32_t>(1 + rng.below(3))}, "named-node-" + std::to_string(tick));
    for (auto& r : out.releases) cluster.send_to_node(s, static_cast<size_t>(r.node.value - 1), r);
    out.clear();
    cluster.run();
    std::string fresh = words_of(stage.snapshot_of(sched, cluster.now()));
    ASSERT_TRUE(stage.cycle(sched, cluster.now(), out));
    ++cycles;
    EXPECT_EQ(words_of(stage.last_snapshot()), fresh) << "tick " << tick;
    most_jobs = std::max(most_jobs, stage.last_snapshot().jobs.size());
    if (stage.last_snapshot().jobs.size() < most_jobs)
      fewest_after_most = std::min(fewest_after_most, stage.last_snapshot().jobs.size());
    for (auto& r : out.releases) cluster.send_to_node(s, static_cast<size_t>(r.node.value - 1), r);
    cluster.run();
    cluster.advance_by(ms(50));
    cluster.run();
  }
  EXPECT_EQ(cluster.check_all(), "");
  // The snapshot both grew and shrank between cycles, or reuse was not exercised.
  EXPECT_GT(most_jobs, 3u);
  EXPECT_LT(fewest_after_most, most_jobs);
  EXPECT_EQ(cycles, 300u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, PolicyDue, ::testing::Range<uint64_t>(1, 13));

TEST(PolicyDueRule, AnArrivalOrATimerMakesTheNextCycleDue) {
  SimCluster cluster;
  cluster.add_node(NodeBuilder(1).capacity("cpu=4,memory=16Gi").build());
  size_t s = cluster.add_scheduler(batch_and_prod_partition());
  Scheduler& sched = cluster.scheduler(s);
  policy::PolicyStage stage(fair_share_config());
  EXPECT_TRUE(stage.due(sched, cluster.now())) << "the first cycle always runs";
  // u0 fills the node; u1's job waits below its fair share.
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).user("u0").count(4).cpu("1").build()));
  cluster.run();
  Outbox out;
  ASSERT_TRUE(stage.cycle(sched, cluster.now(), out));
  cluster.advance_by(ms(50));
  EXPECT_FALSE(stage.due(sched, cluster.now())) << "nothing changed";
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).user("u1").job_class("prod").count(2).cpu("1").build()));
  cluster.run();
  EXPECT_TRUE(stage.due(sched, cluster.now())) << "a job arrived";
  TimePoint arrived = cluster.now();
  ASSERT_TRUE(stage.cycle(sched, cluster.now(), out));
  cluster.advance_by(ms(50));
  EXPECT_FALSE(stage.due(sched, cluster.now()));
  // Job 2 is below its fair share since it arrived: starving 300 ms later.
  EXPECT_EQ(stage.next_timer(), arrived + ms(300));
  cluster.advance_to(arrived + ms(300));
  EXPECT_TRUE(stage.due(sched, cluster.now())) << "job 2 starts starving";
}

}  // namespace
}  // namespace claimsched::core
