// Several `claimsched server` members with [ha] over real etcd, agents and
// the client, all separate processes on 127.0.0.1: an owner killed, paused or
// cut off from etcd, and the bad inputs an operator meets first (etcd not
// there yet, two members with one name, another cluster's data directory).

#include "tests/integration/ha_cluster.hpp"
#include "tests/integration/task_logs.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

/// Three members, two agents in pool p1, every partition owned.
class HaTest : public ::testing::Test {
 protected:
  void start_all() {
    for (const char* m : {"m1", "m2", "m3"}) ASSERT_NO_FATAL_FAILURE(cluster.start_member(m));
    ASSERT_TRUE(cluster.wait_for_owners()) << HaCluster::read_file(cluster.log("m1"));
    cluster.start_agent("a1", "p1");
    cluster.start_agent("a2", "p1");
    ASSERT_TRUE(HaCluster::wait_until([&] { return cluster.alive_nodes() == 2; }, 20s));
  }
  /// Submits `count` tasks of `seconds` that log to `done`; waits until all run.
  uint64_t submit_running(const std::string& done, int count, double seconds) {
    uint64_t job = cluster.submit("--pool p1 --count " + std::to_string(count), task_that_logs(done, seconds));
    EXPECT_NE(job, 0u);
    EXPECT_TRUE(HaCluster::wait_until([&] { return count_tasks_on(*cluster.status(job), "running") == count; }, 20s));
    return job;
  }
  HaCluster cluster;
};

TEST_F(HaTest, AKilledOwnersRunningTasksAreAdoptedNeverRunTwice) {
  start_all();
  std::string done = cluster.dir() + "/done.log";
  uint64_t job = submit_running(done, 6, 4);
  std::string first = cluster.owner(1);
  uint64_t epoch = cluster.epoch(1);
  ASSERT_FALSE(first.empty());
  cluster.signal_member(first, SIGKILL);
  // Another member takes the partition over with a higher epoch...
  ASSERT_NE(cluster.wait_for_new_owner(1, first, 10s), "") << HaCluster::read_file(cluster.log(first == "m1" ? "m2" : "m1"));
  EXPECT_GT(cluster.epoch(1), epoch);
  // ...adopts the running tasks from the nodes' reports, and takes new work
  // through any member (the client moves past the dead one).
  uint64_t next = cluster.submit("--pool p1 --count 2", "/bin/true");
  ASSERT_NE(next, 0u);
  auto s = cluster.wait_for_job(job);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(check_completed_once(done, 6), "") << "no task of the old owner ran again";
  EXPECT_EQ(cluster.wait_for_job(next).value("state", ""), "succeeded");
  // The dead member comes back as a standby of the new owner and catches up.
  ASSERT_NO_FATAL_FAILURE(cluster.start_member(first));
  ASSERT_TRUE(HaCluster::wait_until([&] {
    auto m = cluster.members();
    if (!m) return false;
    for (const auto& p : (*m)["partitions"])
      for (const auto& sb : p["standbys"])
        if (sb.value("name", "") == first && sb.value("lag_records", 1) == 0) return true;
    return !cluster.owner(1).empty() && cluster.owner(1) == first;  // or it took it back (rebalancing)
  }, 20s)) << cluster.members()->dump(2);
}

TEST_F(HaTest, APausedOwnerIsFencedAndStepsDownWhenItWakes) {
  start_all();
  std::string done = cluster.dir() + "/done.log";
  uint64_t job = submit_running(done, 4, 5);
  std::string first = cluster.owner(1);
  cluster.signal_member(first, SIGSTOP);
  ASSERT_NE(cluster.wait_for_new_owner(1, first, 15s), "");
  cluster.signal_member(first, SIGCONT);
  // Its lease is gone: it notices and steps down (its claims were fenced at
  // the nodes by the new epoch meanwhile).
  ASSERT_TRUE(HaCluster::wait_until(
      [&] { return HaCluster::read_file(cluster.log(first)).find("steps down from partition 1") != std::string::npos; },
      10s))
      << HaCluster::read_file(cluster.log(first));
  auto s = cluster.wait_for_job(job);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  EXPECT_EQ(check_completed_once(done, 4), "");
}

TEST_F(HaTest, AnOperatorsPartitionMoveWaitsForTheJobHoldingItsPoolThenTheNewOwnerKeepsIt) {
  for (const char* m : {"m1", "m2"}) ASSERT_NO_FATAL_FAILURE(cluster.start_member(m));
  ASSERT_TRUE(cluster.wait_for_owners()) << HaCluster::read_file(cluster.log("m1"));
  cluster.start_agent("a1", "p1");
  ASSERT_TRUE(HaCluster::wait_until([&] { return cluster.alive_nodes() == 1; }, 20s));
  std::string first = cluster.owner(1);
  std::string other = first == "m1" ? "m2" : "m1";
  std::string go = cluster.dir() + "/go";
  uint64_t holder = cluster.submit("--pool p1 --lock group=exclusive:p1",
                                   "/bin/sh -c 'while [ ! -e " + go + " ]; do sleep 0.05; done'");
  ASSERT_NE(holder, 0u);
  ASSERT_TRUE(HaCluster::wait_until([&] { return count_tasks_on(*cluster.status(holder), "running") == 1; }, 20s));

  auto r = cluster.client("partition move 1 --to " + other);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("move partition 1 to " + other), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waits for group 'p1' held by job " + std::to_string(holder)), std::string::npos) << r.out;
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(cluster.owner(1), first) << "the move waits while the job holds the pool alone";

  std::ofstream(go) << "go\n";
  EXPECT_EQ(cluster.wait_for_new_owner(1, first, 20s), other) << HaCluster::read_file(cluster.log(first));
  EXPECT_EQ(cluster.wait_for_job(holder).value("state", ""), "succeeded");
  // It stays there: the rebalancing that follows does not move it back.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(cluster.owner(1), other);
  auto m = cluster.members();
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["partitions"][0].value("pinned_to", ""), other) << m->dump(2);
  // New work goes to the new owner.
  uint64_t after = cluster.submit("--pool p1", "/bin/true");
  EXPECT_EQ(cluster.wait_for_job(after).value("state", ""), "succeeded");

  // A member nobody knows: refused, with the live ones named.
  auto bad = cluster.client("partition move 1 --to nobody --wait");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("no live member named nobody (live: m1, m2)"), std::string::npos) << bad.out;
  // Back to the first, waiting until it owns it.
  auto back = cluster.client("partition move 1 --to " + first + " --wait --timeout 30s");
  EXPECT_EQ(back.exit_code, 0) << back.out;
  EXPECT_NE(back.out.find("partition 1: owned by " + first), std::string::npos) << back.out;
}

/// A campaign of `tasks` tasks in pool p1 that each take `seconds`, then
/// append their index to `log`; its file's path.
std::string ha_campaign_file(const HaCluster& cluster, const std::string& log, int tasks, double seconds) {
  std::string path = cluster.dir() + "/campaign.toml";
  std::ofstream(path) << "name = \"sweep\"\n"
                      << "command = [\"/bin/sh\", \"-c\", \"sleep " << seconds << "; echo $CLAIMSCHED_TASK_INDEX >> "
                      << log << "\"]\n"
                      << "range = \"1.." << tasks
                      << "\"\nresources = \"cpu=1,memory=100Mi\"\npools = [\"p1\"]\n"
                      // Nothing withdrawn, no replicas: each index runs once
                      // unless something is lost or sent twice.
                      << "max_waiting = 100\nallowed_waiting = 100\nfinalize_replicas = 0\n";
  return path;
}

/// Campaign `id`'s status through member `via` (null if it does not answer).
std::optional<nlohmann::json> ha_campaign_status(const HaCluster& cluster, const std::string& via, uint64_t id) {
  auto r = via.empty() ? cluster.client("campaign status --json " + std::to_string(id))
                       : cluster.client_via(via, "campaign status --json " + std::to_string(id));
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || !j.is_object()) return std::nullopt;
  return j;
}

TEST_F(HaTest, ACampaignSubmittedThroughAMemberThatDoesNotRunTheCampaignsRunsToTheEnd) {
  start_all();
  std::string runner = cluster.owner(1);  // the campaign partition's owner
  std::string other = runner == "m1" ? "m2" : "m1";
  std::string log = cluster.dir() + "/ran.log";
  auto submitted = cluster.client_via(other, "campaign submit " + ha_campaign_file(cluster, log, 12, 0.1));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << HaCluster::read_file(cluster.log(other));
  uint64_t id = std::stoull(submitted.out);
  ASSERT_TRUE(HaCluster::wait_until(
      [&] {
        auto s = ha_campaign_status(cluster, other, id);
        return s && s->value("state", "") == "done";
      },
      60s))
      << ha_campaign_status(cluster, other, id).value_or(nlohmann::json{}).dump(2);
  EXPECT_EQ(check_completed_once(log, 12), "");
  // One campaign actor in the cluster: every member answers for the same one.
  for (const char* m : {"m1", "m2", "m3"}) {
    auto s = ha_campaign_status(cluster, m, id);
    ASSERT_TRUE(s) << m;
    EXPECT_EQ(s->value("done", 0), 12) << m << ": " << s->dump(2);
  }
  EXPECT_NE(HaCluster::read_file(cluster.log(runner)).find("runs the cluster's campaigns"), std::string::npos);
  EXPECT_EQ(HaCluster::read_file(cluster.log(other)).find("runs the cluster's campaigns"), std::string::npos);
}

TEST_F(HaTest, ACampaignWhoseMemberIsKilledFinishesOnAnotherWithEveryIndexOnce) {
  constexpr int kTasks = 40;
  start_all();
  std::string runner = cluster.owner(1);
  std::string log = cluster.dir() + "/ran.log";
  auto submitted = cluster.client("campaign submit " + ha_campaign_file(cluster, log, kTasks, 0.5));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t id = std::stoull(submitted.out);
  auto lines = [&] {
    std::istringstream in(HaCluster::read_file(log));
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  ASSERT_TRUE(HaCluster::wait_until([&] { return lines() >= kTasks / 4; }, 60s));
  ASSERT_LT(lines(), kTasks) << "killed mid-campaign, not at its end";
  cluster.signal_member(runner, SIGKILL);
  std::string next = cluster.wait_for_new_owner(1, runner, 15s);
  ASSERT_NE(next, "");
  std::optional<nlohmann::json> last;
  ASSERT_TRUE(HaCluster::wait_until(
      [&] {
        last = ha_campaign_status(cluster, next, id);
        return last && last->value("state", "") == "done";
      },
      120s))
      << last.value_or(nlohmann::json{}).dump(2) << HaCluster::read_file(cluster.log(next));
  // Late runs would show as extra lines: give them a moment.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(check_completed_once(log, kTasks), "");
  EXPECT_EQ(last->value("done", 0), kTasks);
  // Rebuilt from the partition's standby copy, not started afresh.
  EXPECT_NE(HaCluster::read_file(cluster.log(next)).find("campaign " + std::to_string(id) + ": restored"),
            std::string::npos)
      << HaCluster::read_file(cluster.log(next));
}

TEST(HaCampaigns, ACampaignHearsOfItsJobsOnAnotherMembersPartitionWithoutPollingThem) {
  HaCluster cluster(2);
  for (const char* m : {"m1", "m2", "m3"}) ASSERT_NO_FATAL_FAILURE(cluster.start_member(m));
  ASSERT_TRUE(cluster.wait_for_owners()) << HaCluster::read_file(cluster.log("m1"));
  // Partitions spread over the members: the one owning p2 is not the one
  // running the campaigns (the owner of partition 1).
  ASSERT_TRUE(HaCluster::wait_until([&] { return cluster.owner(1) != cluster.owner(2); }, 20s));
  cluster.start_agent("a1", "p1", "cpu=2,memory=4Gi");
  cluster.start_agent("a2", "p2", "cpu=2,memory=4Gi");
  ASSERT_TRUE(HaCluster::wait_until([&] { return cluster.alive_nodes() == 2; }, 20s));
  std::string log = cluster.dir() + "/ran.log";
  std::string path = cluster.dir() + "/campaign.toml";
  std::ofstream(path)
      << "name = \"split\"\ncommand = [\"/bin/sh\", \"-c\", \"sleep 0.2; echo $CLAIMSCHED_TASK_INDEX >> " << log
      << "\"]\nrange = \"1..16\"\nresources = \"cpu=1,memory=100Mi\"\npools = [\"p1\", \"p2\"]\n"
      << "max_waiting = 100\nallowed_waiting = 100\nfinalize_replicas = 0\n";
  auto submitted = cluster.client("campaign submit " + path);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t id = std::stoull(submitted.out);
  auto start = std::chrono::steady_clock::now();
  std::optional<nlohmann::json> last;
  ASSERT_TRUE(HaCluster::wait_until(
      [&] {
        last = ha_campaign_status(cluster, "", id);
        return last && last->value("state", "") == "done";
      },
      60s))
      << last.value_or(nlohmann::json{}).dump(2);
  // Left to its fallback status requests (one per job every 30 s), the
  // copies on p2's owner would hold the campaign past 30 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 25s);
  EXPECT_EQ(check_completed_once(log, 16), "");
  for (const auto& pool : (*last)["pools"])
    EXPECT_GT(pool.value("succeeded", 0), 0) << "both partitions' pools ran tasks: " << last->dump(2);
}

TEST(HaPoolRemove, EveryMemberLearnsOfARemovalThatWentThroughAnother) {
  HaCluster cluster(2);
  for (const char* m : {"m1", "m2"}) ASSERT_NO_FATAL_FAILURE(cluster.start_member(m));
  ASSERT_TRUE(cluster.wait_for_owners()) << HaCluster::read_file(cluster.log("m1"));
  auto r = cluster.client("pool remove p2 --wait");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // An agent registers with every member: each refuses it, whichever
  // forwarded the removal and whichever owns the pool's partition.
  cluster.start_agent("a2", "p2");
  for (const char* m : {"m1", "m2"})
    EXPECT_TRUE(HaCluster::wait_until(
        [&] {
          return HaCluster::read_file(cluster.log(m)).find("node a2: pool 'p2' was removed") != std::string::npos;
        },
        15s))
        << m << ":\n"
        << HaCluster::read_file(cluster.log(m));
}

TEST_F(HaTest, AMemberWaitsForEtcdAndSaysSo) {
  cluster.etcd().signal(0, SIGSTOP);
  ASSERT_NO_FATAL_FAILURE(cluster.start_member("m1"));
  EXPECT_TRUE(HaCluster::wait_until(
      [&] { return HaCluster::read_file(cluster.log("m1")).find("waiting for etcd") != std::string::npos; }, 10s))
      << HaCluster::read_file(cluster.log("m1"));
  EXPECT_TRUE(cluster.member("m1").running()) << "it waits, it does not give up";
  EXPECT_EQ(cluster.owner(1), "") << "nobody owns anything without etcd";
  cluster.etcd().signal(0, SIGCONT);
  EXPECT_TRUE(cluster.wait_for_owners(20s)) << HaCluster::read_file(cluster.log("m1"));
}

TEST_F(HaTest, AnOwnerThatLosesEtcdStopsSchedulingBeforeItsLeaseCanExpire) {
  for (const char* m : {"m1", "m2"}) ASSERT_NO_FATAL_FAILURE(cluster.start_member(m));
  ASSERT_TRUE(cluster.wait_for_owners());
  std::string owner = cluster.owner(1);
  auto stopped = std::chrono::steady_clock::now();
  cluster.etcd().signal(0, SIGSTOP);
  std::string said;
  ASSERT_TRUE(HaCluster::wait_until(
      [&] {
        said = HaCluster::read_file(cluster.log(owner));
        return said.find("stop scheduling before the lease can expire") != std::string::npos;
      },
      5s))
      << said;
  // It says so well within the 1 s lease (at 0.6 of it, after a keep-alive
  // period), not after the lease could have lapsed elsewhere.
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 2s);
  cluster.etcd().signal(0, SIGCONT);
  // Back: it schedules again if etcd kept its lease, or (etcd expired it
  // meanwhile) steps down and joins again; either way someone owns it.
  EXPECT_TRUE(HaCluster::wait_until(
      [&] {
        auto text = HaCluster::read_file(cluster.log(owner));
        return text.find("schedule again") != std::string::npos || text.find("its lease is gone") != std::string::npos;
      },
      10s));
  EXPECT_TRUE(cluster.wait_for_owners(20s));
}

TEST_F(HaTest, TwoMembersWithTheSameNameAreRefused) {
  ASSERT_NO_FATAL_FAILURE(cluster.start_member("m1"));
  ASSERT_TRUE(cluster.wait_for_owners());
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " server --config " + cluster.config() +
                       " --name m1 --port 0 --data-dir " + cluster.dir() + "/data-twin 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("two members named m1"), std::string::npos) << r.out;
  EXPECT_TRUE(cluster.member("m1").running()) << "the first one keeps running";
}

TEST_F(HaTest, AMemberRefusesADataDirOfAnotherCluster) {
  // A single server of cluster "other" leaves its store where this member's
  // data directory is.
  std::string other = cluster.dir() + "/other.toml";
  std::ofstream(other) << "cluster_id = \"other\"\n[listen]\nport = 0\n[storage]\ndata_dir = \""
                       << cluster.data_dir("m1") << "\"\n[[pools]]\nname = \"p1\"\n[[partitions]]\nid = 1\npools = [\"p1\"]\n";
  {
    BackgroundProcess server({CLAIMSCHED_BINARY, "server", "--config", other}, cluster.dir() + "/other.log");
    ASSERT_TRUE(HaCluster::wait_until(
        [&] { return HaCluster::read_file(cluster.dir() + "/other.log").find("listening") != std::string::npos; },
        20s));
    server.kill(SIGTERM);
    server.wait();
  }
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " server --config " + cluster.config() +
                       " --name m1 --port 0 --data-dir " + cluster.data_dir("m1") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("other"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hatest"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
