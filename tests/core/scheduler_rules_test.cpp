// core::Scheduler over a simulated cluster (scheduler_fixture.hpp), the
// rules around the claim protocol: epochs and fencing, strict CAS, the node
// update stream, queue order and the claim window, input validation, retries.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/scheduler_fixture.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using namespace scheduler_fixture;

// --- epochs ----------------------------------------------------------------

TEST_F(SchedulerTest, StaleEpochFencesTheScheduler) {
  add_nodes(2);
  start();
  cluster.ledger(0).restore_epoch(PartitionId{1}, 2);  // a newer owner reached node 1
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  run();
  EXPECT_TRUE(sched().fenced());
  EXPECT_EQ(sched().stats().rejected_stale_epoch, 1u);
  EXPECT_EQ(sched().stats().placements, 0u);
  // A fenced scheduler sends no more claims, to any node.
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("1").build()));
  cluster.advance_by(std::chrono::seconds(2));
  run();
  EXPECT_EQ(sched().stats().claims_sent, 1u);
  EXPECT_EQ(allocated_on(1, 1) + allocated_on(1, 2), 0u);
}

TEST_F(SchedulerTest, ConfirmAfterATakeoverIsRefusedAndTheClaimExpires) {
  add_nodes(1);
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));       // accepted at epoch 1
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));  // the confirm is on its way
  size_t s2 = cluster.take_over(s, /*announce=*/true);
  ASSERT_TRUE(cluster.deliver_to_node(s2, 0));  // the new owner's epoch reaches the node first
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));   // the old owner's confirm: stale
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));
  EXPECT_TRUE(sched().fenced());
  EXPECT_EQ(sched().stats().placements, 0u);
  EXPECT_EQ(allocated_on(0, 1), 0u);
  EXPECT_EQ(job(1).count_in(TaskState::running), 0u);
  run();
  cluster.advance_by(kTtl);
  run();
  EXPECT_EQ(claimed_on(0, 1), 0u);  // nothing leaks
  // The new owner schedules normally.
  ASSERT_TRUE(cluster.submit(s2, JobBuilder(2).count(4).cpu("1").build()));
  run();
  EXPECT_EQ(cluster.scheduler(s2).job(JobId{2})->count_in(TaskState::running), 4u);
  EXPECT_FALSE(cluster.scheduler(s2).fenced());
}

// Claim ids carry the owner's epoch: a new owner never reuses the old
// owner's ids. (Without it, the node answers a repeated confirm "confirmed"
// when it holds allocations of that claim id and partition, so a confirm of
// the new owner's expired claim would be acknowledged with the old owner's
// allocations: the new owner would believe tasks run that no node holds.)
TEST_F(SchedulerTest, ANewOwnersConfirmIsNotAcknowledgedWithTheOldOwnersClaim) {
  add_nodes(1);
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  run();  // job 1 runs under claim id 1
  SchedulerConfig successor = scheduler_config();
  successor.epoch = 2;  // the same counter, a different epoch
  size_t s2 = cluster.add_scheduler(successor);
  ASSERT_TRUE(cluster.submit(s2, JobBuilder(2).count(1).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s2, 0));       // claim id 1 again: accepted
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s2));  // its confirm goes out...
  auto confirm = cluster.take_to_node(s2, 0);        // ... and is slow
  ASSERT_TRUE(confirm);
  cluster.advance_by(kTtl);  // the claim expires
  cluster.node_receive(s2, 0, *confirm);
  run();
  const JobRecord* j2 = cluster.scheduler(s2).job(JobId{2});
  EXPECT_EQ(j2->count_in(TaskState::running), allocated_on(0, 2))
      << "the new owner thinks job 2 runs; the node does not hold it";
}

// --- strict CAS ------------------------------------------------------------

TEST_F(SchedulerTest, StrictCasRetriesWithTheSnapshotsGeneration) {
  add_nodes(1);
  SchedulerConfig config = scheduler_config();
  config.strict_cas = true;
  start(config);
  // The node moves on behind the scheduler's back (plenty of room left).
  ASSERT_EQ(cluster.foreign_claim(0, ClaimBuilder().partition(9).job(900).build(), false).outcome,
            ClaimOutcome::accepted);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  EXPECT_EQ(std::get<ClaimRequest>(cluster.to_node(s, 0).front()).expected_generation,
            std::optional<Generation>(0));
  run();
  EXPECT_EQ(sched().stats().rejected_conflict, 1u);
  EXPECT_EQ(sched().stats().claims_sent, 2u);
  EXPECT_EQ(job(1).count_in(TaskState::running), 1u);
}

TEST_F(SchedulerTest, StrictCasKeepsEachNodesGenerationExact) {
  add_nodes(1);
  SchedulerConfig config = scheduler_config();
  config.strict_cas = true;
  config.max_tasks_per_claim = 1;
  start(config);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(3).cpu("1").build()));
  // One generation-changing request per node at a time, so the expected
  // generation is the node's, never a guess about replies to come.
  ASSERT_EQ(cluster.to_node(s, 0).size(), 1u);
  EXPECT_EQ(std::get<ClaimRequest>(cluster.to_node(s, 0).front()).expected_generation,
            std::optional<Generation>(0));
  // (Waiting tasks are looked at again at most every unpark_interval.)
  for (int i = 0; i < 10; ++i) {
    run();
    cluster.advance_by(ms(5));
  }
  EXPECT_EQ(sched().stats().rejected(), 0u);
  EXPECT_EQ(job(1).count_in(TaskState::running), 3u);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("1").build()));
  EXPECT_EQ(std::get<ClaimRequest>(cluster.to_node(s, 0).front()).expected_generation,
            std::optional<Generation>(cluster.ledger(0).generation()));
  run();
  EXPECT_EQ(sched().stats().rejected(), 0u);
  EXPECT_EQ(job(2).count_in(TaskState::running), 1u);
}

// --- the node update stream ------------------------------------------------

TEST_F(SchedulerTest, AGenerationGapAsksForAFullSnapshot) {
  add_nodes(1);
  start();
  auto foreign = ClaimBuilder().partition(9).job(900).task_count(2).build();
  ASSERT_EQ(cluster.foreign_claim(0, foreign, true).outcome, ClaimOutcome::accepted);
  cluster.to_scheduler(0, s).clear();  // that delta is lost
  cluster.refresh_busy();
  ASSERT_EQ(cluster.foreign_release(0, testing::release_claim(foreign), true).released, 2u);
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));  // g2 after g0: a gap
  EXPECT_EQ(sched().stats().generation_gaps, 1u);
  ASSERT_EQ(cluster.to_node(s, 0).size(), 1u);
  EXPECT_TRUE(std::holds_alternative<testing::SnapshotRequest>(cluster.to_node(s, 0).front()));
  run();
  EXPECT_EQ(sched().view().node(0).generation, cluster.ledger(0).generation());
  EXPECT_EQ(sched().view().node(0).reported_free, cluster.ledger(0).free());
}

TEST_F(SchedulerTest, ChurnCompletesEveryJobExactlyOnce) {
  add_nodes(4);
  start();
  uint64_t tasks = 0;
  for (uint64_t i = 1; i <= 30; ++i) {
    uint32_t count = 1 + static_cast<uint32_t>(i % 5);
    tasks += count;
    ASSERT_TRUE(cluster.submit(s, JobBuilder(i)
                                      .count(count)
                                      .cpu(i % 3 == 0 ? "2" : "500m")
                                      .runtime(ms(100 + static_cast<int64_t>(i % 7) * 100))
                                      .gang(i % 4 == 0)
                                      .submitted(cluster.now())
                                      .build()));
    cluster.advance_by(ms(20));
    run();
  }
  for (int i = 0; i < 200 && cluster.finished_jobs(s).size() < 30; ++i) {
    cluster.advance_by(ms(50));
    run();
  }
  std::vector<JobId> finished = cluster.finished_jobs(s);
  ASSERT_EQ(finished.size(), 30u);
  std::sort(finished.begin(), finished.end());
  EXPECT_EQ(std::adjacent_find(finished.begin(), finished.end()), finished.end());
  const SchedulerStats& st = sched().stats();
  EXPECT_EQ(st.tasks_finished, tasks);
  EXPECT_EQ(st.placements, tasks);
  EXPECT_EQ(st.placement_latency.count(), tasks);
  EXPECT_EQ(sched().pending_tasks(), 0u);
  for (size_t n = 0; n < cluster.node_count(); ++n) {
    EXPECT_TRUE(cluster.ledger(n).allocations().empty());
    EXPECT_TRUE(cluster.ledger(n).claims().empty());
  }
  sched().for_each_job([](const JobRecord& j) {
    EXPECT_TRUE(j.finished()) << "job " << j.spec.id.value;
    EXPECT_EQ(j.count_in(TaskState::succeeded), j.spec.count);
  });
}

// --- queue order and the claim window --------------------------------------

TEST_F(SchedulerTest, HigherPriorityClassGoesFirst) {
  add_nodes(1, "cpu=1");
  SchedulerConfig config = scheduler_config();
  config.classes = {ClassConfig::named("batch"), ClassConfig::named("urgent", 10)};
  start(config);
  Outbox out;
  // Queue both before the scheduler looks at the queue.
  ASSERT_TRUE(sched().submit(JobBuilder(1).cpu("1").submitted(ms(0)).build(), ms(0)));
  ASSERT_TRUE(
      sched().submit(JobBuilder(2).cpu("1").job_class("urgent").submitted(ms(1)).build(), ms(1)));
  ASSERT_TRUE(sched().submit(JobBuilder(3).cpu("1").submitted(ms(2)).build(), ms(2)));
  sched().schedule(ms(2), out);
  ASSERT_EQ(out.claims.size(), 1u);  // one node with room for one task
  EXPECT_EQ(out.claims[0].job, JobId{2});
}

TEST_F(SchedulerTest, ClaimsInFlightAreBounded) {
  add_nodes(4);
  SchedulerConfig config = scheduler_config();
  config.max_claims_in_flight = 2;
  config.max_tasks_per_claim = 1;
  start(config);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(6).cpu("1").build()));
  EXPECT_EQ(sched().claims_in_flight(), 2u);
  EXPECT_EQ(cluster.messages_in_flight(), 2u);
  size_t most = 0;
  while (cluster.messages_in_flight() > 0) {
    cluster.run(1);
    most = std::max(most, sched().claims_in_flight());
  }
  EXPECT_LE(most, 2u);
  EXPECT_EQ(job(1).count_in(TaskState::running), 6u);
}

// --- input validation ------------------------------------------------------

TEST_F(SchedulerTest, SubmitRejectsBadJobsNamingTheField) {
  add_nodes(1);
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).build()));
  struct Case {
    JobSpec job;
    Errc code;
    const char* needle;
  };
  std::vector<Case> cases{
      {JobBuilder(1).build(), Errc::duplicate, "job 1 already exists"},
      {JobBuilder(2).pool("nope").build(), Errc::unknown_name, "'nope'"},
      {JobBuilder(3).job_class("vip").build(), Errc::unknown_name, "'vip'"},
      {JobBuilder(4).count(0).build(), Errc::invalid_argument, "'count'"},
      {JobBuilder(5).resources("").build(), Errc::invalid_argument, "'resources'"},
      {JobBuilder(6).user("").build(), Errc::invalid_argument, "'user'"},
      {JobBuilder(7).constraint("os=linux,ssd").build(), Errc::invalid_argument, "'constraints'"},
  };
  for (const auto& c : cases) {
    auto st = sched().submit(c.job, ms(0));
    ASSERT_FALSE(st) << "job " << c.job.id.value << " was accepted";
    EXPECT_EQ(st.error().code, c.code) << st.error().to_string();
    EXPECT_NE(st.error().message.find(c.needle), std::string::npos) << st.error().message;
  }
  EXPECT_EQ(sched().stats().jobs_submitted, 1u);
}

TEST(SchedulerConfigTest, ValidateNamesTheProblem) {
  EXPECT_TRUE(scheduler_config().validate());
  auto expect_bad = [](SchedulerConfig c, const char* needle) {
    auto st = c.validate();
    ASSERT_FALSE(st) << needle;
    EXPECT_NE(st.error().message.find(needle), std::string::npos) << st.error().message;
  };
  SchedulerConfig c = scheduler_config();
  c.pools.clear();
  expect_bad(c, "no pools");
  c = scheduler_config();
  c.default_class = "gold";
  expect_bad(c, "'gold'");
  c = scheduler_config();
  c.classes[0].weight = 0;
  expect_bad(c, "weight");
  c = scheduler_config();
  c.max_claims_in_flight = 0;
  expect_bad(c, "max_claims_in_flight");
  c = scheduler_config();
  c.epoch = kMaxEpoch;
  expect_bad(c, "epoch");
  c = scheduler_config();
  c.epoch = 0;
  expect_bad(c, "epoch");
}

TEST_F(SchedulerTest, NodesOfOtherPoolsAreRefused) {
  start();
  auto st = sched().add_node(NodeBuilder(7).pool("gpu").build(), NodeSnapshot{});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::unknown_name);
  EXPECT_NE(st.error().message.find("'gpu'"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

// Retries end: a task whose claims went unanswered max_claim_attempts times
// makes its job back off, doubling up to max_backoff, and it is tried again
// after each backoff (never parked for good); explain says why and until when.
TEST(SchedulerRetries, BackoffDoublesUpToItsCapAndTheTaskIsTriedAgain) {
  SimCluster cluster;
  cluster.add_node(NodeBuilder(1).capacity("cpu=4").build());
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"default"};
  c.reply_timeout = ms(100);
  c.max_claim_attempts = 1;
  c.initial_backoff = ms(10);
  c.max_backoff = ms(40);
  size_t s = cluster.add_scheduler(c);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  // The node never answers: every claim is lost on the way.
  std::vector<int64_t> sent_at;
  std::string waiting;
  for (int step = 0; step < 200; ++step) {
    while (cluster.take_to_node(s, 0)) sent_at.push_back(cluster.now().count() / 1'000'000);
    cluster.refresh_busy();
    if (cluster.scheduler(s).job(JobId{1})->queue.state == QueueState::backing_off && waiting.empty())
      waiting = cluster.scheduler(s).explain(JobId{1});
    cluster.advance_by(ms(5));
  }
  // Claims at 0 ms, then after each 100 ms timeout a backoff of 10, 20, 40,
  // 40, ... ms: the cap holds and the tries go on.
  ASSERT_GE(sent_at.size(), 6u);
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < sent_at.size(); ++i) gaps.push_back(sent_at[i] - sent_at[i - 1] - 100);
  EXPECT_EQ(std::vector<int64_t>(gaps.begin(), gaps.begin() + 5), (std::vector<int64_t>{10, 20, 40, 40, 40}));
  EXPECT_EQ(cluster.scheduler(s).stats().claim_timeouts, sent_at.size() - (cluster.scheduler(s).claims_in_flight() ? 1 : 0));
  EXPECT_GE(cluster.scheduler(s).stats().backoffs, 5u);
  EXPECT_NE(waiting.find("backing off until"), std::string::npos) << waiting;
  EXPECT_NE(waiting.find("did not answer a claim"), std::string::npos) << waiting;
}

}  // namespace
}  // namespace claimsched::core
