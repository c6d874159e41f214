// `claimsched config check FILE [--json]`: its arguments, exit codes and output.

#include "apps/config_command.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace claimsched::apps {
namespace {

std::string example_path() { return std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/cluster.toml"; }

struct Run {
  int rc = 0;
  std::string out;
  std::string err;
};

Run run(const ConfigCheckOptions& o) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Run r;
  r.rc = run_config_check(o);
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

/// The summary is wrapped at 80 columns: compare it as one line.
std::string unwrapped(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// A file in the temp directory, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_((std::filesystem::temp_directory_path() /
               ("claimsched-config-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml"))
                  .string()) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigCheckCommand, ParsesItsArguments) {
  CLI::App app;
  ConfigCheckOptions o;
  add_config_commands(app, o);
  std::vector<const char*> argv{"claimsched", "config", "check", "c.toml", "--json"};
  ASSERT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data()));
  EXPECT_EQ(o.file, "c.toml");
  EXPECT_TRUE(o.json);
  CLI::App app2;
  ConfigCheckOptions o2;
  add_config_commands(app2, o2);
  std::vector<const char*> missing{"claimsched", "config", "check"};
  EXPECT_THROW(app2.parse(static_cast<int>(missing.size()), missing.data()), CLI::ParseError);
}

TEST(ConfigCheckCommand, TheExampleIsValidAndSummarized) {
  auto r = run({example_path(), false});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::string text = unwrapped(r.out);
  EXPECT_NE(text.find("is valid. Cluster 'example'"), std::string::npos) << r.out;
  EXPECT_NE(text.find("2 partitions: partition 1 owns cpu; partition 2 owns gpu."), std::string::npos)
      << r.out;
  EXPECT_NE(text.find("prod (priority 10, weight 3, fair_share in pool root, spread)"), std::string::npos)
      << r.out;
  EXPECT_NE(text.find("Fair share and preemption run every 1s"), std::string::npos) << r.out;
  for (size_t start = 0, end; start < r.out.size(); start = end + 1) {
    end = r.out.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end - start, 80u);
  }
}

TEST(ConfigCheckCommand, ProblemsGoToStderrOnePerLine) {
  TempFile f("[storage]\nsync = \"sometimes\"\n[timeouts]\nheartbeat_intreval = \"1s\"\n");
  auto r = run({f.path(), false});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, f.path() + ":2: storage.sync: must be one of always, batch, none, got 'sometimes'\n" +
                       f.path() +
                       ":4: timeouts.heartbeat_intreval: unknown key; did you mean 'heartbeat_interval'?\n");
}

TEST(ConfigCheckCommand, UnreadableIsExitTwo) {
  EXPECT_EQ(run({"/nonexistent/cluster.toml", false}).rc, 2);
  auto r = run({std::filesystem::temp_directory_path().string(), false});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos);
}

TEST(ConfigCheckCommand, JsonHasTheEffectiveConfigOrTheProblems) {
  auto r = run({example_path(), true});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["config"]["partitions"].size(), 2u);
  EXPECT_EQ(j["config"]["classes"][0]["scorer"], "spread");
  EXPECT_EQ(j["config"]["classes"][0]["backfill"], "none");
  EXPECT_EQ(j["config"]["timeouts"]["link_heartbeat"], "250ms");
  EXPECT_EQ(j["config"]["policy"]["enabled"], true);

  TempFile f("[listen]\nport = -1\n");
  r = run({f.path(), true});
  EXPECT_EQ(r.rc, 1);
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["valid"].get<bool>());
  ASSERT_EQ(j["problems"].size(), 1u);
  EXPECT_EQ(j["problems"][0]["line"], 2);
  EXPECT_EQ(j["problems"][0]["field"], "listen.port");
  EXPECT_FALSE(j.contains("config"));
}

TEST(ConfigCheckCommand, AnEmptyFileIsValid) {
  TempFile f("");
  auto r = run({f.path(), false});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(unwrapped(r.out).find("1 partition: partition 1 owns default."), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::apps
