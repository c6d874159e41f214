// The campaign store (storage/campaign_store.hpp): what a restarted server
// reads back is what it recorded, the latest record of each copy winning.

#include "storage/campaign_store.hpp"

#include <gtest/gtest.h>

#include "storage/change_log.hpp"
#include "storage/partition_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using testing::TempDir;

TEST(CampaignStore, AReopenedStoreHoldsEachCampaignAndTheLatestStateOfEachCopy) {
  TempDir tmp;
  {
    auto store = CampaignStore::open(tmp / "campaigns");
    ASSERT_TRUE(store) << store.error().message;
    StoredCampaign c{7, 3, core::TimePoint{1234}, false, "{\"name\": \"multi\\nline\"}\n"};
    ASSERT_TRUE((*store)->put(c));
    StoredCopy copy{7, core::JobId{99}, 5, "lyon", true, core::TimePoint{55}, StoredCopy::State::live};
    ASSERT_TRUE((*store)->put({copy}));
    copy.state = StoredCopy::State::succeeded;
    ASSERT_TRUE((*store)->put({copy}));
    c.cancelled = true;
    ASSERT_TRUE((*store)->put(c));
  }
  auto store = CampaignStore::open(tmp / "campaigns");
  ASSERT_TRUE(store) << store.error().message;
  auto contents = (*store)->load();
  ASSERT_TRUE(contents) << contents.error().message;
  ASSERT_EQ(contents->campaigns.size(), 1u);
  const auto& c = contents->campaigns[0];
  EXPECT_EQ(c.id, 7u);
  EXPECT_EQ(c.sequence, 3u);
  EXPECT_EQ(c.submitted_at, core::TimePoint{1234});
  EXPECT_TRUE(c.cancelled);
  EXPECT_EQ(c.spec_json, "{\"name\": \"multi\\nline\"}\n");
  ASSERT_EQ(contents->copies[7].size(), 1u);
  const auto& copy = contents->copies[7][0];
  EXPECT_EQ(copy.job, core::JobId{99});
  EXPECT_EQ(copy.index, 5u);
  EXPECT_EQ(copy.pool, "lyon");
  EXPECT_TRUE(copy.replica);
  EXPECT_EQ(copy.state, StoredCopy::State::succeeded);
}

// HA: the records live in a partition's store, travel with its change log,
// and a standby that follows it holds them for the next owner; the
// partition's own recovery reads past them.
TEST(CampaignStore, RecordsInAPartitionStoreReachItsStandbyAndLeaveItsRecoveryAlone) {
  TempDir tmp;
  auto primary = PartitionStore::open(tmp / "primary", partition_id());
  ASSERT_TRUE(primary) << primary.error().message;
  std::shared_ptr<PartitionStore> shared = std::move(*primary);
  auto seq = shared->database().checkpoint(tmp / "standby");
  ASSERT_TRUE(seq) << seq.error().message;
  auto standby = PartitionStore::open(tmp / "standby", partition_id());
  ASSERT_TRUE(standby) << standby.error().message;
  ReplicaApplier applier{(*standby)->database()};
  ChangeLog log{shared->database(), applier.applied_sequence() + 1};

  auto store = CampaignStore::in_partition(shared);
  ASSERT_TRUE(store->put(StoredCampaign{3, 1, core::TimePoint{10}, false, "{\"name\": \"sweep\"}"}));
  ASSERT_TRUE(store->put(
      {StoredCopy{3, core::JobId{40}, 0, "lyon", false, core::TimePoint{11}},
       StoredCopy{3, core::JobId{41}, 1, "lyon", false, core::TimePoint{11}, StoredCopy::State::succeeded}}));
  auto b = shared->batch();
  b.set_epoch(5);
  ASSERT_TRUE(shared->write(std::move(b)));

  auto read = log.read(256);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_FALSE(read->need_bootstrap);
  ASSERT_TRUE(applier.apply(read->batches));
  EXPECT_EQ(applier.applied_sequence(), shared->latest_sequence());

  std::shared_ptr<PartitionStore> next = std::move(*standby);
  auto meta = next->read_meta();
  ASSERT_TRUE(meta) << meta.error().message;
  EXPECT_EQ(meta->epoch, 5u);
  ASSERT_TRUE(next->count()) << next->count().error().message;
  auto contents = CampaignStore::in_partition(next)->load();
  ASSERT_TRUE(contents) << contents.error().message;
  ASSERT_EQ(contents->campaigns.size(), 1u);
  EXPECT_EQ(contents->campaigns[0].spec_json, "{\"name\": \"sweep\"}");
  ASSERT_EQ(contents->copies[3].size(), 2u);
  EXPECT_EQ(contents->copies[3][1].index, 1u);
  EXPECT_EQ(contents->copies[3][1].state, StoredCopy::State::succeeded);
}

}  // namespace
}  // namespace claimsched::storage
