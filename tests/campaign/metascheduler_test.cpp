#include "core/campaign/metascheduler.hpp"

#include <gtest/gtest.h>

namespace claimsched::core::campaign {
namespace {

QueuedCampaign queued(uint64_t id, CampaignType type, uint64_t submitted, std::vector<std::string> pools,
                      std::vector<std::string> other_pools = {}, int32_t priority = 0) {
  return QueuedCampaign{CampaignId{id}, type, priority, submitted, std::move(pools), std::move(other_pools)};
}

TEST(Metascheduler, FollowsTheSeedsAffinityExample) {
  // cluster1: affinities c1, c2; others c3. cluster2: affinities c2; others c1, c3.
  std::vector<QueuedCampaign> campaigns = {
      queued(1, CampaignType::bulk, 1, {"cluster1"}, {"cluster2"}),
      queued(2, CampaignType::bulk, 2, {"cluster1", "cluster2"}),
      queued(3, CampaignType::bulk, 3, {}, {"cluster1", "cluster2"}),
  };
  auto launches = metaschedule(campaigns, {"cluster1", "cluster2"});
  std::vector<Launch> expected = {
      {CampaignId{1}, {"cluster1"}},
      {CampaignId{2}, {"cluster1", "cluster2"}},
      {CampaignId{1}, {"cluster2"}},
      {CampaignId{3}, {"cluster1", "cluster2"}},
  };
  EXPECT_EQ(launches, expected);
}

TEST(Metascheduler, TestCampaignsComeFirstEvenWhenSubmittedLast) {
  std::vector<QueuedCampaign> campaigns = {
      queued(1, CampaignType::bulk, 1, {"lyon"}, {}, 100),
      queued(2, CampaignType::test, 5, {"lyon"}, {"grenoble"}),
      queued(3, CampaignType::test, 4, {"grenoble"}),
  };
  auto launches = metaschedule(campaigns, {"lyon", "grenoble"});
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0], (Launch{CampaignId{3}, {"grenoble"}}));
  EXPECT_EQ(launches[1], (Launch{CampaignId{2}, {"lyon", "grenoble"}}));
  EXPECT_EQ(launches[2].campaign, CampaignId{1});
}

TEST(Metascheduler, BulkCampaignsAreFifoWithinAPriorityHigherPriorityFirst) {
  std::vector<QueuedCampaign> campaigns = {
      queued(1, CampaignType::bulk, 1, {"lyon"}),
      queued(2, CampaignType::bulk, 2, {"lyon"}, {}, 5),
      queued(3, CampaignType::bulk, 3, {"lyon"}),
  };
  auto launches = metaschedule(campaigns, {"lyon"});
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].campaign, CampaignId{2});
  EXPECT_EQ(launches[1].campaign, CampaignId{1});
  EXPECT_EQ(launches[2].campaign, CampaignId{3});
}

TEST(Metascheduler, OffersOnlyPoolsWithFreeResources) {
  std::vector<QueuedCampaign> campaigns = {
      queued(1, CampaignType::bulk, 1, {"lyon", "grenoble"}),
      queued(2, CampaignType::bulk, 2, {"lyon"}),
  };
  auto launches = metaschedule(campaigns, {"grenoble"});
  EXPECT_EQ(launches, (std::vector<Launch>{{CampaignId{1}, {"grenoble"}}}));
}

}  // namespace
}  // namespace claimsched::core::campaign
