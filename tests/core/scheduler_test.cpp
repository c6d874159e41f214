// core::Scheduler driven by hand over a simulated cluster of real NodeLedgers
// (sim_cluster.hpp): the whole claim protocol, one scenario at a time.

#include "core/scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::ClaimBuilder;
using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::res;
using testing::SimCluster;

constexpr Duration kTtl = std::chrono::seconds(1);
constexpr Duration kReplyTimeout = std::chrono::milliseconds(100);

LedgerConfig ledger_config() {
  LedgerConfig c;
  c.claim_ttl = kTtl;
  return c;
}

SchedulerConfig scheduler_config() {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.epoch = 1;
  c.pools = {"default"};
  c.reply_timeout = kReplyTimeout;
  c.unpark_interval = ms(5);
  return c;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void add_nodes(int n, std::string_view capacity = "cpu=4,memory=8Gi") {
    for (int i = 0; i < n; ++i)
      cluster.add_node(
          NodeBuilder(static_cast<uint32_t>(cluster.node_count() + 1)).capacity(capacity).build());
  }
  size_t start(SchedulerConfig config = scheduler_config()) {
    s = cluster.add_scheduler(std::move(config));
    return s;
  }
  Scheduler& sched() { return cluster.scheduler(s); }
  const JobRecord& job(uint64_t id) {
    const JobRecord* j = sched().job(JobId{id});
    if (!j) throw std::logic_error("no job " + std::to_string(id));
    return *j;
  }
  std::vector<uint32_t> nodes_of(uint64_t id) {
    std::vector<uint32_t> out;
    for (const auto& t : job(id).tasks) out.push_back(t.node ? *t.node + 1 : 0);
    return out;
  }
  /// Waiting for capacity or backing off (not in line).
  static bool parked(const JobRecord& j) {
    return j.queue.state == QueueState::waiting_for_capacity || j.queue.state == QueueState::backing_off;
  }
  std::string reason(uint64_t id) {
    const JobNotes* n = sched().notes(JobId{id});
    return n ? n->reason : std::string();
  }
  /// Allocations of `job` on node n.
  size_t allocated_on(size_t n, uint64_t id) {
    size_t k = 0;
    for (const auto& a : cluster.ledger(n).allocations()) k += a.task.job == JobId{id};
    return k;
  }
  size_t claimed_on(size_t n, uint64_t id) {
    size_t k = 0;
    for (const auto& c : cluster.ledger(n).claims())
      if (c.job == JobId{id}) k += c.tasks.size();
    return k;
  }
  /// Runs the network to quiet and checks every invariant.
  void run() {
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  void TearDown() override {
    EXPECT_EQ(cluster.check_all(), "");
    for (const auto& v : cluster.violations()) ADD_FAILURE() << v;
  }

  SimCluster cluster{ledger_config()};
  size_t s = 0;
};

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
