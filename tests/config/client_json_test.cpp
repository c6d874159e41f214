// The JSON of a job, as `jobs --json`, `status --json` and the HTTP API
// print it: written directly for speed, it must stay what nlohmann prints
// for the same object (scripts parse it; its keys are documented).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/client_json.hpp"

namespace claimsched::apps {
namespace {

using nlohmann::json;

core::JobView sample_job() {
  core::JobView v;
  v.spec.id = core::JobId{42};
  v.spec.name = "say \"hi\"\tand\\leave\n\x01 – ünïcode";
  v.spec.user = "alice";
  v.spec.job_class = "batch";
  v.spec.pool = "default";
  v.spec.count = 3;
  v.spec.command = {"/bin/sh", "-c", "echo \"$X\""};
  v.spec.submit_time = core::TimePoint{1'700'000'000'123'456'789};
  v.started_at = core::TimePoint{1'700'000'001'000'000'000};
  v.finished_at = core::TimePoint{1'700'000'003'500'000'000};
  v.state = core::JobState::failed;
  v.by_state[static_cast<size_t>(core::TaskState::succeeded)] = 2;
  v.by_state[static_cast<size_t>(core::TaskState::failed)] = 1;
  v.reason = "";
  v.last_removal = "preempted for job 7";
  v.preemptions = 1;
  v.queue_weight = 2.5;
  v.queue_age_ticks = 3;
  core::TaskView t;
  t.index = 0;
  t.state = core::TaskState::succeeded;
  t.node = core::NodeId{9};
  t.node_name = "n9";
  v.tasks = {t};
  return v;
}

TEST(ClientJson, AJobIsWhatNlohmannPrintsForItByteForByte) {
  std::string text;
  append_job_json(text, sample_job());
  auto parsed = json::parse(text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << text;
  // Re-dumping canonical JSON gives the same bytes: sorted keys, compact,
  // the same escapes and number forms.
  EXPECT_EQ(parsed.dump(), text);
  EXPECT_EQ(parsed["name"], sample_job().spec.name);
  EXPECT_EQ(parsed["command"][2], "echo \"$X\"");
  EXPECT_EQ(parsed["job"], 42);
  EXPECT_EQ(parsed["tasks_by_state"], (json{{"failed", 1}, {"succeeded", 2}}));
  EXPECT_EQ(parsed["submitted_at_ns"], 1'700'000'000'123'456'789LL);
  EXPECT_EQ(parsed["submitted_at"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(parsed["run_seconds"], 2.5);
  EXPECT_EQ(parsed["queue_weight"], 2.5);
  EXPECT_EQ(parsed["tasks"][0]["node_name"], "n9");
  EXPECT_EQ(job_json(sample_job()), parsed);
}

TEST(ClientJson, AJobNotStartedHasNullTimesAndAListIsAnArray) {
  core::JobView v;
  v.spec.id = core::JobId{1};
  v.reason = "waiting for capacity";
  auto j = json::parse(jobs_json({v, sample_job()}));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_TRUE(j[0]["started_at"].is_null());
  EXPECT_TRUE(j[0]["started_at_ns"].is_null());
  EXPECT_TRUE(j[0]["run_seconds"].is_null());
  EXPECT_TRUE(j[0]["queue_weight"].is_null());
  EXPECT_FALSE(j[0].contains("tasks"));
  EXPECT_EQ(j[0]["waiting"], "waiting for capacity");
  EXPECT_EQ(j[1]["job"], 42);
  EXPECT_EQ(jobs_json({}), "[]");
}

TEST(ClientJson, BytesThatAreNotUtf8BecomeReplacementCharactersNotABrokenList) {
  core::JobView v;
  v.spec.id = core::JobId{5};
  v.spec.name = std::string("caf\xe9 ok");  // Latin-1, not UTF-8
  std::string text;
  append_job_json(text, v);
  auto j = json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["name"], "caf\xEF\xBF\xBD ok");
}

TEST(ClientJson, ACampaignShowsThePredictorOnlyInExplainAndNullsWhatIsNotKnownYet) {
  namespace cc = core::campaign;
  cc::CampaignReport c;
  c.id = cc::CampaignId{3};
  c.name = "sweep";
  c.state = cc::CampaignState::failed;
  c.failure = "no task produced the declared output out/{index}.txt in any pool";
  c.pools = {{"lyon", true, 1, 2, 3, false, "", true, 0.5, 2.0, cc::RatioMove::decrease, 4},
             {"grenoble", false, 0, 0, 0, true, "3 tasks succeeded without the declared output"}};
  json summary = campaign_report_json(c, CampaignDetail::summary);
  EXPECT_EQ(summary["state"], "failed");
  EXPECT_FALSE(summary.contains("pools")) << "a summary (submit, cancel, list) has no pools";
  json status = campaign_report_json(c, CampaignDetail::status);
  EXPECT_TRUE(status["eta"].is_null()) << "nothing succeeded yet: no ETA";
  EXPECT_EQ(status["failure"], c.failure);
  EXPECT_FALSE(status["pools"][0].contains("ratio")) << "status leaves the predictor to explain";
  EXPECT_EQ(status["pools"][1]["sink_reason"], "3 tasks succeeded without the declared output");
  json explain = campaign_report_json(c, CampaignDetail::explain);
  EXPECT_EQ(explain["pools"][0]["ratio"], 2.0);
  EXPECT_EQ(explain["pools"][0]["last_move"], "decrease");
  EXPECT_TRUE(explain["pools"][1]["ratio"].is_null()) << "never offered";
  EXPECT_EQ(explain["max_waiting"], 0);
  cc::CampaignReply two;
  two.campaigns = {c, c};
  EXPECT_EQ(campaign_list_json(two)["campaigns"].size(), 2u);
}

}  // namespace
}  // namespace claimsched::apps
