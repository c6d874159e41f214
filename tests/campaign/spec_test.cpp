#include "core/campaign/spec.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace claimsched::core::campaign {
namespace {

CampaignSpec sweep_spec() {
  CampaignSpec spec;
  spec.name = "sweep";
  spec.command = {"/bin/sim", "--seed={param}", "--out=run-{index}.dat"};
  spec.parameters = {"11", "12", "13"};
  spec.pools = {"lyon"};
  spec.other_pools = {"grenoble"};
  return spec;
}

const std::set<std::string> kClusterPools = {"lyon", "grenoble", "nancy"};

TEST(CampaignSpec, AWellFormedCampaignPasses) {
  EXPECT_TRUE(validate(sweep_spec(), kClusterPools).is_ok());
}

TEST(CampaignSpec, NoParametersIsRefusedNamingTheField) {
  auto spec = sweep_spec();
  spec.parameters.clear();
  Status s = validate(spec, kClusterPools);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.error().message.find("'parameters'"), std::string::npos) << s.error().message;
}

TEST(CampaignSpec, UnknownPoolIsRefusedNamingTheFieldAndThePool) {
  auto spec = sweep_spec();
  spec.other_pools = {"grenoble", "paris"};
  Status s = validate(spec, kClusterPools);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.error().message.find("'other_pools'"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("paris"), std::string::npos) << s.error().message;
}

TEST(CampaignSpec, BadTemplatesAreRefusedNamingTheCommand) {
  for (std::string bad : {"--seed={parm}", "--seed={param", "--x=}"}) {
    auto spec = sweep_spec();
    spec.command = {"/bin/sim", bad};
    Status s = validate(spec, kClusterPools);
    ASSERT_FALSE(s.is_ok()) << bad;
    EXPECT_NE(s.error().message.find("'command'"), std::string::npos) << s.error().message;
  }
  auto spec = sweep_spec();
  spec.command.clear();
  EXPECT_FALSE(validate(spec, kClusterPools).is_ok());
}

TEST(CampaignSpec, AllowedWaitingAboveMaxWaitingIsRefused) {
  auto spec = sweep_spec();
  spec.max_waiting = 10;
  spec.allowed_waiting = 11;
  Status s = validate(spec, kClusterPools);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.error().message.find("'allowed_waiting'"), std::string::npos);
}

TEST(CampaignSpec, RenderFillsEveryPlaceholderAndKeepsLiteralBraces) {
  auto argv = render_command({"/bin/sim", "--seed={param}", "{{{index}}}", "c{campaign}"}, CampaignId{7}, 2, "13");
  EXPECT_EQ(argv, (std::vector<std::string>{"/bin/sim", "--seed=13", "{2}", "c7"}));
}

TEST(CampaignSpec, RangesAndParameterFilesGiveOneTaskPerValue) {
  auto range = range_parameters(10, 20, 5);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(*range, (std::vector<std::string>{"10", "15", "20"}));
  EXPECT_FALSE(range_parameters(5, 4, 1).has_value());
  EXPECT_FALSE(range_parameters(1, 4, 0).has_value());
  EXPECT_EQ(parameter_lines("a b\n\n  # comment\n  c \r\n"), (std::vector<std::string>{"a b", "c"}));
}

// Found by fuzz_campaign_file: the server expands a client's range, so
// "1..4000000000" (a few bytes) allocated billions of parameters, and a range
// across most of int64 overflowed.
TEST(CampaignSpec, ARangeHasAtMostKMaxTasksPerJobValuesAndAnyInt64Bounds) {
  auto huge = range_parameters(1, 4'000'000'000, 1);
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("has more than 10000000 values, the most tasks a campaign has"),
            std::string::npos)
      << huge.error().message;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(range_parameters(kMin, kMax, 1).has_value());  // 2^64 values: one more than uint64 counts
  EXPECT_TRUE(range_parameters(1, 10'000'000, 1).has_value());
  EXPECT_FALSE(range_parameters(0, 10'000'000, 1).has_value());
  auto wide = range_parameters(kMin, kMax, kMax);
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(*wide, (std::vector<std::string>{"-9223372036854775808", "-1", "9223372036854775806"}));
}

TEST(CampaignSpec, TypesAndAlgorithmsReadAsUsersWriteThem) {
  EXPECT_EQ(parse_campaign_type("test").value(), CampaignType::test);
  EXPECT_EQ(parse_campaign_type("default").value(), CampaignType::bulk);
  EXPECT_FALSE(parse_campaign_type("bulk").has_value());
  for (auto a : {RatioAlgorithm::slow_start, RatioAlgorithm::two_way_adaptive, RatioAlgorithm::adaptive_down_exp_up}) {
    EXPECT_EQ(parse_ratio_algorithm(to_string(a)).value(), a);
  }
  EXPECT_FALSE(parse_ratio_algorithm("tcp").has_value());
}

}  // namespace
}  // namespace claimsched::core::campaign
