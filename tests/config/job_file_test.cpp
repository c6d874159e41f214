// Job files and flags as `submit` merges them, and the client's text for
// people (apps/job_file, apps/client_text): pure functions.

#include "apps/job_file.hpp"

#include <gtest/gtest.h>

#include "apps/client_text.hpp"

namespace claimsched::apps {
namespace {

using namespace std::chrono_literals;

JobDraft flags(std::initializer_list<std::string> given) {
  JobDraft d;
  d.given.insert(given.begin(), given.end());
  return d;
}

TEST(JobFile, TomlAndJsonReadTheSameKeysAndSayWhichWereGiven) {
  auto toml = parse_job_file("name = \"r\"\ncount = 3\ncommand = [\"/bin/echo\", \"x\"]\nenv = { A = \"1\" }\n"
                             "resources = \"cpu=2,memory=1Gi\"\nmax_run_time = \"10m\"\nhold = true\n",
                             "job.toml");
  ASSERT_TRUE(toml) << toml.error().message;
  auto json = parse_job_file(R"({"name": "r", "count": 3, "command": ["/bin/echo", "x"], "env": {"A": "1"},
      "resources": "cpu=2,memory=1Gi", "max_run_time": "10m", "hold": true})",
                             "job.json");
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_EQ(toml->spec, json->spec);
  EXPECT_EQ(toml->given, json->given);
  EXPECT_TRUE(toml->has("hold"));
  EXPECT_TRUE(toml->spec.wait_for_nodes);
  EXPECT_FALSE(toml->has("pool"));
}

TEST(JobFile, FlagsOverrideTheFileAndEnvMergesByName) {
  auto file = parse_job_file("count = 1\ncommand = [\"/bin/true\"]\nenv = { A = \"file\", B = \"file\" }\n"
                             "pool = \"gpu\"\n",
                             "job.toml");
  ASSERT_TRUE(file);
  JobDraft cli = flags({"count", "env", "command"});
  cli.spec.count = 3;
  cli.spec.env = {{"B", "flag"}, {"C", "flag"}};
  cli.spec.command = {"/bin/echo", "from-cli"};
  auto merged = merge_jobs(*file, cli);
  EXPECT_EQ(merged.spec.count, 3u);
  EXPECT_EQ(merged.spec.command, (std::vector<std::string>{"/bin/echo", "from-cli"}));
  EXPECT_EQ(merged.spec.pool, "gpu") << "not given on the command line: the file's";
  EXPECT_EQ(merged.spec.env,
            (std::vector<std::pair<std::string, std::string>>{{"A", "file"}, {"B", "flag"}, {"C", "flag"}}));
}

TEST(JobFile, FinishingFillsTheDefaultsAndRefusesAJobWithoutACommand) {
  auto file = parse_job_file("command = [\"/bin/true\"]\n", "job.toml");
  ASSERT_TRUE(file);
  auto job = finish_job(*file, "alice");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->pool, "default");
  EXPECT_EQ(job->user, "alice");
  EXPECT_EQ(job->per_task.to_string(), "cpu=1,memory=1Gi");
  auto empty = parse_job_file("command = []\n", "job.toml");
  ASSERT_TRUE(empty);
  auto refused = finish_job(*empty, "alice");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("job field 'command'"), std::string::npos) << refused.error().message;
  auto relative = parse_job_file("command = [\"/bin/true\"]\nworkdir = \"data\"\n", "job.toml");
  ASSERT_TRUE(relative);
  EXPECT_FALSE(finish_job(*relative, "alice"));
}

TEST(JobFile, BadFieldsAreNamedWithTheirLine) {
  auto typo = parse_job_file("count = 1\ncomand = [\"/bin/true\"]\n", "job.toml");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message, "job.toml:2: unknown job field 'comand'");
  auto count = parse_job_file("count = 0\n", "job.toml");
  ASSERT_FALSE(count);
  EXPECT_NE(count.error().message.find("job.toml:1: job field 'count'"), std::string::npos) << count.error().message;
}

TEST(JobFile, LocksAreOneStringOrAListOfClausesAndBadOnesAreNamed) {
  auto toml = parse_job_file("command = [\"/bin/true\"]\nlocks = [\"node=exclusive:n1\", \"instance=shared:web\"]\n",
                             "job.toml");
  ASSERT_TRUE(toml) << toml.error().message;
  auto json = parse_job_file(R"({"command": ["/bin/true"], "locks": "instance=shared:web node=exclusive:n1"})",
                             "job.json");
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_EQ(toml->spec.locks, json->spec.locks);
  EXPECT_EQ(toml->spec.locks.to_string(), "instance=shared:web node=exclusive:n1");
  auto merged = merge_jobs(*toml, [] {
    JobDraft d;
    d.spec.locks.bgl = true;
    d.given.insert("locks");
    return d;
  }());
  EXPECT_TRUE(merged.spec.locks.bgl);  // --lock replaces the file's declaration
  auto bad = parse_job_file("command = [\"/bin/true\"]\nlocks = \"node=exclusive:a,all\"\n", "job.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("job field 'locks'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("names and 'all' mixed"), std::string::npos) << bad.error().message;
}

TEST(JobResources, UsualSlipsGetAHint) {
  EXPECT_EQ(parse_job_resources("CPU=1").error().message,
            "unknown resource 'CPU': resource names are lower case: did you mean 'cpu'?");
  EXPECT_EQ(parse_job_resources("mem=1Gi").error().message, "unknown resource 'mem': did you mean 'memory'?");
  EXPECT_EQ(parse_job_resources("cpu=1,memory=4GB").error().message,
            "resource 'memory': '4GB' is not a quantity: write 4G (10^9 bytes) or 4Gi (2^30 bytes)");
  EXPECT_EQ(parse_job_resources("disk=2mb").error().message,
            "resource 'disk': '2mb' is not a quantity: write 2M (10^6 bytes) or 2Mi (2^20 bytes)");
  ASSERT_TRUE(parse_job_resources("cpu=500m,memory=4Gi"));
  EXPECT_TRUE(parse_job_resources("fpga=1")) << "the cluster decides about names it declares";
}

TEST(ClientText, TablesKeepTheirColumns) {
  EXPECT_EQ(render_table({{"A", "LONG HEADER", "C"}, {"a-long-cell", "b", "c"}}),
            "A            LONG HEADER  C\n"
            "a-long-cell  b            c\n");
}

TEST(ClientText, DurationsAndTimesReadAtAGlance) {
  EXPECT_EQ(human_duration(850ms), "850ms");
  EXPECT_EQ(human_duration(12'500ms), "12.5s");
  EXPECT_EQ(human_duration(185s), "3m 05s");
  EXPECT_EQ(human_duration(2h + 7min), "2h 07m");
  EXPECT_EQ(human_duration(76h), "3d 04h");
  EXPECT_EQ(local_time(core::kNever), "-");
  auto t = parse_iso_utc("2025-01-02T03:04:05.250Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*t).count(), 1735787045250);
  EXPECT_FALSE(parse_iso_utc("yesterday"));
  core::TimePoint now{std::chrono::hours(1000)};
  EXPECT_EQ(*parse_since("2h", now), now - 2h);
  EXPECT_TRUE(parse_since("2025-01-02", now));
  EXPECT_TRUE(parse_since("2025-01-02 12:00", now));
  EXPECT_FALSE(parse_since("soon", now));
}

TEST(ClientText, TasksAndFailuresInWords) {
  core::JobView v;
  v.spec.count = 3;
  v.by_state[static_cast<size_t>(core::TaskState::succeeded)] = 1;
  v.by_state[static_cast<size_t>(core::TaskState::failed)] = 2;
  for (core::TaskIndex i = 0; i < 3; ++i) {
    core::TaskView t;
    t.index = i;
    t.node = core::NodeId{7};
    t.node_name = "local-2";
    t.state = i == 0 ? core::TaskState::succeeded : core::TaskState::failed;
    t.end = i == 0 ? core::TaskEnd::exited(0) : core::TaskEnd::exited(3);
    v.tasks.push_back(t);
  }
  EXPECT_EQ(task_counts(v), "1 succeeded, 2 failed");
  EXPECT_EQ(task_line(v.tasks[1]), "task 1: failed on local-2: exited with code 3");
  EXPECT_EQ(failure_lines(v, 5), (std::vector<std::string>{"2 failed: exited with code 3 (tasks 1 on local-2, 2 on local-2)"}));
  core::TaskView preempted;
  preempted.index = 4;
  preempted.state = core::TaskState::pending;
  preempted.end = core::TaskEnd::decided(core::EndReason::preempted);
  preempted.preempted_by = core::JobId{12};
  EXPECT_EQ(task_line(preempted), "task 4: pending (last run: preempted (for job 12))");
}

}  // namespace
}  // namespace claimsched::apps
