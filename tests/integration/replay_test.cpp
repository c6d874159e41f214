// `claimsched replay` end to end: a small SWF trace (with a malformed line)
// through the binary, its --json keys, the recorded schedule beside the
// replayed one, --strict, a CSV per job, and two configurations compared.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;

class ReplayCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("claimsched-replay-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Four processors; job 3 has a malformed run time. Recorded waits: 0, 90, -, 5.
    write("trace.swf",
          "; MaxNodes: 4\n; MaxProcs: 4\n"
          "1 0 0 100 2 -1 -1 2 200 -1 1 7 1 -1 1 -1 -1 -1\n"
          "2 10 90 50 4 -1 -1 4 100 -1 1 8 1 -1 1 -1 -1 -1\n"
          "3 20 0 x 1 -1 -1 1 100 -1 1 8 1 -1 1 -1 -1 -1\n"
          "4 30 5 10 1 -1 -1 1 20 -1 1 9 1 -1 1 -1 -1 -1\n");
    write("fifo.toml", "");
    write("easy.toml", "[[classes]]\nname = \"batch\"\npool = \"default\"\nbackfill = \"easy\"\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  ProcessResult replay(const std::string& flags) {
    return run_command(std::string(CLAIMSCHED_BINARY) + " replay " + path("trace.swf") + " --quiet " + flags +
                       " 2>&1");
  }

  fs::path dir_;
};

TEST_F(ReplayCommandTest, JsonHasTheReportsKeysAndTheRecordedScheduleBesideIt) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " replay " + path("trace.swf") + " --quiet --json --config " +
                       path("fifo.toml") + " --csv " + path("jobs.csv") + " --plot " + path("plots") + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const char* key : {"jobs", "skipped", "jobs_per_wall_sec", "makespan_s", "utilisation", "wait_mean_s",
                          "wait_p95_s", "bounded_slowdown_mean", "jain_users", "preemptions", "recorded"})
    EXPECT_TRUE(j.contains(key)) << "missing " << key << " in " << j.dump();
  EXPECT_EQ(j["jobs"], 3);
  EXPECT_EQ(j["skipped"]["number"], 1) << j["skipped"].dump();
  // Replayed: job 2 (4 wide) waits for job 1 to end at 100: 90 s; job 4 (1
  // wide) fits beside job 1 at once.
  EXPECT_DOUBLE_EQ(j["wait_mean_s"].get<double>(), (0 + 90 + 0) / 3.0);
  // Recorded: waits 0, 90, 5.
  EXPECT_DOUBLE_EQ(j["recorded"]["wait_mean_s"].get<double>(), (0 + 90 + 5) / 3.0);
  std::ifstream csv(path("jobs.csv"));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("number,user,class,pool,tasks", 0), 0u) << header;
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 3);
  // --plot drew the PNGs (gnuplot is in the bootstrap) and left stdout to the JSON.
  for (const char* png : {"wait_cdf.png", "utilisation.png", "user_share-fifo.png", "user_share-recorded.png"})
    EXPECT_TRUE(fs::exists(dir_ / "plots" / png)) << png;
}

TEST_F(ReplayCommandTest, StrictStopsAtTheMalformedLineNamingIt) {
  auto r = replay("--strict");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("line 5"), std::string::npos) << r.out;
}

TEST_F(ReplayCommandTest, TwoConfigurationsPrintOneTableWithTheRecordedColumn) {
  auto r = replay("--config " + path("fifo.toml") + " --config " + path("easy.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("fifo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("easy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recorded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wait p95"), std::string::npos) << r.out;
}

TEST_F(ReplayCommandTest, AMissingTraceOrABrokenConfigIsAClearError) {
  auto missing = run_command(std::string(CLAIMSCHED_BINARY) + " replay " + path("nope.swf") + " 2>&1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("nope.swf"), std::string::npos) << missing.out;
  write("broken.toml", "[[classes]]\nname = \"batch\"\npool = \"default\"\nbackfill = \"sometimes\"\n");
  auto broken = replay("--config " + path("broken.toml"));
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.out.find("backfill"), std::string::npos) << broken.out;
}

}  // namespace
}  // namespace claimsched::testing
