// The pipeline's stages one by one (core/pipeline/): each owns its state and
// answers through small values, so each is tested without the others.

#include <gtest/gtest.h>

#include "core/pipeline/admission.hpp"
#include "core/pipeline/claim_window.hpp"
#include "core/pipeline/job_queue.hpp"
#include "core/pipeline/job_views.hpp"
#include "core/pipeline/reconciler.hpp"
#include "core/pipeline/reservations.hpp"
#include "core/pipeline/scheduler.hpp"
#include "core/pipeline/task_table.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::JobBuilder;
using testing::ms;
using testing::res;

JobRecord record(uint64_t id, uint32_t count, int32_t priority = 0, TimePoint submit = TimePoint{0}) {
  JobRecord r;
  r.spec = JobBuilder(id).count(count).submitted(submit).build();
  r.priority = priority;
  return r;
}

// --- task table ----------------------------------------------------------------

TEST(TaskTable, CountsFollowEveryStateChange) {
  TaskTable table;
  JobRecord& j = **table.add(record(1, 5));
  EXPECT_EQ(table.pending_tasks(), 5u);
  EXPECT_TRUE(j.tasks.empty()) << "per-task records only once something is placed";
  auto taken = table.take_pending(j, 3);
  EXPECT_EQ(taken, (std::vector<TaskIndex>{0, 1, 2}));
  EXPECT_EQ(j.count_in(TaskState::claimed), 3u);
  EXPECT_EQ(j.pending(), 2u);
  table.set_state(j, 0, TaskState::running);
  table.set_state(j, 1, TaskState::running);
  EXPECT_EQ(table.running_tasks(), 2u);
  EXPECT_EQ(table.held_in_pool(0), res("cpu=3"));
  j.tasks[1].journaled = true;
  EXPECT_EQ(table.requeue(j, {1, 2}), (std::vector<TaskIndex>{1})) << "only journaled placements are unjournaled";
  EXPECT_EQ(table.take_pending(j, 1), (std::vector<TaskIndex>{2})) << "the last returned goes first";
  EXPECT_EQ(table.pending_tasks(), 3u);
  EXPECT_TRUE(table.check_accounting());
  auto ended = table.end_pending(j, TaskState::cancelled);
  EXPECT_EQ(ended, (std::vector<TaskIndex>{1, 3, 4}));
  EXPECT_EQ(table.pending_tasks(), 0u);
  EXPECT_TRUE(table.check_accounting());
  EXPECT_FALSE(table.add(record(1, 1))) << "ids are unique";
}

TEST(TaskTable, RunningOnANodeIsSortedAndAccountingCatchesDrift) {
  TaskTable table;
  JobRecord& a = **table.add(record(2, 2));
  JobRecord& b = **table.add(record(1, 2));
  for (auto* j : {&a, &b}) {
    table.take_pending(*j, 2);
    for (TaskIndex t = 0; t < 2; ++t) {
      table.set_state(*j, t, TaskState::running);
      j->tasks[t].node = NodeIndex{t};
    }
  }
  EXPECT_EQ(table.running_on(1), (std::vector<TaskRef>{{JobId{1}, 1}, {JobId{2}, 1}}));
  a.tasks[0].state = TaskState::succeeded;  // behind the table's back
  EXPECT_FALSE(table.check_accounting());
}

TEST(TaskTable, QueueDepthsFollowTasksInAndOutOfThePendingState) {
  TaskTable table;
  JobRecord& early = **table.add(record(1, 3, 0, ms(10)));
  JobRecord& late = **table.add(record(2, 2, 0, ms(20)));
  JobRecord other = record(3, 4, 0, ms(5));
  other.class_index = 1;
  ASSERT_TRUE(table.add(std::move(other)));
  EXPECT_EQ(table.pending_in(0, 0).jobs, 2u);
  EXPECT_EQ(table.pending_in(0, 0).tasks, 5u);
  EXPECT_EQ(table.pending_in(0, 1).tasks, 4u) << "each class counts on its own";
  EXPECT_EQ(table.oldest_pending_in(0, 0), ms(10));

  table.take_pending(early, 3);
  EXPECT_EQ(table.pending_in(0, 0).jobs, 1u) << "a job with nothing pending no longer waits";
  EXPECT_EQ(table.oldest_pending_in(0, 0), ms(20)) << "the oldest waiting job is the next one";
  table.requeue(early, {1});
  EXPECT_EQ(table.pending_in(0, 0).tasks, 3u);
  EXPECT_EQ(table.oldest_pending_in(0, 0), ms(10)) << "a task back in the queue makes its job wait again";
  table.end_pending(early, TaskState::cancelled);
  table.take_pending(late, 2);
  EXPECT_EQ(table.pending_in(0, 0).jobs, 0u);
  EXPECT_EQ(table.oldest_pending_in(0, 0), kNever);
  EXPECT_EQ(table.pending_in(7, 7).jobs, 0u) << "a row never used is empty";
  EXPECT_TRUE(table.check_accounting());
}

TEST(TaskTable, QueueDepthsStayExactAcrossManyJobsThatWaitAgain) {
  // Enough jobs leaving and re-entering the queue to compact the oldest-job
  // index several times; check_accounting recomputes every row.
  TaskTable table;
  std::vector<JobRecord*> jobs;
  for (uint64_t id = 1; id <= 400; ++id) jobs.push_back(*table.add(record(id, 2, 0, ms(1000 - id))));
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto taken = table.take_pending(*jobs[i], 2);
      if ((i + static_cast<size_t>(round)) % 3 != 0) table.requeue(*jobs[i], taken);
    }
    ASSERT_TRUE(table.check_accounting()) << "round " << round;
  }
}

// --- job queue -----------------------------------------------------------------

TEST(JobQueue, PriorityThenRankThenSubmitTime) {
  TaskTable table;
  JobQueue queue;
  JobRecord& old_low = **table.add(record(1, 1, 0, ms(1)));
  JobRecord& new_low = **table.add(record(2, 1, 0, ms(2)));
  JobRecord& high = **table.add(record(3, 1, 5, ms(3)));
  for (auto* j : {&old_low, &new_low, &high}) queue.enqueue(*j);
  EXPECT_EQ(queue.front(), JobId{3});
  queue.remove(high);
  EXPECT_EQ(high.queue.state, QueueState::idle);
  EXPECT_EQ(queue.front(), JobId{1});
  queue.rerank(new_low, 7);  // below its fair share: ahead within its priority
  EXPECT_EQ(queue.front(), JobId{2});
  EXPECT_EQ(queue.queued(), 2u);
}

TEST(JobQueue, WaitingJobsComeBackWhenCapacityGrowsAtMostEveryInterval) {
  TaskTable table;
  JobQueue queue(QueueConfig{ms(5), ms(10), ms(40)});
  JobRecord& j = **table.add(record(1, 1));
  JobRecord& urgent = **table.add(record(2, 1, 5));
  queue.enqueue(j);
  queue.wait_for_capacity(j);
  EXPECT_FALSE(queue.front());
  EXPECT_EQ(queue.next_wakeup(false), kNever) << "nothing brings it back but growth";
  queue.refresh(ms(0), true, table);
  EXPECT_EQ(queue.front(), JobId{1});
  queue.enqueue(urgent);
  queue.wait_for_capacity(j);
  queue.refresh(ms(2), true, table);  // within the interval, behind a queued job: stays
  EXPECT_EQ(queue.front(), JobId{2});
  EXPECT_EQ(j.queue.state, QueueState::waiting_for_capacity);
  EXPECT_EQ(queue.next_wakeup(false), ms(5));
  queue.refresh(ms(5), false, table);
  EXPECT_EQ(j.queue.state, QueueState::queued);
  queue.remove(urgent);
  queue.wait_for_capacity(j);
  queue.refresh(ms(6), true, table);  // ahead of everything queued: whatever the interval
  EXPECT_EQ(queue.front(), JobId{1});
}

TEST(JobQueue, BackoffDoublesToItsCapAndEnds) {
  TaskTable table;
  JobQueue queue(QueueConfig{ms(5), ms(10), ms(40)});
  JobRecord& j = **table.add(record(1, 1));
  queue.enqueue(j);
  std::vector<TimePoint> until;
  TimePoint now{0};
  for (int i = 0; i < 5; ++i) {
    until.push_back(queue.back_off(j, now) - now);
    EXPECT_EQ(j.queue.state, QueueState::backing_off);
    EXPECT_EQ(queue.next_wakeup(false), now + until.back());
    now += until.back();
    queue.refresh(now, false, table);
    EXPECT_EQ(queue.front(), JobId{1}) << "tried again once it ends";
  }
  EXPECT_EQ(until, (std::vector<TimePoint>{ms(10), ms(20), ms(40), ms(40), ms(40)}));
  queue.reset_backoff(j);
  EXPECT_EQ(queue.back_off(j, now) - now, ms(10));
}

// --- claim window --------------------------------------------------------------

TEST(ClaimWindow, IdsCarryTheEpochAndOrderIsById) {
  ClaimWindow window(PartitionId{3}, 7);
  ClaimId a = window.next_id();
  ClaimId b = window.next_id();
  EXPECT_EQ(a.value >> kClaimCounterBits, 7u);
  EXPECT_LT(a, b);
  ClaimRequest ra, rb;
  ra.claim_id = a;
  rb.claim_id = b;
  window.add(rb, 1, std::nullopt, ms(10));
  window.add(ra, 2, std::nullopt, ms(0));
  EXPECT_EQ(window.overdue(ms(100), ms(95)), (std::vector<ClaimId>{a}));
  EXPECT_EQ(window.overdue(ms(200), ms(95)), (std::vector<ClaimId>{a, b}));
  EXPECT_EQ(window.unanswered_on(2), (std::vector<ClaimId>{a}));
  window.find(a)->phase = ClaimPhase::confirming;
  EXPECT_TRUE(window.unanswered_on(2).empty()) << "only claims with no answer at all";
}

TEST(ClaimWindow, ReleasesAreTrackedPerTaskAndRequestsCarryThePartition) {
  ClaimWindow window(PartitionId{3}, 7);
  auto r = window.release_request(NodeId{9}, JobId{1}, window.next_id(), {4, 5}, TaskState::preempted);
  EXPECT_EQ(r.partition, PartitionId{3});
  EXPECT_EQ(r.epoch, 7u);
  window.add_release(r, 0, Release::Why::removal, ms(0), JobId{2});
  EXPECT_TRUE(window.releasing(TaskRef{JobId{1}, 5}));
  EXPECT_FALSE(window.releasing(TaskRef{JobId{1}, 6}));
  EXPECT_EQ(window.find_release(r.claim_id)->for_job, JobId{2});
  auto none = window.release_request(NodeId{9}, JobId{1}, std::nullopt);
  EXPECT_EQ(none.claim_id.value, 0u) << "the wire's encoding of no claim";
}

// --- reconciler ----------------------------------------------------------------

TEST(Reconciler, RecordsDecideAdoptReleaseOrLose) {
  TaskTable table;
  ClaimWindow window(PartitionId{1}, 1);
  Reconciler reconciler;
  JobRecord& j = **table.add(record(1, 3));
  table.take_pending(j, 3);
  for (TaskIndex t = 0; t < 3; ++t) table.set_state(j, t, TaskState::running);
  // Restored: tasks 0 and 1 on node 5, task 2 elsewhere (already known).
  j.tasks[2].node = NodeIndex{1};
  reconciler.expect(NodeId{5}, TaskRef{JobId{1}, 0}, ms(0));
  reconciler.expect(NodeId{5}, TaskRef{JobId{1}, 1}, ms(0));
  EXPECT_EQ(reconciler.unverified(), 2u);
  auto alloc = [](uint64_t job, TaskIndex t) {
    Allocation a;
    a.task = TaskRef{JobId{job}, t};
    a.partition = PartitionId{1};
    return a;
  };
  // Node 5 holds task 0 (adopt), task 2 (runs elsewhere: release) and an
  // unknown job's task (release); task 1 is missing (lost).
  auto d = reconciler.reconcile(0, NodeId{5}, {alloc(1, 0), alloc(1, 2), alloc(9, 0)}, nullptr, false,
                                PartitionId{1}, table, window);
  EXPECT_EQ(d.adopt, (std::vector<TaskRef>{{JobId{1}, 0}}));
  EXPECT_EQ(d.release_allocations.at(JobId{1}), (std::vector<TaskIndex>{2}));
  EXPECT_EQ(d.release_allocations.at(JobId{9}), (std::vector<TaskIndex>{0}));
  EXPECT_EQ(d.lost.at(JobId{1}), (std::vector<TaskIndex>{1}));
  EXPECT_EQ(reconciler.unverified(), 0u);
}

TEST(Reconciler, NodesThatStayAwayLoseTheirTasksAfterTheGrace) {
  Reconciler reconciler;
  reconciler.expect(NodeId{5}, TaskRef{JobId{1}, 0}, ms(100));
  reconciler.expect(NodeId{6}, TaskRef{JobId{2}, 3}, ms(100));
  EXPECT_TRUE(reconciler.expire(ms(150), ms(100)).empty());
  auto lost = reconciler.expire(ms(200), ms(100));
  EXPECT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost.at(JobId{2}), (std::vector<TaskIndex>{3}));
  EXPECT_EQ(reconciler.unverified(), 0u);
}

// --- reservations --------------------------------------------------------------

TEST(Reservations, PartsAreClaimedAsTheirOwnVictimsAreFreed) {
  Reservations holds;
  Hold h;
  h.job = JobId{1};
  h.parts = {{0, 1, {TaskRef{JobId{9}, 0}}}, {1, 1, {TaskRef{JobId{9}, 1}}}};
  ASSERT_TRUE(holds.add(h));
  EXPECT_FALSE(holds.add(h)) << "one hold per job";
  EXPECT_TRUE(holds.ready().empty());
  holds.freed(TaskRef{JobId{9}, 1});
  EXPECT_EQ(holds.ready(), (std::vector<JobId>{JobId{1}}));
  Hold taken;
  auto parts = holds.take_ready(JobId{1}, &taken);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].node, 1u);
  ASSERT_NE(holds.of(JobId{1}), nullptr) << "the other part still waits";
  holds.freed(TaskRef{JobId{9}, 0});
  EXPECT_EQ(holds.take_ready(JobId{1}, nullptr).size(), 1u);
  EXPECT_EQ(holds.of(JobId{1}), nullptr);
}

TEST(Reservations, AWholeHoldWaitsForEveryVictim) {
  Reservations holds;
  Hold h;
  h.job = JobId{1};
  h.whole = true;
  h.parts = {{0, 2, {TaskRef{JobId{9}, 0}}}, {1, 2, {}}};
  ASSERT_TRUE(holds.add(h));
  EXPECT_TRUE(holds.ready().empty()) << "all or nothing";
  EXPECT_TRUE(holds.take_ready(JobId{1}, nullptr).empty());
  holds.freed(TaskRef{JobId{9}, 0});
  EXPECT_EQ(holds.take_ready(JobId{1}, nullptr).size(), 2u);
  EXPECT_EQ(holds.on_node(0).size(), 0u);
}

// --- admission -----------------------------------------------------------------

TEST(Admission, ResolvesNamesAndRefusesWhatCanNeverRun) {
  SchedulerConfig config;
  config.partition = PartitionId{1};
  config.pools = {"default"};
  auto whole = ClassConfig::named("whole", 9);
  whole.policy = ClassPolicy::reserve;
  config.classes = {ClassConfig::named("batch"), whole};
  ClusterView view;
  view.add_pool("default");
  auto ok = admit(config, view, JobBuilder(1).build());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->spec.job_class, "batch") << "the default class";
  EXPECT_EQ(ok->class_index, 0u);
  auto pool = admit(config, view, JobBuilder(1).pool("gpu").build());
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().message.find("job field 'pool'"), std::string::npos);
  auto cls = admit(config, view, JobBuilder(1).job_class("nope").build());
  ASSERT_FALSE(cls);
  EXPECT_NE(cls.error().message.find("unknown class 'nope'"), std::string::npos);
  auto many = admit(config, view, JobBuilder(1).job_class("whole").count(2).memory("1Gi").build());
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().message.find("exactly one whole machine"), std::string::npos);
  auto no_memory = admit(config, view, JobBuilder(1).job_class("whole").build());
  ASSERT_FALSE(no_memory);
  EXPECT_NE(no_memory.error().message.find("matches machines by memory"), std::string::npos);
  EXPECT_TRUE(admit(config, view, JobBuilder(1).job_class("whole").memory("8Gi").build()));
}

// --- job views -----------------------------------------------------------------

TEST(JobViews, ViewsCarryTheNotesAndTaskNodes) {
  TaskTable table;
  JobViews views;
  ClusterView cluster;
  cluster.add_pool("default");
  NodeSpec node;
  node.id = NodeId{42};
  node.pool = "default";
  NodeSnapshot snap;
  snap.node = node.id;
  snap.capacity = res("cpu=4");
  snap.free = snap.capacity;
  NodeIndex n = cluster.add_node(node, 0, snap);
  JobRecord& j = **table.add(record(1, 2));
  table.take_pending(j, 1);
  table.set_state(j, 0, TaskState::running);
  j.tasks[0].node = n;
  views.note(JobId{1}).last_removal = "preempted task 1";
  ++views.note(JobId{1}).preemptions;
  JobView v = views.view(j, cluster, true, "waiting for capacity");
  EXPECT_EQ(v.state, JobState::running);
  EXPECT_EQ(v.reason, "waiting for capacity");
  EXPECT_EQ(v.last_removal, "preempted task 1");
  EXPECT_EQ(v.preemptions, 1u);
  ASSERT_EQ(v.tasks.size(), 2u);
  EXPECT_EQ(v.tasks[0].node, NodeId{42});
  EXPECT_EQ(v.tasks[1].node, NodeId{}) << "never placed";
  EXPECT_TRUE(views.view(j, cluster, false, "").tasks.empty());
}

}  // namespace
}  // namespace claimsched::core
