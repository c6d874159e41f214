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

TEST(LogFormat, AnUnknownFormatIsAUsageError) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " --log-format xml nodes 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--log-format: xml not in {text,json}"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
