// Random interleavings of everything that can happen to a campaign's copies:
// dispatch, start, success, failure, withdrawal, finalize replicas, cancels
// that race with successes, a pool abandoned as a sink midway. Whatever the
// order, every index ends with exactly one counted success, on a pool that
// was not abandoned.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/campaign/tasks.hpp"
#include "core/random.hpp"

namespace claimsched::core::campaign {
namespace {

const std::vector<std::string> kPropertyPools = {"lyon", "grenoble", "blackhole"};

std::vector<CopyId> copies_in(const CampaignTasks& tasks, CopyState state) {
  std::vector<CopyId> out;
  for (const auto& c : tasks.copies()) {
    if (c.state == state) out.push_back(c.id);
  }
  return out;
}

struct InterleavingResult {
  bool complete = false;
  uint64_t steps = 0;
  uint64_t replicas = 0;
  uint64_t late_successes = 0;
};

InterleavingResult run_interleaving(uint64_t seed, uint32_t task_count) {
  Rng rng(seed);
  CampaignTasks tasks(task_count);
  std::vector<CopyId> to_cancel;  // cancels sent, not yet delivered
  bool abandoned = false;
  InterleavingResult result;
  TimePoint now{0};
  for (; result.steps < 200'000 && !tasks.complete(); ++result.steps) {
    now += std::chrono::milliseconds(1 + rng.below(100));
    auto waiting = copies_in(tasks, CopyState::waiting);
    auto running = copies_in(tasks, CopyState::running);
    std::erase_if(to_cancel, [&](CopyId c) { return !tasks.copy(c).live(); });
    switch (rng.below(9)) {
      case 0: {
        const auto& pool = kPropertyPools[rng.below(kPropertyPools.size())];
        (void)tasks.dispatch(pool, static_cast<uint32_t>(rng.below(5)), now);
        break;
      }
      case 1:
      case 2:
        if (!waiting.empty()) tasks.started(waiting[rng.below(waiting.size())], now);
        break;
      case 3:
      case 4:
        if (!running.empty()) {
          SuccessOutcome out = tasks.succeeded(running[rng.below(running.size())], now, true);
          if (!out.counted) ++result.late_successes;
          to_cancel.insert(to_cancel.end(), out.cancel.begin(), out.cancel.end());
        }
        break;
      case 5:
        if (!running.empty() && rng.chance(0.5)) tasks.failed(running[rng.below(running.size())], now);
        break;
      case 6:
        (void)tasks.withdraw(kPropertyPools[rng.below(kPropertyPools.size())], static_cast<uint32_t>(rng.below(3)),
                             now);
        break;
      case 7: {
        auto replicas = tasks.replicate(kPropertyPools[rng.below(2)], static_cast<uint32_t>(rng.below(4)), 2, now);
        result.replicas += replicas.size();
        break;
      }
      case 8:
        if (!to_cancel.empty()) {
          size_t i = rng.below(to_cancel.size());
          tasks.cancelled(to_cancel[i], now);
          to_cancel.erase(to_cancel.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (!abandoned && rng.chance(0.05)) {
          abandoned = true;
          auto leftovers = tasks.abandon("blackhole", "property test");
          to_cancel.insert(to_cancel.end(), leftovers.begin(), leftovers.end());
        }
        break;
    }
  }
  result.complete = tasks.complete();
  for (TaskIndex i = 0; i < task_count; ++i) {
    uint32_t successes = 0;
    for (const auto& c : tasks.copies()) {
      if (c.index == i && c.state == CopyState::succeeded) ++successes;
    }
    EXPECT_EQ(successes, 1u) << "seed " << seed << " index " << i;
    auto winner = tasks.winner(i);
    EXPECT_TRUE(winner.has_value()) << "seed " << seed << " index " << i;
    if (winner) {
      EXPECT_EQ(tasks.copy(*winner).state, CopyState::succeeded);
      EXPECT_FALSE(tasks.abandoned(tasks.copy(*winner).pool)) << "seed " << seed;
    }
  }
  EXPECT_EQ(tasks.done(), task_count);
  return result;
}

TEST(CampaignProperty, EveryIndexSucceedsExactlyOnceUnderRandomInterleavings) {
  uint64_t replicas = 0;
  uint64_t late = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    InterleavingResult r = run_interleaving(seed, 1 + static_cast<uint32_t>(mix64(seed) % 40));
    ASSERT_TRUE(r.complete) << "seed " << seed << " did not finish in " << r.steps << " steps";
    replicas += r.replicas;
    late += r.late_successes;
  }
  // The interleavings must exercise the races this test exists for.
  EXPECT_GT(replicas, 100u);
  EXPECT_GT(late, 10u);
}

}  // namespace
}  // namespace claimsched::core::campaign
