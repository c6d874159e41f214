// What makes a scheduler's state durable and recoverable: the journal it
// emits before acknowledging and confirming, rebuilding from stored records
// (restore_job), reconciling with what nodes report after a restart
// (reconcile_node), and recovering from gaps in a node's update stream.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::ClaimBuilder;
using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::SimCluster;

SchedulerConfig config(Epoch epoch = 1, bool journal = true) {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.epoch = epoch;
  c.pools = {"default"};
  c.reply_timeout = ms(100);
  c.unpark_interval = ms(5);
  c.journal = journal;
  c.recovery_grace = ms(500);
  return c;
}

LedgerConfig ledger_config() {
  LedgerConfig lc;
  lc.claim_ttl = std::chrono::seconds(1);
  return lc;
}

class RecoveryTest : public ::testing::Test {
 protected:
  void add_nodes(int n) {
    for (int i = 0; i < n; ++i)
      cluster.add_node(NodeBuilder(static_cast<uint32_t>(cluster.node_count() + 1))
                           .capacity("cpu=4,memory=8Gi")
                           .build());
  }
  void run() {
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  /// Node n (re)registers with `sched` with what its ledger holds and the
  /// task ends it remembers; what the scheduler sends goes to `out`.
  void register_again(Scheduler& sched, size_t n, TimePoint now, Outbox& out) {
    NodeReport r;
    r.spec = cluster.spec(n);
    r.snapshot = cluster.ledger(n).snapshot();
    r.claims = cluster.ledger(n).claims();
    r.allocations = cluster.ledger(n).allocations();
    r.finished = cluster.ledger(n).recent_finished();
    EXPECT_TRUE(sched.add_node(r.spec, r.snapshot));
    sched.reconcile_node(r, now, out);
  }
  SimCluster cluster{ledger_config()};
};

TEST_F(RecoveryTest, TheJournalHoldsTheJobAndItsPlacementBeforeTheConfirm) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  Scheduler& sched = cluster.scheduler(s);
  (void)sched.take_journal();  // node registration
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  Journal accepted = sched.take_journal();
  ASSERT_EQ(accepted.jobs_accepted.size(), 1u);
  EXPECT_EQ(accepted.jobs_accepted[0].id, JobId{1});
  EXPECT_TRUE(accepted.task_changes.empty()) << "nothing is placed before a node accepts";
  ASSERT_TRUE(cluster.deliver_to_node(s, 0));       // the claim
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));  // accepted: confirm goes out now
  Journal placed = sched.take_journal();
  ASSERT_EQ(placed.task_changes.size(), 1u);
  EXPECT_EQ(placed.task_changes[0].state, TaskState::claimed);
  EXPECT_EQ(placed.task_changes[0].node, NodeId{1});
  EXPECT_EQ(placed.task_changes[0].tasks, (std::vector<TaskIndex>{0, 1}));
  EXPECT_FALSE(cluster.to_node(s, 0).empty()) << "the confirm is in the outbox of the same step";
}

TEST_F(RecoveryTest, FinishedTasksAreJournaledWithTheirEndState) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").runtime(ms(50)).build()));
  run();
  (void)cluster.scheduler(s).take_journal();
  cluster.advance_by(ms(60));
  run();
  Journal j = cluster.scheduler(s).take_journal();
  ASSERT_EQ(j.task_changes.size(), 1u);
  EXPECT_EQ(j.task_changes[0].state, TaskState::succeeded);
  // Where it ran stays on record (bug 5 of issue 13: a restart lost it).
  EXPECT_EQ(j.task_changes[0].node, NodeId{1});
  EXPECT_EQ(j.task_changes[0].end, TaskEnd::exited(0));
}

TEST_F(RecoveryTest, WithoutAJournalNothingIsRecorded) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config(1, false));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  run();
  EXPECT_TRUE(cluster.scheduler(s).take_journal().empty());
}

/// A scheduler rebuilt from records, as recover_partition does after a crash.
TEST_F(RecoveryTest, RestoredTasksAreAdoptedLostOrReleasedByTheNodesReports) {
  add_nodes(2);
  // The crashed run: job 1's tasks 0,1 on node 1, task 2 on node 2; job 2 ran
  // to completion. Node 1 holds tasks 0 and 1; node 2 lost task 2 but holds a
  // task the records do not know (1.3) and a live claim of the old epoch.
  auto place = [&](size_t n, uint64_t claim, std::vector<TaskIndex> tasks) {
    auto c = ClaimBuilder().id(claim).node(static_cast<uint32_t>(n + 1)).job(1).tasks(tasks).build();
    ASSERT_EQ(cluster.foreign_claim(n, c, false).outcome, ClaimOutcome::accepted);
    ASSERT_EQ(cluster.ledger(n).confirm(testing::confirm_of(c), cluster.now()).outcome,
              ConfirmOutcome::confirmed);
  };
  place(0, 1, {0, 1});
  place(1, 2, {3});
  auto live = ClaimBuilder().id(3).node(2).job(1).tasks({4}).build();
  ASSERT_EQ(cluster.foreign_claim(1, live, false).outcome, ClaimOutcome::accepted);

  SchedulerConfig c = config(2);
  Scheduler sched(c);
  ASSERT_TRUE(sched.restore_job(JobBuilder(1).count(6).cpu("500m").build(),
                                {{0, TaskState::running, NodeId{1}, 0},
                                 {1, TaskState::claimed, NodeId{1}, 0},
                                 {2, TaskState::running, NodeId{2}, 0},
                                 {5, TaskState::failed, NodeId{}, 3}},
                                TimePoint{0}));
  ASSERT_TRUE(sched.restore_job(JobBuilder(2).count(1).cpu("1").build(),
                                {{0, TaskState::succeeded, NodeId{}, 0}}, TimePoint{0}));
  EXPECT_EQ(sched.unverified_tasks(), 3u);
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
  const JobRecord* j = sched.job(JobId{1});
  EXPECT_EQ(j->count_in(TaskState::running), 3u);
  EXPECT_EQ(j->count_in(TaskState::failed), 1u);
  EXPECT_EQ(j->pending(), 2u) << "tasks 3 and 4 were never recorded placed";
  EXPECT_TRUE(sched.job(JobId{2})->finished());

  Outbox out;
  for (size_t n = 0; n < 2; ++n) register_again(sched, n, TimePoint{0}, out);
  EXPECT_EQ(sched.unverified_tasks(), 0u);
  EXPECT_EQ(j->count_in(TaskState::running), 2u) << "tasks 0 and 1 adopted on node 1";
  EXPECT_EQ(j->pending(), 3u) << "task 2 is lost and placed again";
  EXPECT_EQ(sched.stats().tasks_lost, 1u);
  // Released on node 2: the unknown allocation 1.3 and the old claim.
  ASSERT_EQ(out.releases.size(), 2u);
  EXPECT_EQ(out.releases[0].tasks, (std::vector<TaskIndex>{3}));
  EXPECT_EQ(out.releases[1].claim_id, ClaimId{3});
  EXPECT_EQ(out.releases[0].epoch, 2u);
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
  Journal journal = sched.take_journal();
  ASSERT_EQ(journal.task_changes.size(), 1u) << "the lost task is recorded pending again";
  EXPECT_EQ(journal.task_changes[0].state, TaskState::pending);
  EXPECT_EQ(journal.task_changes[0].tasks, (std::vector<TaskIndex>{2}));
}

TEST_F(RecoveryTest, TasksThatEndedWhileTheSchedulerWasAwayEndAsTheNodeSawThem) {
  add_nodes(1);
  // Before the crash: tasks 0, 1, 2 and 3 ran on node 1. While the scheduler
  // was down, 0 succeeded, 1 failed with exit code 4 and 3 failed once, then
  // ran again on the same node (it holds it again); 2 still runs.
  auto run_task = [&](uint64_t claim, TaskIndex t) {
    auto c = ClaimBuilder().id(claim).node(1).job(1).tasks({t}).build();
    ASSERT_EQ(cluster.foreign_claim(0, c, false).outcome, ClaimOutcome::accepted);
    ASSERT_EQ(cluster.ledger(0).confirm(testing::confirm_of(c), cluster.now()).outcome,
              ConfirmOutcome::confirmed);
  };
  std::vector<NodeEvent> events;
  for (TaskIndex t = 0; t < 4; ++t) run_task(t + 1, t);
  ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{1}, 0}, TaskState::succeeded, 0, events));
  ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{1}, 1}, TaskState::failed, 4, events));
  ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{1}, 3}, TaskState::failed, 9, events));
  run_task(10, 3);

  Scheduler sched(config(2));
  ASSERT_TRUE(sched.restore_job(JobBuilder(1).count(4).cpu("500m").build(),
                                {{0, TaskState::running, NodeId{1}, 0},
                                 {1, TaskState::running, NodeId{1}, 0},
                                 {2, TaskState::running, NodeId{1}, 0},
                                 {3, TaskState::running, NodeId{1}, 0}},
                                TimePoint{0}));
  Outbox out;
  register_again(sched, 0, TimePoint{0}, out);

  const JobRecord* j = sched.job(JobId{1});
  EXPECT_EQ(j->tasks[0].state, TaskState::succeeded);
  EXPECT_EQ(j->tasks[1].state, TaskState::failed);
  EXPECT_EQ(j->tasks[1].exit_code, 4);
  EXPECT_EQ(j->tasks[2].state, TaskState::running) << "still held: adopted";
  EXPECT_EQ(j->tasks[3].state, TaskState::running) << "held again: the failure was an older run's";
  EXPECT_EQ(sched.stats().tasks_lost, 0u) << "nothing runs a second time";
  EXPECT_EQ(j->pending(), 0u);
  EXPECT_TRUE(out.releases.empty());
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
}

TEST_F(RecoveryTest, ANodeThatComesBackWithoutTasksItRanHasThemDeclaredLost) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").build()));
  run();
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_EQ(sched.job(JobId{1})->count_in(TaskState::running), 2u);
  // Its agent was killed before its store held the tasks and came back
  // within the grace: the node registers again, holding nothing. Without
  // this, the tasks would show running for ever on a node that runs nothing.
  NodeReport r;
  r.spec = cluster.spec(0);
  r.snapshot = NodeLedger(r.spec.id, r.spec.capacity, ledger_config()).snapshot();
  ASSERT_TRUE(sched.add_node(r.spec, r.snapshot));
  Outbox out;
  // The same node re-subscribing: its report may predate placements since.
  sched.reconcile_node(r, cluster.now(), out);
  EXPECT_EQ(sched.stats().tasks_lost, 0u);
  // A new incarnation of it: what it does not hold is lost.
  sched.reconcile_node(r, cluster.now(), out, true);
  EXPECT_EQ(sched.stats().tasks_lost, 2u);
  EXPECT_EQ(sched.job(JobId{1})->count_in(TaskState::running), 0u);
  EXPECT_EQ(sched.job(JobId{1})->pending(), 2u) << "requeued, to be placed again";
}

// An agent killed and restarted within node_grace registers again before its
// node was declared down: the live scheduler must learn that what ran there
// ended (as the node reports it) or is gone, not believe it still runs.
TEST_F(RecoveryTest, AnAgentThatRestartedQuicklyEndsWhatItNoLongerRuns) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config(1, false));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").max_lost_retries(0).build()));
  run();
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_EQ(sched.job(JobId{1})->count_in(TaskState::running), 2u);
  // The restarted agent found task 0 dead with it (it reports that end) and
  // knows nothing of task 1 any more.
  NodeLedger fresh(NodeId{1}, cluster.ledger(0).capacity());
  fresh.restore_generation(cluster.ledger(0).generation() + 5);
  for (const auto& a : cluster.ledger(0).allocations()) {
    if (a.task.index != 0) continue;
    ASSERT_TRUE(fresh.restore_allocation(a));
  }
  std::vector<NodeEvent> events;
  ASSERT_TRUE(fresh.finish_task(TaskRef{JobId{1}, 0}, TaskState::lost, -1, events,
                                TaskEnd::decided(EndReason::agent_stopped)));
  NodeReport r;
  r.spec = cluster.spec(0);
  r.snapshot = fresh.snapshot();
  r.allocations = fresh.allocations();
  r.finished = fresh.recent_finished();
  Outbox out;
  ASSERT_TRUE(sched.add_node(r.spec, r.snapshot));
  sched.reconcile_node(r, cluster.now(), out, true);
  const JobRecord* j = sched.job(JobId{1});
  EXPECT_EQ(j->tasks[0].state, TaskState::lost);
  EXPECT_EQ(j->tasks[0].end.reason, EndReason::agent_stopped);
  EXPECT_NE(j->tasks[1].state, TaskState::running) << "gone with the agent";
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
}

TEST_F(RecoveryTest, TasksOnANodeThatNeverReturnsAreLostAfterTheGrace) {
  Scheduler sched(config(2));
  ASSERT_TRUE(sched.restore_job(JobBuilder(1).count(2).cpu("1").build(),
                                {{0, TaskState::running, NodeId{7}, 0},
                                 {1, TaskState::running, NodeId{7}, 0}},
                                TimePoint{0}));
  Outbox out;
  sched.on_tick(ms(499), out);
  EXPECT_EQ(sched.unverified_tasks(), 2u);
  sched.on_tick(ms(500), out);
  EXPECT_EQ(sched.unverified_tasks(), 0u);
  EXPECT_EQ(sched.job(JobId{1})->pending(), 2u);
  EXPECT_EQ(sched.stats().tasks_lost, 2u);
}

TEST_F(RecoveryTest, RestoringAJobTwiceOrOneBeyondItsCountIsRefused) {
  Scheduler sched(config(2));
  ASSERT_TRUE(sched.restore_job(JobBuilder(1).count(1).cpu("1").build(), {}, TimePoint{0}));
  auto again = sched.restore_job(JobBuilder(1).count(1).cpu("1").build(), {}, TimePoint{0});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::duplicate);
  auto beyond = sched.restore_job(JobBuilder(2).count(2).cpu("1").build(),
                                  {{5, TaskState::succeeded, NodeId{}, 0}}, TimePoint{0});
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error().code, Errc::corrupt);
}

// --- the node update stream under loss and reordering --------------------------

TEST_F(RecoveryTest, ALostDeltaWithATaskEndIsRecoveredFromTheFullSnapshot) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(2).cpu("1").runtime(ms(50)).build()));
  run();
  cluster.advance_by(ms(60));  // both tasks end: one delta with two events...
  ASSERT_TRUE(cluster.take_to_scheduler(0, s)) << "...which is lost";
  // Anything later from the node reveals the gap.
  auto foreign = ClaimBuilder().partition(9).job(900).task_count(1).build();
  ASSERT_EQ(cluster.foreign_claim(0, foreign, true).outcome, ClaimOutcome::accepted);
  run();
  EXPECT_EQ(cluster.scheduler(s).stats().generation_gaps, 1u);
  const JobRecord* j = cluster.scheduler(s).job(JobId{1});
  EXPECT_EQ(j->count_in(TaskState::succeeded), 2u) << "outcomes come from the snapshot's recent events";
  EXPECT_TRUE(j->finished());
  EXPECT_EQ(cluster.scheduler(s).stats().tasks_lost, 0u);
  for (const auto& [task, times] : cluster.confirmations()) EXPECT_EQ(times, 1u);
}

TEST_F(RecoveryTest, ReorderedDeltasAreDetectedAndTheViewConverges) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  run();
  // Two changes by another partition; their deltas arrive in the wrong order.
  auto a = ClaimBuilder().id(1).partition(9).job(900).task_count(1).build();
  auto b = ClaimBuilder().id(2).partition(9).job(901).task_count(2).build();
  ASSERT_EQ(cluster.foreign_claim(0, a, true).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(cluster.foreign_claim(0, b, true).outcome, ClaimOutcome::accepted);
  auto first = cluster.take_to_scheduler(0, s);
  ASSERT_TRUE(first);
  ASSERT_TRUE(cluster.deliver_to_scheduler(0, s));  // g2 before g1
  cluster.send_to_scheduler(0, s, *first);          // g1 late
  run();
  const Scheduler& sched = cluster.scheduler(s);
  EXPECT_EQ(sched.stats().generation_gaps, 1u);
  EXPECT_EQ(sched.view().node(0).generation, cluster.ledger(0).generation());
  EXPECT_EQ(sched.view().node(0).reported_free, cluster.ledger(0).free())
      << "the late, older delta did not roll the view back";
}

TEST_F(RecoveryTest, AfterAGapTasksTheNodeNoLongerHoldsAreLost) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").build()));
  run();
  // The node frees the task and the delta saying so is lost; later the
  // node ends more than config().recent_finished other tasks, so the snapshot no
  // longer remembers how ours ended.
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId{1}, 0}, TaskState::failed, 1));
  ASSERT_TRUE(cluster.take_to_scheduler(0, s));
  for (uint32_t i = 0; i < cluster.ledger(0).config().recent_finished; ++i) {
    auto c = ClaimBuilder().id(100 + i).partition(9).job(800).tasks({i}).build();
    ASSERT_EQ(cluster.foreign_claim(0, c, false).outcome, ClaimOutcome::accepted);
    ASSERT_EQ(cluster.ledger(0).confirm(testing::confirm_of(c), cluster.now()).outcome,
              ConfirmOutcome::confirmed);
    std::vector<NodeEvent> ignored;
    ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{800}, i}, TaskState::succeeded, 0, ignored));
  }
  auto reveal = ClaimBuilder().id(999).partition(9).job(901).task_count(1).build();
  ASSERT_EQ(cluster.foreign_claim(0, reveal, true).outcome, ClaimOutcome::accepted);
  run();
  const JobRecord* j = cluster.scheduler(s).job(JobId{1});
  EXPECT_EQ(cluster.scheduler(s).stats().tasks_lost, 1u);
  EXPECT_EQ(j->count_in(TaskState::running) + j->count_in(TaskState::failed), 1u)
      << "lost, then placed again (it runs) - never counted twice";
}

TEST_F(RecoveryTest, ANodeThatRestartedUnderARunningSchedulerIsReconciledToo) {
  add_nodes(1);
  size_t s = cluster.add_scheduler(config());
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(3).cpu("1").build()));
  run();
  ASSERT_EQ(sched.job(JobId{1})->count_in(TaskState::running), 3u);
  // The node's agent is killed and started again, faster than node_grace:
  // its ledger comes back, task 0 is lost with the agent, task 1 had ended
  // just before, task 2 still runs. The events reached no subscriber.
  std::vector<NodeEvent> gone;
  ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{1}, 1}, TaskState::succeeded, 0, gone));
  ASSERT_TRUE(cluster.ledger(0).finish_task(TaskRef{JobId{1}, 0}, TaskState::lost, -1, gone));
  Outbox out;
  register_again(sched, 0, cluster.now(), out);
  const JobRecord* j = sched.job(JobId{1});
  EXPECT_EQ(j->tasks[1].state, TaskState::succeeded) << "ended as the node saw it end: not run again";
  EXPECT_EQ(j->tasks[2].state, TaskState::running);
  EXPECT_EQ(j->pending(), 1u) << "task 0 runs again";
  EXPECT_EQ(j->tasks[0].losses, 1u);
  EXPECT_TRUE(sched.check_accounting()) << sched.check_accounting().error().message;
}

// A node declared down comes back and says a task succeeded there while it
// was away (under its keeper): that run stands, and the run placed since is
// stopped before it runs a second time, wherever it got to (pending, claimed,
// running). Chaos seed 3 ran two tasks twice this way.
class LostRunTest : public RecoveryTest {
 protected:
  /// Job 1's one task runs on a node, which then goes silent while the task
  /// ends there (`how`); the node is declared down and the task goes back to
  /// the queue.
  void lose_a_task_that_ended(TaskState how, bool fill_the_other_node = false) {
    add_nodes(2);
    s = cluster.add_scheduler(config());
    ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("4").build()));
    if (fill_the_other_node) {
      ASSERT_TRUE(cluster.submit(s, JobBuilder(2).count(1).cpu("4").build()));
    }
    run();
    first = *sched().job(JobId{1})->tasks[0].node;
    other = 1 - first;
    std::vector<NodeEvent> unheard;
    int32_t exit_code = how == TaskState::succeeded ? 0 : 3;
    ASSERT_TRUE(cluster.ledger(first).finish_task(TaskRef{JobId{1}, 0}, how, exit_code, unheard));
    Outbox out;
    sched().node_down(cluster.spec(first).id, cluster.now(), out);
    ASSERT_EQ(sched().stats().tasks_lost, 1u);
    ASSERT_FALSE(is_final(task().state));
  }
  Scheduler& sched() { return cluster.scheduler(s); }
  const TaskRecord& task() { return sched().job(JobId{1})->tasks[0]; }
  bool other_node_holds_job_1() {
    for (const auto& a : cluster.ledger(other).allocations())
      if (a.task.job == JobId{1}) return true;
    for (const auto& c : cluster.ledger(other).claims())
      if (c.job == JobId{1}) return true;
    return false;
  }
  void expect_the_first_run_stands() {
    EXPECT_EQ(task().state, TaskState::succeeded);
    EXPECT_EQ(task().node, first) << "status says where it ran";
    EXPECT_EQ(task().end, TaskEnd::exited(0));
    EXPECT_EQ(sched().job(JobId{1})->pending(), 0u);
    EXPECT_TRUE(sched().job(JobId{1})->finished());
    EXPECT_FALSE(other_node_holds_job_1());
    EXPECT_TRUE(sched().check_accounting()) << sched().check_accounting().error().message;
    EXPECT_EQ(cluster.check_all(), "");
  }
  size_t s = 0;
  size_t first = 0;
  size_t other = 0;
};

TEST_F(LostRunTest, AWaitingRerunIsDropped) {
  lose_a_task_that_ended(TaskState::succeeded, /*fill_the_other_node=*/true);
  ASSERT_EQ(task().state, TaskState::pending) << "no room for it elsewhere";
  Outbox out;
  register_again(sched(), first, cluster.now(), out);
  EXPECT_TRUE(out.releases.empty());
  cluster.tick(s);
  run();
  expect_the_first_run_stands();
}

TEST_F(LostRunTest, ARunningRerunIsReleased) {
  lose_a_task_that_ended(TaskState::succeeded);
  cluster.tick(s);
  run();
  ASSERT_EQ(task().state, TaskState::running);
  ASSERT_EQ(task().node, other);
  Outbox out;
  register_again(sched(), first, cluster.now(), out);
  ASSERT_EQ(out.releases.size(), 1u);
  EXPECT_EQ(out.releases[0].node, cluster.spec(other).id);
  EXPECT_EQ(out.releases[0].tasks, std::vector<TaskIndex>{0});
  cluster.foreign_release(other, out.releases[0], true);
  run();
  expect_the_first_run_stands();
}

TEST_F(LostRunTest, AClaimedRerunGivesItsRoomBackWhenTheClaimIsAnswered) {
  lose_a_task_that_ended(TaskState::succeeded);
  cluster.tick(s);  // its claim is on the way, unanswered
  ASSERT_EQ(task().state, TaskState::claimed);
  Outbox out;
  register_again(sched(), first, cluster.now(), out);
  EXPECT_EQ(task().state, TaskState::succeeded);
  run();  // the claim is accepted; its answer releases it
  expect_the_first_run_stands();
}

TEST_F(LostRunTest, AFailureOfTheLostRunLeavesTheRerunAlone) {
  lose_a_task_that_ended(TaskState::failed);
  cluster.tick(s);
  run();
  ASSERT_EQ(task().state, TaskState::running);
  Outbox out;
  register_again(sched(), first, cluster.now(), out);
  EXPECT_EQ(task().state, TaskState::running) << "the rerun is the retry";
  EXPECT_EQ(task().node, other);
  EXPECT_TRUE(out.releases.empty());
}

}  // namespace
}  // namespace claimsched::core
