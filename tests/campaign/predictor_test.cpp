#include "core/campaign/predictor.hpp"

#include <gtest/gtest.h>

namespace claimsched::core::campaign {
namespace {

using std::chrono::seconds;

/// A pool whose queue is within `allowed` (the increase branch) unless the
/// test says otherwise.
PoolObservation pool_after_round(double old_ratio, uint32_t old_free, uint32_t running, uint32_t waiting,
                                 uint32_t allowed = 10, uint32_t max_resources = 200) {
  return PoolObservation{waiting, running, allowed, max_resources, old_ratio, old_free};
}

TEST(SlowStart, IncreaseDoublesTheRatio) {
  auto u = next_ratio(RatioAlgorithm::slow_start, pool_after_round(1.5, 40, 60, 10));
  EXPECT_EQ(u.move, RatioMove::increase);
  EXPECT_DOUBLE_EQ(u.ratio, 3.0);
  EXPECT_EQ(u.excess, 0u);
}

TEST(SlowStart, DecreaseFallsToOneJobPerPool) {
  auto u = next_ratio(RatioAlgorithm::slow_start, pool_after_round(4.0, 40, 60, 11));
  EXPECT_EQ(u.move, RatioMove::decrease);
  EXPECT_DOUBLE_EQ(u.ratio, 1.0 / 200);
  EXPECT_EQ(u.excess, 1u);
}

TEST(TwoWayAdaptive, IncreaseIsSubmittedOverRunning) {
  // JR = 1 / (NB_RUNNING / (OLD_JR * OLD_FREE)) = 1 / (20 / (2 * 30)) = 3.
  auto u = next_ratio(RatioAlgorithm::two_way_adaptive, pool_after_round(2.0, 30, 20, 0));
  EXPECT_EQ(u.move, RatioMove::increase);
  EXPECT_DOUBLE_EQ(u.ratio, 3.0);
  // More running than submitted lowers it: 1 / (80 / (1 * 40)) = 0.5.
  EXPECT_DOUBLE_EQ(next_ratio(RatioAlgorithm::two_way_adaptive, pool_after_round(1.0, 40, 80, 0)).ratio, 0.5);
}

TEST(TwoWayAdaptive, DecreaseRemovesTheExcessFromWhatWasSubmitted) {
  // NB_SUBMITTED = 1 * 40; EXCESS = 30 - 10; JR = (40 - 20) / 40.
  auto u = next_ratio(RatioAlgorithm::two_way_adaptive, pool_after_round(1.0, 40, 60, 30));
  EXPECT_EQ(u.move, RatioMove::decrease);
  EXPECT_DOUBLE_EQ(u.ratio, 0.5);
  EXPECT_EQ(u.excess, 20u);
}

TEST(AdaptiveDownExpUp, IncreaseDoublesTheRatio) {
  auto u = next_ratio(RatioAlgorithm::adaptive_down_exp_up, pool_after_round(2.5, 30, 20, 3));
  EXPECT_EQ(u.move, RatioMove::increase);
  EXPECT_DOUBLE_EQ(u.ratio, 5.0);
}

TEST(AdaptiveDownExpUp, DecreaseRemovesTheExcessFromWhatWasSubmitted) {
  // NB_SUBMITTED = 2 * 50; EXCESS = 35 - 10; JR = (100 - 25) / 100.
  auto u = next_ratio(RatioAlgorithm::adaptive_down_exp_up, pool_after_round(2.0, 50, 60, 35));
  EXPECT_EQ(u.move, RatioMove::decrease);
  EXPECT_DOUBLE_EQ(u.ratio, 0.75);
  EXPECT_EQ(u.excess, 25u);
}

TEST(RatioBounds, AnAdaptiveIncreaseWithoutEvidenceKeepsTheRatio) {
  // Nothing submitted last round (the pool was full): nothing to adapt to.
  EXPECT_DOUBLE_EQ(next_ratio(RatioAlgorithm::two_way_adaptive, pool_after_round(1.7, 0, 50, 0)).ratio, 1.7);
  // Nothing running yet.
  EXPECT_DOUBLE_EQ(next_ratio(RatioAlgorithm::two_way_adaptive, pool_after_round(1.7, 20, 0, 0)).ratio, 1.7);
}

TEST(RatioBounds, NeverBelowOneJobPerPoolNorAboveThePoolSize) {
  // More excess than was submitted: the formula goes negative, one job per pool remains.
  auto down = next_ratio(RatioAlgorithm::adaptive_down_exp_up, pool_after_round(1.0, 10, 60, 40, 10, 50));
  EXPECT_DOUBLE_EQ(down.ratio, 1.0 / 50);
  auto up = next_ratio(RatioAlgorithm::slow_start, pool_after_round(40.0, 10, 60, 0, 10, 50));
  EXPECT_DOUBLE_EQ(up.ratio, 50.0);
}

TEST(FlowControl, DispatchesRatioTimesFree) {
  RatioUpdate u{1.5, RatioMove::increase, 0};
  EXPECT_EQ(flow_control(u, 10, 0, 100, 1000).dispatch, 15u);
  EXPECT_EQ(flow_control(u, 0, 0, 100, 1000).dispatch, 0u);
  EXPECT_EQ(flow_control(u, 10, 0, 100, 4).dispatch, 4u) << "never more than is left to dispatch";
}

TEST(FlowControl, ATinyRatioStillLetsOneTaskThrough) {
  RatioUpdate u{1.0 / 200, RatioMove::decrease, 0};
  EXPECT_EQ(flow_control(u, 10, 0, 100, 1000).dispatch, 1u);
}

TEST(FlowControl, NeverMoreThanMaxWaitingCanWait) {
  // 10 free slots, 1 already waiting, at most 3 waiting: 12 more, of which 3 wait at worst.
  RatioUpdate u{4.0, RatioMove::increase, 0};
  FlowDecision d = flow_control(u, 10, 1, 3, 1000);
  EXPECT_EQ(d.dispatch, 12u);
  EXPECT_LE(1 + d.dispatch - 10, 3u);
  EXPECT_EQ(flow_control(u, 1, 5, 3, 1000).dispatch, 0u) << "already above max_waiting";
}

TEST(FlowControl, ADecreaseWithdrawsTheExcessWaitingTasks) {
  RatioUpdate u{0.5, RatioMove::decrease, 20};
  FlowDecision d = flow_control(u, 0, 30, 100, 1000);
  EXPECT_EQ(d.withdraw, 20u);
  EXPECT_EQ(d.dispatch, 0u);
  RatioUpdate up{2.0, RatioMove::increase, 0};
  EXPECT_EQ(flow_control(up, 0, 30, 100, 1000).withdraw, 0u);
}

TEST(Throughput, CountsSuccessesInTheSlidingWindow) {
  Throughput t(seconds(10));
  for (int s = 1; s <= 5; ++s) t.record(seconds(s), seconds(2 * s));
  EXPECT_DOUBLE_EQ(t.per_second(seconds(5)), 0.5);
  EXPECT_DOUBLE_EQ(t.per_second(seconds(12)), 0.3) << "successes at 1 s and 2 s left the window";
  EXPECT_EQ(t.mean_run_time(), std::optional<Duration>(seconds(6)));
}

TEST(Throughput, EtaIsRemainingOverThroughput) {
  Throughput t(seconds(10));
  EXPECT_EQ(t.eta(seconds(1), 5), std::nullopt) << "no throughput yet";
  EXPECT_EQ(t.mean_run_time(), std::nullopt);
  for (int s = 1; s <= 5; ++s) t.record(seconds(s), seconds(1));
  EXPECT_EQ(t.eta(seconds(5), 6), std::optional<TimePoint>(seconds(17)));
  EXPECT_EQ(t.eta(seconds(5), 0), std::optional<TimePoint>(seconds(5)));
}

TEST(Throughput, EarlyEtaUsesOnlyTheElapsedPartOfTheWindow) {
  // Rounds every 10 s from t=100 s; 2 tasks end per round: 0.2 tasks/s. The
  // 10-minute window has barely started: counting its empty start would say
  // 4 / 600 per second and an ETA 4000 s after the second round.
  Throughput t(std::chrono::minutes(10));
  t.dispatched(seconds(100));
  t.dispatched(seconds(110));  // later dispatches do not move the start
  for (int round = 1; round <= 2; ++round)
    for (int task = 0; task < 2; ++task) t.record(seconds(100 + 10 * round), seconds(10));
  EXPECT_DOUBLE_EQ(t.per_second(seconds(120)), 0.2);
  EXPECT_EQ(t.eta(seconds(120), 20), std::optional<TimePoint>(seconds(220))) << "20 left at 0.2/s: 100 s";
  // Past the window's length the rate is the window's again.
  EXPECT_DOUBLE_EQ(t.per_second(seconds(700)), 4.0 / 600);
}

}  // namespace
}  // namespace claimsched::core::campaign
