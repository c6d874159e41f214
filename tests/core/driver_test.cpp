// The fair-share policy driving a live core::Scheduler (core/policy/driver):
// preemption frees an allocation before its task runs again, the queue
// follows the fair-share deficit, and a cycle turns a starving class's
// deficit into preemptions of the class above its share.

#include "core/policy/driver.hpp"

#include <gtest/gtest.h>

#include <algorithm>

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

class DriverTest : public ::testing::Test {
 protected:
  void add_nodes(int n) {
    for (int i = 0; i < n; ++i)
      cluster.add_node(NodeBuilder(static_cast<uint32_t>(cluster.node_count() + 1))
                           .capacity("cpu=4,memory=16Gi")
                           .build());
  }
  uint32_t allocated(uint64_t job) {
    uint32_t k = 0;
    for (size_t n = 0; n < cluster.node_count(); ++n)
      for (const auto& a : cluster.ledger(n).allocations()) k += a.task.job == JobId{job};
    return k;
  }
  void run() {
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  SimCluster cluster;
};

TEST_F(DriverTest, APreemptedTaskRunsAgainOnlyAfterItsNodeFreedIt) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(batch_and_prod_partition());
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(4).cpu("1").build()));
  run();
  Scheduler& sched = cluster.scheduler(s);
  Outbox out;
  ASSERT_TRUE(sched.preempt(TaskRef{JobId{1}, 2}, TaskState::preempted, "for job 9", cluster.now(), out));
  const JobRecord* j = sched.job(JobId{1});
  EXPECT_EQ(j->pending(), 0u) << "not back in the queue before the node answers";
  EXPECT_EQ(j->count_in(TaskState::running), 4u) << "it runs until its node has freed it";
  ASSERT_EQ(out.releases.size(), 1u);
  EXPECT_EQ(out.releases[0].reason, TaskState::preempted);
  EXPECT_EQ(out.releases[0].tasks, (std::vector<TaskIndex>{2}));
  EXPECT_FALSE(sched.preempt(TaskRef{JobId{1}, 2}, TaskState::preempted, "again", cluster.now(), out))
      << "a task being taken away is not taken away twice";
  // Deliver the release; the task comes back and runs again (there is room).
  cluster.send_to_node(s, 0, out.releases[0]);
  run();
  EXPECT_EQ(allocated(1), 4u);
  ASSERT_NE(sched.notes(JobId{1}), nullptr);
  EXPECT_EQ(sched.notes(JobId{1})->preemptions, 1u);
  EXPECT_EQ(sched.stats().preemptions, 1u);
  EXPECT_NE(sched.notes(JobId{1})->last_removal.find("preempted task 2"), std::string::npos) << sched.notes(JobId{1})->last_removal;
  EXPECT_NE(sched.notes(JobId{1})->last_removal.find("for job 9"), std::string::npos) << sched.notes(JobId{1})->last_removal;
  EXPECT_FALSE(sched.preempt(TaskRef{JobId{7}, 0}, TaskState::preempted, "", cluster.now(), out));
}

TEST_F(DriverTest, TheQueueFollowsTheDeficitUntilAJobHoldsItsFairShare) {
  add_nodes(1);  // 4 cpus
  SchedulerConfig c = batch_and_prod_partition();
  size_t s = cluster.add_scheduler(c);
  Scheduler& sched = cluster.scheduler(s);
  // A blocker holds the node while jobs 1 and 2 queue up behind it.
  ASSERT_TRUE(cluster.submit(s, JobBuilder(9).count(4).cpu("1").submitted(ms(0)).build()));
  run();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(4).cpu("1").submitted(ms(1)).build()));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(4).cpu("1").submitted(ms(2)).build()));
  run();
  // Older job 1 would go first; job 2 is below its share (boost 50, 2 tasks).
  sched.set_fair_share(JobId{2}, 50, 2);
  Outbox out;
  for (TaskIndex t = 0; t < 4; ++t)
    ASSERT_TRUE(sched.preempt(TaskRef{JobId{9}, t}, TaskState::preempted, "test", cluster.now(), out));
  sched.set_fair_share(JobId{9}, -2, 0);  // the blocker is above its share
  for (auto& r : out.releases) cluster.send_to_node(s, 0, r);
  run();
  EXPECT_EQ(allocated(2), 2u) << "job 2 first, up to its fair share";
  EXPECT_EQ(allocated(1), 2u) << "then the older job";
}

TEST_F(DriverTest, ACycleTakesTheStarvingClassesShareFromTheClassAboveIt) {
  add_nodes(2);  // 8 cpus
  size_t s = cluster.add_scheduler(batch_and_prod_partition());
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(8).cpu("1").build()));
  run();
  ASSERT_EQ(allocated(1), 8u);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).job_class("prod").count(8).cpu("1").build()));
  run();

  policy::PolicyConfig p = batch_and_prod_policy();
  p.settings.preemption.fair_share_starvation_timeout = ms(100);
  p.settings.preemption.fair_share_starvation_tolerance = 1.0;
  p.settings.preemption.preemptive_scheduling_backoff = ms(10);
  ASSERT_TRUE(p.validate()) << p.validate().error().message;
  policy::PolicyDriver driver(p);

  uint64_t preempted = 0;
  for (int cycle = 0; cycle < 40 && allocated(2) < 4; ++cycle) {
    Outbox out;
    auto summary = driver.cycle(sched, cluster.now(), out);
    ASSERT_TRUE(summary) << summary.error().message;
    preempted += summary->preemptions;
    for (auto& r : out.releases) cluster.send_to_node(s, static_cast<size_t>(r.node.value - 1), r);
    run();
    cluster.advance_by(ms(50));
    run();
  }
  EXPECT_EQ(allocated(2), 4u) << "prod holds its fair share: half of 8";
  EXPECT_EQ(allocated(1), 4u);
  EXPECT_EQ(preempted, 4u) << "one preemption per task reclaimed";
  EXPECT_EQ(sched.notes(JobId{1})->preemptions, 4u);
  // At the fair share nothing more is taken, cycle after cycle.
  for (int cycle = 0; cycle < 5; ++cycle) {
    Outbox out;
    auto summary = driver.cycle(sched, cluster.now(), out);
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->preemptions, 0u);
    EXPECT_TRUE(out.releases.empty());
    cluster.advance_by(ms(50));
    run();
  }
  ASSERT_TRUE(driver.last());
  const auto* row = driver.last()->job(JobId{2});
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->running, 4u);
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
}

// A stage that words no reasons (set_reasons(false), as the replay runs it)
// decides exactly what one that does: the same preemptions cycle after
// cycle and the same placements; only the pending reasons are missing.
TEST(DriverReasons, WithoutReasonsACycleDecidesTheSameAndWordsNothing) {
  policy::PolicyConfig p = batch_and_prod_policy();
  p.settings.preemption.fair_share_starvation_timeout = ms(100);
  p.settings.preemption.fair_share_starvation_tolerance = 1.0;
  p.settings.preemption.preemptive_scheduling_backoff = ms(10);
  ASSERT_TRUE(p.validate()) << p.validate().error().message;
  SimCluster clusters[2];
  policy::PolicyDriver drivers[2] = {policy::PolicyDriver(p), policy::PolicyDriver(p)};
  drivers[1].set_reasons(false);
  size_t s[2];
  for (int i = 0; i < 2; ++i) {
    for (uint32_t n = 1; n <= 2; ++n) clusters[i].add_node(NodeBuilder(n).capacity("cpu=4,memory=16Gi").build());
    s[i] = clusters[i].add_scheduler(batch_and_prod_partition());
    ASSERT_TRUE(clusters[i].submit(s[i], JobBuilder(1).count(8).cpu("1").build()));
    clusters[i].run();
    ASSERT_TRUE(clusters[i].submit(s[i], JobBuilder(2).job_class("prod").count(8).cpu("1").build()));
    clusters[i].run();
  }
  auto where = [&](int i) {
    std::vector<std::pair<uint64_t, uint64_t>> out;  // (node, job) of every allocation
    for (size_t n = 0; n < clusters[i].node_count(); ++n)
      for (const auto& a : clusters[i].ledger(n).allocations()) out.emplace_back(n, a.task.job.value);
    std::sort(out.begin(), out.end());
    return out;
  };
  uint64_t preempted = 0;
  for (int cycle = 0; cycle < 12; ++cycle) {
    uint32_t preemptions[2];
    for (int i = 0; i < 2; ++i) {
      Outbox out;
      auto summary = drivers[i].cycle(clusters[i].scheduler(s[i]), clusters[i].now(), out);
      ASSERT_TRUE(summary) << summary.error().message;
      preemptions[i] = summary->preemptions;
      for (auto& r : out.releases) clusters[i].send_to_node(s[i], static_cast<size_t>(r.node.value - 1), r);
      clusters[i].run();
      clusters[i].advance_by(ms(50));
      clusters[i].run();
    }
    preempted += preemptions[0];
    EXPECT_EQ(preemptions[0], preemptions[1]) << "cycle " << cycle;
    EXPECT_EQ(where(0), where(1)) << "cycle " << cycle;
    ASSERT_TRUE(drivers[0].last() && drivers[1].last());
    const auto* worded = drivers[0].last()->job(JobId{2});
    const auto* quiet = drivers[1].last()->job(JobId{2});
    ASSERT_TRUE(worded && quiet);
    EXPECT_EQ(policy::queue_rank(*worded), policy::queue_rank(*quiet)) << "cycle " << cycle;
    EXPECT_EQ(worded->cap, quiet->cap) << "cycle " << cycle;
    if (worded->pending > 0) {
      EXPECT_FALSE(worded->pending_reason.empty()) << "cycle " << cycle;
    }
    EXPECT_TRUE(quiet->pending_reason.empty()) << quiet->pending_reason;
  }
  EXPECT_EQ(preempted, 4u) << "prod took its fair share, half of 8, in both";
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

// DUCC's initialization cap and expand-by-doubling on a live job: at most 2
// tasks until one has started (its node reports it: it passed
// initialization), then at most twice the running tasks per policy cycle.
TEST(DuccLive, InitializationCapThenExpandByDoubling) {
  LedgerConfig ledger;
  ledger.start_delay = ms(50);  // a task starts (initializes) 50 ms after its confirm
  SimCluster cluster(ledger);
  cluster.add_node(NodeBuilder(1).capacity("cpu=64,memory=64Gi").build());
  SchedulerConfig c = batch_and_prod_partition();
  c.classes[1].initialization_cap = 2;
  c.classes[1].expand_by_doubling = true;
  size_t s = cluster.add_scheduler(c);
  policy::PolicyConfig p;
  p.pools.push_back(policy::PoolSpec{"default", "", {}, {}});
  policy::PolicyStage stage(p);
  auto running = [&] { return cluster.scheduler(s).job(JobId{1})->held(); };
  // Submitted (and placed at once, before any cycle): the cap holds already.
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).job_class("prod").count(30).cpu("1").build()));
  cluster.run();
  EXPECT_EQ(running(), 2u);
  std::vector<uint32_t> seen;
  for (int cycle = 0; cycle < 6; ++cycle) {
    Outbox out;
    ASSERT_TRUE(stage.cycle(cluster.scheduler(s), cluster.now(), out));
    cluster.tick(s);
    cluster.run();
    cluster.advance_by(ms(100));  // the new tasks start
    cluster.run();
    seen.push_back(running());
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{2, 4, 8, 16, 30, 30}));
  std::string why = cluster.scheduler(s).explain(JobId{1});
  EXPECT_EQ(why, "all tasks placed");
  EXPECT_EQ(cluster.check_all(), "");
}

}  // namespace
}  // namespace claimsched::core
