// `claimsched sim --json` reports what the partitions counted: their stats are
// merged (collect() in apps/sim.cpp) and every counter is printed, so retries,
// lost tasks and reconcile releases show whenever they happened (they once
// always read 0: SchedulerStats::merge dropped them).

#include "apps/sim_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace claimsched::apps {
namespace {

TEST(SimReport, JsonCarriesEveryCounterSummedOverPartitions) {
  core::SchedulerStats one, two;
  one.tasks_retried = 3;
  one.tasks_lost = 1;
  two.tasks_retried = 4;
  two.reconcile_releases = 2;
  two.placements = 10;
  SimReport report;
  report.stats.merge(one);
  report.stats.merge(two);
  SimOptions options;
  auto j = nlohmann::json::parse(to_json(options, report));
  EXPECT_EQ(j["tasks_retried"], 7u);
  EXPECT_EQ(j["tasks_lost"], 1u);
  EXPECT_EQ(j["reconcile_releases"], 2u);
  EXPECT_EQ(j["placements"], 10u);
  size_t counters = 0;
  report.stats.for_each_counter([&](const char* name, uint64_t) {
    ++counters;
    EXPECT_TRUE(j.contains(name)) << name;
  });
  EXPECT_EQ(counters, core::kSchedulerCounters);
}

}  // namespace
}  // namespace claimsched::apps
