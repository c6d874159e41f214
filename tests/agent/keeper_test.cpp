// The keeper between the agent and each task (agent/keeper.hpp): the
// program it is, the fork that stands in for it, and tasks that outlive their
// agent to be adopted by the next one, against real processes.

#include "agent/keeper.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "agent/process_supervisor.hpp"
#include "tests/agent/exits.hpp"
#include "tests/agent/supervisor_fixture.hpp"

namespace claimsched::agent {
namespace {

using namespace supervisor_test;

TEST_F(ProcessSupervisorTest, ATasksKeeperIsTheSpawnedKeeperProgramNotACopyOfTheAgent) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("readlink /proc/$PPID/exe; cat /proc/$PPID/comm"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  ASSERT_TRUE(exits.wait(*handle));
  std::string out = read_file(dir_ / "out.txt");
  EXPECT_NE(out.find("claimsched-keeper\n"), std::string::npos) << out;
}

TEST_F(ProcessSupervisorTest, WithoutAKeeperProgramTheKeeperIsAForkAndGivesTheSameGuarantees) {
  Exits exits;
  SupervisorOptions options;
  options.kill_grace = 300ms;
  options.fork_keepers = true;
  ProcessSupervisor supervisor(exits.callback(), options);
  auto handle = supervisor.start(shell("readlink /proc/$PPID/exe; exit 5"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 5);
  std::string out = read_file(dir_ / "out.txt");
  EXPECT_EQ(out.find("claimsched-keeper"), std::string::npos) << out;
  EXPECT_NE(out.find("agent_tests"), std::string::npos) << out;
  // A forked keeper copies lazily made output as the spawned one does.
  auto lazy = shell("echo lazy; echo err >&2");
  lazy.lazy_output = true;
  lazy.stdout_path = (dir_ / "lazy.out").string();
  lazy.stderr_path = (dir_ / "lazy.err").string();
  auto lazy_handle = supervisor.start(lazy);
  ASSERT_TRUE(lazy_handle) << lazy_handle.error().to_string();
  ASSERT_TRUE(exits.wait(*lazy_handle));
  EXPECT_EQ(read_file(dir_ / "lazy.out"), "lazy\n");
  EXPECT_EQ(read_file(dir_ / "lazy.err"), "err\n");
  auto sleeper = supervisor.start(shell("exec sleep 30"));
  ASSERT_TRUE(sleeper) << sleeper.error().to_string();
  supervisor.kill(*sleeper, "test");
  auto killed = exits.wait(*sleeper);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->how, How::killed_on_request);
}

/// This process's children whose command line has `word` (/proc).
std::vector<pid_t> children_with(const std::string& word) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = read_file(entry.path() / "stat");
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    std::string cmdline = read_file(entry.path() / "cmdline");
    if (ppid == ::getpid() && state != 'Z' && cmdline.find(word) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

// Keepers are forks of one zygote (keeper.hpp), not an exec each, yet
// children of the agent, which reaps them and reads their ends as before.
TEST_F(ProcessSupervisorTest, KeepersAreForkedFromOneZygoteAsChildrenOfTheAgent) {
  for (bool zygote : {true, false}) {
    SCOPED_TRACE(zygote ? "zygote" : "exec");
    Exits exits;
    SupervisorOptions options;
    options.keeper_zygote = zygote;
    ProcessSupervisor supervisor(exits.callback(), options);
    std::vector<uint64_t> handles;
    for (int i = 0; i < 3; ++i) {
      auto spec = shell("echo $PPID; readlink /proc/$PPID/exe; exit " + std::to_string(i));
      spec.stdout_path = (dir_ / (std::to_string(i) + (zygote ? ".zygote" : ".exec"))).string();
      auto handle = supervisor.start(spec);
      ASSERT_TRUE(handle) << handle.error().to_string();
      handles.push_back(*handle);
    }
    EXPECT_EQ(children_with(keeper::kZygoteArg).size(), zygote ? 1u : 0u);
    std::set<pid_t> keepers;
    for (int i = 0; i < 3; ++i) {
      auto exit = exits.wait(handles[i]);
      ASSERT_TRUE(exit);
      EXPECT_EQ(exit->exit_code, i) << exit->detail;
      std::istringstream out(read_file(dir_ / (std::to_string(i) + (zygote ? ".zygote" : ".exec"))));
      pid_t keeper = 0;
      std::string exe;
      out >> keeper >> exe;
      keepers.insert(keeper);
      EXPECT_NE(exe.find("claimsched-keeper"), std::string::npos) << exe;
    }
    EXPECT_EQ(keepers.size(), 3u) << "a keeper per task";
    for (pid_t zygote_pid : children_with(keeper::kZygoteArg))
      EXPECT_EQ(read_file("/proc/" + std::to_string(zygote_pid) + "/environ"), "") << "the agent's settings stay out";
  }
  EXPECT_TRUE(eventually([] { return children_with(keeper::kZygoteArg).empty(); }))
      << "the zygote ends with its supervisor";
}

// A zygote that dies (killed by hand, say) costs no task: the next start
// finds it gone and exec's keepers from then on.
TEST_F(ProcessSupervisorTest, WhenTheZygoteDiesKeepersAreExecdAndTasksStillStart) {
  Exits exits;
  SupervisorOptions options;
  options.kill_grace = 300ms;
  ProcessSupervisor supervisor(exits.callback(), options);
  auto sleeper = supervisor.start(shell("exec sleep 30"));
  ASSERT_TRUE(sleeper) << sleeper.error().to_string();
  auto zygotes = children_with(keeper::kZygoteArg);
  ASSERT_EQ(zygotes.size(), 1u);
  ASSERT_EQ(::kill(zygotes[0], SIGKILL), 0);
  // Dead, not dying: a request it took before it died fails its start
  // instead (it may have forked a keeper), which is not what this test is about.
  ASSERT_TRUE(eventually([] { return children_with(keeper::kZygoteArg).empty(); }));
  for (int i = 0; i < 2; ++i) {
    auto handle = supervisor.start(shell("exit 7"));
    ASSERT_TRUE(handle) << handle.error().to_string();
    auto exit = exits.wait(*handle);
    ASSERT_TRUE(exit);
    EXPECT_EQ(exit->exit_code, 7) << exit->detail;
  }
  EXPECT_TRUE(children_with(keeper::kZygoteArg).empty());
  // The task whose keeper the zygote made runs on, watched as before.
  supervisor.kill(*sleeper, "test");
  auto killed = exits.wait(*sleeper);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->how, How::killed_on_request);
}

// The keeper is started by vfork + exec: an exec that fails fails the start
// with its errno and reports no exit.
TEST_F(ProcessSupervisorTest, AKeeperProgramThatCannotBeExecutedFailsTheStartAndSaysWhy) {
  const fs::path keeper = dir_ / "broken-keeper";
  std::ofstream(keeper) << "#!/nonexistent/interpreter\n";
  fs::permissions(keeper, fs::perms::owner_all);
  Exits exits;
  SupervisorOptions options;
  options.keeper_binary = keeper.string();
  {
    ProcessSupervisor supervisor(exits.callback(), options);
    auto r = supervisor.start(shell("true"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, core::Errc::io_error);
    EXPECT_EQ(r.error().error_number, ENOENT);
    EXPECT_NE(r.error().message.find("spawn of '" + keeper.string() + "': No such file or directory"),
              std::string::npos)
        << r.error().message;
    EXPECT_EQ(supervisor.running(), 0u);
  }
  EXPECT_EQ(exits.total(), 0u);
}

TEST_F(ProcessSupervisorTest, AKeeperProgramThatIsNotExecutableFallsBackToAFork) {
  std::ofstream(dir_ / "not-a-keeper") << "#!/bin/sh\n";
  Exits exits;
  SupervisorOptions options;
  options.keeper_binary = (dir_ / "not-a-keeper").string();
  ProcessSupervisor supervisor(exits.callback(), options);
  auto handle = supervisor.start(shell("exit 0"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_TRUE(exit->succeeded());
}

// --- tasks that outlive their agent (drain, then adoption by the next) ----------

/// Starts `spec` (writing its exit file under dir_) on an agent that then
/// stops leaving it running; what that agent handed over.
std::vector<DetachedTask> started_then_detached(LaunchSpec spec, const fs::path& exit_path,
                                                std::chrono::milliseconds settle = 0ms) {
  spec.exit_path = exit_path.string();
  ProcessSupervisor agent(nullptr);
  EXPECT_TRUE(agent.start(spec));
  std::this_thread::sleep_for(settle);
  return agent.detach_all();
}

TEST_F(ProcessSupervisorTest, ADetachedTaskOutlivesItsAgentAndTheNextOneGetsItsStatus) {
  const fs::path go = dir_ / "go";
  LaunchSpec spec = shell("while [ ! -e " + go.string() + " ]; do sleep 0.05; done; echo done; exit 3");
  spec.exit_path = (dir_ / "task.exit").string();
  std::vector<DetachedTask> detached;
  {
    Exits first_exits;
    ProcessSupervisor first(first_exits.callback());
    auto handle = first.start(spec);
    ASSERT_TRUE(handle) << handle.error().to_string();
    detached = first.detach_all();
    ASSERT_EQ(detached.size(), 1u);
    EXPECT_EQ(first.running(), 0u);
  }  // the agent stops: a detached task is not killed
  const DetachedTask& d = detached.front();
  EXPECT_GT(d.start_ticks, 0u);
  ASSERT_TRUE(alive(d.pid)) << "the keeper died with the agent";
  std::ofstream(go) << "";
  // The task ends while no agent watches; its keeper records the status.
  ASSERT_TRUE(eventually([&] { return keeper::read_exit_file(spec.exit_path).has_value(); })) << "no exit record";
  Exits exits;
  ProcessSupervisor next(exits.callback());
  uint64_t adopted = next.adopt(d);
  auto exit = exits.wait(adopted);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::exited);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(read_file(dir_ / "out.txt"), "done\n");
  int status = 0;
  ::waitpid(d.pid, &status, 0);  // our zombie: the test process was its parent
}

TEST_F(ProcessSupervisorTest, AnAdoptedTaskIsWatchedAndKilledLikeAnyOther) {
  // 100 ms: the trap is set.
  auto detached =
      started_then_detached(shell("trap 'exit 7' TERM; while true; do sleep 0.05; done"), dir_ / "task.exit", 100ms);
  ASSERT_EQ(detached.size(), 1u);
  Exits exits;
  ProcessSupervisor next(exits.callback());
  uint64_t adopted = next.adopt(detached.front());
  EXPECT_FALSE(exits.wait(adopted, 300ms)) << "it still runs";
  next.kill(adopted, "cancelled");
  auto exit = exits.wait(adopted);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::killed_on_request);
  EXPECT_EQ(exit->exit_code, 7) << exit->detail;
  int status = 0;
  ::waitpid(detached.front().pid, &status, 0);
}

TEST_F(ProcessSupervisorTest, AKeeperThatWasKilledLeavesAnUnknownStatus) {
  auto detached = started_then_detached(shell("sleep 30"), dir_ / "task.exit");
  ASSERT_EQ(detached.size(), 1u);
  ::kill(-detached.front().pid, SIGKILL);
  int status = 0;
  ::waitpid(detached.front().pid, &status, 0);
  Exits exits;
  ProcessSupervisor next(exits.callback());
  auto exit = exits.wait(next.adopt(detached.front()));
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, -1);
  EXPECT_NE(exit->detail.find("not recorded"), std::string::npos) << exit->detail;
}

}  // namespace
}  // namespace claimsched::agent
