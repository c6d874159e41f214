// SchedulerStats::merge sums every counter: sims and status views add up the
// partitions' stats, and a counter merge() forgot reads 0 there (tasks_lost,
// tasks_retried and reconcile_releases once did).

#include "core/pipeline/stats.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace claimsched::core {
namespace {

// The struct is the counter list plus the histograms: a field added outside
// CLAIMSCHED_SCHEDULER_COUNTERS would be missed by merge() and by this test.
static_assert(sizeof(SchedulerStats) == kSchedulerCounters * sizeof(uint64_t) + 2 * sizeof(Histogram),
              "declare every SchedulerStats counter in CLAIMSCHED_SCHEDULER_COUNTERS");

SchedulerStats numbered(uint64_t base) {
  SchedulerStats s;
  uint64_t i = 0;
#define CLAIMSCHED_SET(name, what) s.name = base + ++i;
  CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_SET)
#undef CLAIMSCHED_SET
  return s;
}

TEST(SchedulerStats, EveryCounterSurvivesMerge) {
  SchedulerStats a = numbered(100);
  SchedulerStats b = numbered(1000);
  a.placement_latency.record(5);
  b.placement_latency.record(7, 2);
  a.claim_round_trip.record(11);
  SchedulerStats sum;
  sum.merge(a);
  sum.merge(b);
  uint64_t i = 0;
  sum.for_each_counter([&](const char* name, uint64_t value) {
    ++i;
    EXPECT_EQ(value, (100 + i) + (1000 + i)) << name;
  });
  EXPECT_EQ(i, kSchedulerCounters);
  EXPECT_EQ(sum.placement_latency.count(), 3u);
  EXPECT_EQ(sum.placement_latency.max(), 7u);
  EXPECT_EQ(sum.claim_round_trip.count(), 1u);
  EXPECT_EQ(sum.claim_round_trip.max(), 11u);
}

TEST(SchedulerStats, CountersHaveDistinctNames) {
  std::set<std::string> names;
  SchedulerStats{}.for_each_counter([&](const char* name, uint64_t) { names.insert(name); });
  EXPECT_EQ(names.size(), kSchedulerCounters);
  for (const char* n : {"tasks_retried", "tasks_lost", "reconcile_releases"}) EXPECT_TRUE(names.count(n)) << n;
}

TEST(SchedulerStats, RejectedSumsEveryReason) {
  SchedulerStats s;
  s.rejected_conflict = 1;
  s.rejected_insufficient = 2;
  s.rejected_other = 4;
  s.rejected_stale_epoch = 8;
  EXPECT_EQ(s.rejected(), 15u);
}

}  // namespace
}  // namespace claimsched::core
