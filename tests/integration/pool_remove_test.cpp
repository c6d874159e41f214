// `claimsched pool remove` over real processes: a pool a registered agent
// uses is refused (naming the node), an unused one goes, takes no more jobs
// (saying it was removed), and stays removed after the server restarts on
// the same data directory with a config that still lists it.

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(PoolRemove, ARemovedPoolRefusesJobsAndStaysRemovedAfterARestart) {
  LocalCluster cluster("[[pools]]\nname = \"p1\"\n[[pools]]\nname = \"p2\"\n");
  cluster.start_server();
  cluster.start_agent("a2", "cpu=4,memory=4Gi", {"--pool", "p2"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(cluster.server_log());

  auto in_use = cluster.client("pool remove p2");
  EXPECT_NE(in_use.exit_code, 0) << in_use.out;
  EXPECT_TRUE(contains(in_use.out, "pool p2 is in use: node a2 is up")) << in_use.out;

  auto unknown = cluster.client("pool remove p9");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out;
  EXPECT_TRUE(contains(unknown.out, "unknown pool 'p9' (known: p1, p2)")) << unknown.out;

  auto removed = cluster.client("pool remove p1 --wait");
  ASSERT_EQ(removed.exit_code, 0) << removed.out;
  EXPECT_TRUE(contains(removed.out, "remove pool p1 (operation ")) << removed.out;
  EXPECT_TRUE(contains(removed.out, "): done")) << removed.out;

  auto submit = cluster.client_before_command("submit --pool p1", "/bin/true");
  EXPECT_EQ(submit.exit_code, 1) << submit.out;
  EXPECT_TRUE(contains(submit.out, "pool 'p1' was removed")) << submit.out;
  // The other pool goes on.
  std::string why;
  uint64_t job = cluster.submit("--pool p2", "/bin/true", &why);
  ASSERT_NE(job, 0u) << why;
  EXPECT_EQ(cluster.wait_for_job(job)["state"], "succeeded");
  auto members = json::parse(cluster.client("status --json").out, nullptr, false);
  ASSERT_TRUE(members.is_object()) << members.dump();
  EXPECT_EQ(members["partitions"][0]["pools"], json::array({"p2"})) << members.dump();

  cluster.kill_server(SIGTERM);
  cluster.start_server();
  ASSERT_TRUE(cluster.wait_until(
      [&] {
        return contains(LocalCluster::read_file(cluster.server_log()),
                        "pool p1 was removed (claimsched pool remove) and stays removed; delete it from the config file");
      },
      std::chrono::seconds(5)))
      << LocalCluster::read_file(cluster.server_log());
  submit = cluster.client_before_command("submit --pool p1", "/bin/true");
  EXPECT_EQ(submit.exit_code, 1) << submit.out;
  EXPECT_TRUE(contains(submit.out, "pool 'p1' was removed")) << submit.out;
  auto again = cluster.client("pool remove p1");
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_TRUE(contains(again.out, "pool 'p1' was removed")) << again.out;
  // A node may not join it either.
  cluster.start_agent("a1", "cpu=4,memory=4Gi", {"--pool", "p1"});
  ASSERT_TRUE(cluster.wait_until(
      [&] { return contains(LocalCluster::read_file(cluster.server_log()), "node a1: pool 'p1' was removed"); },
      std::chrono::seconds(10)))
      << LocalCluster::read_file(cluster.server_log());
}

}  // namespace
}  // namespace claimsched::testing
