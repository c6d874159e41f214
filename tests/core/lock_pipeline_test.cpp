// The lock queue in the scheduler's pipeline: a job waits for a running slot
// of its class and for its locks before placement; conflicting jobs never
// run together; the order is predictive when the class says so; locks are
// rebuilt from the running jobs after a restart.

#include <gtest/gtest.h>

#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::SimCluster;

SchedulerConfig config(LockQueueSettings queue = {}) {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"default"};
  c.reply_timeout = ms(100);
  c.journal = true;
  c.recovery_grace = ms(500);
  c.classes = {ClassConfig::named("batch")};
  c.classes[0].queue = queue;
  return c;
}

JobSpec locked_job(uint64_t id, std::string_view locks, int64_t submit_ms = 0) {
  JobSpec j = JobBuilder(id).cpu("1").build();
  j.submit_time = ms(submit_ms);
  j.locks = testing::locks(locks);
  return j;
}

class LockPipelineTest : public ::testing::Test {
 protected:
  size_t start(LockQueueSettings queue = {}) {
    cluster.add_node(NodeBuilder(1).capacity("cpu=16,memory=32Gi").build());
    return cluster.add_scheduler(config(queue));
  }
  JobState state(size_t s, uint64_t id) { return cluster.scheduler(s).job_view(JobId(id), false)->state; }
  uint32_t running(size_t s, uint64_t id) {
    const JobRecord* j = cluster.scheduler(s).job(JobId(id));
    return j->count_in(TaskState::running) + j->count_in(TaskState::claimed);
  }
  void settle(size_t s) {
    cluster.run();
    cluster.tick(s);
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  void finish(size_t s, uint64_t id) {
    ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId(id), 0}, TaskState::succeeded, 0));
    settle(s);
  }
  SimCluster cluster;
};

TEST_F(LockPipelineTest, ConflictingExclusiveJobsNeverRunTogether) {
  size_t s = start();
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "node=exclusive:n1")));
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "instance=shared:i node=exclusive:n1")));
  ASSERT_TRUE(cluster.submit(s, locked_job(3, "node=exclusive:n2")));
  settle(s);
  EXPECT_EQ(running(s, 1), 1u);
  EXPECT_EQ(running(s, 2), 0u);
  EXPECT_EQ(running(s, 3), 1u);  // another node's lock: runs beside job 1
  EXPECT_EQ(state(s, 2), JobState::waiting);
  auto e = cluster.scheduler(s).explanation(JobId(2));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->verdict, WaitVerdict::waiting_on_lock);
  EXPECT_NE(e->summary.find("waits for node 'n1' held by job 1"), std::string::npos) << e->summary;
  ASSERT_TRUE(e->locks && e->locks->block);
  EXPECT_EQ(e->locks->block->holder, JobId(1));
  EXPECT_EQ(e->locks->held, "instance=shared:i");  // the level before, taken in order
  finish(s, 1);
  EXPECT_EQ(running(s, 2), 1u);
  EXPECT_EQ(state(s, 2), JobState::running);
  EXPECT_EQ(cluster.scheduler(s).lock_queue().waiting_transitions(), 1u);
}

TEST_F(LockPipelineTest, TheRunningLimitHoldsJobsWithoutLocksInLine) {
  LockQueueSettings q;
  q.running_limit = 1;
  size_t s = start(q);
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).cpu("1").build()));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(2).cpu("1").build()));
  settle(s);
  EXPECT_EQ(running(s, 1), 1u);
  EXPECT_EQ(running(s, 2), 0u);
  EXPECT_EQ(state(s, 2), JobState::pending);
  auto v = cluster.scheduler(s).job_view(JobId(2), false);
  ASSERT_TRUE(v->queue_weight.has_value());
  EXPECT_DOUBLE_EQ(*v->queue_weight, 1.0);  // base_value, nothing locked
  EXPECT_NE(v->reason.find("in line for a running slot of class 'batch' (1 of 1 running or waiting"),
            std::string::npos)
      << v->reason;
  finish(s, 1);
  EXPECT_EQ(running(s, 2), 1u);
}

TEST_F(LockPipelineTest, PredictiveOrderStartsTheJobLeastLikelyToWait) {
  LockQueueSettings q;
  q.order = QueueOrder::predictive;
  q.running_limit = 2;
  size_t s = start(q);
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "node=exclusive:n1", 0)));
  ASSERT_TRUE(cluster.submit(s, JobBuilder(9).cpu("1").build()));  // fills the second slot
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "node=exclusive:n1", 1)));
  ASSERT_TRUE(cluster.submit(s, locked_job(3, "node=exclusive:n2", 2)));
  settle(s);
  auto e = cluster.scheduler(s).explanation(JobId(2));
  ASSERT_TRUE(e && e->locks && e->locks->value);
  EXPECT_EQ(e->locks->value->value, 40);  // 1 + 3: exclusive n1 against job 1's exclusive n1
  EXPECT_EQ(e->locks->value->levels[size_t(LockLevel::node)].against, JobId(1));
  EXPECT_NE(e->summary.find("weight 4 (value 4, age 0 ticks)"), std::string::npos) << e->summary;
  finish(s, 9);  // one slot: job 3 (weight 1.5) goes before job 2, submitted earlier
  EXPECT_EQ(running(s, 3), 1u);
  EXPECT_EQ(running(s, 2), 0u);
  EXPECT_EQ(cluster.scheduler(s).lock_queue().waiting_transitions(), 0u);
}

TEST_F(LockPipelineTest, CancellingAWaitingJobFreesItsSlot) {
  LockQueueSettings q;
  q.running_limit = 2;
  size_t s = start(q);
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "node=exclusive:n1")));
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "node=exclusive:n1")));
  ASSERT_TRUE(cluster.submit(s, locked_job(3, "node=shared:n2")));
  settle(s);
  EXPECT_EQ(state(s, 2), JobState::waiting);
  EXPECT_EQ(running(s, 3), 0u);
  Outbox out;
  ASSERT_TRUE(cluster.scheduler(s).cancel(JobId(2), cluster.now(), out));
  settle(s);
  EXPECT_EQ(running(s, 3), 1u);
  EXPECT_FALSE(cluster.scheduler(s).lock_queue().locks().knows(JobId(2)));
}

TEST_F(LockPipelineTest, AJobPreemptedOfEverythingGivesBackItsLocksOnceItsNodeFreedIt) {
  size_t s = start();
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "node=exclusive:n1")));
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "node=exclusive:n1")));
  settle(s);
  ASSERT_EQ(running(s, 1), 1u);
  Outbox out;
  ASSERT_TRUE(cluster.scheduler(s).preempt(TaskRef{JobId(1), 0}, TaskState::preempted, "test", cluster.now(), out));
  EXPECT_TRUE(cluster.scheduler(s).lock_queue().locks().holds_all(JobId(1))) << "its task still runs on the node";
  ASSERT_EQ(out.releases.size(), 1u);
  cluster.send_to_node(s, 0, out.releases[0]);
  settle(s);
  EXPECT_EQ(running(s, 2), 1u);
  EXPECT_EQ(running(s, 1), 0u);
  EXPECT_EQ(state(s, 1), JobState::waiting);  // back in line, started again, waits for job 2
  EXPECT_EQ(cluster.scheduler(s).lock_queue().blocked_on(JobId(1))->holder, JobId(2));
}

TEST_F(LockPipelineTest, ARestartRebuildsTheLocksOfTheRunningJobs) {
  size_t s = start();
  JobSpec holder = locked_job(1, "node=exclusive:n1");
  ASSERT_TRUE(cluster.submit(s, holder));
  settle(s);
  ASSERT_EQ(running(s, 1), 1u);
  // A new scheduler restores from the store: job 1 runs on node 1.
  Scheduler restored(config());
  ASSERT_TRUE(restored.add_node(cluster.spec(0), cluster.ledger(0).snapshot()));
  ASSERT_TRUE(restored.restore_job(holder, {RestoredTask(0, TaskState::running, NodeId(1), 0)}, cluster.now()));
  ASSERT_TRUE(restored.restore_job(locked_job(2, "node=shared:n1"), {}, cluster.now()));
  Outbox out;
  restored.schedule(cluster.now(), out);
  EXPECT_TRUE(out.claims.empty()) << "job 2 must wait for job 1's lock";
  EXPECT_TRUE(restored.lock_queue().locks().holds_all(JobId(1)));
  EXPECT_EQ(restored.job_view(JobId(2), false)->state, JobState::waiting);
}

TEST_F(LockPipelineTest, AdmissionRefusesABadDeclaration) {
  size_t s = start();
  JobSpec j = JobBuilder(1).cpu("1").build();
  j.locks[LockLevel::node] = LevelLock{LockMode::exclusive, {}};
  auto st = cluster.submit(s, j);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("job field 'locks'"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

TEST_F(LockPipelineTest, ANodeDrainWaitsForTheJobHoldingItsNodesLock) {
  size_t s = start();
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "node=shared:node-1")));
  settle(s);
  Scheduler& sched = cluster.scheduler(s);
  Operation drain;
  drain.node = NodeId(1);
  drain.node_name = "node-1";
  auto op = sched.submit_operation(drain, cluster.now());
  ASSERT_TRUE(op);
  EXPECT_EQ(op->second, "drain node node-1 (operation 0): waits for node 'node-1' held by job 1");
  cluster.tick(s);
  EXPECT_TRUE(cluster.operations(s).empty()) << "the drain goes out only once job 1 let the lock go";
  // A job that asks for the node after the drain waits behind it.
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "node=shared:node-1")));
  settle(s);
  EXPECT_EQ(sched.job_view(JobId(2), false)->state, JobState::waiting);
  EXPECT_NE(sched.explain(JobId(2)).find("wanted first by operation 0"), std::string::npos) << sched.explain(JobId(2));
  finish(s, 1);
  ASSERT_EQ(cluster.operations(s).size(), 1u);
  EXPECT_EQ(cluster.operations(s)[0].second.node_name, "node-1");
  EXPECT_EQ(running(s, 2), 0u);
  sched.finish_operation(cluster.operations(s)[0].first);
  settle(s);
  EXPECT_EQ(running(s, 2), 1u);
  // A node the partition does not know is an error, not a queued operation.
  Operation unknown;
  unknown.kind = OperationKind::undrain_node;
  unknown.node = NodeId(99);
  unknown.node_name = "x";
  EXPECT_FALSE(sched.submit_operation(unknown, cluster.now()));
  JobSpec reserved = JobBuilder(kFirstOperationId).cpu("1").build();
  EXPECT_FALSE(cluster.submit(s, reserved)) << "job ids never reach the operations' range";
}

TEST_F(LockPipelineTest, APartitionMoveWaitsForAJobHoldingOneOfItsPoolsAlone) {
  size_t s = start();
  ASSERT_TRUE(cluster.submit(s, locked_job(1, "group=shared:default")));
  ASSERT_TRUE(cluster.submit(s, locked_job(2, "group=exclusive:default")));
  settle(s);
  Scheduler& sched = cluster.scheduler(s);
  Operation move;
  move.kind = OperationKind::move_partition;
  move.member = "m2";
  auto op = sched.submit_operation(move, cluster.now());
  ASSERT_TRUE(op);
  // Job 1 shares the pool with it; job 2 waits for job 1, and the move,
  // queued after job 2, waits its turn behind it.
  EXPECT_EQ(state(s, 2), JobState::waiting);
  EXPECT_NE(op->second.find("move partition 1 to m2 (operation 0): waits for"), std::string::npos) << op->second;
  finish(s, 1);
  EXPECT_EQ(running(s, 2), 1u);
  EXPECT_TRUE(cluster.operations(s).empty()) << "job 2 holds the pool alone";
  finish(s, 2);
  ASSERT_EQ(cluster.operations(s).size(), 1u);
  const Operation& out = cluster.operations(s)[0].second;
  EXPECT_EQ(out.partition, PartitionId{1});
  EXPECT_EQ(out.member, "m2");
  EXPECT_EQ(out.pools, std::vector<std::string>{"default"});
  // Jobs sharing the pool go on beside it while it is carried out.
  ASSERT_TRUE(cluster.submit(s, locked_job(3, "group=shared:default")));
  settle(s);
  EXPECT_EQ(running(s, 3), 1u);
  sched.finish_operation(cluster.operations(s)[0].first);
  // No member's name: refused before it queues.
  move.member = "";
  EXPECT_FALSE(sched.submit_operation(move, cluster.now()));
}

}  // namespace
}  // namespace claimsched::core
