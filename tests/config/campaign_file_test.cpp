#include "apps/campaign_file.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace claimsched::apps {
namespace {

const std::set<std::string> kCampaignFilePools = {"lyon", "grenoble", "blackhole"};

core::Expected<core::campaign::CampaignSpec> campaign_from(std::string_view text,
                                                           const std::filesystem::path& dir = "/nonexistent") {
  auto draft = parse_campaign_file(text, "sweep.toml");
  if (!draft) return draft.error();
  return finish_campaign(std::move(*draft), dir, kCampaignFilePools, "alice");
}

TEST(CampaignFile, TomlAndJsonReadTheSameCampaign) {
  auto toml = campaign_from(R"(
name = "sweep"
command = ["/bin/sim", "--seed={param}"]
range = "1..100"
step = 3
pools = ["lyon"]
other_pools = ["grenoble"]
type = "default"
priority = 5
algorithm = "adaptive_down_exp_up"
max_waiting = 40
finalize_replicas = 2
sink_runtime = "500ms"
output = "/data/out-{index}.dat"
)");
  ASSERT_TRUE(toml.has_value()) << toml.error().message;
  auto json = campaign_from(R"({"name": "sweep", "command": ["/bin/sim", "--seed={param}"], "range": "1..100",
    "step": 3, "pools": ["lyon"], "other_pools": ["grenoble"], "type": "default", "priority": 5,
    "algorithm": "adaptive_down_exp_up", "max_waiting": 40, "finalize_replicas": 2, "sink_runtime": "500ms",
    "output": "/data/out-{index}.dat"})");
  ASSERT_TRUE(json.has_value()) << json.error().message;
  for (const auto& c : {*toml, *json}) {
    EXPECT_EQ(c.parameters.size(), 34u);
    EXPECT_EQ(c.parameters.back(), "100");
    EXPECT_EQ(c.user, "alice");
    EXPECT_EQ(c.algorithm, core::campaign::RatioAlgorithm::adaptive_down_exp_up);
    EXPECT_EQ(c.max_waiting, 40u);
    EXPECT_EQ(c.finalize_replicas, 2u);
    EXPECT_EQ(c.sink_runtime, std::chrono::milliseconds(500));
    EXPECT_EQ(c.all_pools(), (std::vector<std::string>{"lyon", "grenoble"}));
  }
}

TEST(CampaignFile, ACampaignWithoutParametersIsRefusedNamingTheField) {
  auto c = campaign_from("name = \"sweep\"\ncommand = [\"/bin/true\"]\npools = [\"lyon\"]\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("'parameters'"), std::string::npos) << c.error().message;
  auto empty = campaign_from(R"({"name": "s", "command": ["/bin/true"], "pools": ["lyon"], "parameters": []})");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("'parameters'"), std::string::npos) << empty.error().message;
}

TEST(CampaignFile, AnUnknownPoolIsRefusedNamingTheFieldAndThePool) {
  auto c = campaign_from("name = \"s\"\ncommand = [\"/bin/true\"]\nrange = \"1..3\"\npools = [\"lyon\", \"paris\"]\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("'pools'"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("'paris'"), std::string::npos) << c.error().message;
}

TEST(CampaignFile, ABadTemplateIsRefusedNamingTheCommand) {
  auto c = campaign_from("name = \"s\"\ncommand = [\"/bin/sim\", \"{seed}\"]\nrange = \"1..3\"\npools = [\"lyon\"]\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("'command'"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("{seed}"), std::string::npos) << c.error().message;
}

TEST(CampaignFile, MistypedFieldsAreRefusedWithTheirLine) {
  auto c = campaign_from("name = \"s\"\ncommand = [\"/bin/true\"]\nrange = \"1..3\"\npools = [\"lyon\"]\nmax_waitng = 3\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("sweep.toml:5: unknown campaign field 'max_waitng'"), std::string::npos)
      << c.error().message;
  auto range = campaign_from("name = \"s\"\ncommand = [\"/bin/true\"]\nrange = \"1-3\"\npools = [\"lyon\"]\n");
  ASSERT_FALSE(range.has_value());
  EXPECT_NE(range.error().message.find("'range'"), std::string::npos) << range.error().message;
  auto algorithm = campaign_from(
      "name = \"s\"\ncommand = [\"/bin/true\"]\nrange = \"1..3\"\npools = [\"lyon\"]\nalgorithm = \"tcp\"\n");
  ASSERT_FALSE(algorithm.has_value());
  EXPECT_NE(algorithm.error().message.find("'algorithm'"), std::string::npos) << algorithm.error().message;
}

// Found by fuzz_campaign_file: "cpu=0,memory=0Gi" was accepted, and
// campaign_json (what the client sends) leaves out all-zero resources, so the
// server ran the campaign with the default resources instead.
TEST(CampaignFile, ResourcesOfNothingAreRefusedAsForAJob) {
  auto c = campaign_from(
      "name = \"s\"\ncommand = [\"/bin/true\"]\nrange = \"1..3\"\npools = [\"lyon\"]\n"
      "resources = \"cpu=0,memory=0Gi\"\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("sweep.toml:5: campaign field 'resources': a task must request some resource"),
            std::string::npos)
      << c.error().message;
}

TEST(CampaignFile, AParameterFileGivesOneTaskPerLine) {
  auto dir = std::filesystem::temp_directory_path() / ("campaign_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "seeds.txt") << "# seeds\nalpha\n\n beta \ngamma\n";
  auto c = campaign_from("name = \"s\"\ncommand = [\"/bin/true\"]\nparameter_file = \"seeds.txt\"\npools = [\"lyon\"]\n",
                         dir);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->parameters, (std::vector<std::string>{"alpha", "beta", "gamma"}));
  auto missing = campaign_from("name = \"s\"\ncommand = [\"/bin/true\"]\nparameter_file = \"no.txt\"\npools = [\"lyon\"]\n");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("'parameter_file'"), std::string::npos);
}

}  // namespace
}  // namespace claimsched::apps
