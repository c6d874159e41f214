// core::Scheduler driven by hand over a simulated cluster of real NodeLedgers
// (sim_cluster.hpp): the whole claim protocol, one scenario at a time.

#include "core/scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/core/builders.hpp"
#include "tests/core/scheduler_fixture.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using namespace scheduler_fixture;

// --- the happy path --------------------------------------------------------

TEST_F(SchedulerTest, SubmitClaimAcceptConfirmRunning) {
  add_nodes(2);
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(6).cpu("1").build()));
  // Fill-first batches: four tasks on node 1 in one claim, two on node 2.
  ASSERT_EQ(cluster.to_node(s, 0).size(), 1u);
  ASSERT_EQ(cluster.to_node(s, 1).size(), 1u);
  const auto& c1 = std::get<ClaimRequest>(cluster.to_node(s, 0).front());
  EXPECT_EQ(c1.tasks, (std::vector<TaskIndex>{0, 1, 2, 3}));
  EXPECT_EQ(c1.epoch, 1u);
  EXPECT_EQ(c1.partition, PartitionId{1});
  EXPECT_FALSE(c1.expected_generation.has_value());  // optimistic by default
  EXPECT_EQ(std::get<ClaimRequest>(cluster.to_node(s, 1).front()).tasks.size(), 2u);
  EXPECT_EQ(job(1).count_in(TaskState::claimed), 6u);
  EXPECT_EQ(sched().claims_in_flight(), 2u);

  cluster.advance_by(ms(3));
  run();

  const JobRecord& j = job(1);
  EXPECT_EQ(j.count_in(TaskState::running), 6u);
  EXPECT_EQ(j.pending(), 0u);
  EXPECT_TRUE(reason(1).empty());
  EXPECT_EQ(nodes_of(1), (std::vector<uint32_t>{1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(sched().claims_in_flight(), 0u);
  EXPECT_EQ(sched().pending_tasks(), 0u);
  EXPECT_EQ(sched().queued_jobs(), 0u);
  EXPECT_EQ(sched().parked_jobs(), 0u);

  const SchedulerStats& st = sched().stats();
  EXPECT_EQ(st.jobs_submitted, 1u);
  EXPECT_EQ(st.tasks_submitted, 6u);
  EXPECT_EQ(st.claims_sent, 2u);
  EXPECT_EQ(st.claims_accepted, 2u);
  EXPECT_EQ(st.confirms_sent, 2u);
  EXPECT_EQ(st.confirms_failed, 0u);
  EXPECT_EQ(st.placements, 6u);
  EXPECT_EQ(st.rejected(), 0u);
  EXPECT_EQ(st.late_replies, 0u);
  EXPECT_EQ(st.generation_gaps, 0u);
  EXPECT_EQ(st.placement_latency.count(), 6u);  // per task
  EXPECT_EQ(st.placement_latency.min(), uint64_t(ms(3).count()));
  EXPECT_EQ(st.placement_latency.max(), uint64_t(ms(3).count()));

  // The nodes agree: claims became allocations, one generation each.
  EXPECT_EQ(allocated_on(0, 1), 4u);
  EXPECT_EQ(allocated_on(1, 1), 2u);
  EXPECT_TRUE(cluster.ledger(0).claims().empty());
  EXPECT_EQ(cluster.ledger(0).generation(), 2u);
  // ... and so does the scheduler's view.
  const NodeView& v = sched().view().node(0);
  EXPECT_EQ(v.generation, 2u);
  EXPECT_EQ(v.reported_free, res("memory=8Gi"));
  EXPECT_TRUE(v.in_flight.is_zero());
  EXPECT_EQ(v.in_flight_changes, 0u);
}

TEST_F(SchedulerTest, ConstraintsChooseTheNodes) {
  cluster.add_node(NodeBuilder(1).capacity("cpu=4").build());
  cluster.add_node(NodeBuilder(2).capacity("cpu=4").label("ssd").build());
  cluster.add_node(NodeBuilder(3).capacity("cpu=4").label("ssd").label("os=linux").build());
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(5).cpu("1").constraint("ssd").build()));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(2).cpu("1").constraint("!ssd").build()));
  run();
  EXPECT_EQ(nodes_of(1), (std::vector<uint32_t>{2, 2, 2, 2, 3}));
  EXPECT_EQ(nodes_of(2), (std::vector<uint32_t>{1, 1}));
}

// --- rejects and retries ---------------------------------------------------

TEST_F(SchedulerTest, RejectCorrectsTheViewAndRetriesElsewhere) {
  add_nodes(2);
  start();
  // Another partition fills node 1; nobody tells our scheduler.
  ASSERT_EQ(
      cluster.foreign_claim(0, ClaimBuilder().partition(9).job(900).task_count(4).build(), false)
          .outcome,
      ClaimOutcome::accepted);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  EXPECT_EQ(cluster.to_node(s, 0).size(), 1u);  // the stale view picks node 1
  run();
  const SchedulerStats& st = sched().stats();
  EXPECT_EQ(st.rejected_insufficient, 1u);
  EXPECT_EQ(st.claims_sent, 2u);
  EXPECT_EQ(st.placements, 2u);
  EXPECT_EQ(nodes_of(1), (std::vector<uint32_t>{2, 2}));
  // The reject's snapshot corrected the view without another round trip.
  EXPECT_EQ(sched().view().node(0).reported_free, cluster.ledger(0).free());
  EXPECT_EQ(sched().view().node(0).generation, cluster.ledger(0).generation());
  EXPECT_EQ(allocated_on(0, 1), 0u);
}

TEST_F(SchedulerTest, TasksThatCanNeverFitAreRefusedAtSubmit) {
  add_nodes(2);
  start();
  auto refused = cluster.submit(s, JobBuilder(1).count(3).cpu("16").build());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "job field 'resources': no node of pool 'default' can hold one task of cpu=16; the largest has "
            "cpu=4,memory=8Gi");
  auto gang = cluster.submit(s, JobBuilder(2).count(9).cpu("1").gang().build());
  ASSERT_FALSE(gang);
  EXPECT_EQ(gang.error().message,
            "job field 'resources': a gang of 9 tasks runs all at once, but the nodes of pool 'default' hold at "
            "most 8 of them together");
  EXPECT_EQ(sched().stats().jobs_submitted, 0u);
}

TEST_F(SchedulerTest, TasksThatCanNeverFitAreParkedAsUnresolvableWhenHeld) {
  add_nodes(2);
  start();
  auto job_spec = JobBuilder(1).count(3).cpu("16").build();
  job_spec.wait_for_nodes = true;  // submit --hold: for nodes still to come
  ASSERT_TRUE(cluster.submit(s, job_spec));
  EXPECT_EQ(cluster.messages_in_flight(), 0u);  // nothing is even tried
  const JobRecord& j = job(1);
  EXPECT_TRUE(parked(j));
  EXPECT_EQ(sched().parked_jobs(), 1u);
  EXPECT_EQ(sched().queued_jobs(), 0u);
  EXPECT_EQ(j.count_in(TaskState::pending), 3u);
  std::string why = sched().explain(JobId{1});
  EXPECT_NE(why.find("no node in pool 'default' is big enough"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu=16"), std::string::npos) << why;
  EXPECT_EQ(sched().explanation(JobId{1})->verdict, WaitVerdict::unresolvable);
  // Other work is not blocked behind it.
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("1").build()));
  run();
  EXPECT_EQ(job(2).count_in(TaskState::running), 1u);
  // Time passes, capacity changes: it stays parked and costs no messages.
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{2}, 0}, TaskState::succeeded, 0));
  cluster.advance_by(std::chrono::seconds(5));
  run();
  EXPECT_EQ(sched().stats().claims_sent, 1u);
  EXPECT_TRUE(parked(job(1)));
  EXPECT_EQ(job(1).count_in(TaskState::pending), 3u);
}

// Bug 2 of issue 13: a gang of 20 on 12 slots was explained forever as
// "room has appeared; it is placed on the next pass".
TEST_F(SchedulerTest, AGangThatCanNeverRunAtOnceIsExplainedAsSuch) {
  add_nodes(3, "cpu=4");
  start();
  auto gang = JobBuilder(1).count(20).cpu("1").gang().build();
  gang.wait_for_nodes = true;
  ASSERT_TRUE(cluster.submit(s, gang));
  run();
  auto e = sched().explanation(JobId{1});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->verdict, WaitVerdict::unresolvable) << e->summary;
  EXPECT_EQ(sched().explain(JobId{1}),
            "a gang of 20 tasks runs all at once, but the nodes of pool 'default' hold at most 12 of them together");
  EXPECT_EQ(e->counts.tasks_fitting_empty, 12u);
}

TEST_F(SchedulerTest, AGangWaitingForRoomSaysHowMuchThereIs) {
  add_nodes(3, "cpu=4");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(5).cpu("1").build()));
  run();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(10).cpu("1").gang().build()));
  run();
  auto e = sched().explanation(JobId{2});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->verdict, WaitVerdict::unschedulable) << e->summary;
  EXPECT_EQ(e->summary,
            "a gang of 10 tasks waits until all fit at once: room for 7 now (2 nodes with room, 10 when the pool is "
            "empty)");
}

TEST_F(SchedulerTest, FullClusterParksUntilCapacityFrees) {
  add_nodes(1, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").runtime(ms(500)).build()));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("1").build()));
  run();
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);
  EXPECT_TRUE(parked(job(2)));
  EXPECT_NE(sched().explain(JobId{2}).find("free now"), std::string::npos)
      << sched().explain(JobId{2});
  cluster.advance_to(ms(499));
  run();
  EXPECT_TRUE(parked(job(2)));
  // Job 1's tasks end; the node's delta reports it and job 2 gets the room.
  cluster.advance_to(ms(500));
  run();
  EXPECT_EQ(cluster.finished_jobs(s), (std::vector<JobId>{JobId{1}}));
  EXPECT_EQ(job(1).count_in(TaskState::succeeded), 2u);
  EXPECT_EQ(job(2).count_in(TaskState::running), 1u);
  EXPECT_FALSE(parked(job(2)));
  EXPECT_EQ(sched().explain(JobId{2}), "all tasks placed");
  EXPECT_EQ(sched().explain(JobId{1}), "finished");
  EXPECT_EQ(sched().stats().tasks_finished, 2u);
}

TEST_F(SchedulerTest, DrainingNodeIsAvoidedAndARacingClaimRetries) {
  add_nodes(2);
  start();
  cluster.set_node_state(0, NodeState::draining);
  run();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  EXPECT_EQ(cluster.to_node(s, 1).size(), 1u);
  run();
  EXPECT_EQ(nodes_of(1), (std::vector<uint32_t>{2}));
  // The node drains while our claim is on its way.
  cluster.set_node_state(0, NodeState::up);
  run();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("1").build()));
  ASSERT_EQ(cluster.to_node(s, 0).size(), 1u);
  cluster.set_node_state(0, NodeState::draining);
  run();
  EXPECT_EQ(sched().stats().rejected_other, 1u);  // not_schedulable
  EXPECT_EQ(nodes_of(2), (std::vector<uint32_t>{2}));
}

// --- gangs -----------------------------------------------------------------

TEST_F(SchedulerTest, GangIsAllOrNothingWhenOneNodeRejects) {
  add_nodes(3, "cpu=2");
  start();
  auto foreign = ClaimBuilder().partition(9).node(3).job(900).per_task("cpu=2").build();
  ASSERT_EQ(cluster.foreign_claim(2, foreign, false).outcome, ClaimOutcome::accepted);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(3).cpu("2").gang().build()));
  EXPECT_EQ(sched().stats().claims_sent, 3u);  // one task per node, all at once
  run();
  const SchedulerStats& st = sched().stats();
  EXPECT_EQ(st.gangs_aborted, 1u);
  EXPECT_EQ(st.rejected_insufficient, 1u);
  EXPECT_EQ(st.placements, 0u);
  // Nothing of the gang is left on any node.
  for (size_t n = 0; n < 3; ++n) {
    EXPECT_EQ(allocated_on(n, 1), 0u) << "node " << n + 1;
    EXPECT_EQ(claimed_on(n, 1), 0u) << "node " << n + 1;
  }
  const JobRecord& j = job(1);
  EXPECT_EQ(j.count_in(TaskState::pending), 3u);
  EXPECT_TRUE(parked(j));
  // Parked jobs are looked at again at most every unpark_interval: once both
  // releases are answered, two of three fit.
  cluster.advance_by(ms(5));
  run();
  EXPECT_TRUE(parked(j));
  std::string why = sched().explain(JobId{1});
  EXPECT_NE(why.find("gang of 3 tasks waits until all fit at once"), std::string::npos) << why;
  EXPECT_EQ(sched().stats().claims_sent, 3u);  // no doomed partial attempt

  // The other partition lets go and tells everyone: the gang runs, whole
  // (parked jobs are looked at again at most every unpark_interval).
  ASSERT_EQ(cluster.foreign_release(2, testing::release_claim(foreign), true).released, 1u);
  run();
  cluster.advance_by(ms(5));
  run();
  EXPECT_EQ(job(1).count_in(TaskState::running), 3u);
  EXPECT_EQ(nodes_of(1).size(), 3u);
  auto placed = nodes_of(1);
  std::set<uint32_t> nodes(placed.begin(), placed.end());
  EXPECT_EQ(nodes, (std::set<uint32_t>{1, 2, 3}));
  EXPECT_EQ(sched().stats().placements, 3u);
}

TEST_F(SchedulerTest, GangReleasesConfirmedMembersWhenAConfirmComesTooLate) {
  add_nodes(3, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(3).cpu("2").gang().build()));
  // Deliver the claims and the accepts: three confirms go out.
  for (size_t n = 0; n < 3; ++n) ASSERT_TRUE(cluster.deliver_to_node(s, n));
  for (size_t n = 0; n < 3; ++n) ASSERT_TRUE(cluster.deliver_to_scheduler(n, s));
  ASSERT_EQ(sched().stats().confirms_sent, 3u);
  // Nodes 1 and 2 confirm; the confirm to node 3 is lost.
  for (size_t n = 0; n < 2; ++n) {
    ASSERT_TRUE(cluster.deliver_to_node(s, n));
    ASSERT_TRUE(cluster.deliver_to_scheduler(n, s));
  }
  cluster.to_node(s, 2).clear();
  cluster.refresh_busy();
  EXPECT_EQ(allocated_on(0, 1) + allocated_on(1, 1), 2u);
  // The claim on node 3 expires; the scheduler's resent confirm finds nothing.
  cluster.advance_by(kTtl);
  ASSERT_EQ(cluster.to_node(s, 2).size(), 1u);
  ASSERT_TRUE(std::holds_alternative<ConfirmRequest>(cluster.to_node(s, 2).front()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 2));
  // The node's expiry delta, then the confirm's answer, unknown_claim: the gang fails.
  while (cluster.deliver_to_scheduler(2, s)) {
  }
  EXPECT_EQ(sched().stats().confirms_failed, 1u);
  EXPECT_EQ(sched().stats().gangs_aborted, 1u);
  // The releases of the two confirmed members go out first on their channels.
  ASSERT_TRUE(std::holds_alternative<ReleaseRequest>(cluster.to_node(s, 0).front()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));
  ASSERT_TRUE(cluster.deliver_to_node(s, 1));
  for (size_t n = 0; n < 3; ++n) {
    EXPECT_EQ(allocated_on(n, 1), 0u) << "a partial gang stayed on node " << n + 1;
    EXPECT_EQ(claimed_on(n, 1), 0u) << "node " << n + 1;
  }
  EXPECT_EQ(sched().stats().placements, 0u);
  // The gang was requeued whole and, with room everywhere, runs.
  run();
  cluster.advance_by(ms(5));
  run();
  EXPECT_EQ(job(1).count_in(TaskState::running), 3u);
  EXPECT_EQ(sched().stats().placements, 3u);
}

// Sets up a gang of two (one task on node 1, one on node 2) whose member on
// node 1 is confirmed while node 2's claim expires: the gang aborts and sends
// node 1 a release for its confirmed task. Returns with that release queued.
void abort_gang_with_a_confirmed_member(SimCluster& cluster, size_t s) {
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("2").gang().build()));
  for (size_t n = 0; n < 2; ++n) ASSERT_TRUE(cluster.deliver_to_node(s, n));
  for (size_t n = 0; n < 2; ++n) ASSERT_TRUE(cluster.deliver_to_scheduler(n, s));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));  // node 1 confirms
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));
  ASSERT_TRUE(cluster.take_to_node(s, 1));  // node 2's confirm is lost
  cluster.advance_by(kTtl);                 // its claim expires; confirm resent
  ASSERT_TRUE(cluster.deliver_to_node(s, 1));
  while (cluster.deliver_to_scheduler(1, s)) {  // unknown_claim: the gang aborts
  }
  ASSERT_EQ(cluster.scheduler(s).stats().gangs_aborted, 1u);
  ASSERT_FALSE(cluster.to_node(s, 0).empty());
  ASSERT_TRUE(std::holds_alternative<ReleaseRequest>(cluster.to_node(s, 0).front()));
}

// An aborted gang's confirmed tasks come back to the queue only once the node
// has freed them: while the release travels, the retried gang must not be
// confirmed elsewhere, or the task would be allocated on two nodes at once.
TEST_F(SchedulerTest, AnAbortedGangsTaskIsNeverAllocatedTwice) {
  add_nodes(3, "cpu=2");
  start();
  abort_gang_with_a_confirmed_member(cluster, s);
  auto release = cluster.take_to_node(s, 0);  // the release to node 1 is slow
  ASSERT_TRUE(release);
  cluster.advance_by(ms(10));
  run();  // checks, after every round, that no task is allocated twice
  EXPECT_EQ(job(1).count_in(TaskState::running), 0u);
  EXPECT_EQ(job(1).count_in(TaskState::claimed), 1u);  // still held on node 1
  cluster.node_receive(s, 0, *release);
  run();
  cluster.advance_by(ms(10));
  run();
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);
}

// A lost release of an aborted gang's confirmed task is resent: otherwise the
// task stays allocated (and running) on its node for good while the gang runs
// again elsewhere.
TEST_F(SchedulerTest, ALostReleaseOfAnAbortedGangIsResent) {
  add_nodes(3, "cpu=2");
  start();
  abort_gang_with_a_confirmed_member(cluster, s);
  ASSERT_TRUE(cluster.take_to_node(s, 0));  // lost
  for (int i = 0; i < 5; ++i) {
    cluster.advance_by(kReplyTimeout);
    run();
  }
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);
  size_t held = 0;
  for (size_t n = 0; n < 3; ++n) held += allocated_on(n, 1);
  EXPECT_EQ(held, 2u);  // the new gang, and nothing left of the old one
  EXPECT_EQ(sched().view().node(0).in_flight_changes, 0u);
}

// --- time: reply timeouts and late replies -----------------------------------

TEST_F(SchedulerTest, ReplyTimeoutRequeuesAndALateAcceptIsReleased) {
  add_nodes(2, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));  // node 1 accepts...
  ASSERT_EQ(cluster.to_scheduler(0, s).size(), 1u);
  testing::ToScheduler held = cluster.to_scheduler(0, s).front();  // ... the reply is delayed
  cluster.to_scheduler(0, s).clear();
  cluster.refresh_busy();
  ASSERT_EQ(std::get<ClaimReply>(held).outcome, ClaimOutcome::accepted);

  cluster.advance_by(kReplyTimeout);
  EXPECT_EQ(sched().stats().claim_timeouts, 1u);
  run();
  // The tasks ran elsewhere: node 1 still held them as a claim, so the retry
  // there was refused and the snapshot sent the scheduler to node 2.
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);
  EXPECT_EQ(nodes_of(1), (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(claimed_on(0, 1), 2u);

  // The late accept arrives: the scheduler releases the claim at once.
  cluster.scheduler_receive(0, s, held);
  EXPECT_GE(sched().stats().late_replies, 1u);
  run();
  EXPECT_EQ(claimed_on(0, 1), 0u);
  EXPECT_EQ(allocated_on(0, 1), 0u);
  EXPECT_EQ(cluster.ledger(0).free(), res("cpu=2"));
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);  // undisturbed
  for (const auto& [task, times] : cluster.confirmations()) EXPECT_EQ(times, 1u);
}

TEST_F(SchedulerTest, ALostReplyIsSurvivedByExpiry) {
  add_nodes(1, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));
  cluster.to_scheduler(0, s).clear();  // the accept is lost for good
  cluster.refresh_busy();
  cluster.advance_by(kReplyTimeout);
  run();  // the retry finds the tasks still claimed: invalid, then the view says full
  EXPECT_EQ(job(1).count_in(TaskState::running), 0u);
  EXPECT_EQ(claimed_on(0, 1), 2u);
  // The orphaned claim frees itself after its ttl; the job then runs.
  cluster.advance_by(kTtl);
  run();
  for (int i = 0; i < 3 && job(1).count_in(TaskState::running) < 2; ++i) {
    cluster.advance_by(ms(10));
    run();
  }
  EXPECT_EQ(job(1).count_in(TaskState::running), 2u);
  EXPECT_EQ(allocated_on(0, 1), 2u);
}

TEST_F(SchedulerTest, AJobsFirstStartAndItsEndAreEachReportedOnce) {
  // What the scheduler actor tells its job watchers (the campaigns), which
  // then look at the job instead of polling it.
  add_nodes(1, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(3).cpu("1").runtime(ms(10)).build()));
  run();
  EXPECT_EQ(cluster.started_jobs(s), (std::vector<JobId>{JobId{1}})) << "two of its tasks run: one start";
  EXPECT_TRUE(cluster.finished_jobs(s).empty());
  cluster.advance_by(ms(10));
  run();  // the third task starts: not a new start of the job
  cluster.advance_by(ms(10));
  run();
  EXPECT_EQ(cluster.started_jobs(s), (std::vector<JobId>{JobId{1}}));
  EXPECT_EQ(cluster.finished_jobs(s), (std::vector<JobId>{JobId{1}}));
}

TEST_F(SchedulerTest, ExhaustedAttemptsRecordWhichNodeDidNotAnswer) {
  add_nodes(1);
  SchedulerConfig config = scheduler_config();
  config.max_claim_attempts = 1;
  start(config);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  cluster.to_node(s, 0).clear();  // the claim never arrives
  cluster.refresh_busy();
  Outbox out;
  sched().on_tick(kReplyTimeout, out);
  EXPECT_EQ(sched().stats().claim_timeouts, 1u);
  EXPECT_EQ(job(1).count_in(TaskState::pending), 1u);
  std::string why = sched().explain(JobId{1});
  EXPECT_NE(why.find("node 1 did not answer a claim (1 attempts"), std::string::npos) << why;
}

TEST_F(SchedulerTest, ATaskThatEndsBeforeItsConfirmReplyArrivesRunsOnce) {
  add_nodes(1);
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").runtime(ms(10)).build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));       // accepted
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));  // confirm goes out
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));       // confirmed: the task runs...
  ASSERT_TRUE(cluster.take_to_scheduler(0, s));     // ... but the reply is lost
  cluster.advance_by(ms(10));                       // the task ends; the node says so
  run();
  EXPECT_EQ(cluster.finished_jobs(s), (std::vector<JobId>{JobId{1}}));
  EXPECT_EQ(job(1).count_in(TaskState::succeeded), 1u);
  // Nothing is run again when the confirm would have been resent.
  cluster.advance_by(kReplyTimeout * 3);
  run();
  EXPECT_EQ(sched().stats().claims_sent, 1u);
  EXPECT_EQ(sched().claims_in_flight(), 0u);
  EXPECT_EQ(cluster.confirmations().at(TaskRef{JobId{1}, 0}), 1u);
  EXPECT_EQ(sched().view().node(0).in_flight_changes, 0u);
}

TEST_F(SchedulerTest, AGangMemberThatEndsBeforeTheGangIsCompleteIsCounted) {
  add_nodes(2, "cpu=2");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("2").gang().runtime(ms(10)).build()));
  for (size_t n = 0; n < 2; ++n) ASSERT_TRUE(cluster.deliver_to_node(s, n));
  for (size_t n = 0; n < 2; ++n) ASSERT_TRUE(cluster.deliver_to_scheduler(n, s));
  // Node 1 confirms at once; node 2's confirm is slow.
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));
  cluster.advance_by(ms(10));  // the member on node 1 has already finished
  while (cluster.deliver_to_scheduler(0, s)) {
  }
  run();  // now node 2 confirms and the gang is complete
  cluster.advance_by(ms(10));
  run();
  EXPECT_EQ(cluster.finished_jobs(s), (std::vector<JobId>{JobId{1}}));
  EXPECT_EQ(job(1).count_in(TaskState::succeeded), 2u);
  EXPECT_EQ(job(1).count_in(TaskState::running), 0u);
  EXPECT_EQ(sched().stats().tasks_finished, 2u);
  EXPECT_EQ(sched().stats().placements, 2u);
}

TEST_F(SchedulerTest, ALateStaleEpochReplyStillFences) {
  add_nodes(1);
  start();
  cluster.ledger(0).restore_epoch(PartitionId{1}, 2);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));
  auto held = cluster.take_to_scheduler(0, s);  // stale_epoch, delayed
  ASSERT_TRUE(held);
  Outbox out;
  sched().on_tick(kReplyTimeout, out);  // given up on: the reply is now late
  ASSERT_EQ(sched().stats().claim_timeouts, 1u);
  EXPECT_FALSE(sched().fenced());
  cluster.scheduler_receive(0, s, *held);
  EXPECT_TRUE(sched().fenced());
  EXPECT_EQ(cluster.to_node(s, 0).size(), 0u);  // and it stops claiming
}

TEST_F(SchedulerTest, ReleasingALateAcceptKeepsStrictCasAccountingExact) {
  add_nodes(1);
  SchedulerConfig config = scheduler_config();
  config.strict_cas = true;
  start(config);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));
  auto held = cluster.take_to_scheduler(0, s);  // the accept is delayed
  ASSERT_TRUE(held);
  Outbox out;
  sched().on_tick(kReplyTimeout, out);
  // The late accept arrives: its claim is released, then the task is claimed
  // again (with strict CAS once the release is answered: one change at a time).
  cluster.scheduler_receive(0, s, *held);
  const auto& sent = cluster.to_node(s, 0);
  EXPECT_TRUE(std::any_of(sent.begin(), sent.end(), [](const testing::ToNode& m) {
    return std::holds_alternative<ReleaseRequest>(m);
  }));
  for (int i = 0; i < 10 && job(1).count_in(TaskState::running) == 0; ++i) {
    run();
    cluster.advance_by(ms(10));
  }
  EXPECT_EQ(job(1).count_in(TaskState::running), 1u);
  EXPECT_EQ(sched().view().node(0).in_flight_changes, 0u);
  EXPECT_EQ(sched().view().node(0).generation, cluster.ledger(0).generation());
}

// --- many waiting jobs of one shape (the thundering herd) --------------------

TEST_F(SchedulerTest, WaitingJobsOfOneShapeStartInRankOrderWithOneSearchAPass) {
  add_nodes(1, "cpu=2,memory=8Gi");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  run();
  ASSERT_EQ(job(1).count_in(TaskState::running), 2u);
  // Thirty jobs of two CPUs, then one of one CPU: all find no room.
  for (uint64_t id = 2; id <= 31; ++id) {
    cluster.advance_by(ms(1));
    ASSERT_TRUE(cluster.submit(s, JobBuilder(id).count(1).cpu("2").build()));
  }
  cluster.advance_by(ms(1));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(32).count(1).cpu("1").build()));
  run();
  EXPECT_EQ(sched().parked_jobs(), 31u);
  uint64_t searches = sched().placement_searches();

  // One CPU frees, after the unpark interval (every waiting job is due a
  // look): the job of one CPU starts, behind thirty that still cannot; those
  // cost one search a pass together, not one each (a few passes run as the
  // claim goes back and forth).
  cluster.advance_by(ms(10));
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, 0}, TaskState::succeeded, 0));
  run();
  EXPECT_EQ(job(32).count_in(TaskState::running), 1u);
  for (uint64_t id = 2; id <= 31; ++id) EXPECT_TRUE(parked(job(id))) << id;
  EXPECT_LE(sched().placement_searches() - searches, 5u);

  // Two CPUs free: the first of the thirty in line starts, the others wait.
  searches = sched().placement_searches();
  cluster.advance_by(ms(10));
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, 1}, TaskState::succeeded, 0));
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{32}, 0}, TaskState::succeeded, 0));
  run();
  cluster.advance_by(ms(10));
  run();
  EXPECT_EQ(job(2).count_in(TaskState::running), 1u);
  for (uint64_t id = 3; id <= 31; ++id) EXPECT_TRUE(parked(job(id))) << id;
  EXPECT_EQ(sched().parked_jobs(), 29u);
  EXPECT_LE(sched().placement_searches() - searches, 10u);

  // And so on, one at a time, in submit order.
  for (uint64_t id = 3; id <= 31; ++id) {
    ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{id - 1}, 0}, TaskState::succeeded, 0));
    run();
    cluster.advance_by(ms(10));
    run();
    EXPECT_EQ(job(id).count_in(TaskState::running), 1u) << id;
    if (id < 31) {
      EXPECT_TRUE(parked(job(id + 1))) << id;
    }
  }
  EXPECT_EQ(sched().parked_jobs(), 0u);
}

TEST_F(SchedulerTest, AWaitingGroupStartsInOrderAsRoomFreesWithinTheUnparkInterval) {
  add_nodes(1, "cpu=2,memory=8Gi");
  SchedulerConfig config = scheduler_config();
  config.unpark_interval = std::chrono::seconds(60);  // only the room freed brings jobs back
  start(config);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  run();
  // Jobs 2-5 (one CPU each) wait as a group.
  for (uint64_t id = 2; id <= 5; ++id) {
    cluster.advance_by(ms(1));
    ASSERT_TRUE(cluster.submit(s, JobBuilder(id).count(1).cpu("1").build()));
  }
  run();
  ASSERT_EQ(sched().parked_jobs(), 4u);
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, 0}, TaskState::succeeded, 0));
  run();
  EXPECT_EQ(job(2).count_in(TaskState::running), 1u);
  EXPECT_TRUE(parked(job(3)));
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, 1}, TaskState::succeeded, 0));
  run();
  EXPECT_EQ(job(3).count_in(TaskState::running), 1u);
  EXPECT_TRUE(parked(job(4)));
  EXPECT_TRUE(parked(job(5)));
}

TEST_F(SchedulerTest, WaitingJobsOfOneShapeAllSayTheRoomIsFragmented) {
  add_nodes(2, "cpu=2,memory=8Gi");
  start();
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(4).cpu("1").build()));
  run();
  ASSERT_EQ(job(1).count_in(TaskState::running), 4u);
  for (uint64_t id = 2; id <= 4; ++id) {
    cluster.advance_by(ms(1));
    ASSERT_TRUE(cluster.submit(s, JobBuilder(id).count(1).cpu("2").build()));
  }
  run();
  for (uint64_t id = 2; id <= 4; ++id) {
    ASSERT_NE(sched().notes(JobId{id}), nullptr);
    EXPECT_FALSE(sched().notes(JobId{id})->fragmented) << id;  // no room anywhere
  }
  // One CPU frees on each node: two in all, but no node has two. Only the
  // first of the group is searched; the others say the same.
  auto nodes = nodes_of(1);
  auto on = [&](uint32_t node) {
    return static_cast<TaskIndex>(std::find(nodes.begin(), nodes.end(), node) - nodes.begin());
  };
  cluster.advance_by(ms(10));
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, on(1)}, TaskState::succeeded, 0));
  ASSERT_TRUE(cluster.finish_task(1, TaskRef{JobId{1}, on(2)}, TaskState::succeeded, 0));
  run();
  cluster.advance_by(ms(10));
  run();
  for (uint64_t id = 2; id <= 4; ++id) {
    EXPECT_TRUE(parked(job(id))) << id;
    EXPECT_TRUE(sched().notes(JobId{id})->fragmented) << id;
  }
}

}  // namespace
}  // namespace claimsched::core
