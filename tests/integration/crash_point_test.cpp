// Crash points, deterministically: `claimsched sim`, `server` and `agent` are
// each killed (SIGKILL, as kill -9) at every named point of store creation,
// recovery and group commit (storage/crash_point.hpp), then started again.
// Each must come up on the directory the killed process left, and every job
// acknowledged before the kill must still be there (and run).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "storage/crash_point.hpp"
#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;
namespace crash = storage::crash;
using namespace std::chrono_literals;

/// Sets CLAIMSCHED_CRASH_POINT for the processes started in its scope.
class CrashPointEnv {
 public:
  explicit CrashPointEnv(const std::string& spec) { ::setenv("CLAIMSCHED_CRASH_POINT", spec.c_str(), 1); }
  ~CrashPointEnv() { ::unsetenv("CLAIMSCHED_CRASH_POINT"); }
  CrashPointEnv(const CrashPointEnv&) = delete;
  CrashPointEnv& operator=(const CrashPointEnv&) = delete;
};

bool is_recovery(std::string_view p) { return p == crash::kRecoverStarted || p == crash::kRecoverFinished; }
bool is_commit(std::string_view p) { return p == crash::kCommitBeforeWrite || p == crash::kCommitWritten; }
bool is_file(std::string_view p) { return p == crash::kFileWritten || p == crash::kFileRenamed; }

/// Waits for `p` to exit by itself (up to `timeout`); true if it was killed
/// at `point` (a signal ended it and its log names the point).
::testing::AssertionResult died_at(BackgroundProcess& p, const std::string& log, std::string_view point,
                                   std::chrono::seconds timeout = 60s) {
  if (!LocalCluster::wait_until([&] { return !p.running(); }, timeout))
    return ::testing::AssertionFailure() << "still running " << timeout.count() << " s after start";
  if (p.wait() != -1) return ::testing::AssertionFailure() << "exited with " << p.wait() << ", not killed";
  auto text = LocalCluster::read_file(log);
  if (text.find("crash point " + std::string{point} + " reached") == std::string::npos)
    return ::testing::AssertionFailure() << "killed, but not at " << point << ":\n" << text;
  return ::testing::AssertionSuccess();
}

class CrashPointTest : public ::testing::TestWithParam<std::string_view> {
 protected:
  void SetUp() override {
    if (!crash::crash_points_enabled()) GTEST_SKIP() << "built with CLAIMSCHED_CRASH_POINTS=OFF";
  }
};

std::string point_name(const ::testing::TestParamInfo<std::string_view>& info) {
  std::string s{info.param};
  for (auto& c : s)
    if (c == '.') c = '_';
  return s;
}

// -- sim -------------------------------------------------------------------------

// The group commit that counts as mid-load. A run makes about 400 commits
// on an idle machine, but on a loaded one batches grow (a commit waits for
// the previous fsync) and CI once saw a run end in fewer than 40. Each
// partition commits its jobs, each wave's placements and the last wave's
// ends apart, so a run always makes more than 6.
constexpr const char* kMidLoad = "@6";

class SimCrashPoint : public CrashPointTest {
 protected:
  SimCrashPoint() {
    char tmpl[] = "/tmp/claimsched-crashpoint-XXXXXX";
    root_ = mkdtemp(tmpl);
    data_ = root_ + "/data";
    log_ = root_ + "/runs.log";
  }
  ~SimCrashPoint() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  std::vector<std::string> args(bool resume) const {
    std::vector<std::string> a{CLAIMSCHED_BINARY, "sim", "--quiet", "--json", "--data-dir", data_, "--sync", "batch"};
    if (resume) {
      a.push_back("--resume");
    } else {
      for (const char* x : {"--nodes", "20", "--partitions", "2", "--tasks", "2000", "--tasks-per-job", "10",
                            "--churn", "--waves", "2", "--task-runtime", "50ms", "--seed", "7"})
        a.push_back(x);
    }
    return a;
  }
  /// Starts a run that must be killed at `spec`'s point.
  ::testing::AssertionResult killed_at(const std::string& spec, std::string_view point, bool resume) {
    CrashPointEnv env{spec};
    BackgroundProcess p(args(resume), log_);
    return died_at(p, log_, point);
  }
  /// Runs to the end; returns the run's JSON report.
  nlohmann::json finish(bool resume) {
    std::string command;
    for (const auto& a : args(resume)) command += a + " ";
    auto r = run_command(command + "2>>" + log_);
    EXPECT_EQ(r.exit_code, 0) << r.out << "\n(see " << log_ << ")";
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }

  std::string root_, data_, log_;
};

TEST_P(SimCrashPoint, TheNextRunComesUpAndKeepsEveryAcknowledgedJob) {
  const std::string point{GetParam()};
  if (is_recovery(point)) {
    // Interrupted mid-load first, so recovery has jobs and tasks to read.
    ASSERT_TRUE(killed_at(std::string{crash::kCommitWritten} + kMidLoad, crash::kCommitWritten, false));
    ASSERT_TRUE(killed_at(point, point, true));
  } else if (is_commit(point)) {
    ASSERT_TRUE(killed_at(point + kMidLoad, point, false));
  } else {
    ASSERT_TRUE(killed_at(point, point, false));
  }
  bool described = fs::exists(data_ + "/sim.json");
  if (point == crash::kFileWritten) {
    // Killed before the descriptor was in place: no run (and no store) exists,
    // and --resume says so; a new run may use the directory.
    EXPECT_FALSE(described);
    EXPECT_FALSE(fs::exists(data_ + "/partition-1"));
    auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --quiet --resume --data-dir " + data_ + " 2>&1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("no run to resume"), std::string::npos) << r.out;
  } else {
    EXPECT_TRUE(described) << "every store is made after the run's descriptor";
  }
  auto j = finish(described);
  EXPECT_TRUE(j.value("invariants_ok", false)) << j.dump(2);
  EXPECT_EQ(j.value("lost_acked_jobs", uint64_t{1}), 0u) << j.dump(2);
  EXPECT_EQ(j.value("double_allocations", uint64_t{1}), 0u) << j.dump(2);
  EXPECT_EQ(j.value("jobs", uint64_t{0}), 200u) << "every job of the load, exactly once: " << j.dump(2);
  EXPECT_EQ(j.value("unplaced", uint64_t{1}), 0u);
  for (const auto& e : fs::directory_iterator(data_))
    EXPECT_FALSE(e.path().string().ends_with(".creating")) << "left behind: " << e.path();
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, SimCrashPoint, ::testing::ValuesIn(crash::all_points()), point_name);

// -- server and agent ----------------------------------------------------------------

/// The points a server or an agent meets (it writes no run descriptor).
std::vector<std::string_view> store_points() {
  std::vector<std::string_view> out;
  for (auto p : crash::all_points())
    if (!is_file(p)) out.push_back(p);
  return out;
}

class ServerCrashPoint : public CrashPointTest {
 protected:
  /// Starts the server with the crash point armed, by hand: it may die before
  /// it listens. `port` 0 = any.
  std::unique_ptr<BackgroundProcess> start_armed_server(const std::string& spec, uint16_t port) {
    CrashPointEnv env{spec};
    return std::make_unique<BackgroundProcess>(
        std::vector<std::string>{CLAIMSCHED_BINARY, "--log-level", "debug", "server", "--config",
                                 cluster.dir() + "/cluster.toml", "--port", std::to_string(port)},
        cluster.server_log());
  }
  uint16_t port() const {
    return static_cast<uint16_t>(std::stoi(cluster.address().substr(cluster.address().rfind(':') + 1)));
  }
  /// Submits jobs with no agent to run them (they stay pending, durable).
  std::vector<uint64_t> submit_jobs(int n) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < n; ++i) {
      std::string why;
      auto id = cluster.submit("--name kept-" + std::to_string(i), "/bin/true", &why);
      EXPECT_NE(id, 0u) << why;
      if (id) ids.push_back(id);
    }
    return ids;
  }
  void expect_held(const std::vector<uint64_t>& ids) {
    for (auto id : ids) EXPECT_TRUE(cluster.status(id).has_value()) << "acknowledged job " << id << " is gone";
  }

  LocalCluster cluster;
};

TEST_P(ServerCrashPoint, TheNextStartComesUpAndKeepsEveryAcknowledgedJob) {
  const std::string point{GetParam()};
  std::vector<uint64_t> acked;
  if (point.starts_with("store.create")) {
    auto armed = start_armed_server(point, 0);
    ASSERT_TRUE(died_at(*armed, cluster.server_log(), point));
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  } else if (is_recovery(point)) {
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    acked = submit_jobs(3);
    cluster.kill_server();
    auto armed = start_armed_server(point, port());
    ASSERT_TRUE(died_at(*armed, cluster.server_log(), point));
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  } else {
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    acked = submit_jobs(2);
    cluster.kill_server();
    // Armed for its first write after the restart: a submit in flight is
    // killed before (or after) it is durable, and never acknowledged.
    auto armed = start_armed_server(point + "@1", port());
    for (int i = 0; i < 50 && armed->running(); ++i) {
      std::string why;
      if (auto id = cluster.submit("--name during", "/bin/true", &why)) acked.push_back(id);
    }
    ASSERT_TRUE(died_at(*armed, cluster.server_log(), point));
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  }
  expect_held(acked);
  // And it serves: a new job is accepted and held.
  expect_held(submit_jobs(1));
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, ServerCrashPoint, ::testing::ValuesIn(store_points()), point_name);

class AgentCrashPoint : public ServerCrashPoint {
 protected:
  std::unique_ptr<BackgroundProcess> start_agent(const std::string& spec) {
    std::optional<CrashPointEnv> env;
    if (!spec.empty()) env.emplace(spec);
    return std::make_unique<BackgroundProcess>(
        std::vector<std::string>{CLAIMSCHED_BINARY, "--log-level", "debug", "agent", "--server", cluster.address(),
                                 "--name", "a1", "--resources", "cpu=2,memory=1Gi", "--state-dir",
                                 cluster.dir() + "/a1"},
        agent_log());
  }
  std::string agent_log() const { return cluster.dir() + "/a1.log"; }
};

TEST_P(AgentCrashPoint, TheNextStartComesUpAndRunsEveryAcknowledgedJob) {
  const std::string point{GetParam()};
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  std::unique_ptr<BackgroundProcess> agent;
  if (is_recovery(point)) {
    agent = start_agent("");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
    agent->kill(SIGKILL);
    agent->wait();
  }
  // Acknowledged while the agent is away: it runs once the agent is back.
  std::string why;
  uint64_t job = cluster.submit("--count 2", "/bin/true", &why);
  ASSERT_NE(job, 0u) << why;
  // Commit points die on the node store's second write: after registering,
  // while the job's tasks are being placed.
  agent = start_agent(is_commit(point) ? point + "@2" : point);
  ASSERT_TRUE(died_at(*agent, agent_log(), point));
  agent = start_agent("");
  ASSERT_TRUE(cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(agent_log());
  auto s = cluster.wait_for_job(job);
  EXPECT_EQ(s.value("state", ""), "succeeded") << s.dump(2);
  agent->kill(SIGTERM);
  agent->wait();
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, AgentCrashPoint, ::testing::ValuesIn(store_points()), point_name);

// Chaos found it: a task ended, its agent was killed 41 ms later before its
// node heard, and the next agent reported the task lost, so it ran again.
TEST_F(AgentCrashPoint, ATaskThatEndedJustBeforeItsAgentWasKilledEndsAsItDidAndRunsOnce) {
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  std::string runs = cluster.dir() + "/runs";
  std::string why;
  uint64_t job = cluster.submit("", "/bin/sh -c 'echo ran >> " + runs + "; exit 3'", &why);
  ASSERT_NE(job, 0u) << why;
  auto agent = start_agent(std::string{crash::kTaskExitSeen});
  ASSERT_TRUE(died_at(*agent, agent_log(), crash::kTaskExitSeen));
  agent = start_agent("");
  auto s = cluster.wait_for_job(job);
  // Its own end (exit 3), from what its keeper recorded; not "lost" and run again.
  EXPECT_EQ(s.value("state", ""), "failed") << s.dump(2);
  ASSERT_EQ(s["tasks"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["tasks"][0].value("exit_code", 0), 3) << s.dump(2);
  EXPECT_EQ(s["tasks"][0].value("losses", 1), 0) << s.dump(2);
  EXPECT_EQ(LocalCluster::read_file(runs), "ran\n") << "the task ran more than once";
  agent->kill(SIGTERM);
  agent->wait();
}

}  // namespace
}  // namespace claimsched::testing
