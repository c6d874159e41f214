// The campaign store (storage/campaign_store.hpp): what a restarted server
// reads back is what it recorded, the latest record of each copy winning.

#include "storage/campaign_store.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace claimsched::storage
