// The scheduler's journal through the partition store and back: what a
// restarted server rebuilds is what a user saw before the restart.

#include "storage/journal.hpp"

#include <gtest/gtest.h>

#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;

core::SchedulerConfig scheduler_config() {
  core::SchedulerConfig c;
  c.partition = core::PartitionId{1};
  c.pools = {"default"};
  return c;
}

// Bug 5 of issue 13: after a restart, finished tasks lost their node in
// `status`; their typed ends must survive too.
TEST(Journal, FinishedTasksKeepTheirNodeAndWhyTheyEndedAcrossARestart) {
  TempDir tmp;
  {
    auto store = PartitionStore::open(tmp.path(), partition_id(), {});
    ASSERT_TRUE(store) << store.error().to_string();
    core::Journal journal;
    journal.nodes_registered.push_back(node_spec(7));
    journal.jobs_accepted.push_back(job_spec(1, 2));
    auto change = [](core::TaskIndex t, core::TaskState s, int32_t code, core::TaskEnd end) {
      core::Journal::TaskChange c;
      c.job = core::JobId{1};
      c.tasks = {t};
      c.state = s;
      c.node = core::NodeId{7};
      c.claim_id = core::ClaimId{3};
      c.exit_code = code;
      c.end = end;
      return c;
    };
    journal.task_changes.push_back(change(0, core::TaskState::succeeded, 0, core::TaskEnd::exited(0)));
    journal.task_changes.push_back(change(1, core::TaskState::failed, -1,
                                          core::TaskEnd::spawn_failed(core::SpawnStage::no_such_file, 2)));
    auto batch = (*store)->batch();
    append_journal(journal, 1, core::TimePoint{std::chrono::seconds(100)}, batch);
    ASSERT_TRUE((*store)->write(std::move(batch)));
  }
  auto store = PartitionStore::open(tmp.path(), partition_id(), {});
  ASSERT_TRUE(store) << store.error().to_string();
  auto recovered = recover_partition(**store, scheduler_config(), core::TimePoint{0});
  ASSERT_TRUE(recovered) << recovered.error().to_string();
  auto view = recovered->scheduler->job_view(core::JobId{1}, true);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->tasks.size(), 2u);
  EXPECT_EQ(view->tasks[0].state, core::TaskState::succeeded);
  EXPECT_EQ(view->tasks[0].node, core::NodeId{7});
  EXPECT_EQ(view->tasks[0].end, core::TaskEnd::exited(0));
  EXPECT_EQ(view->tasks[1].node, core::NodeId{7});
  EXPECT_EQ(view->tasks[1].end, core::TaskEnd::spawn_failed(core::SpawnStage::no_such_file, 2));
  // The node is known again, down until its agent reports.
  auto n = recovered->scheduler->view().find_node(core::NodeId{7});
  ASSERT_TRUE(n);
  EXPECT_EQ(recovered->scheduler->view().node(*n).state, core::NodeState::down);
}

// Issue 17: the copies of `submit --repeat N` are one record, not N, and
// each comes back after a restart as the job the user submitted.
TEST(Journal, CopiesOfAJobAcceptedTogetherAreOneRecordAndEachComesBack) {
  TempDir tmp;
  core::SchedulerConfig config = scheduler_config();
  config.journal = true;
  core::Scheduler scheduler(config);
  const core::TimePoint t0{std::chrono::seconds(5)};
  auto submit = [&](core::JobSpec spec, uint64_t id) {
    spec.id = core::JobId{id};
    spec.wait_for_nodes = true;  // no node has registered
    auto st = scheduler.submit(std::move(spec), t0);
    ASSERT_TRUE(st) << st.error().to_string();
  };
  const auto copy = job_spec(1, 1);
  for (uint64_t id = 10; id < 310; ++id) submit(copy, id);
  submit(job_spec(310, 2), 310);  // another spec right after them
  submit(copy, 500);              // the same spec after a gap in the ids
  submit(copy, 501);
  size_t job_records = 0;
  {
    auto store = PartitionStore::open(tmp.path(), partition_id(), {});
    ASSERT_TRUE(store) << store.error().to_string();
    auto batch = (*store)->batch();
    append_journal(scheduler.take_journal(), 1, core::TimePoint{std::chrono::seconds(100)}, batch);
    ASSERT_TRUE((*store)->write(std::move(batch)));
    ASSERT_TRUE((*store)->database().scan(PartitionStore::kJobs, {}, {}, [&](std::string_view, std::string_view) {
      ++job_records;
      return core::Status::ok();
    }));
  }
  EXPECT_EQ(job_records, 3u) << "jobs 10-309, 310, 500-501";
  auto store = PartitionStore::open(tmp.path(), partition_id(), {});
  ASSERT_TRUE(store) << store.error().to_string();
  auto recovered = recover_partition(**store, config, core::TimePoint{0});
  ASSERT_TRUE(recovered) << recovered.error().to_string();
  EXPECT_EQ(recovered->jobs, 303u);
  for (uint64_t id : {10, 123, 309, 310, 500, 501}) {
    const auto* before = scheduler.job(core::JobId{id});
    const auto* after = recovered->scheduler->job(core::JobId{id});
    ASSERT_TRUE(before && after) << "job " << id;
    EXPECT_EQ(after->spec, before->spec) << "job " << id;
  }
  EXPECT_EQ(recovered->scheduler->job(core::JobId{310})->spec.count, 2u);
  EXPECT_FALSE(recovered->scheduler->job(core::JobId{311}));
}

// `claimsched pool remove`: the removal is a record of the partition store,
// so a restart (or a standby that replicated the store) keeps the pool out
// even when the config still lists it.
TEST(Journal, ARemovedPoolStaysRemovedAcrossARestart) {
  TempDir tmp;
  core::SchedulerConfig config = scheduler_config();
  config.pools = {"default", "gpu"};
  {
    auto store = PartitionStore::open(tmp.path(), partition_id(), {});
    ASSERT_TRUE(store) << store.error().to_string();
    core::Journal journal;
    journal.pools_removed.push_back("gpu");
    auto batch = (*store)->batch();
    append_journal(journal, 1, core::TimePoint{std::chrono::seconds(100)}, batch);
    ASSERT_TRUE((*store)->write(std::move(batch)));
    auto meta = (*store)->read_meta();
    ASSERT_TRUE(meta) << meta.error().to_string();
    EXPECT_EQ(meta->removed_pools, std::vector<std::string>{"gpu"});
    auto counts = (*store)->count();
    ASSERT_TRUE(counts) << counts.error().to_string();  // a full consistency pass reads it
  }
  auto store = PartitionStore::open(tmp.path(), partition_id(), {});
  ASSERT_TRUE(store) << store.error().to_string();
  auto recovered = recover_partition(**store, config, core::TimePoint{0});
  ASSERT_TRUE(recovered) << recovered.error().to_string();
  EXPECT_EQ(recovered->removed_pools, std::vector<std::string>{"gpu"});
  EXPECT_TRUE(recovered->scheduler->pool_removed("gpu"));
  EXPECT_FALSE(recovered->scheduler->pool_removed("default"));
  core::JobSpec job = job_spec(1, 1);
  job.pool = "gpu";
  auto refused = recovered->scheduler->submit(job, core::TimePoint{0});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("pool 'gpu' was removed"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace claimsched::storage
