// Campaigns over real processes (issue 16): a server and an agent on
// 127.0.0.1, driven through `claimsched campaign` as a user would. Each task
// appends its index and parameter to a file once it has done its work, so
// the file shows which indices ran to success, and how often.

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/integration/cluster.hpp"
#include "tests/integration/task_logs.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

/// Polls campaign `id` of `c` until it is done or `timeout` passes; its last
/// status (check `state` for which).
nlohmann::json wait_until_done(const LocalCluster& c, const std::string& id, std::chrono::seconds timeout) {
  nlohmann::json last;
  LocalCluster::wait_until(
      [&] {
        last = nlohmann::json::parse(c.client("campaign status --json " + id).out, nullptr, false);
        return last.is_object() && last.value("state", "") == "done";
      },
      timeout);
  return last;
}

class CampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.start_server();
    cluster.start_agent("a1", "cpu=4,memory=4Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(cluster.server_log());
  }

  /// A campaign of `tasks` tasks (parameters 1..tasks) that each run
  /// `seconds`, then append "INDEX PARAM CAMPAIGN" to `log`.
  std::string campaign_file(const std::string& log, int tasks, double seconds) {
    std::string path = cluster.dir() + "/campaign.toml";
    std::ofstream(path) << "name = \"sweep\"\n"
                        << "command = [\"/bin/sh\", \"-c\", \"sleep " << seconds
                        << "; echo $CLAIMSCHED_TASK_INDEX $CLAIMSCHED_PARAM $CLAIMSCHED_CAMPAIGN_ID >> " << log
                        << "\"]\n"
                        << "range = \"1.." << tasks << "\"\n"
                        << "resources = \"cpu=1,memory=100Mi\"\n"
                        << "pools = [\"default\"]\n"
                        // Nothing withdrawn, no replicas: each index runs once
                        // unless something is lost.
                        << "max_waiting = 100\nallowed_waiting = 100\nfinalize_replicas = 0\n";
    return path;
  }

  std::optional<nlohmann::json> campaign_status(uint64_t id) const {
    auto r = cluster.client("campaign status --json " + std::to_string(id));
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_object()) return std::nullopt;
    return j;
  }

  bool wait_for_state(uint64_t id, const std::string& state, std::chrono::seconds timeout) const {
    return LocalCluster::wait_until(
        [&] {
          auto s = campaign_status(id);
          return s && s->value("state", "") == state;
        },
        timeout);
  }

  /// Lines of `log` per index, each checked to carry its own parameter
  /// (index + 1) and campaign; what is wrong, or empty.
  static std::string check_each_index_once(const std::string& log, int tasks, uint64_t campaign) {
    std::map<int, int> seen;
    std::string problems;
    std::istringstream in(LocalCluster::read_file(log));
    for (int index, param; in >> index >> param;) {
      uint64_t id = 0;
      in >> id;
      ++seen[index];
      if (param != index + 1 || id != campaign)
        problems += "index " + std::to_string(index) + " ran with parameter " + std::to_string(param) +
                    " of campaign " + std::to_string(id) + "; ";
    }
    for (int i = 0; i < tasks; ++i)
      if (seen[i] != 1) problems += "index " + std::to_string(i) + " ran " + std::to_string(seen[i]) + " times; ";
    return problems;
  }

  LocalCluster cluster;
};

TEST_F(CampaignTest, EveryIndexRunsOnceWithItsParameterAndTheStatusSaysDone) {
  std::string log = cluster.dir() + "/ran.log";
  auto submitted = cluster.client("campaign submit " + campaign_file(log, 12, 0.1));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t id = std::stoull(submitted.out);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for_state(id, "done", 60s)) << campaign_status(id).value_or(nlohmann::json{}).dump(2);
  // The campaign hears of its jobs' starts and ends from the scheduler: were
  // it left to its fallback status requests (one per job every 30 s), 12
  // tasks of 0.1 s on 4 slots would take over 30 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 25s);
  EXPECT_EQ(check_each_index_once(log, 12, id), "");
  auto s = *campaign_status(id);
  EXPECT_EQ(s.value("done", 0), 12) << s.dump(2);
  auto explained = cluster.client("campaign explain " + std::to_string(id));
  EXPECT_EQ(explained.exit_code, 0) << explained.out;
  EXPECT_NE(explained.out.find("job ratio"), std::string::npos) << explained.out;
}

TEST_F(CampaignTest, AMalformedCampaignIsRefusedNamingTheFieldAndNothingRuns) {
  std::string path = cluster.dir() + "/bad.toml";
  std::ofstream(path) << "name = \"x\"\ncommand = [\"/bin/true\"]\npools = [\"default\"]\n";
  auto none = cluster.client("campaign submit " + path);
  EXPECT_EQ(none.exit_code, 2) << "checked before anything is sent: " << none.out;
  EXPECT_NE(none.out.find("'parameters'"), std::string::npos) << none.out;

  std::ofstream(path) << "name = \"x\"\ncommand = [\"/bin/true\"]\nrange = \"1..3\"\npools = [\"nowhere\"]\n";
  auto unknown = cluster.client("campaign submit " + path);
  EXPECT_EQ(unknown.exit_code, 1) << "refused by the server, which knows the pools: " << unknown.out;
  EXPECT_NE(unknown.out.find("'pools'"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("nowhere"), std::string::npos) << unknown.out;

  auto list = cluster.client("campaign list");
  EXPECT_EQ(list.exit_code, 0) << list.out;
  EXPECT_NE(list.out.find("no campaigns"), std::string::npos) << list.out;
}

TEST_F(CampaignTest, CancelStopsWhatTheCampaignDispatchedAndNothingElse) {
  uint64_t other = cluster.submit("", "/bin/sleep 30");
  ASSERT_NE(other, 0u);
  auto submitted = cluster.client("campaign submit " + campaign_file(cluster.dir() + "/ran.log", 20, 30));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t id = std::stoull(submitted.out);
  auto running = [&] { return campaign_status(id).value_or(nlohmann::json{}).value("running", 0); };
  ASSERT_TRUE(LocalCluster::wait_until([&] { return running() > 0; }, 30s));
  auto cancelled = cluster.client("campaign cancel " + std::to_string(id));
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.out;
  EXPECT_TRUE(wait_for_state(id, "cancelled", 5s));
  // Every job the campaign sent ends cancelled; the user's own job runs on.
  EXPECT_TRUE(LocalCluster::wait_until(
      [&] {
        auto r = cluster.client("queue --json");
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        if (!j.is_array()) return false;
        return j.size() == 1 && j[0].value("job", uint64_t{0}) == other;
      },
      20s))
      << cluster.client("queue").out;
  EXPECT_EQ(cluster.status(other)->value("state", ""), "running");
}

TEST_F(CampaignTest, AServerKilledHalfwayFinishesTheCampaignAfterItsRestartWithEveryIndexOnce) {
  constexpr int kTasks = 40;
  std::string log = cluster.dir() + "/ran.log";
  auto submitted = cluster.client("campaign submit " + campaign_file(log, kTasks, 0.5));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t id = std::stoull(submitted.out);
  auto lines = [&] {
    std::istringstream in(LocalCluster::read_file(log));
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  ASSERT_TRUE(LocalCluster::wait_until([&] { return lines() >= kTasks / 2; }, 60s));
  ASSERT_LT(lines(), kTasks) << "killed halfway, not at the end";

  cluster.kill_server();
  cluster.start_server();

  ASSERT_TRUE(wait_for_state(id, "done", 120s)) << campaign_status(id).value_or(nlohmann::json{}).dump(2);
  // Late runs would show as extra lines: give them a moment.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(check_each_index_once(log, kTasks, id), "");
  EXPECT_EQ(campaign_status(id)->value("done", 0), kTasks);
}

TEST(CampaignAcrossPartitions, ACampaignOverPoolsOfTwoPartitionsRunsInBothAndEveryIndexOnce) {
  LocalCluster cluster(
      "[[pools]]\nname = \"p1\"\n[[pools]]\nname = \"p2\"\n"
      "[[partitions]]\nid = 1\npools = [\"p1\"]\n[[partitions]]\nid = 2\npools = [\"p2\"]\n");
  cluster.start_server();
  cluster.start_agent("a1", "cpu=2,memory=4Gi", {"--pool", "p1"});
  cluster.start_agent("a2", "cpu=2,memory=4Gi", {"--pool", "p2"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  std::string log = cluster.dir() + "/ran.log";
  std::string path = cluster.dir() + "/campaign.toml";
  std::ofstream(path) << "name = \"split\"\n"
                      << "command = [\"/bin/sh\", \"-c\", \"sleep 0.5; echo $CLAIMSCHED_TASK_INDEX >> " << log
                      << "\"]\nrange = \"1..16\"\nresources = \"cpu=1,memory=100Mi\"\npools = [\"p1\", \"p2\"]\n"
                      << "max_waiting = 100\nallowed_waiting = 100\nfinalize_replicas = 0\n";
  auto submitted = cluster.client("campaign submit " + path);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = std::to_string(std::stoull(submitted.out));
  nlohmann::json last = wait_until_done(cluster, id, 60s);
  ASSERT_EQ(last.value("state", ""), "done") << last.dump(2);
  EXPECT_EQ(check_completed_once(log, 16), "");
  for (const auto& pool : last["pools"])
    EXPECT_GT(pool.value("succeeded", 0), 0) << "both partitions' pools ran tasks: " << last.dump(2);
}

TEST(CampaignSinks, APoolWhoseTasksSucceedWithoutTheDeclaredOutputIsAbandonedAndItsIndicesRunElsewhere) {
  LocalCluster cluster("[[pools]]\nname = \"p1\"\n[[pools]]\nname = \"p2\"\n");
  cluster.start_server();
  cluster.start_agent("a1", "cpu=4,memory=4Gi", {"--pool", "p1"});
  cluster.start_agent("a2", "cpu=4,memory=4Gi", {"--pool", "p2"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  std::string out = cluster.dir() + "/out";
  std::filesystem::create_directories(out);
  // Every task runs as long as the others (the run-time rule cannot fire)
  // and exits 0; on a2 it writes nothing.
  std::string path = cluster.dir() + "/campaign.toml";
  constexpr int kTasks = 12;
  std::ofstream(path) << "name = \"outputs\"\n"
                      << "command = [\"/bin/sh\", \"-c\", \"sleep 1.2; test $CLAIMSCHED_NODE = a2 || "
                      << "echo $CLAIMSCHED_TASK_INDEX > " << out << "/$CLAIMSCHED_TASK_INDEX.txt\"]\n"
                      << "output = \"" << out << "/{index}.txt\"\n"
                      << "range = \"1.." << kTasks << "\"\nresources = \"cpu=1,memory=100Mi\"\n"
                      << "pools = [\"p1\", \"p2\"]\nmax_waiting = 100\nallowed_waiting = 100\nfinalize_replicas = 0\n";
  auto submitted = cluster.client("campaign submit " + path);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = std::to_string(std::stoull(submitted.out));
  nlohmann::json last = wait_until_done(cluster, id, 90s);
  ASSERT_EQ(last.value("state", ""), "done") << last.dump(2);
  ASSERT_EQ(last["pools"].size(), 2u) << last.dump(2);
  EXPECT_FALSE(last["pools"][0].value("abandoned", true)) << last.dump(2);
  EXPECT_TRUE(last["pools"][1].value("abandoned", false)) << "p2 is a sink: " << last.dump(2);
  EXPECT_NE(last["pools"][1].value("sink_reason", "").find("without the declared output"), std::string::npos)
      << last.dump(2);
  EXPECT_EQ(last["pools"][1].value("succeeded", -1), 0) << "no success of the sink counts: " << last.dump(2);
  // Every index done means every index left its output (run again on p1).
  for (int i = 0; i < kTasks; ++i)
    EXPECT_FALSE(LocalCluster::read_file(out + "/" + std::to_string(i) + ".txt").empty()) << "index " << i;
  auto explained = cluster.client("campaign explain " + id);
  EXPECT_NE(explained.out.find("without the declared output"), std::string::npos) << explained.out;
}

TEST(CampaignSinks, AWrongDeclaredOutputFailsTheCampaignNamingTheTemplateInsteadOfAbandoningEveryPool) {
  LocalCluster cluster("[[pools]]\nname = \"p1\"\n[[pools]]\nname = \"p2\"\n");
  cluster.start_server();
  cluster.start_agent("a1", "cpu=2,memory=4Gi", {"--pool", "p1"});
  cluster.start_agent("a2", "cpu=2,memory=4Gi", {"--pool", "p2"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  std::string out = cluster.dir() + "/out";
  std::filesystem::create_directories(out);
  // Every task writes <index>.txt and exits 0, but the file declares .dat.
  std::string path = cluster.dir() + "/campaign.toml";
  std::string declared = out + "/{index}.dat";
  std::ofstream(path) << "name = \"typo\"\n"
                      << "command = [\"/bin/sh\", \"-c\", \"sleep 0.5; echo $CLAIMSCHED_TASK_INDEX > " << out
                      << "/$CLAIMSCHED_TASK_INDEX.txt\"]\n"
                      << "output = \"" << declared << "\"\n"
                      << "range = \"1..40\"\nresources = \"cpu=1,memory=100Mi\"\n"
                      << "pools = [\"p1\", \"p2\"]\nmax_waiting = 4\nfinalize_replicas = 0\n";
  auto submitted = cluster.client("campaign submit " + path);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = std::to_string(std::stoull(submitted.out));
  nlohmann::json last;
  LocalCluster::wait_until(
      [&] {
        last = nlohmann::json::parse(cluster.client("campaign status --json " + id).out, nullptr, false);
        return last.is_object() && last.value("state", "") != "running";
      },
      60s);
  ASSERT_EQ(last.value("state", ""), "failed") << last.dump(2);
  EXPECT_NE(last.value("failure", "").find("no task produced the declared output " + declared + " in any pool"),
            std::string::npos)
      << last.dump(2);
  for (const auto& pool : last["pools"])
    EXPECT_FALSE(pool.value("abandoned", true)) << "no pool is blamed for a wrong path: " << last.dump(2);
  EXPECT_LT(last.value("done", 0), 40) << "it stopped early, not after running everything: " << last.dump(2);
  auto status = cluster.client("campaign status " + id);
  EXPECT_NE(status.out.find("is the path right?"), std::string::npos) << status.out;
}

TEST(CampaignTestWave, TestFirstRunsTheBulkOnlyWhereTheTestPassedAndATestCampaignReportsEachPool) {
  LocalCluster cluster("[[pools]]\nname = \"p1\"\n[[pools]]\nname = \"p2\"\n");
  cluster.start_server();
  cluster.start_agent("a1", "cpu=2,memory=4Gi", {"--pool", "p1"});
  cluster.start_agent("a2", "cpu=2,memory=4Gi", {"--pool", "p2"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  std::string log = cluster.dir() + "/ran.log";
  // Broken on a2: its test exits 7.
  auto write = [&](const std::string& path, const std::string& name, const std::string& extra) {
    std::ofstream(path) << "name = \"" << name << "\"\n"
                        << "command = [\"/bin/sh\", \"-c\", \"test $CLAIMSCHED_NODE != a2 || exit 7; "
                        << "echo $CLAIMSCHED_TASK_INDEX $CLAIMSCHED_NODE >> " << log << "\"]\n"
                        << "range = \"1..8\"\nresources = \"cpu=1,memory=100Mi\"\npools = [\"p1\", \"p2\"]\n"
                        << "finalize_replicas = 0\n"
                        << extra;
  };
  auto wait_done = [&](const std::string& id) {
    nlohmann::json last = wait_until_done(cluster, id, 60s);
    EXPECT_EQ(last.value("state", ""), "done") << last.dump(2);
    return last;
  };
  auto expect_report = [](const nlohmann::json& s) {
    ASSERT_EQ(s["test"].size(), 2u) << s.dump(2);
    EXPECT_EQ(s["test"][0].value("pool", ""), "p1");
    EXPECT_TRUE(s["test"][0].value("passed", false)) << s.dump(2);
    EXPECT_EQ(s["test"][1].value("exit_code", 0), 7) << s.dump(2);
    EXPECT_FALSE(s["test"][1].value("passed", true)) << s.dump(2);
  };

  write(cluster.dir() + "/bulk.toml", "bulk", "");
  auto submitted = cluster.client("campaign submit --test-first " + cluster.dir() + "/bulk.toml");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  auto s = wait_done(std::to_string(std::stoull(submitted.out)));
  expect_report(s);
  EXPECT_EQ(s.value("done", 0), 8) << s.dump(2);
  ASSERT_EQ(s["pools"].size(), 1u) << "the bulk only where the test passed: " << s.dump(2);
  EXPECT_EQ(s["pools"][0].value("pool", ""), "p1");
  // The test ran index 0 once on p1, then the bulk ran every index there.
  std::map<int, int> runs;
  std::istringstream in(LocalCluster::read_file(log));
  for (std::string line; std::getline(in, line);) {
    EXPECT_NE(line.find(" a1"), std::string::npos) << line;
    ++runs[std::stoi(line)];
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(runs[i], i == 0 ? 2 : 1) << "index " << i;

  write(cluster.dir() + "/test.toml", "probe", "type = \"test\"\n");
  submitted = cluster.client("campaign submit " + cluster.dir() + "/test.toml");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = std::to_string(std::stoull(submitted.out));
  expect_report(wait_done(id));
  auto text = cluster.client("campaign status " + id);
  EXPECT_NE(text.out.find("test on pool p2: failed, exit code 7"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace claimsched::testing
