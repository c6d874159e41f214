// The client as a user meets it on a cluster of real processes: task output
// from whichever agent ran it, why every task ended, job files merged with
// flags, --wait, history and filters, node names, exit codes.

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>
#include <functional>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void expect_exit(const ProcessResult& r, int code, const std::string& says) {
  EXPECT_EQ(r.exit_code, code) << r.out;
  EXPECT_TRUE(contains(r.out, says)) << r.out;
}

class ClientTest : public ::testing::Test {
 protected:
  explicit ClientTest(const std::string& extra_config = "") : cluster(extra_config) {}
  void SetUp() override {
    cluster.start_server();
    cluster.start_agent("a1");
    cluster.start_agent("a2");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(2)) << LocalCluster::read_file(cluster.server_log());
  }
  /// Submits and waits for the job's end; returns its last status.
  json run_job(const std::string& options, const std::string& command) {
    std::string why;
    uint64_t id = cluster.submit(options, command, &why);
    EXPECT_NE(id, 0u) << why;
    return id == 0 ? json::object() : cluster.wait_for_job(id);
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = cluster.dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  LocalCluster cluster;
};

TEST_F(ClientTest, LogsOfAFinishedAndOfARunningTaskFromWhicheverAgentRanThem) {
  // Whole-node tasks: one on each agent.
  std::string why;
  uint64_t job = cluster.submit("--count 2 --resources cpu=4,memory=1Gi",
                                "/bin/sh -c 'echo out $CLAIMSCHED_TASK_INDEX; echo err $CLAIMSCHED_TASK_INDEX >&2; "
                                "seq 1 5; if [ $CLAIMSCHED_TASK_INDEX = 1 ]; then sleep 2; echo late; fi'",
                                &why);
  ASSERT_NE(job, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] { return cluster.status(job)->at("tasks")[0].value("state", "") == "succeeded"; }, 20s));
  auto s = *cluster.status(job);
  ASSERT_NE(s["tasks"][0]["node_name"], s["tasks"][1]["node_name"]) << s.dump(2);
  std::string id = std::to_string(job);
  auto r = cluster.client("logs " + id);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "out 0\n1\n2\n3\n4\n5\n");
  r = cluster.client("logs " + id + ".0 --stderr");
  EXPECT_EQ(r.out, "err 0\n");
  r = cluster.client("logs " + id + ".0 --tail 2");
  EXPECT_EQ(r.out, "4\n5\n");
  // Task 1 still runs on the other agent: --follow prints what comes, until it ends.
  r = cluster.client("logs " + id + ".1 --follow");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "out 1\n1\n2\n3\n4\n5\nlate\n");
  r = cluster.client("logs " + id + ".7");
  expect_exit(r, 1, "has no task 7");
}

TEST_F(ClientTest, EveryTaskEndSaysWhy) {
  auto end_of = [](const json& s, int task = 0) { return s["tasks"][task]["end"]; };
  auto s = run_job("", "/bin/sh -c 'exit 3'");
  EXPECT_EQ(end_of(s)["reason"], "exited");
  EXPECT_EQ(end_of(s)["text"], "exited with code 3");

  s = run_job("", "/bin/sh -c 'kill -9 $$'");
  EXPECT_EQ(end_of(s)["reason"], "signaled");
  EXPECT_EQ(end_of(s)["signal"], "SIGKILL");

  s = run_job("", "/nonexistent/binary");
  EXPECT_EQ(end_of(s)["reason"], "spawn_failed");
  EXPECT_EQ(end_of(s)["spawn_stage"], "no_such_file");
  EXPECT_EQ(end_of(s)["text"], "could not start: command not found");

  std::string not_executable = write("not-executable", "#!/bin/sh\necho hi\n");
  s = run_job("", not_executable);
  EXPECT_EQ(end_of(s)["spawn_stage"], "permission_denied") << s.dump(2);

  s = run_job("--workdir /nonexistent", "/bin/true");
  EXPECT_EQ(end_of(s)["spawn_stage"], "bad_workdir");
  EXPECT_EQ(end_of(s)["text"], "could not start: bad working directory (no such file or directory)");

  s = run_job("--max-run-time 500ms", "/bin/sleep 30");
  EXPECT_EQ(end_of(s)["reason"], "max_run_time");
  EXPECT_EQ(end_of(s)["text"], "exceeded its maximum run time; killed by SIGTERM");

  // Cancelled: the task traps TERM and exits 1; that is what is recorded.
  std::string why;
  uint64_t job = cluster.submit("", "/bin/sh -c 'trap \"exit 1\" TERM; while true; do sleep 0.1; done'", &why);
  ASSERT_NE(job, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(job)->value("state", "") == "running"; }, 20s));
  std::this_thread::sleep_for(300ms);  // the trap is set
  EXPECT_EQ(cluster.client("cancel " + std::to_string(job)).exit_code, 0);
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] { return end_of(*cluster.status(job)).value("exit_code", json()).is_number(); }, 10s))
      << cluster.status(job)->dump(2);
  s = *cluster.status(job);
  EXPECT_EQ(end_of(s)["reason"], "cancelled");
  EXPECT_EQ(end_of(s)["exit_code"], 1);
  EXPECT_EQ(end_of(s)["text"], "cancelled; exited with code 1 after SIGTERM");
  auto text = cluster.client("status " + std::to_string(job));
  EXPECT_TRUE(contains(text.out, "cancelled; exited with code 1 after SIGTERM")) << text.out;

  // A whole-node task on each agent; `disrupt` takes one agent away; the
  // reasons of the job's task ends.
  auto reasons_after = [&](const std::function<void()>& disrupt) {
    uint64_t id = cluster.submit("--max-lost-retries 0 --resources cpu=4,memory=1Gi --count 2", "/bin/sleep 4", &why);
    EXPECT_TRUE(LocalCluster::wait_until([&] { return cluster.status(id)->value("state", "") == "running"; }, 20s));
    std::this_thread::sleep_for(500ms);
    disrupt();
    auto ended = cluster.wait_for_job(id, 30s);
    std::set<std::string> out;
    for (const auto& t : ended["tasks"]) out.insert(t["end"].is_object() ? t["end"].value("reason", "") : "");
    return out;
  };
  // Its node stops answering: node_lost (no retry left).
  EXPECT_TRUE(reasons_after([&] { cluster.kill_agent("a1"); }).contains("node_lost"));
  // Its agent restarts after a crash: the task died with it (agent_stopped).
  cluster.start_agent("a1");
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2));
  EXPECT_TRUE(reasons_after([&] {
                cluster.kill_agent("a2");
                cluster.start_agent("a2");
              }).contains("agent_stopped"));
}

TEST_F(ClientTest, AJobFileAndFlagsMakeOneJobAndBadFieldsAreNamed) {
  std::string file = write("job.toml",
                           "name = \"from-file\"\ncount = 1\ncommand = [\"/bin/echo\", \"from-file\"]\n"
                           "env = { FROM = \"file\", X = \"file\" }\n");
  // Flags override the file: count, command, env (merged by name); an
  // unknown class is refused by the server naming the field.
  auto r = cluster.client_before_command("submit --file " + file + " --count 3 --class nosuch --env X=1",
                                         "/bin/sh -c 'echo $FROM $X'");
  expect_exit(r, 1, "job field 'class'");
  auto s = run_job("--file " + file + " --count 3 --env X=1", "/bin/sh -c 'echo $FROM $X'");
  EXPECT_EQ(s["state"], "succeeded") << s.dump(2);
  EXPECT_EQ(s["count"], 3);
  EXPECT_EQ(s["name"], "from-file");
  auto logs = cluster.client("logs " + s["job"].dump() + ".2");
  EXPECT_EQ(logs.out, "file 1\n");
  // A file without a pool runs in the default pool, with or without --pool.
  std::string no_pool = write("no-pool.json", R"({"command": ["/bin/true"], "count": 2})");
  EXPECT_EQ(run_job("--file " + no_pool, "")["state"], "succeeded");
  EXPECT_EQ(run_job("--file " + no_pool + " --pool default", "")["state"], "succeeded");
  // Usage errors, nothing sent: exit 2, the field named.
  r = cluster.client("submit --file " + write("typo.toml", "comand = [\"/bin/true\"]\n"));
  expect_exit(r, 2, "unknown job field 'comand'");
  // Bug 1 of issue 13: a job without a command was accepted and held a slot forever.
  r = cluster.client("submit --file " + write("empty.toml", "command = []\n"));
  expect_exit(r, 2, "job field 'command': a job needs a command");
  r = cluster.client("submit");
  expect_exit(r, 2, "a job needs a command");
}

TEST_F(ClientTest, ResourcesAreCheckedAtTheDoor) {
  auto r = cluster.client_before_command("submit --resources CPU=1", "/bin/true");
  expect_exit(r, 2, "did you mean 'cpu'?");
  r = cluster.client_before_command("submit --resources memory=4GB", "/bin/true");
  expect_exit(r, 2, "write 4G (10^9 bytes) or 4Gi (2^30 bytes)");
  r = cluster.client_before_command("submit --resources cpu=1,licenses=2", "/bin/true");
  expect_exit(r, 1, "unknown resource 'licenses'");
  // Larger than any node: refused with the largest node's size, unless held.
  r = cluster.client_before_command("submit --resources cpu=8", "/bin/true");
  expect_exit(r, 1, "the largest has cpu=4,memory=4Gi");
  r = cluster.client_before_command("submit --count 9 --gang", "/bin/true");
  expect_exit(r, 1, "hold at most 8 of them together");
  std::string why;
  uint64_t held = cluster.submit("--resources cpu=8 --hold", "/bin/true", &why);
  ASSERT_NE(held, 0u) << why;
  r = cluster.client("explain " + std::to_string(held));
  expect_exit(r, 0, "unresolvable: no node in pool 'default' is big enough for one task of cpu=8");
}

TEST_F(ClientTest, WaitWaitsAndExitsWithTheJobsOutcome) {
  auto r = cluster.client_before_command("submit --wait --count 2", "/bin/true");
  expect_exit(r, 0, "succeeded: 2 tasks succeeded");
  r = cluster.client_before_command("submit --wait", "/bin/false");
  expect_exit(r, 1, "failed");
  EXPECT_TRUE(contains(r.out, "exited with code 1")) << r.out;
  r = cluster.client_before_command("submit --wait --json", "/bin/sh -c 'exit 4'");
  EXPECT_EQ(r.exit_code, 1);
  auto j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["tasks"][0]["end"]["exit_code"], 4);
  EXPECT_TRUE(j["finished_at"].is_string());
  // --follow prints the changes as they happen, then exits the same way.
  r = cluster.client_before_command("submit --follow", "/bin/sh -c 'sleep 0.5'");
  expect_exit(r, 0, "running");
  EXPECT_TRUE(contains(r.out, "task 0: succeeded")) << r.out;
}

TEST_F(ClientTest, WaitWithRepeatWaitsForEveryJobAndCountsTheirOutcomes) {
  auto r = cluster.client_before_command("submit --repeat 3 --wait --quiet", "/bin/true");
  expect_exit(r, 0, "3 jobs ended: 3 succeeded");
  r = cluster.client_before_command("submit --repeat 2 --wait --quiet --json", "/bin/false");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // The ids first, one per line, then the outcome.
  std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  auto j = json::parse(last, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["jobs"], 2);
  EXPECT_EQ(j["ended"]["failed"], 2) << r.out;
}

TEST_F(ClientTest, JobsListsEndedJobsTooWithFilters) {
  uint64_t ok = cluster.submit("--user alice --name a-very-long-job-name-that-goes-on-and-on-and-on", "/bin/true");
  uint64_t bad = cluster.submit("--user bob", "/bin/false");
  uint64_t sleeping = cluster.submit("--user alice", "/bin/sleep 30");
  ASSERT_TRUE(ok && bad && sleeping);
  cluster.wait_for_job(ok);
  cluster.wait_for_job(bad);
  auto ids = [&](const std::string& args) {
    auto r = cluster.client("jobs --json " + args);
    std::vector<uint64_t> out;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_array()) << r.out;
    for (const auto& v : j) out.push_back(v["job"].get<uint64_t>());
    return out;
  };
  EXPECT_EQ(ids(""), (std::vector<uint64_t>{sleeping, bad, ok})) << "newest first";
  EXPECT_EQ(ids("--user alice"), (std::vector<uint64_t>{sleeping, ok}));
  EXPECT_EQ(ids("--state failed"), (std::vector<uint64_t>{bad}));
  EXPECT_EQ(ids("--state succeeded,failed"), (std::vector<uint64_t>{bad, ok}));
  EXPECT_EQ(ids("--pool default --limit 1"), (std::vector<uint64_t>{sleeping}));
  EXPECT_EQ(ids("--since 1h").size(), 3u);
  EXPECT_EQ(ids("--since 2099-01-01").size(), 0u);
  auto queue = cluster.client("queue --json");
  EXPECT_EQ(json::parse(queue.out).size(), 1u) << "queue: only what has not ended";
  EXPECT_EQ(json::parse(cluster.client("queue --all --json").out).size(), 3u);
  // The table keeps its columns with a long name.
  auto table = cluster.client("jobs");
  std::istringstream lines(table.out);
  std::string header, row;
  std::getline(lines, header);
  auto state_column = header.find("STATE");
  while (std::getline(lines, row)) {
    if (row.starts_with(std::to_string(ok) + " ")) {
      EXPECT_EQ(row.substr(state_column, 9), "succeeded") << table.out;
    }
  }
  EXPECT_EQ(cluster.client("jobs --state done").exit_code, 2);
  EXPECT_EQ(cluster.client("jobs --since yesterdayish").exit_code, 2);
}

TEST_F(ClientTest, NodesAreNamedWhereverTheyAppear) {
  auto s = run_job("--count 2", "/bin/true");
  for (const auto& t : s["tasks"]) {
    EXPECT_TRUE(t["node"].is_number()) << "ids stay in --json";
    EXPECT_TRUE(t["node_name"] == "a1" || t["node_name"] == "a2") << s.dump(2);
  }
  auto text = cluster.client("status " + s["job"].dump());
  EXPECT_TRUE(contains(text.out, "succeeded on a1") || contains(text.out, "succeeded on a2")) << text.out;
  auto nodes = cluster.client("nodes");
  EXPECT_TRUE(contains(nodes.out, "a1") && contains(nodes.out, "a2")) << nodes.out;
  // A full node says so.
  std::string why;
  uint64_t full = cluster.submit("--resources cpu=4,memory=4Gi --count 2", "/bin/sleep 30", &why);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(full)->value("state", "") == "running"; }, 20s));
  nodes = cluster.client("nodes");
  EXPECT_TRUE(contains(nodes.out, "cpu=4,memory=4Gi  none")) << nodes.out;
  cluster.client("cancel " + std::to_string(full));
  // Copies of a job are one record in the store (issue 17); each comes back
  // after the restart as a job of its own, the one cancelled cancelled.
  auto repeated = cluster.client_before_command("submit --repeat 3 --hold --resources cpu=64", "/bin/true");
  ASSERT_EQ(repeated.exit_code, 0) << repeated.out;
  std::vector<uint64_t> copies;
  std::istringstream copy_lines(repeated.out);
  for (std::string line; std::getline(copy_lines, line);) copies.push_back(std::stoull(line));
  ASSERT_EQ(copies.size(), 3u) << repeated.out;
  ASSERT_EQ(cluster.client("cancel " + std::to_string(copies[1])).exit_code, 0);
  // Bug 5 of issue 13: after a restart, finished tasks kept their node.
  cluster.kill_server();
  cluster.start_server();
  ASSERT_TRUE(cluster.wait_for_alive_nodes(2));
  for (size_t i = 0; i < copies.size(); ++i) {
    auto copy = cluster.status(copies[i]);
    ASSERT_TRUE(copy) << "copy " << copies[i] << " lost in the restart";
    EXPECT_EQ(copy->value("state", ""), i == 1 ? "cancelled" : "pending") << copy->dump(2);
    EXPECT_EQ((*copy)["job"], copies[i]) << copy->dump(2);
  }
  auto after = *cluster.status(s["job"].get<uint64_t>());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after["tasks"][i]["node"], s["tasks"][i]["node"]) << after.dump(2);
    EXPECT_EQ(after["tasks"][i]["node_name"], s["tasks"][i]["node_name"]) << after.dump(2);
    EXPECT_EQ(after["tasks"][i]["end"]["reason"], "exited") << after.dump(2);
  }
}

TEST_F(ClientTest, EveryCommandExitsTwoOnBadUsageThreeWhenUnreachableOneWhenRefused) {
  const std::string bin = CLAIMSCHED_BINARY;
  auto run = [&](const std::string& args) { return run_command(bin + " " + args + " 2>&1").exit_code; };
  EXPECT_EQ(run(""), 2) << "no subcommand";
  for (const char* command : {"submit", "status", "cancel", "queue", "jobs", "logs", "nodes", "pools", "explain"})
    EXPECT_EQ(run(std::string(command) + " --no-such-flag"), 2) << command;
  for (const char* command : {"status", "cancel", "explain", "logs"}) {
    // `status` alone shows the cluster's members (it needs a server).
    if (command != std::string("status")) {
      EXPECT_EQ(run(command), 2) << command << " without a job";
    }
    EXPECT_EQ(run(std::string(command) + " abc"), 2) << command;
    EXPECT_EQ(run(std::string(command) + " -- -1"), 2) << command;
    EXPECT_EQ(run(std::string(command) + " 0"), 2) << command;
  }
  EXPECT_EQ(run("logs 12.x"), 2);
  EXPECT_EQ(run("submit --count 2 --repeat 3 --follow -- /bin/true"), 2);
  EXPECT_EQ(run("nodes --server nowhere"), 2);
  // Nothing listens on port 1.
  for (const char* command : {"status 1", "cancel 1", "queue", "jobs", "logs 1", "nodes", "pools", "explain 1"})
    EXPECT_EQ(run(std::string(command) + " --server 127.0.0.1:1"), 3) << command;
  EXPECT_EQ(run("submit --server 127.0.0.1:1 -- /bin/true"), 3);
  for (const char* command : {"status 999", "cancel 999", "logs 999", "explain 999"})
    EXPECT_EQ(cluster.client(command).exit_code, 1) << command;
  for (const char* command : {"queue", "jobs", "nodes", "pools"}) EXPECT_EQ(cluster.client(command).exit_code, 0);
}

// An agent stopped on its own (the server keeps running) leaves its task
// running; the server waits for it past node_grace; its next start adopts
// the task, which completes once without using a retry.
TEST_F(ClientTest, AnAgentStoppedAndStartedAgainAdoptsItsRunningTask) {
  std::string done = cluster.dir() + "/done.log";
  std::string why;
  uint64_t job = cluster.submit("--resources cpu=4,memory=1Gi --count 2 --max-lost-retries 0",
                                "/bin/sh -c 'sleep 4; echo $CLAIMSCHED_TASK_INDEX >> " + done + "'", &why);
  ASSERT_NE(job, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(job)->value("state", "") == "running"; }, 20s));
  cluster.kill_agent("a1", SIGTERM);
  EXPECT_EQ(cluster.agent("a1").wait(), 0);
  std::this_thread::sleep_for(2500ms);  // longer than node_grace (2 s)
  EXPECT_EQ(cluster.status(job)->value("state", ""), "running") << "not lost: its agent said it would be back";
  cluster.start_agent("a1");
  auto s = cluster.wait_for_job(job, 30s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  for (const auto& t : s["tasks"]) EXPECT_EQ(t.value("losses", -1), 0) << s.dump(2);
  std::multiset<std::string> lines;
  std::istringstream in(LocalCluster::read_file(done));
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines, (std::multiset<std::string>{"0", "1"}));
}

TEST_F(ClientTest, ATaskThatEndedUnheardIsReportedEndedAfterItsAgentIsKilledToo) {
  // The end reaches the agent's node while no server listens; then the agent
  // dies too. Its restart must still report that end: the task succeeded
  // once, it is not taken for lost and run again.
  std::string done = cluster.dir() + "/done.log";
  std::string why;
  uint64_t job = cluster.submit("--resources cpu=4,memory=1Gi",
                                "/bin/sh -c 'sleep 1; echo $CLAIMSCHED_TASK_INDEX >> " + done + "'", &why);
  ASSERT_NE(job, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(job)->value("state", "") == "running"; }, 20s));
  std::string node = (*cluster.status(job))["tasks"][0].value("node_name", "");
  ASSERT_TRUE(node == "a1" || node == "a2") << node;
  cluster.kill_server(SIGKILL);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return LocalCluster::read_file(done) == "0\n"; }, 10s));
  std::this_thread::sleep_for(300ms);  // the node records the end
  cluster.kill_agent(node, SIGKILL);
  cluster.start_server();
  cluster.start_agent(node);
  auto s = cluster.wait_for_job(job, 30s);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(s["tasks"][0].value("losses", -1), 0) << s.dump(2);
  std::this_thread::sleep_for(1500ms);  // a rerun would have completed by now
  EXPECT_EQ(LocalCluster::read_file(done), "0\n") << "the task ran once";
}

TEST_F(ClientTest, AnAgentWithOnStopWaitFinishesItsTasksBeforeItExits) {
  cluster.start_agent("a3", "cpu=1,memory=1Gi", {"--on-stop", "wait", "--label", "waits"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(3));
  std::string why;
  uint64_t job = cluster.submit("--resources cpu=1,memory=1Gi --constraint waits", "/bin/sleep 2", &why);
  ASSERT_NE(job, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(job)->value("state", "") == "running"; }, 20s));
  cluster.agent("a3").kill(SIGTERM);
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(cluster.agent("a3").running()) << "it waits for its task";
  EXPECT_EQ(cluster.agent("a3").wait(), 0);
  EXPECT_EQ(cluster.wait_for_job(job, 10s).value("state", ""), "succeeded");
}

TEST_F(ClientTest, ASecondAgentWithALiveAgentsNameIsRefusedAndTheFirstKeepsItsNode) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " agent --server " + cluster.address() +
                       " --name a1 --resources cpu=2,memory=1Gi --state-dir " + cluster.dir() + "/a1-twin 2>&1");
  expect_exit(r, 1, "is taken by another agent that is connected");
  EXPECT_TRUE(cluster.agent("a1").running());
  auto job = run_job("--resources cpu=4,memory=1Gi --count 2", "/bin/true");
  EXPECT_EQ(job.value("state", ""), "succeeded") << job.dump(2);
}

class PolicyClientTest : public ClientTest {
 protected:
  PolicyClientTest()
      : ClientTest(
            "[policy]\nenabled = true\ninterval = \"200ms\"\n"
            "[preemption]\nfair_share_starvation_timeout = \"1s\"\npreemptive_scheduling_backoff = \"100ms\"\n") {}
};

TEST_F(PolicyClientTest, APreemptedTaskNamesTheJobItMadeRoomForAndPoolsAreData) {
  std::string why;
  uint64_t greedy = cluster.submit("--user alice --count 8", "/bin/sleep 60", &why);
  ASSERT_NE(greedy, 0u) << why;
  ASSERT_TRUE(
      LocalCluster::wait_until([&] { return cluster.status(greedy)->at("tasks_by_state").value("running", 0) == 8; },
                               20s));
  uint64_t fair = cluster.submit("--user bob --count 4", "/bin/sleep 60", &why);
  ASSERT_NE(fair, 0u) << why;
  json preempted;
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] {
        auto s = cluster.status(greedy);
        if (!s) return false;
        for (const auto& t : s->at("tasks"))
          if (t["end"].is_object() && t["end"].value("reason", "") == "preempted") preempted = t;
        return !preempted.is_null();
      },
      30s))
      << cluster.status(greedy)->dump(2);
  EXPECT_EQ(preempted["preempted_by"], fair);
  auto text = cluster.client("status " + std::to_string(greedy));
  EXPECT_TRUE(contains(text.out, "(last run: preempted") && contains(text.out, "for job " + std::to_string(fair)))
      << text.out;
  // pools --json is data: a tree of pools with classes, users and jobs.
  auto pools = json::parse(cluster.client("pools --json").out, nullptr, false);
  ASSERT_TRUE(pools.is_object());
  const auto& partition = pools["partitions"][0];
  EXPECT_TRUE(partition["policy_enabled"].get<bool>());
  const auto& root = partition["pools"][0];
  EXPECT_EQ(root["name"], "default");
  EXPECT_TRUE(root["fair_share_share"].is_number());
  std::set<std::string> users;
  for (const auto& c : root["classes"])
    for (const auto& u : c["users"]) users.insert(u["name"].get<std::string>());
  EXPECT_EQ(users, (std::set<std::string>{"alice", "bob"}));
  auto explain = json::parse(cluster.client("explain --json " + std::to_string(fair)).out, nullptr, false);
  ASSERT_TRUE(explain.is_object());
  EXPECT_TRUE(explain["policy"]["fair_share_tasks"].is_number()) << explain.dump(2);
  EXPECT_TRUE(explain["placement"]["verdict"].is_string()) << explain.dump(2);
  cluster.client("cancel " + std::to_string(greedy));
  cluster.client("cancel " + std::to_string(fair));
}

class BackfillClientTest : public ClientTest {
 protected:
  BackfillClientTest()
      : ClientTest("[[pools]]\nname = \"default\"\n[[classes]]\nname = \"batch\"\npool = \"default\"\n"
                   "backfill = \"easy\"\n") {}
};

// EASY backfilling as explain shows it: the job that waits for the whole
// cluster holds a start at the end of the running tasks' max_run_time, on
// both nodes, in the JSON and in words.
TEST_F(BackfillClientTest, ExplainShowsTheReservedStartAndItsNodes) {
  std::string why;
  uint64_t running = cluster.submit("--count 8 --max-run-time 1h", "/bin/sleep 60", &why);
  ASSERT_NE(running, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] { return cluster.status(running)->at("tasks_by_state").value("running", 0) == 8; }, 20s));
  uint64_t wide = cluster.submit("--count 8 --gang --max-run-time 10m", "/bin/true", &why);
  ASSERT_NE(wide, 0u) << why;
  json placement;
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] {
        auto e = json::parse(cluster.client("explain --json " + std::to_string(wide)).out, nullptr, false);
        if (!e.is_object()) return false;
        placement = e["placement"];
        return placement["reserved_start"].is_string();
      },
      20s))
      << placement.dump(2);
  EXPECT_EQ(placement["reserved_nodes"].size(), 2u) << placement.dump(2);
  auto text = cluster.client("explain " + std::to_string(wide));
  EXPECT_TRUE(contains(text.out, "reserved (backfilling): starts at ")) << text.out;
  cluster.client("cancel " + std::to_string(wide));
  cluster.client("cancel " + std::to_string(running));
}

}  // namespace
}  // namespace claimsched::testing
