// deploy/local-cluster.sh as an operator uses it: stop and start with work
// running across them, a server that died alone, a cluster config of one's
// own, an agent that cannot start, and --tls.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

template <class Predicate>
bool eventually(Predicate&& done, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return done();
}

class LocalClusterScript : public ::testing::Test {
 protected:
  LocalClusterScript() {
    char tmpl[] = "/tmp/claimsched-local-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~LocalClusterScript() override {
    script("stop");
    if (!HasFailure()) fs::remove_all(dir_);
  }
  /// Runs the script with this test's directory and binary.
  ProcessResult script(const std::string& args) {
    return run_command("CLAIMSCHED_LOCAL_DIR=" + dir_ + " CLAIMSCHED_BIN=" + CLAIMSCHED_BINARY + " " +
                       CLAIMSCHED_SOURCE_DIR + "/deploy/local-cluster.sh " + args + " 2>&1");
  }
  /// `command` is a subcommand and its arguments (a task's command after --).
  ProcessResult client(const std::string& command) {
    auto space = command.find(' ');
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + command.substr(0, space) + " --server " + address() +
                       (space == std::string::npos ? "" : command.substr(space)) + " 2>&1");
  }
  std::string address() {
    std::string a = read(dir_ + "/address");
    return a.substr(0, a.find('\n'));
  }
  pid_t pid(const std::string& name) {
    std::string text = read(dir_ + "/" + name + ".pid");
    return text.empty() ? 0 : std::stoi(text);
  }
  json status(uint64_t job) { return json::parse(client("status --json " + std::to_string(job)).out, nullptr, false); }
  std::string dir_;
};

TEST_F(LocalClusterScript, StopLeavesRunningTasksToTheNextStartWhichCompletesThemOnce) {
  auto r = script("start --agents 2 --slots 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string done = dir_ + "/done.log";
  auto submitted = client("submit --json --count 3 -- /bin/sh -c 'sleep 3; echo $CLAIMSCHED_TASK_INDEX >> " + done + "'");
  auto j = json::parse(submitted.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << submitted.out;
  uint64_t job = j["job"];
  ASSERT_TRUE(eventually([&] { return status(job)["tasks_by_state"].value("running", 0) == 3; }, 20s));
  r = script("stop");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(read(done).empty()) << "stopped before the tasks ended";
  std::this_thread::sleep_for(1s);  // they keep running while nothing of the cluster does
  r = script("start --agents 2 --slots 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(eventually([&] { return status(job).value("state", "") == "succeeded"; }, 30s)) << status(job).dump(2);
  auto s = status(job);
  for (const auto& t : s["tasks"]) {
    EXPECT_EQ(t["losses"], 0) << "no retry used: " << s.dump(2);
    EXPECT_EQ(t["end"]["reason"], "exited") << s.dump(2);
  }
  std::multiset<std::string> lines;
  std::istringstream in(read(done));
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines, (std::multiset<std::string>{"0", "1", "2"})) << "each task completed once";
}

// Bug 3 of issue 13: after the server alone was stopped, start started
// second agents that died on the first ones' state lock, overwrote their PID
// files, said "up", and stop then left the first agents running.
TEST_F(LocalClusterScript, AStartAfterTheServerAloneStoppedKeepsTheAgentsAndStopEndsThemAll) {
  ASSERT_EQ(script("start --agents 2 --slots 1").exit_code, 0);
  pid_t agent1 = pid("agent-1"), agent2 = pid("agent-2"), server = pid("server");
  ::kill(server, SIGTERM);
  ASSERT_TRUE(eventually([&] { return !alive(server); }, 20s));
  auto r = script("start --agents 2 --slots 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("agent-1 is still running"), std::string::npos) << r.out;
  EXPECT_EQ(pid("agent-1"), agent1);
  EXPECT_EQ(pid("agent-2"), agent2);
  EXPECT_TRUE(alive(agent1) && alive(agent2));
  pid_t new_server = pid("server");
  ASSERT_EQ(script("stop").exit_code, 0);
  EXPECT_TRUE(eventually([&] { return !alive(agent1) && !alive(agent2) && !alive(new_server); }, 15s))
      << "stop leaves nothing running";
}

// Bug 6 of issue 13: with --config the agents ignored [agent] pool, and a
// start that failed said only "0 of 1 node(s) came up", the cause hidden in
// the agent's log.
TEST_F(LocalClusterScript, AConfigsAgentSectionAppliesAndAnAgentThatCannotStartSaysWhy) {
  std::string config = dir_ + "/my-cluster.toml";
  std::ofstream(config) << "cluster_id = \"mine\"\n[[pools]]\nname = \"root\"\n[[pools]]\nname = \"cpu\"\nparent = "
                           "\"root\"\n[[pools]]\nname = \"gpu\"\nparent = \"root\"\n[agent]\npool = \"gpu\"\n"
                           "labels = [\"ssd\"]\n";
  auto r = script("start --agents 1 --config " + config);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto nodes = json::parse(client("nodes --json").out, nullptr, false);
  ASSERT_TRUE(nodes.is_array() && nodes.size() == 1) << nodes.dump();
  EXPECT_EQ(nodes[0]["pool"], "gpu");
  EXPECT_EQ(nodes[0]["labels"], json::array({"ssd"}));
  EXPECT_TRUE(fs::exists(dir_ + "/server")) << "the server's data stays under the cluster's directory";
  ASSERT_EQ(script("stop").exit_code, 0);

  // agent-2's state directory cannot be created: start says so at once.
  std::ofstream(dir_ + "/agent-2") << "in the way";
  auto started = std::chrono::steady_clock::now();
  r = script("start --agents 2 --config " + config);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("agent-2 exited"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot create the state directory"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s) << "not the 10 s wait for nodes";
  fs::remove(dir_ + "/agent-2");
}

TEST_F(LocalClusterScript, StartWithTlsRunsEveryLinkOverTlsAndPrintsTheClientsCertificates) {
  auto r = script("start --tls --agents 1 --slots 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_NE(r.out.find("export CLAIMSCHED_TLS_CA=" + dir_ + "/tls/ca.pem"), std::string::npos) << r.out;
  // Without the certificates the client is refused; with the printed ones it
  // runs a job; status finds them by itself.
  EXPECT_EQ(client("nodes").exit_code, 3);
  const std::string env = "CLAIMSCHED_TLS_CA=" + dir_ + "/tls/ca.pem CLAIMSCHED_TLS_CERT=" + dir_ +
                          "/tls/client.pem CLAIMSCHED_TLS_KEY=" + dir_ + "/tls/client.key ";
  auto submitted = run_command(env + CLAIMSCHED_BINARY + " submit --json --wait --server " + address() +
                               " -- /bin/echo tls 2>&1");
  EXPECT_EQ(submitted.exit_code, 0) << submitted.out;
  EXPECT_NE(read(dir_ + "/agent-1.log").find("registered with"), std::string::npos);
  EXPECT_NE(script("status").out.find("local-1"), std::string::npos);
}

}  // namespace
}  // namespace claimsched::testing
