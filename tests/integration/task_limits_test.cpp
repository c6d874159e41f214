// Task memory limits on a cluster of real processes: a task that holds more
// memory than its job asked for is killed and its end is `oom_killed` in
// `status` (text and --json, the same object the HTTP API serves), while
// its agent and the agent's other tasks run on; a finished task shows its
// peak memory. On this kind of machine the agent enforces the limit itself
// or through the kernel (agent/cgroup.hpp), whichever it found: the user
// sees the same.

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

constexpr uint64_t kMiB = 1024 * 1024;

class TaskLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.start_server();
    cluster.start_agent("a1");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(cluster.server_log());
  }
  uint64_t submit(const std::string& options, const std::string& command) {
    std::string why;
    uint64_t id = cluster.submit(options, command, &why);
    EXPECT_NE(id, 0u) << why;
    return id;
  }
  LocalCluster cluster;
};

TEST_F(TaskLimitsTest, ATaskOverItsMemoryIsKilledAsOomKilledAndTheAgentAndItsOtherTasksRunOn) {
  uint64_t sleeper = submit("--resources cpu=1,memory=64Mi", "/bin/sleep 60");
  ASSERT_NE(sleeper, 0u);
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cluster.status(sleeper)->value("state", "") == "running"; }, 20s));

  // 256 MiB held by a child of the shell until it is killed, in a job that asked for 32 MiB.
  uint64_t hog = submit("--resources cpu=1,memory=32Mi", "/bin/sh -c '(head -c 256M /dev/zero; sleep 60) | tail'");
  ASSERT_NE(hog, 0u);
  json s = cluster.wait_for_job(hog, 60s);
  EXPECT_EQ(s["state"], "failed") << s.dump(2);
  json task = s["tasks"][0];
  EXPECT_EQ(task["state"], "failed");
  EXPECT_EQ(task["end"]["reason"], "oom_killed") << s.dump(2);
  EXPECT_EQ(task["end"]["text"], "killed for exceeding its memory limit");
  EXPECT_EQ(task["end"]["signal"], "SIGKILL");
  EXPECT_EQ(task["exit_code"], 137);
  ASSERT_TRUE(task["end"]["peak_memory_bytes"].is_number()) << s.dump(2);
  EXPECT_GT(task["end"]["peak_memory_bytes"].get<uint64_t>(), 32 * kMiB);
  auto text = cluster.client("status " + std::to_string(hog));
  EXPECT_TRUE(contains(text.out, "killed for exceeding its memory limit")) << text.out;
  EXPECT_TRUE(contains(text.out, "peak memory")) << text.out;

  // The agent and its other task were not touched.
  EXPECT_TRUE(cluster.agent("a1").running());
  EXPECT_EQ(cluster.status(sleeper)->value("state", ""), "running");
  EXPECT_EQ(cluster.alive_nodes(), 1);
  std::string log = LocalCluster::read_file(cluster.dir() + "/a1.log");
  // Which way the limit was enforced is said once, at the agent's start.
  EXPECT_TRUE(contains(log, "tasks run without cgroups") || contains(log, "runs in a cgroup of its own")) << log;

  // A task under its limit succeeds, and its peak is shown.
  uint64_t small = submit("--resources cpu=1,memory=256Mi", "/bin/sh -c 'head -c 24M /dev/zero | tail > /dev/null'");
  ASSERT_NE(small, 0u);
  s = cluster.wait_for_job(small, 60s);
  EXPECT_EQ(s["state"], "succeeded") << s.dump(2);
  ASSERT_TRUE(s["tasks"][0]["end"]["peak_memory_bytes"].is_number()) << s.dump(2);
  uint64_t peak = s["tasks"][0]["end"]["peak_memory_bytes"].get<uint64_t>();
  EXPECT_GE(peak, 24 * kMiB);
  EXPECT_LT(peak, 256 * kMiB);
  text = cluster.client("status " + std::to_string(small));
  EXPECT_TRUE(contains(text.out, "peak memory")) << text.out;

  EXPECT_EQ(cluster.client("cancel " + std::to_string(sleeper)).exit_code, 0);
}

}  // namespace
}  // namespace claimsched::testing
