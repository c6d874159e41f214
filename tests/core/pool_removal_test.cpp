// `claimsched pool remove`: the removal waits its turn in the lock queue
// behind the jobs holding a group lock on the pool, is refused while the
// pool is in use (naming what uses it), and a removed pool takes no jobs
// and no nodes, after a restart too.

#include <gtest/gtest.h>

#include "core/pool_use.hpp"
#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::SimCluster;

// --- the in-use check ----------------------------------------------------------

TEST(PoolUse, AnUnusedPoolMayGo) { EXPECT_TRUE(check_pool_unused("p1", PoolUse{})); }

TEST(PoolUse, TheRefusalNamesWhatUsesThePool) {
  PoolUse use;
  use.unfinished_jobs = {JobId(123), JobId(124)};
  use.live_nodes = {{"a1", NodeState::up}};
  auto st = check_pool_unused("p1", use);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::wrong_state);
  EXPECT_EQ(st.error().message, "pool p1 is in use: 2 unfinished job(s) (e.g. 123), node a1 is up");
}

TEST(PoolUse, ADrainingNodeStillUsesItAndManyNodesAreCounted) {
  PoolUse use;
  use.live_nodes = {{"a1", NodeState::draining}, {"a2", NodeState::up}, {"a3", NodeState::up}, {"a4", NodeState::up},
                    {"a5", NodeState::up}};
  EXPECT_EQ(check_pool_unused("p1", use).error().message,
            "pool p1 is in use: node a1 is draining, node a2 is up, node a3 is up, 2 more node(s) are not down");
}

TEST(PoolUse, APoolWithPoolsBelowItStays) {
  PoolUse use;
  use.subpools = {"p1-gpu"};
  EXPECT_EQ(check_pool_unused("p1", use).error().message, "pool p1 is in use: pool p1-gpu is below it");
}

// --- through the scheduler -------------------------------------------------------

SchedulerConfig two_pools() {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"p1", "p2"};
  c.reply_timeout = ms(100);
  c.journal = true;
  c.classes = {ClassConfig::named("batch")};
  return c;
}

Operation remove(const std::string& pool) {
  Operation op;
  op.kind = OperationKind::remove_pool;
  op.pool = pool;
  return op;
}

JobSpec job_in(uint64_t id, const std::string& pool, std::string_view locks = "") {
  JobSpec j = JobBuilder(id).pool(pool).cpu("1").build();
  if (!locks.empty()) j.locks = testing::locks(locks);
  return j;
}

class PoolRemovalTest : public ::testing::Test {
 protected:
  /// Node 1 (node-1) in p1, node 2 (node-2) in p2.
  size_t start() {
    cluster.add_node(NodeBuilder(1).pool("p1").capacity("cpu=8,memory=16Gi").build());
    cluster.add_node(NodeBuilder(2).pool("p2").capacity("cpu=8,memory=16Gi").build());
    return cluster.add_scheduler(two_pools());
  }
  void settle(size_t s) {
    cluster.run();
    cluster.tick(s);
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  uint32_t running(size_t s, uint64_t id) {
    const JobRecord* j = cluster.scheduler(s).job(JobId(id));
    return j->count_in(TaskState::running) + j->count_in(TaskState::claimed);
  }
  void node_down(size_t s, uint64_t node) {
    Outbox out;
    cluster.scheduler(s).node_down(NodeId(node), cluster.now(), out);
  }
  SimCluster cluster;
};

TEST_F(PoolRemovalTest, APoolWithAnUpNodeIsRefusedNamingTheNode) {
  size_t s = start();
  Scheduler& sched = cluster.scheduler(s);
  auto op = sched.submit_operation(remove("p2"), cluster.now());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().message, "pool p2 is in use: node node-2 is up");
  EXPECT_FALSE(sched.pool_removed("p2"));
  // The refused removal let its lock go: a job locking the pool runs.
  ASSERT_TRUE(cluster.submit(s, job_in(1, "p2", "group=exclusive:p2")));
  settle(s);
  EXPECT_EQ(running(s, 1), 1u);
}

TEST_F(PoolRemovalTest, AnUnusedPoolIsRemovedDurablyAndTakesNoMoreJobsOrNodes) {
  size_t s = start();
  Scheduler& sched = cluster.scheduler(s);
  (void)sched.take_journal();
  node_down(s, 2);
  auto op = sched.submit_operation(remove("p2"), cluster.now());
  ASSERT_TRUE(op) << op.error().message;
  EXPECT_EQ(op->second, "remove pool p2 (operation 0): done");
  EXPECT_TRUE(sched.pool_removed("p2"));
  EXPECT_EQ(sched.take_journal().pools_removed, std::vector<std::string>{"p2"});

  auto submitted = cluster.submit(s, job_in(1, "p2"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().message,
            "job field 'pool': pool 'p2' was removed (claimsched pool remove); it takes no jobs");
  auto node = sched.add_node(NodeBuilder(3).pool("p2").build(), NodeSnapshot{});
  ASSERT_FALSE(node);
  EXPECT_NE(node.error().message.find("pool 'p2' was removed"), std::string::npos) << node.error().message;
  // The other pool goes on.
  EXPECT_TRUE(cluster.submit(s, job_in(2, "p1")));
  // Twice is an error, not a second removal.
  auto again = sched.submit_operation(remove("p2"), cluster.now());
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("was removed already"), std::string::npos);
  // An unknown pool is an error too.
  EXPECT_EQ(sched.submit_operation(remove("p9"), cluster.now()).error().code, Errc::unknown_name);
}

class PoolRemovalLockTest : public PoolRemovalTest, public ::testing::WithParamInterface<const char*> {};

// The job holding the group lock on p1 runs in p2: once it ends nothing uses
// p1 (it has no node), and the waiting removal goes.
TEST_P(PoolRemovalLockTest, TheRemovalWaitsBehindAJobHoldingTheGroupLockAndGoesOnceItEnds) {
  cluster.add_node(NodeBuilder(1).pool("p2").capacity("cpu=8,memory=16Gi").build());
  size_t s = cluster.add_scheduler(two_pools());
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_TRUE(cluster.submit(s, job_in(1, "p2", GetParam())));
  settle(s);
  ASSERT_EQ(running(s, 1), 1u);

  auto op = sched.submit_operation(remove("p1"), cluster.now());
  ASSERT_TRUE(op) << op.error().message;
  EXPECT_EQ(op->second, "remove pool p1 (operation 0): waits for group 'p1' held by job 1");
  settle(s);
  EXPECT_FALSE(sched.pool_removed("p1"));
  EXPECT_TRUE(cluster.operations_ended(s).empty());

  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId(1), 0}, TaskState::succeeded, 0));
  settle(s);
  ASSERT_EQ(cluster.operations_ended(s).size(), 1u);
  EXPECT_EQ(cluster.operations_ended(s)[0].id, op->first);
  EXPECT_TRUE(cluster.operations_ended(s)[0].outcome) << cluster.operations_ended(s)[0].outcome.error().message;
  EXPECT_TRUE(sched.pool_removed("p1"));
  EXPECT_TRUE(cluster.operations(s).empty()) << "the core carries a removal out itself";
}

INSTANTIATE_TEST_SUITE_P(Modes, PoolRemovalLockTest, ::testing::Values("group=exclusive:p1", "group=shared:p1"));

TEST_F(PoolRemovalTest, AWaitingRemovalIsRefusedWhenItsTurnComesIfThePoolIsStillInUse) {
  size_t s = start();
  Scheduler& sched = cluster.scheduler(s);
  ASSERT_TRUE(cluster.submit(s, job_in(1, "p1", "group=shared:p1")));
  settle(s);
  auto op = sched.submit_operation(remove("p1"), cluster.now());
  ASSERT_TRUE(op);
  ASSERT_TRUE(cluster.finish_task(0, TaskRef{JobId(1), 0}, TaskState::succeeded, 0));
  settle(s);
  ASSERT_EQ(cluster.operations_ended(s).size(), 1u);
  const auto& outcome = cluster.operations_ended(s)[0].outcome;
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().message, "pool p1 is in use: node node-1 is up");
  EXPECT_FALSE(sched.pool_removed("p1"));
}

TEST_F(PoolRemovalTest, AnUnfinishedJobKeepsThePool) {
  size_t s = start();
  Scheduler& sched = cluster.scheduler(s);
  JobSpec held = job_in(7, "p2");
  held.wait_for_nodes = true;
  ASSERT_TRUE(cluster.submit(s, held));
  settle(s);
  node_down(s, 2);
  auto op = sched.submit_operation(remove("p2"), cluster.now());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().message, "pool p2 is in use: 1 unfinished job(s) (e.g. 7)");
}

TEST(PoolRemovalRestore, ARestoredRemovalKeepsThePoolOutEvenIfTheConfigListsIt) {
  Scheduler restored(two_pools());
  restored.restore_removed_pool("p2");
  restored.restore_removed_pool("not-ours");  // a pool the config no longer lists
  EXPECT_TRUE(restored.pool_removed("p2"));
  EXPECT_FALSE(restored.pool_removed("not-ours"));
  EXPECT_FALSE(restored.submit(job_in(1, "p2"), ms(0)));
  EXPECT_FALSE(restored.add_node(NodeBuilder(2).pool("p2").build(), NodeSnapshot{}));
  EXPECT_TRUE(restored.submit(job_in(2, "p1"), ms(0)));
}

}  // namespace
}  // namespace claimsched::core
