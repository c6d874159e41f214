// `claimsched policy eval`: the snapshot format (errors name file, line and
// field), the JSON output, the state round trip, and the example snapshot in
// deploy/ evaluated end to end.

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/policy_command.hpp"
#include "core/policy/policy.hpp"
#include "core/policy/stage.hpp"

namespace claimsched::apps {
namespace {

using namespace core::policy;

std::string example_path() {
  return std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/policy-snapshot.example.toml";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kSmall = R"(now = "10m"
[[pools]]
name = "root"
[[classes]]
name = "batch"
pool = "root"
[[nodes]]
id = 1
pool = "root"
capacity = "cpu=4"
[[jobs]]
id = 1
user = "a"
class = "batch"
per_task = "cpu=1"
pending = 2
allocations = [ { node = 1, start = "1m" } ]
)";

std::string error_of(const std::string& text) {
  auto r = parse_policy_snapshot(text, "snap.toml");
  if (r) return "(parsed)";
  return r.error().message;
}

TEST(PolicySnapshotFormat, ParsesEverySection) {
  PolicyState st;
  auto s = parse_policy_snapshot(read(example_path()), "example", &st);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->now, std::chrono::hours(1));
  EXPECT_EQ(s->settings.quantum, 4LL << 30);
  EXPECT_EQ(s->settings.preemption.aggressive_preemption_satisfaction_threshold, 0.5);
  EXPECT_TRUE(s->settings.preemption.enable_aggressive_starvation);
  EXPECT_EQ(s->pools.size(), 2u);
  EXPECT_EQ(s->pools[1].overrides.fair_share_starvation_timeout, std::chrono::seconds(10));
  EXPECT_EQ(s->classes.size(), 5u);
  EXPECT_EQ(s->classes[3].policy, ClassPolicy::fixed_share);
  ASSERT_EQ(s->classes[3].user_allotments.size(), 1u);
  EXPECT_EQ(s->classes[3].user_allotments[0].first, "ops");
  EXPECT_EQ(s->nodes.size(), 7u);
  EXPECT_EQ(s->nodes[3].labels, std::vector<std::string>{"ssd"});
  EXPECT_EQ(s->jobs.size(), 6u);
  EXPECT_EQ(s->jobs[0].allocations.size(), 16u);
  EXPECT_EQ(s->jobs[0].allocations[5].index, 5u);  // index defaults to the position
  ASSERT_EQ(st.job_below_fair_share_since.size(), 1u);
  EXPECT_EQ(st.job_below_fair_share_since[0].second, std::chrono::minutes(50));
}

TEST(PolicySnapshotFormat, ErrorsNameFileLineAndField) {
  EXPECT_EQ(error_of("colour = \"blue\"\n" + std::string(kSmall)),
            "snap.toml:1: colour: unknown key (known: now, settings, preemption, pools, classes, users, "
            "nodes, jobs, "
            "state)");
  // A key after [[jobs]] belongs to the job (TOML), and is checked there.
  EXPECT_NE(
      error_of(std::string(kSmall) + "colour = \"blue\"\n").find("snap.toml:18: jobs[0].colour: unknown key"),
      std::string::npos);
  std::string bad = kSmall;
  bad.replace(bad.find("capacity = \"cpu=4\""), 18, "capacity = \"cpu=four\"");
  EXPECT_EQ(error_of(bad),
            "snap.toml:10: nodes[0].capacity: resource 'cpu': not a non-negative number: four");
  bad = kSmall;
  bad.replace(bad.find("pending = 2"), 11, "pendng = 2");
  EXPECT_NE(error_of(bad).find("snap.toml:16: jobs[0].pendng: unknown key"), std::string::npos)
      << error_of(bad);
  bad = kSmall;
  bad.replace(bad.find("start = \"1m\""), 12, "start = 60");
  EXPECT_EQ(error_of(bad), "snap.toml:17: jobs[0].allocations[0].start: expected a string");
  bad = kSmall;
  bad.replace(bad.find("now = \"10m\""), 11, "now = \"10 minutes\"");
  EXPECT_NE(error_of(bad).find("snap.toml:1: now: not a duration"), std::string::npos) << error_of(bad);
  // TOML syntax: the parser's line.
  EXPECT_NE(error_of("now = \"1m\"\n[[pools]\nname = 1\n").find("snap.toml:2:"), std::string::npos);
  // Model checks: the entity and field, with the file.
  bad = kSmall;
  bad.replace(bad.find("class = \"batch\"\nper_task"), 15, "class = \"bench\"");
  EXPECT_EQ(error_of(bad), "snap.toml: job 1: class 'bench' is not a class");
  EXPECT_NE(error_of("[preemption]\npreemption_satisfaction_threshold = 0.1\n")
                .find("snap.toml:1: preemption: aggressive_preemption_satisfaction_threshold (0.200000) must "
                      "not exceed"),
            std::string::npos)
      << error_of("[preemption]\npreemption_satisfaction_threshold = 0.1\n");
  // Missing required fields.
  EXPECT_NE(error_of("[[pools]]\nparent = \"x\"\n").find("pools[0].name: is required"), std::string::npos);
}

TEST(PolicySnapshotFormat, StateRoundTrips) {
  PolicyState st;
  st.job_below_fair_share_since = {{core::JobId{1}, std::chrono::seconds(90)},
                                   {core::JobId{7}, std::chrono::minutes(3)}};
  st.pool_below_fair_share_since = {{"root", std::chrono::seconds(30)}};
  st.node_last_preemptive_scheduling = {{core::NodeId{1}, std::chrono::seconds(100)}};
  PolicyState back;
  auto s = parse_policy_snapshot(std::string(kSmall) + render_policy_state(st), "snap.toml", &back);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(back, st);
}

TEST(PolicyEvalExample, TheExampleSnapshotDoesWhatItsCommentsSay) {
  PolicyState st;
  auto s = parse_policy_snapshot(read(example_path()), "example", &st);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  auto r = evaluate(*s, st);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& plan = r->plan;
  // The starving production job takes room from the batch job (newest first)
  // and from the squatters on the gpu pool.
  size_t for_prod = 0, squatters = 0;
  for (const auto& rm : plan.removals) {
    EXPECT_EQ(rm.kind, RemovalKind::preemption);
    if (rm.preemptor == core::JobId{2}) ++for_prod;
    if (rm.squatter) {
      ++squatters;
      EXPECT_EQ(rm.task.job, core::JobId{3});
    }
    EXPECT_TRUE(rm.interrupt);  // all victims here are interruptible
    EXPECT_EQ(rm.kill_after, std::chrono::seconds(10));
  }
  EXPECT_GE(for_prod, 6u);
  EXPECT_GE(squatters, 1u);
  // The service gets both tasks at once, the reserve its machine, the ml job
  // (a resident of the gpu pool) its doubling.
  uint32_t svc = 0, ml = 0;
  for (const auto& p : plan.placements) {
    if (p.job == core::JobId{5}) svc += p.count;
    if (p.job == core::JobId{4}) ml += p.count;
    if (p.job == core::JobId{6}) {
      EXPECT_EQ(p.node, core::NodeId{7});
      EXPECT_EQ(p.stage, Stage::non_preemptible);
    }
  }
  EXPECT_EQ(svc, 2u);
  EXPECT_EQ(ml, 1u);
  EXPECT_EQ(r->job(core::JobId{2})->starvation, StarvationStatus::aggressively_starving);
  EXPECT_EQ(r->job(core::JobId{4})->cap_reason, CapReason::expand_by_doubling);
  // The batch job keeps its non-preemptible prefix.
  EXPECT_EQ(r->job(core::JobId{1})->allocations[0].cls, AllocationClass::non_preemptible);
}

TEST(PolicyEvalExample, JsonCarriesTheSameContent) {
  PolicyState st;
  auto s = parse_policy_snapshot(read(example_path()), "example", &st);
  ASSERT_TRUE(s.has_value());
  auto r = evaluate(*s, st);
  ASSERT_TRUE(r.has_value());
  auto j = nlohmann::json::parse(render_policy_json(*r));
  EXPECT_EQ(j["now"], "1h");
  EXPECT_EQ(j["pools"].size(), 2u);
  EXPECT_EQ(j["pools"][0]["name"], "root");
  EXPECT_EQ(j["classes"].size(), 5u);
  EXPECT_EQ(j["jobs"].size(), 6u);
  EXPECT_EQ(j["jobs"][1]["starvation_status"], "aggressively_starving");
  EXPECT_EQ(j["jobs"][0]["allocations"].size(), 16u);
  EXPECT_EQ(j["plan"]["stats"]["preemptions"], r->plan.stats.preemptions);
  EXPECT_EQ(j["plan"]["removals"].size(), r->plan.removals.size());
  EXPECT_TRUE(j["plan"]["removals"][0].contains("preempted_for"));
  EXPECT_EQ(j["next_state"]["jobs"].size(), r->next_state.job_below_fair_share_since.size());
}

TEST(PolicyEvalCommand, ParsesItsArgumentsAndRuns) {
  CLI::App app;
  PolicyOptions o;
  add_policy_commands(app, o);
  auto state_file = std::filesystem::temp_directory_path() / "claimsched-policy-state.toml";
  std::vector<std::string> args{"claimsched", "policy", "eval",        example_path(),
                                "--explain",  "2",      "--cycles",    "3",
                                "--step",     "20s",    "--state-out", state_file.string()};
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  ASSERT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data()));
  EXPECT_EQ(o.snapshot, example_path());
  EXPECT_EQ(o.explain, std::vector<uint64_t>{2});
  EXPECT_EQ(o.cycles, 3u);
  EXPECT_EQ(o.step, std::chrono::seconds(20));
  ::testing::internal::CaptureStdout();
  int rc = run_policy_eval(o);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("cycle 1 at 1h:"), std::string::npos) << out.substr(0, 500);
  EXPECT_NE(out.find("cycle 3:"), std::string::npos);
  EXPECT_NE(out.find("job 2 (api-reindex) of user bob"), std::string::npos);
  // The state file is a valid [state] for the next run.
  PolicyState st;
  auto again = parse_policy_snapshot(std::string(kSmall) + read(state_file.string()), "state", &st);
  EXPECT_TRUE(again.has_value()) << again.error().message;
  std::filesystem::remove(state_file);

  PolicyOptions missing;
  missing.snapshot = "/nonexistent/snapshot.toml";
  EXPECT_EQ(run_policy_eval(missing), 1);
}

}  // namespace
}  // namespace claimsched::apps
