#include "core/campaign/campaign_scheduler.hpp"

#include <gtest/gtest.h>

#include <set>

namespace claimsched::core::campaign {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

CampaignSpec round_spec(uint32_t tasks, RatioAlgorithm algorithm) {
  CampaignSpec spec;
  spec.name = "sweep";
  spec.command = {"/bin/true"};
  for (uint32_t i = 0; i < tasks; ++i) spec.parameters.push_back(std::to_string(i));
  spec.pools = {"lyon"};
  spec.other_pools = {"blackhole"};
  spec.algorithm = algorithm;
  spec.max_waiting = 8;
  spec.allowed_waiting = 2;
  return spec;
}

uint32_t copies_on(const CampaignScheduler& s, const std::vector<CopyId>& copies, const std::string& pool) {
  uint32_t n = 0;
  for (CopyId c : copies) n += s.tasks().copy(c).pool == pool;
  return n;
}

TEST(CampaignScheduler, TheFirstRoundSendsOneTaskPerFreeSlotThenTheRatioGrows) {
  CampaignScheduler s(round_spec(100, RatioAlgorithm::adaptive_down_exp_up));
  RoundPlan first = s.round(seconds(0), {{"lyon", 4, 10}});
  EXPECT_EQ(first.dispatched.size(), 4u);
  for (CopyId c : first.dispatched) s.started(c, seconds(0));
  // Nothing waits: the ratio doubles, 2 x 3 free slots.
  RoundPlan second = s.round(seconds(10), {{"lyon", 3, 10}});
  EXPECT_EQ(second.dispatched.size(), 6u);
  EXPECT_DOUBLE_EQ(s.flows().at("lyon").ratio, 2.0);
  EXPECT_EQ(s.tasks().waiting("lyon"), 6u);
}

TEST(CampaignScheduler, TooManyWaitingLowersTheRatioAndWithdrawsTheExcess) {
  CampaignScheduler s(round_spec(100, RatioAlgorithm::slow_start));
  (void)s.round(seconds(0), {{"lyon", 6, 10}});
  // The pool's other users took the slots: all 6 still wait, 4 above allowed.
  RoundPlan plan = s.round(seconds(10), {{"lyon", 0, 10}});
  EXPECT_EQ(plan.withdrawn.size(), 4u);
  EXPECT_EQ(s.tasks().waiting("lyon"), 2u);
  EXPECT_DOUBLE_EQ(s.flows().at("lyon").ratio, 0.1);
  EXPECT_EQ(s.tasks().pending(), 98u);
}

TEST(CampaignScheduler, WaitingNeverExceedsMaxWaiting) {
  CampaignScheduler s(round_spec(1000, RatioAlgorithm::adaptive_down_exp_up));
  for (int r = 0; r < 20; ++r) {
    RoundPlan plan = s.round(seconds(10 * r), {{"lyon", 5, 10}});
    // The pool starts as many as it has free slots; the rest wait.
    uint32_t started = 0;
    for (CopyId c : plan.dispatched) {
      if (started++ < 5) s.started(c, seconds(10 * r));
    }
    EXPECT_LE(s.tasks().waiting("lyon"), 8u) << "round " << r;
  }
}

TEST(CampaignScheduler, ASinkIsAbandonedAndItsTasksRunElsewhere) {
  CampaignScheduler s(round_spec(50, RatioAlgorithm::slow_start));
  RoundPlan first = s.round(seconds(0), {{"lyon", 5, 5}, {"blackhole", 5, 5}});
  for (CopyId c : first.dispatched) s.started(c, seconds(0));
  for (CopyId c : first.dispatched) {
    if (s.tasks().copy(c).pool == "blackhole") (void)s.succeeded(c, milliseconds(20));
  }
  EXPECT_EQ(s.tasks().done(), 5u);
  RoundPlan second = s.round(seconds(10), {{"lyon", 0, 5}, {"blackhole", 5, 5}});
  ASSERT_EQ(second.abandoned.size(), 1u);
  EXPECT_EQ(second.abandoned[0].first, "blackhole");
  EXPECT_EQ(copies_on(s, second.dispatched, "blackhole"), 0u);
  EXPECT_EQ(s.tasks().done(), 0u);
  RoundPlan third = s.round(seconds(20), {{"lyon", 5, 5}, {"blackhole", 5, 5}});
  EXPECT_GT(copies_on(s, third.dispatched, "lyon"), 0u);
  EXPECT_EQ(copies_on(s, third.dispatched, "blackhole"), 0u);
  std::set<TaskIndex> rerun;
  for (CopyId c : third.dispatched) rerun.insert(s.tasks().copy(c).index);
  for (CopyId c : first.dispatched) {
    if (s.tasks().copy(c).pool == "blackhole") {
      EXPECT_TRUE(rerun.contains(s.tasks().copy(c).index)) << "suspect index " << s.tasks().copy(c).index;
    }
  }
}

TEST(CampaignScheduler, FinalizeFillsTheSlotsLeftWithReplicasAndCountsEachIndexOnce) {
  CampaignScheduler s(round_spec(3, RatioAlgorithm::slow_start));
  RoundPlan first = s.round(seconds(0), {{"lyon", 3, 10}});
  for (CopyId c : first.dispatched) s.started(c, seconds(0));
  RoundPlan second = s.round(seconds(10), {{"lyon", 7, 10}});
  ASSERT_EQ(second.dispatched.size(), 3u);
  EXPECT_TRUE(s.tasks().copy(second.dispatched[0]).replica);
  for (CopyId c : second.dispatched) s.started(c, seconds(10));
  SuccessOutcome win = s.succeeded(second.dispatched[1], seconds(30));
  EXPECT_TRUE(win.counted);
  ASSERT_EQ(win.cancel.size(), 1u);
  EXPECT_EQ(win.cancel[0], first.dispatched[1]);
  EXPECT_EQ(s.tasks().done(), 1u);
  EXPECT_EQ(s.mean_run_time(), std::optional<Duration>(seconds(20)));
}

TEST(CampaignScheduler, ThroughputAndEtaPerCampaignAndPool) {
  CampaignScheduler s(round_spec(10, RatioAlgorithm::slow_start));
  RoundPlan plan = s.round(seconds(0), {{"lyon", 2, 2}, {"blackhole", 2, 2}});
  for (CopyId c : plan.dispatched) s.started(c, seconds(0));
  EXPECT_EQ(s.eta(seconds(0)), std::nullopt);
  for (CopyId c : plan.dispatched) (void)s.succeeded(c, seconds(60));
  // 4 successes in the 60 s since the first dispatch (not the whole 10-minute
  // window): 4/60 per second; 6 left take 90 s.
  EXPECT_DOUBLE_EQ(s.throughput(seconds(60)), 4.0 / 60);
  EXPECT_EQ(s.eta(seconds(60)), std::optional<TimePoint>(seconds(150)));
  EXPECT_DOUBLE_EQ(s.flows().at("lyon").throughput.per_second(seconds(60)), 2.0 / 60);
  EXPECT_EQ(s.mean_run_time(), std::optional<Duration>(seconds(60)));
}

TEST(CampaignScheduler, AWrongDeclaredOutputFailsTheCampaignInsteadOfAbandoningEveryPool) {
  CampaignSpec spec = round_spec(20, RatioAlgorithm::slow_start);
  spec.declared_output = "out/{index}.txt";
  CampaignScheduler s(spec);
  RoundPlan first = s.round(seconds(0), {{"lyon", 2, 2}, {"blackhole", 2, 2}});
  ASSERT_EQ(first.dispatched.size(), 4u);
  for (CopyId c : first.dispatched) s.started(c, seconds(0));
  // Both pools' first tasks exit 0 without the output.
  SuccessOutcome a = s.succeeded(first.dispatched[0], seconds(30), /*output_present=*/false);
  EXPECT_EQ(s.failure(), std::nullopt) << "one pool's miss proves nothing yet";
  EXPECT_TRUE(a.cancel.empty());
  SuccessOutcome b = s.succeeded(first.dispatched[2], seconds(30), /*output_present=*/false);
  ASSERT_TRUE(s.failure().has_value());
  EXPECT_NE(s.failure()->find("out/{index}.txt"), std::string::npos) << *s.failure();
  EXPECT_EQ(b.cancel.size(), 2u) << "the two copies still running are cancelled";
  RoundPlan next = s.round(seconds(40), {{"lyon", 2, 2}, {"blackhole", 2, 2}});
  EXPECT_TRUE(next.dispatched.empty());
  EXPECT_TRUE(next.abandoned.empty()) << "no pool is abandoned: the path is wrong, not the pools";
  EXPECT_TRUE(s.tasks().abandoned_pools().empty());
}

}  // namespace
}  // namespace claimsched::core::campaign
