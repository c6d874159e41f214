// --log-format json: every line a server logs is one JSON object a log
// shipper can parse, with the time, level and message (quotes and all).

#include <set>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

TEST(LogFormat, JsonMakesEveryLogLineAParseableObject) {
  LocalCluster cluster;
  std::string log = cluster.dir() + "/json.log";
  {
    BackgroundProcess server({CLAIMSCHED_BINARY, "--log-level", "debug", "--log-format", "json", "server", "--config",
                              cluster.dir() + "/cluster.toml"},
                             log);
    ASSERT_TRUE(server.started());
    ASSERT_TRUE(LocalCluster::wait_until(
        [&] { return LocalCluster::read_file(log).find("listening on") != std::string::npos; },
        std::chrono::seconds(10)))
        << LocalCluster::read_file(log);
    server.kill(SIGTERM);
    server.wait();
  }
  std::istringstream lines(LocalCluster::read_file(log));
  int objects = 0;
  bool recovered = false, stopping = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("claimsched server")) continue;  // stdout: the address, for scripts
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not JSON: " << line;
    ++objects;
    EXPECT_TRUE(j["time"].is_string() && j["time"].get<std::string>().ends_with("Z")) << line;
    static const std::set<std::string> kLevels{"trace", "debug", "info", "warning", "error", "critical"};
    EXPECT_TRUE(kLevels.contains(j.value("level", ""))) << line;
    std::string message = j.value("message", "");
    recovered |= message.starts_with("partition 1: recovered");
    stopping |= message == "claimsched server: stopping";
  }
  EXPECT_GE(objects, 2);
  EXPECT_TRUE(recovered && stopping) << LocalCluster::read_file(log);
}

// What an operator greps for when a job fails: its partition, the job, its
// user and pool, the task and the node it failed on, and how.
TEST(LogFormat, AFailedJobIsLoggedWithItsPartitionTaskAndNode) {
  LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  cluster.start_agent("n7", "cpu=2,memory=1Gi");
  ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
  std::string why;
  uint64_t job = cluster.submit("", "/bin/sh -c 'exit 3'", &why);
  ASSERT_NE(job, 0u) << why;
  EXPECT_EQ(cluster.wait_for_job(job).value("state", ""), "failed");
  // The user and class are the cluster's defaults: the line names them between these two parts.
  std::string head = "scheduler-1: job " + std::to_string(job) + " (user ";
  std::string tail = ", pool default, class ";
  std::string end = ", 1 task) failed: task 0 on node n7 exited with code 3 (1 of 1 tasks did not succeed)";
  auto logged = [&] {
    std::string log = LocalCluster::read_file(cluster.server_log());
    auto at = log.find(head);
    if (at == std::string::npos) return false;
    std::string line = log.substr(at, log.find('\n', at) - at);
    return line.find(tail) != std::string::npos && line.ends_with(end);
  };
  EXPECT_TRUE(LocalCluster::wait_until(logged, std::chrono::seconds(5)))
      << "expected: " << head << "..." << tail << "..." << end << "\n" << LocalCluster::read_file(cluster.server_log());
}

TEST(LogFormat, AnUnknownFormatIsAUsageError) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " --log-format xml nodes 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--log-format: xml not in {text,json}"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
