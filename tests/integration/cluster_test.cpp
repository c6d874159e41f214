// A server and agents as separate processes on 127.0.0.1, driven through the
// client as a user would: real commands and their exit codes, an agent killed
// while its tasks run, the server killed and restarted, garbage on the port.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "tests/integration/cluster.hpp"
#include "tests/integration/task_logs.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.start_server();
    cluster.start_agent("a1");
    cluster.start_agent("a2");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  }
  LocalCluster cluster;
};

TEST_F(ClusterTest, TasksRunRealCommandsAndReportTheirExitCodes) {
  uint64_t ok = cluster.submit("--count 6", "/bin/true");
  uint64_t bad = cluster.submit("--count 2", "/bin/sh -c 'exit 3'");
  uint64_t slow = cluster.submit("--max-run-time 1s", "/bin/sleep 60");
  uint64_t missing = cluster.submit("", "/nonexistent/command");
  std::string why;
  uint64_t echo = cluster.submit("--name greeting", "/bin/sh -c 'echo hello from $CLAIMSCHED_TASK_INDEX'", &why);
  ASSERT_TRUE(ok && bad && slow && missing && echo) << why;

  auto s = cluster.wait_for_job(ok);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(count_tasks_on(s, "succeeded"), 6);

  s = cluster.wait_for_job(bad);
  EXPECT_EQ(s.value("state", ""), "failed") << s.dump(2);
  for (const auto& t : s["tasks"]) EXPECT_EQ(t.value("exit_code", 0), 3) << s.dump(2);

  auto started = std::chrono::steady_clock::now();
  s = cluster.wait_for_job(slow);
  EXPECT_EQ(s.value("state", ""), "failed") << "killed at --max-run-time: " << s.dump(2);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s) << "not left to run its 60 s";

  s = cluster.wait_for_job(missing);
  EXPECT_EQ(s.value("state", ""), "failed") << "a command that cannot start fails its task: " << s.dump(2);

  s = cluster.wait_for_job(echo);
  ASSERT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  // The agent that ran it keeps its output under its state directory.
  std::string out;
  for (const char* agent : {"a1", "a2"}) {
    auto path = cluster.dir() + "/" + agent + "/tasks/" + std::to_string(echo) + "/0.out";
    if (std::filesystem::exists(path)) out = LocalCluster::read_file(path);
  }
  EXPECT_EQ(out, "hello from 0\n");
}

TEST_F(ClusterTest, AKilledAgentsTasksCompleteElsewhereExactlyOnce) {
  std::string done = cluster.dir() + "/done.log";
  // 8 tasks of one cpu fill both 4-cpu agents.
  uint64_t job = cluster.submit("--count 8 --max-lost-retries 3", task_that_logs(done, 3));
  ASSERT_NE(job, 0u);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return count_tasks_on(*cluster.status(job), "running") == 8; }, 20s))
      << cluster.status(job)->dump(2);

  cluster.kill_agent("a1");
  // Its node goes down after node_grace; its tasks run again on a2.
  auto s = cluster.wait_for_job(job, 60s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  int lost_once = 0;
  for (const auto& t : s["tasks"]) lost_once += t.value("losses", 0) == 1;
  EXPECT_EQ(lost_once, 4) << "a1's four tasks were lost once each: " << s.dump(2);
  EXPECT_EQ(check_completed_once(done, 8), "");

  // a1 comes back with its old state: what it ran is gone and stays gone, and
  // it takes work again.
  cluster.start_agent("a1");
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2));
  std::string again = cluster.dir() + "/again.log";
  uint64_t next = cluster.submit("--count 8", task_that_logs(again, 0.5));
  s = cluster.wait_for_job(next);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(check_completed_once(again, 8), "");
  EXPECT_EQ(check_completed_once(done, 8), "") << "nothing of the first job ran again";
}

TEST_F(ClusterTest, AnAgentThatComesBackAfterItsTasksWereRequeuedHasThemKilled) {
  // The tasks end only once the test opens the gate, so what is checked does
  // not depend on how fast a loaded machine notices the frozen agent.
  std::string done = cluster.dir() + "/done.log";
  std::string gate = cluster.dir() + "/gate";
  std::string pids = cluster.dir() + "/pids";
  uint64_t job = cluster.submit("--count 8", "/bin/sh -c 'echo $$ >> " + pids + "; while [ ! -e " + gate +
                                                 " ]; do sleep 0.1; done; echo $CLAIMSCHED_TASK_INDEX >> " + done +
                                                 "'");
  ASSERT_NE(job, 0u);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return count_tasks_on(*cluster.status(job), "running") == 8; }, 20s));
  // Running for the server means confirmed; on a loaded machine the agent
  // may still be launching. Frozen before its processes exist, a1 would
  // start none of them (it drops the stale starts when it wakes).
  auto started = [&] {
    std::istringstream in(LocalCluster::read_file(pids));
    int n = 0;
    for (pid_t pid; in >> pid;) ++n;
    return n;
  };
  ASSERT_TRUE(LocalCluster::wait_until([&] { return started() == 8; }, 20s)) << LocalCluster::read_file(pids);
  // a1 freezes (a network partition, as far as the server can tell) while its
  // task processes keep running; past node_grace its tasks are lost and wait
  // for a slot again (a2 is full).
  cluster.signal_agent("a1", SIGSTOP);
  auto losses = [&] {
    auto s = cluster.status(job);
    int lost = 0;
    for (const auto& t : (*s)["tasks"]) lost += t.value("losses", 0);
    return lost;
  };
  ASSERT_TRUE(LocalCluster::wait_until([&] { return losses() == 4; }, 30s)) << cluster.status(job)->dump(2);
  // Back with its old tasks still running: the server has them killed, and
  // only then are their slots free to run the requeued tasks again.
  cluster.signal_agent("a1", SIGCONT);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return count_tasks_on(*cluster.status(job), "running") == 8; }, 30s))
      << cluster.status(job)->dump(2);
  // The server counts the new runs as running once confirmed; a stalled agent
  // may still be killing the old processes. The gate opens once only the 8
  // runs that count are alive: at least 12 started, the ones given up on dead.
  auto alive = [&] {
    std::istringstream in(LocalCluster::read_file(pids));
    int started = 0, live = 0;
    for (pid_t pid; in >> pid; ++started) {
      // A zombie is dead too: its parent may not have reaped it yet.
      std::string stat = LocalCluster::read_file("/proc/" + std::to_string(pid) + "/stat");
      auto paren = stat.rfind(')');
      live += paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
    }
    return started >= 12 && live == 8;
  };
  ASSERT_TRUE(LocalCluster::wait_until(alive, 30s)) << LocalCluster::read_file(pids);
  { std::ofstream{gate}; }
  auto s = cluster.wait_for_job(job, 60s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(losses(), 4) << s.dump(2);
  EXPECT_EQ(check_completed_once(done, 8), "") << "a task the server gave up on never completes as well";
}

TEST_F(ClusterTest, AServerRestartLosesNoJobAndKeepsRunningTasks) {
  std::string running_log = cluster.dir() + "/running.log";
  std::string queued_log = cluster.dir() + "/queued.log";
  uint64_t running = cluster.submit("--count 6", task_that_logs(running_log, 4));
  ASSERT_NE(running, 0u);
  ASSERT_TRUE(
      LocalCluster::wait_until([&] { return count_tasks_on(*cluster.status(running), "running") == 6; }, 20s));
  // Two slots left: this job has tasks running and tasks waiting.
  uint64_t queued = cluster.submit("--count 6", task_that_logs(queued_log, 0.2));
  ASSERT_NE(queued, 0u);

  cluster.kill_server();
  cluster.start_server();

  auto s = cluster.wait_for_job(running, 60s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  for (const auto& t : s["tasks"]) EXPECT_EQ(t.value("losses", -1), 0) << "re-adopted, not lost: " << s.dump(2);
  s = cluster.wait_for_job(queued, 60s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(check_completed_once(running_log, 6), "");
  EXPECT_EQ(check_completed_once(queued_log, 6), "");
}

/// Connects to the server's port, writes `bytes`, and closes.
void send_raw(const std::string& address, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  std::this_thread::sleep_for(100ms);
  ::close(fd);
}

TEST_F(ClusterTest, GarbageOnTheServerPortIsDroppedAndServiceContinues) {
  std::mt19937 rng(7);
  std::string noise(64 * 1024, '\0');
  for (auto& c : noise) c = static_cast<char>(rng());
  send_raw(cluster.address(), noise);
  // Not sent: a well-formed BASP header announcing a 4 GiB payload. CAF 0.17
  // allocates it before reading, stalling the server for seconds (a known
  // limitation, see deploy/CONFIG.md "Network exposure").
  send_raw(cluster.address(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");

  EXPECT_TRUE(cluster.server().running()) << LocalCluster::read_file(cluster.server_log());
  uint64_t job = cluster.submit("--count 2", "/bin/true");
  ASSERT_NE(job, 0u);
  EXPECT_EQ(cluster.wait_for_job(job).value("state", ""), "succeeded");
  EXPECT_EQ(cluster.alive_nodes(), 2);
}

TEST_F(ClusterTest, AnInvalidJobIsRefusedWithItsFieldNamed) {
  auto r = cluster.client_before_command("submit --count 1 --resources cpu=0", "/bin/true");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("resources"), std::string::npos) << r.out;
  r = cluster.client_before_command("submit --pool nowhere", "/bin/true");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nowhere"), std::string::npos) << r.out;
  r = cluster.client("status 999999");
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

TEST_F(ClusterTest, StatusWithoutAJobShowsTheSingleServerOwningEveryPartition) {
  auto r = cluster.client("status --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto view = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(view.is_object()) << r.out;
  EXPECT_EQ(view.value("mode", ""), "static");
  ASSERT_EQ(view["partitions"].size(), 1u);
  EXPECT_EQ(view["partitions"][0].value("owner", ""), "server");
  EXPECT_GE(view["partitions"][0].value("epoch", 0), 1) << "the epoch recovery gave this run";
  r = cluster.client("status");
  EXPECT_NE(r.out.find("single server"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
