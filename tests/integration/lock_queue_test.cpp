// Ganeti's lock-aware job queue over real processes: jobs declare locks on
// the command line; two jobs with conflicting exclusive locks never run at
// once (the second is shown waiting, with the job holding its lock); a
// predictive class starts the job least likely to wait first and shows
// weights, ages and the per-level comparison.

#include <fstream>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class LockQueueTest : public ::testing::Test {
 protected:
  explicit LockQueueTest(const std::string& extra_config = "") : cluster(extra_config) {}
  void SetUp() override {
    cluster.start_server();
    cluster.start_agent("a1", "cpu=8,memory=8Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(cluster.server_log());
  }
  uint64_t submit(const std::string& options, const std::string& command) {
    std::string why;
    uint64_t id = cluster.submit(options, command, &why);
    EXPECT_NE(id, 0u) << why;
    return id;
  }
  std::string state(uint64_t job) {
    auto s = cluster.status(job);
    return s ? (*s)["state"].get<std::string>() : "?";
  }
  /// A command that runs until the test releases it (no race with a sleep on
  /// a loaded machine).
  std::string held_until(const std::string& name) {
    return "/bin/sh -c 'while [ ! -e " + cluster.dir() + "/" + name + " ]; do sleep 0.05; done'";
  }
  void release(const std::string& name) { std::ofstream(cluster.dir() + "/" + name) << "go\n"; }
  static int64_t ns(const json& status, const char* key) {
    return status[key].is_number() ? status[key].get<int64_t>() : -1;
  }
  LocalCluster cluster;
};

TEST_F(LockQueueTest, ConflictingExclusiveJobsNeverRunTogetherAndTheSecondSaysWhy) {
  uint64_t first = submit("--lock node=exclusive:a1", held_until("first"));
  uint64_t second = submit("--lock instance=shared:web --lock node=exclusive:a1", "/bin/sleep 0.2");
  uint64_t beside = submit("--lock node=exclusive:a2", "/bin/sleep 0.2");
  ASSERT_TRUE(first && second && beside);
  ASSERT_TRUE(cluster.wait_until([&] { return state(second) == "waiting"; }, std::chrono::seconds(5)))
      << state(second);
  auto explain = json::parse(cluster.client("explain --json " + std::to_string(second)).out, nullptr, false);
  ASSERT_TRUE(explain.is_object());
  EXPECT_EQ(explain["placement"]["verdict"], "waiting_on_lock");
  EXPECT_EQ(explain["locks"]["blocked_on"]["job"], first);
  EXPECT_EQ(explain["locks"]["blocked_on"]["lock"], "a1");
  EXPECT_EQ(explain["locks"]["held"], "instance=shared:web");
  auto text = cluster.client("explain " + std::to_string(second)).out;
  EXPECT_TRUE(contains(text, "waits for node 'a1' held by job " + std::to_string(first))) << text;
  auto queue = json::parse(cluster.client("queue --json").out, nullptr, false);
  bool listed = false;
  for (const auto& j : queue) listed = listed || (j["job"] == second && j["state"] == "waiting");
  EXPECT_TRUE(listed) << queue.dump();
  release("first");

  json a = cluster.wait_for_job(first), b = cluster.wait_for_job(second), c = cluster.wait_for_job(beside);
  EXPECT_EQ(a["state"], "succeeded");
  EXPECT_EQ(b["state"], "succeeded");
  EXPECT_GE(ns(b, "started_at_ns"), ns(a, "finished_at_ns")) << "the second ran while the first held a1";
  EXPECT_LT(ns(c, "started_at_ns"), ns(a, "finished_at_ns")) << "another node's lock does not wait";
}

TEST_F(LockQueueTest, ANodeDrainWaitsForTheJobHoldingTheNodesLock) {
  uint64_t holder = submit("--lock node=shared:a1", held_until("holder"));
  ASSERT_TRUE(cluster.wait_until([&] { return state(holder) == "running"; }, std::chrono::seconds(5)));
  auto node_state = [&] {
    auto nodes = json::parse(cluster.client("nodes --json").out, nullptr, false);
    for (const auto& n : nodes)
      if (n["name"] == "a1") return n["state"].get<std::string>();
    return std::string("?");
  };
  auto r = cluster.client("node drain a1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "drain node a1 (operation 0): waits for node 'a1' held by job " + std::to_string(holder)))
      << r.out;
  EXPECT_EQ(node_state(), "up") << "the drain waits for the job holding the node's lock";
  release("holder");
  ASSERT_TRUE(cluster.wait_until([&] { return node_state() == "draining"; }, std::chrono::seconds(10)));
  EXPECT_EQ(state(holder), "succeeded") << "drained only once the job let the lock go";
  // Nothing new starts there until it is undrained.
  uint64_t later = submit("", "/bin/true");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(state(later), "pending");
  r = cluster.client("node undrain a1 --wait");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "node a1 up")) << r.out;
  EXPECT_EQ(cluster.wait_for_job(later)["state"], "succeeded");
  r = cluster.client("node drain nosuch");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "no node named 'nosuch'")) << r.out;
}

TEST_F(LockQueueTest, ABadDeclarationIsRefusedAtTheDoor) {
  auto r = cluster.client_before_command("submit --lock node=exclusive", "/bin/true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "--lock: lock 'node=exclusive': exclusive needs at least one name")) << r.out;
  r = cluster.client_before_command("submit --lock disk=shared:x", "/bin/true");
  EXPECT_TRUE(contains(r.out, "unknown level 'disk'")) << r.out;
}

TEST_F(LockQueueTest, APartitionMoveNeedsAnHaCluster) {
  auto r = cluster.client("partition move 1 --to m2");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "this server runs without [ha] and owns every partition")) << r.out;
  r = cluster.client("partition move 7 --to m2");
  EXPECT_TRUE(contains(r.out, "unknown partition 7")) << r.out;
}

class PredictiveQueueTest : public LockQueueTest {
 protected:
  PredictiveQueueTest()
      : LockQueueTest(
            "[[classes]]\nname = \"batch\"\npool = \"default\"\norder = \"predictive\"\nrunning_limit = 2\n"
            "aging_tick = \"30s\"\naging_k = 10\n") {}
};

TEST_F(PredictiveQueueTest, TheJobLeastLikelyToWaitStartsFirstAndTheQueueShowsWeights) {
  uint64_t holder = submit("--lock node=exclusive:n1", held_until("holder"));
  uint64_t filler = submit("", held_until("filler"));
  ASSERT_TRUE(cluster.wait_until([&] { return state(filler) == "running"; }, std::chrono::seconds(5)));
  uint64_t heavy = submit("--lock node=exclusive:n1", "/bin/true");  // 1 + 3 against the holder
  uint64_t light = submit("--lock node=exclusive:n2", "/bin/true");  // 1 + 0.5
  auto table = cluster.client("queue").out;
  EXPECT_TRUE(contains(table, "WEIGHT") && contains(table, "AGE")) << table;
  auto queue = json::parse(cluster.client("queue --json").out, nullptr, false);
  for (const auto& j : queue) {
    if (j["job"] == heavy) {
      EXPECT_DOUBLE_EQ(j["queue_weight"].get<double>(), 4.0) << j.dump();
    } else if (j["job"] == light) {
      EXPECT_DOUBLE_EQ(j["queue_weight"].get<double>(), 1.5) << j.dump();
    }
  }
  auto explain = cluster.client("explain " + std::to_string(heavy)).out;
  EXPECT_TRUE(contains(explain, "lock queue: predictive order, 2 of 2 running or waiting")) << explain;
  EXPECT_TRUE(contains(explain, "exclusive:n1")) << explain;
  EXPECT_TRUE(contains(explain, "weight: 4 x (1 - age/K) at age 0 ticks = 4")) << explain;
  release("filler");  // one slot: the light job (weight 1.5) goes before the heavy one (4), submitted first
  EXPECT_EQ(cluster.wait_for_job(light)["state"], "succeeded");
  ASSERT_TRUE(cluster.wait_until([&] { return state(heavy) == "waiting"; }, std::chrono::seconds(5)))
      << "then the heavy one starts and waits for the holder's lock: " << state(heavy);
  release("holder");
  json h = cluster.wait_for_job(heavy);
  EXPECT_EQ(h["state"], "succeeded");
  EXPECT_GE(ns(h, "started_at_ns"), ns(cluster.wait_for_job(holder), "finished_at_ns"));
}

}  // namespace
}  // namespace claimsched::testing
