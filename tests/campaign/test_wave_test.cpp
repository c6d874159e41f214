#include "core/campaign/test_wave.hpp"

#include <gtest/gtest.h>

namespace claimsched::core::campaign {
namespace {

using std::chrono::seconds;

TEST(TestWave, RunsExactlyOneTaskInEachPoolItNames) {
  TestWave wave({"lyon", "grenoble", "nancy"});
  // lyon has many free slots, grenoble none yet, nancy is not offered.
  auto first = wave.dispatch({{"lyon", 50, 50}, {"grenoble", 0, 10}});
  EXPECT_EQ(first, (std::vector<std::string>{"lyon"}));
  auto second = wave.dispatch({{"lyon", 49, 50}, {"grenoble", 3, 10}, {"nancy", 1, 4}});
  EXPECT_EQ(second, (std::vector<std::string>{"grenoble", "nancy"})) << "lyon has had its one task";
  EXPECT_TRUE(wave.dispatch({{"lyon", 50, 50}, {"grenoble", 10, 10}, {"nancy", 4, 4}}).empty());
}

TEST(TestWave, ReportsPerPoolRanExitCodeAndRunTime) {
  TestWave wave({"lyon", "grenoble"});
  (void)wave.dispatch({{"lyon", 1, 1}, {"grenoble", 1, 1}});
  wave.ended("grenoble", 127, seconds(2));
  EXPECT_FALSE(wave.complete());
  EXPECT_FALSE(wave.results()[0].ran);
  wave.ended("lyon", 0, seconds(40));
  EXPECT_TRUE(wave.complete());
  EXPECT_EQ(wave.results()[0].pool, "lyon");
  EXPECT_EQ(wave.results()[0].run_time, seconds(40));
  EXPECT_EQ(wave.results()[1].exit_code, 127);
  CampaignSpec spec;
  spec.pools = {"lyon", "grenoble"};
  EXPECT_EQ(pools_passing_test(spec, wave.results()), (std::vector<std::string>{"lyon"}))
      << "--test-first: the bulk runs only where the test succeeded";
}

TEST(TestWave, TestFirstKeepsThePoolsWhereTheTestRanAndExitedZero) {
  CampaignSpec spec;
  spec.pools = {"lyon", "grenoble"};
  spec.other_pools = {"nancy"};
  std::vector<TestResult> results = {
      {"nancy", true, 0, seconds(3)}, {"lyon", true, 1, seconds(1)}, {"grenoble", false, 0, seconds(0)}};
  EXPECT_EQ(pools_passing_test(spec, results), (std::vector<std::string>{"nancy"}));
}

}  // namespace
}  // namespace claimsched::core::campaign
