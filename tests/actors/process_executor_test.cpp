// The agent's executor against real processes: a stop that leaves tasks
// running hands every one of them to the next agent, even one whose start
// was still under way.

#include "actors/process_executor.hpp"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

class ProcessExecutorTest : public ActorTest {
 protected:
  ProcessExecutorTest() {
    char pattern[] = "/tmp/claimsched-executor-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    spec_.id = core::NodeId{1};
    spec_.name = "n1";
    node_ = spawn([](caf::event_based_actor* self) -> caf::behavior {
      self->set_default_handler(caf::drop);
      return {[](caf::unit_t) {}};
    });
  }
  ~ProcessExecutorTest() override { std::filesystem::remove_all(dir_); }

  core::Allocation sleeping(uint32_t index) const {
    core::Allocation a;
    a.task = core::TaskRef{core::JobId{7}, index};
    a.claim_id = core::ClaimId{100 + index};
    a.running = true;
    a.launch = core::LaunchRef(core::TaskLaunch{{"/bin/sleep", "30"}, {}, "", core::Duration{0}, ""});
    return a;
  }

  std::string dir_;
  core::NodeSpec spec_;
  caf::actor node_;
};

TEST_F(ProcessExecutorTest, AStopRightAfterStartsLeavesEveryStartedTaskToTheNextAgent) {
  constexpr uint32_t kTasks = 6;
  {
    actors::ProcessExecutor agent(dir_);
    for (uint32_t i = 0; i < kTasks; ++i) ASSERT_TRUE(agent.start(node_, spec_, sleeping(i)));
    // At once: most of these starts are still queued or under way.
    EXPECT_EQ(agent.detach_all(), kTasks);
  }
  actors::ProcessExecutor next(dir_);
  next.load_detached();
  for (uint32_t i = 0; i < kTasks; ++i) EXPECT_TRUE(next.adopt(node_, sleeping(i))) << "task " << i;
  for (uint32_t i = 0; i < kTasks; ++i) next.kill(sleeping(i).task, "the test is over");
}

TEST_F(ProcessExecutorTest, StartsThatCannotLaunchInTimeAreNotStartedAfterTheStop) {
  actors::ProcessExecutor agent(dir_);
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(agent.start(node_, spec_, sleeping(i)));
  size_t left = agent.detach_all(0ms);
  EXPECT_LE(left, 3u);
  EXPECT_FALSE(agent.start(node_, spec_, sleeping(3))) << "a stopping agent starts nothing new";
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(agent.busy(), 0u) << "what was not left running never starts";
  actors::ProcessExecutor next(dir_);
  next.load_detached();
  size_t adopted = 0;
  for (uint32_t i = 0; i < 3; ++i) adopted += next.adopt(node_, sleeping(i)) ? 1 : 0;
  EXPECT_EQ(adopted, left) << "every task left running, and only those, is adopted";
  for (uint32_t i = 0; i < 3; ++i) next.kill(sleeping(i).task, "the test is over");
}

TEST_F(ProcessExecutorTest, AnExitZeroWithoutTheDeclaredOutputSaysSoInTheTaskEnd) {
  // Each task runs in <dir>/7 (no workdir) and is declared to leave
  // out-INDEX.txt there, relative to it.
  auto task = [](uint32_t index, const std::string& script) {
    core::Allocation a;
    a.task = core::TaskRef{core::JobId{7}, index};
    a.claim_id = core::ClaimId{200 + index};
    a.running = true;
    a.launch = core::LaunchRef(
        core::TaskLaunch{{"/bin/sh", "-c", script}, {}, "", {}, "out-" + std::to_string(index) + ".txt"});
    return a;
  };
  std::vector<core::Allocation> tasks = {
      task(0, "echo result > out-0.txt"),  // left it
      task(1, ": > out-1.txt"),            // empty: not an output
      task(2, "true"),                     // nothing at all
      task(3, "exit 4"),                   // failed: no verdict needed
  };
  actors::ProcessExecutor agent(dir_);
  for (const auto& a : tasks) ASSERT_TRUE(agent.start(node_, spec_, a));
  std::vector<std::optional<actors::TaskEnded>> ends(tasks.size());
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!ends[i]) ends[i] = agent.recorded_end(tasks[i]);
      all = all && ends[i].has_value();
    }
    if (all) break;
    std::this_thread::sleep_for(20ms);
  }
  for (size_t i = 0; i < tasks.size(); ++i) ASSERT_TRUE(ends[i]) << "task " << i << " did not end";
  EXPECT_EQ(ends[0]->state, core::TaskState::succeeded);
  EXPECT_FALSE(ends[0]->end.output_missing);
  EXPECT_EQ(ends[1]->state, core::TaskState::succeeded) << "a missing output does not fail the task";
  EXPECT_TRUE(ends[1]->end.output_missing);
  EXPECT_TRUE(ends[2]->end.output_missing);
  EXPECT_NE(ends[2]->detail.find("out-2.txt"), std::string::npos) << ends[2]->detail;
  EXPECT_EQ(ends[3]->state, core::TaskState::failed);
  EXPECT_FALSE(ends[3]->end.output_missing);
}

TEST_F(ProcessExecutorTest, LogsOfATaskThatPrintedNothingAreEmptyAndItLeftNoFiles) {
  auto task = [](uint32_t index, const std::string& script) {
    core::Allocation a;
    a.task = core::TaskRef{core::JobId{8}, index};
    a.claim_id = core::ClaimId{300 + index};
    a.running = true;
    a.launch = core::LaunchRef(core::TaskLaunch{{"/bin/sh", "-c", script}, {}, "", {}, ""});
    return a;
  };
  std::vector<core::Allocation> tasks = {task(0, "true"), task(1, "echo hi; echo oops >&2; pwd -P >&2")};
  actors::ProcessExecutor agent(dir_);
  for (const auto& a : tasks) ASSERT_TRUE(agent.start(node_, spec_, a));
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline && !(agent.recorded_end(tasks[0]) && agent.recorded_end(tasks[1])))
    std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(agent.recorded_end(tasks[0]) && agent.recorded_end(tasks[1])) << "the tasks did not end";

  EXPECT_FALSE(std::filesystem::exists(agent.stdout_path(tasks[0].task))) << "made at the first byte only";
  EXPECT_FALSE(std::filesystem::exists(agent.stderr_path(tasks[0].task)));
  for (bool err : {false, true}) {
    auto quiet = agent.read_output(core::LogRequest{tasks[0].task, err});
    ASSERT_TRUE(quiet) << quiet.error().message;
    EXPECT_EQ(quiet->data, "");
    EXPECT_EQ(quiet->size, 0u);
  }
  auto out = agent.read_output(core::LogRequest{tasks[1].task, false});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->data, "hi\n");
  auto err = agent.read_output(core::LogRequest{tasks[1].task, true});
  ASSERT_TRUE(err) << err.error().message;
  EXPECT_EQ(err->data, "oops\n" + std::filesystem::canonical(dir_ + "/8").string() + "\n");
  // A task without a working directory ran in its job's directory, which
  // its keeper made (the agent no longer does: LaunchSpec::make_workdir).
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/8"));
  // Nothing of that job here (never ran, or removed after the retention): an error says so.
  auto gone = agent.read_output(core::LogRequest{core::TaskRef{core::JobId{9}, 0}, false});
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("no output kept"), std::string::npos) << gone.error().message;
}

TEST_F(ProcessExecutorTest, EveryTaskOfABurstEndsOnceAtItsNodeAndAKilledStartNeverRuns) {
  // What the node heard: each end, and in how many messages.
  struct Heard {
    std::mutex mutex;
    std::map<core::TaskRef, int> ends;
    int messages = 0;
  };
  auto heard = std::make_shared<Heard>();
  // Detached: its own thread takes the executor's messages (the fixture's
  // test scheduler is stepped by hand, from the test's thread only).
  auto node = track(sys().spawn<caf::detached>([heard](caf::event_based_actor*) -> caf::behavior {
    return {
        [heard](actors::TaskEnded& e) {
          std::lock_guard lock(heard->mutex);
          ++heard->ends[e.task];
          ++heard->messages;
        },
        [heard](actors::TasksEnded& batch) {
          std::lock_guard lock(heard->mutex);
          for (const auto& e : batch.ended) ++heard->ends[e.task];
          ++heard->messages;
        },
    };
  }));
  auto task = [](uint32_t index) {
    core::Allocation a;
    a.task = core::TaskRef{core::JobId{11}, index};
    a.claim_id = core::ClaimId{400 + index};
    a.running = true;
    a.launch = core::LaunchRef(core::TaskLaunch{{"/bin/true"}, {}, "", {}, ""});
    return a;
  };
  constexpr uint32_t kTasks = 16;
  actors::ProcessExecutor agent(dir_);
  // The last start of the burst is killed at once: it is still queued behind
  // the others (a kill that finds it launching stops it, and its end comes).
  for (uint32_t i = 0; i < kTasks; ++i) ASSERT_TRUE(agent.start(node, spec_, task(i)));
  bool end_follows = agent.kill(task(kTasks - 1).task, "released");
  const size_t expected = end_follows ? kTasks : kTasks - 1;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  auto heard_all = [&] {
    std::lock_guard lock(heard->mutex);
    return heard->ends.size() >= expected;
  };
  while (std::chrono::steady_clock::now() < deadline && !heard_all()) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(heard_all()) << "every task's end reaches its node: " << heard->ends.size() << " of " << expected
                           << " in " << heard->messages << " message(s)";
  EXPECT_EQ(agent.busy(), 0u);
  std::this_thread::sleep_for(100ms);  // nothing more comes
  std::lock_guard lock(heard->mutex);
  EXPECT_EQ(heard->ends.size(), expected);
  for (const auto& [t, n] : heard->ends) EXPECT_EQ(n, 1) << "task " << t.index << " ends once";
  if (!end_follows) {
    EXPECT_FALSE(heard->ends.contains(task(kTasks - 1).task)) << "a start killed while queued never runs";
    EXPECT_FALSE(agent.recorded_end(task(kTasks - 1))) << "nor does its keeper record an end";
  }
  EXPECT_LE(heard->messages, static_cast<int>(expected));
}

}  // namespace
}  // namespace claimsched::testing
