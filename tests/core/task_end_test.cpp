// Why a task ended, as a user reads it: the words for each typed end, and the
// scheduler keeping the reason of every run it ended or was told about.

#include "core/task_end.hpp"

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

TEST(TaskEndTest, EachReasonReadsAsWhatHappened) {
  EXPECT_EQ(describe(TaskEnd::exited(3)), "exited with code 3");
  EXPECT_EQ(describe(TaskEnd::signaled(9)), "killed by SIGKILL (signal 9)");
  EXPECT_EQ(describe(TaskEnd::spawn_failed(SpawnStage::no_such_file, 2)), "could not start: command not found");
  EXPECT_EQ(describe(TaskEnd::spawn_failed(SpawnStage::permission_denied, 13)), "could not start: permission denied");
  EXPECT_EQ(describe(TaskEnd::spawn_failed(SpawnStage::bad_workdir, 2)),
            "could not start: bad working directory (no such file or directory)");
  EXPECT_EQ(describe(TaskEnd::spawn_failed(SpawnStage::system, 7)), "could not start: system error (argument list too long)");
  EXPECT_EQ(describe(TaskEnd::spawn_failed(SpawnStage::no_command, 0)), "could not start: the job has no command");
  EXPECT_EQ(describe(TaskEnd::observed(EndReason::max_run_time, -1, 15)),
            "exceeded its maximum run time; killed by SIGTERM");
  EXPECT_EQ(describe(TaskEnd::observed(EndReason::cancelled, 1, 0)), "cancelled; exited with code 1 after SIGTERM");
  EXPECT_EQ(describe(TaskEnd::decided(EndReason::cancelled)), "cancelled");
  EXPECT_EQ(describe(TaskEnd::decided(EndReason::node_lost)), "its node was lost (the outcome is unknown)");
  EXPECT_EQ(describe(TaskEnd::observed(EndReason::oom_killed, -1, 9)), "killed for exceeding its memory limit");
  EXPECT_EQ(describe(TaskEnd{}), "");
}

TEST(TaskEndTest, PeakMemoryReadsInBinaryUnits) {
  EXPECT_EQ(format_memory(0), "0 B");
  EXPECT_EQ(format_memory(1023), "1023 B");
  EXPECT_EQ(format_memory(1024), "1 KiB");
  EXPECT_EQ(format_memory(3584), "3.5 KiB");
  EXPECT_EQ(format_memory(24ull << 20), "24 MiB");
  EXPECT_EQ(format_memory((51ull << 20) + (1ull << 20) / 10 + 1), "51.1 MiB");
  EXPECT_EQ(format_memory((3ull << 30) / 2), "1.5 GiB");
  EXPECT_EQ(format_memory((1ull << 30) - 1), "1 GiB");  // rounds up into the next tenth
}

TEST(TaskEndTest, ShellExitCodesAndNamesRoundTrip) {
  EXPECT_EQ(shell_exit_code(TaskEnd::exited(3)), 3);
  EXPECT_EQ(shell_exit_code(TaskEnd::signaled(9)), 137);
  EXPECT_EQ(shell_exit_code(TaskEnd::spawn_failed(SpawnStage::no_such_file, 2)), -1);
  for (int r = 0; r <= static_cast<int>(EndReason::agent_stopped); ++r) {
    auto reason = static_cast<EndReason>(r);
    auto parsed = parse_end_reason(to_string(reason));
    ASSERT_TRUE(parsed) << to_string(reason);
    EXPECT_EQ(*parsed, reason);
  }
  for (int s = 0; s <= static_cast<int>(SpawnStage::system); ++s) {
    auto stage = static_cast<SpawnStage>(s);
    auto parsed = parse_spawn_stage(to_string(stage));
    ASSERT_TRUE(parsed) << to_string(stage);
    EXPECT_EQ(*parsed, stage);
  }
  EXPECT_FALSE(parse_end_reason("exploded"));
}

TEST(TaskEndTest, EndsFromOlderNodesAreInferredFromTheState) {
  EXPECT_EQ(inferred_end(TaskState::succeeded, 0), TaskEnd::exited(0));
  EXPECT_EQ(inferred_end(TaskState::failed, 3), TaskEnd::exited(3));
  EXPECT_EQ(inferred_end(TaskState::failed, 137), TaskEnd::signaled(9));
  EXPECT_EQ(inferred_end(TaskState::failed, -1).reason, EndReason::spawn_failed);
  EXPECT_EQ(inferred_end(TaskState::lost, -1).reason, EndReason::node_lost);
}

class SchedulerEndsTest : public ::testing::Test {
 protected:
  SchedulerEndsTest() {
    cluster.add_node(NodeBuilder(1).capacity("cpu=4,memory=8Gi").build());
    cluster.add_node(NodeBuilder(2).capacity("cpu=4,memory=8Gi").build());
    SchedulerConfig c;
    c.partition = PartitionId{1};
    c.pools = {"default"};
    c.reply_timeout = ms(100);
    s = cluster.add_scheduler(c);
  }
  Scheduler& sched() { return cluster.scheduler(s); }
  TaskView task(uint64_t job, TaskIndex t) {
    auto v = sched().job_view(JobId{job}, true);
    EXPECT_TRUE(v);
    return v->tasks.at(t);
  }
  void running(uint64_t job, uint32_t count) {
    ASSERT_TRUE(cluster.submit(s, JobBuilder(job).count(count).cpu("1").build()));
    cluster.advance_by(ms(1));
    cluster.run();
    ASSERT_EQ(sched().job(JobId{job})->count_in(TaskState::running), count);
  }
  size_t node_of(uint64_t job, TaskIndex t) { return *sched().job(JobId{job})->tasks[t].node; }

  SimCluster cluster;
  size_t s = 0;
};

TEST_F(SchedulerEndsTest, AProcessEndIsKeptWithItsTask) {
  running(1, 2);
  ASSERT_TRUE(cluster.finish_task(node_of(1, 0), TaskRef{JobId{1}, 0}, TaskState::failed, -1,
                                  TaskEnd::spawn_failed(SpawnStage::no_such_file, 2)));
  ASSERT_TRUE(cluster.finish_task(node_of(1, 1), TaskRef{JobId{1}, 1}, TaskState::failed, 137, TaskEnd::signaled(9)));
  cluster.run();
  EXPECT_EQ(task(1, 0).end, TaskEnd::spawn_failed(SpawnStage::no_such_file, 2));
  EXPECT_EQ(task(1, 1).end, TaskEnd::signaled(9));
  EXPECT_EQ(task(1, 1).exit_code, 137);
}

TEST_F(SchedulerEndsTest, ACancelledTaskKeepsTheExitItReallyHad) {
  running(1, 1);
  Outbox out;
  ASSERT_TRUE(sched().cancel(JobId{1}, cluster.now(), out));
  EXPECT_EQ(task(1, 0).end, TaskEnd::decided(EndReason::cancelled));
  // It trapped SIGTERM and exited 1: the node says so once the process is gone.
  cluster.report_exit(0, PartitionId{1}, TaskRef{JobId{1}, 0}, TaskEnd::observed(EndReason::cancelled, 1, 0));
  EXPECT_EQ(task(1, 0).state, TaskState::cancelled);
  EXPECT_EQ(task(1, 0).end, TaskEnd::observed(EndReason::cancelled, 1, 0));
  EXPECT_EQ(task(1, 0).exit_code, 1);
  // A second report changes nothing: the first end stands.
  cluster.report_exit(0, PartitionId{1}, TaskRef{JobId{1}, 0}, TaskEnd::observed(EndReason::cancelled, -1, 9));
  EXPECT_EQ(task(1, 0).end, TaskEnd::observed(EndReason::cancelled, 1, 0));
}

TEST_F(SchedulerEndsTest, APreemptedTaskNamesWhomItMadeRoomFor) {
  running(1, 1);
  Outbox out;
  ASSERT_TRUE(sched().preempt(TaskRef{JobId{1}, 0}, TaskState::preempted, "for job 7", cluster.now(), out, JobId{7}));
  EXPECT_EQ(task(1, 0).end.reason, EndReason::preempted);
  EXPECT_EQ(task(1, 0).preempted_by, JobId{7});
}

TEST_F(SchedulerEndsTest, ATaskOnALostNodeEndsAsNodeLost) {
  ASSERT_TRUE(cluster.submit(s, JobBuilder(1).count(1).cpu("1").max_lost_retries(0).build()));
  cluster.advance_by(ms(1));
  cluster.run();
  Outbox out;
  sched().node_down(NodeId{static_cast<uint32_t>(node_of(1, 0) + 1)}, cluster.now(), out);
  EXPECT_EQ(task(1, 0).state, TaskState::lost);
  EXPECT_EQ(task(1, 0).end.reason, EndReason::node_lost);
}

}  // namespace
}  // namespace claimsched::core
