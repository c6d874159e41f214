// ProcessSupervisor::start_async: starts queued together are started
// together, and each still ends exactly as a start() of it alone would.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "agent/process_supervisor.hpp"
#include "tests/agent/exits.hpp"
#include "tests/agent/supervisor_fixture.hpp"

namespace claimsched::agent {
namespace {

using namespace supervisor_test;
using Result = core::Expected<uint64_t, StartError>;

/// What the starts' done callbacks said, by the index the test gave them.
struct Results {
  std::mutex mutex;
  std::map<int, std::vector<Result>> by_index;
  std::set<std::thread::id> threads;

  std::function<void(Result)> done(int index) {
    return [this, index](Result r) {
      std::lock_guard lock(mutex);
      by_index[index].push_back(std::move(r));
      threads.insert(std::this_thread::get_id());
    };
  }
  size_t size() {
    std::lock_guard lock(mutex);
    return by_index.size();
  }
};

TEST_F(ProcessSupervisorTest, ABurstOfAsyncStartsRunsEachOnceAndABadStartFailsAlone) {
  Exits exits;
  std::atomic<int> rounds{0};
  Results results;
  constexpr int kStarts = 12, kMissing = 4, kMalformed = 9;
  {
    ProcessSupervisor supervisor(exits.callback(), [&] { ++rounds; });
    for (int i = 0; i < kStarts; ++i) {
      ProcessSupervisor::AsyncStart start;
      start.spec = shell("echo " + std::to_string(i) + " > " + (dir_ / std::to_string(i)).string());
      if (i == kMissing) start.spec.argv = {"/nonexistent/dir/cmd"};
      if (i == kMalformed) start.spec.argv.clear();
      start.done = results.done(i);
      supervisor.start_async(std::move(start));
    }
    ASSERT_TRUE(eventually([&] { return results.size() == kStarts; }, 20s));
    ASSERT_TRUE(exits.wait_total(kStarts - 2));
    EXPECT_TRUE(eventually([&] { return supervisor.running() == 0; }));
  }
  std::set<uint64_t> handles;
  for (int i = 0; i < kStarts; ++i) {
    ASSERT_EQ(results.by_index[i].size(), 1u) << "start " << i << " answered once";
    const Result& r = results.by_index[i].front();
    if (i == kMissing) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, core::Errc::io_error);
      EXPECT_NE(r.error().message.find("No such file or directory"), std::string::npos) << r.error().message;
      continue;
    }
    if (i == kMalformed) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, core::Errc::invalid_argument);
      continue;
    }
    ASSERT_TRUE(r) << "start " << i << ": " << r.error().to_string();
    EXPECT_TRUE(handles.insert(*r).second) << "a handle is never given twice";
    auto exit = exits.wait(*r);
    ASSERT_TRUE(exit);
    EXPECT_TRUE(exit->succeeded()) << exit->detail;
    EXPECT_EQ(exits.count(*r), 1u);
    EXPECT_EQ(read_file(dir_ / std::to_string(i)), std::to_string(i) + "\n") << "start " << i << " ran its own task";
  }
  EXPECT_EQ(exits.total(), size_t{kStarts - 2}) << "no exit follows a failed start";
  EXPECT_GE(rounds.load(), 1);
  // Every callback ran on the supervisor's one thread.
  auto threads = exits.threads();
  threads.insert(results.threads.begin(), results.threads.end());
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_FALSE(threads.contains(std::this_thread::get_id()));
}

TEST_F(ProcessSupervisorTest, AnAsyncStartNoLongerWantedNeverRuns) {
  Exits exits;
  Results results;
  ProcessSupervisor supervisor(exits.callback());
  std::atomic<int> asked{0};
  ProcessSupervisor::AsyncStart dropped;
  dropped.spec = shell("echo ran > " + (dir_ / "dropped").string());
  dropped.wanted = [&] {
    ++asked;
    return false;
  };
  dropped.done = results.done(0);
  supervisor.start_async(std::move(dropped));
  // Started after it, so answered after it was asked.
  ProcessSupervisor::AsyncStart wanted;
  wanted.spec = shell("true");
  wanted.wanted = [] { return true; };
  wanted.done = results.done(1);
  supervisor.start_async(std::move(wanted));
  ASSERT_TRUE(eventually([&] { return results.size() == 1; }));
  ASSERT_TRUE(exits.wait_total(1));
  EXPECT_EQ(asked.load(), 1);
  EXPECT_FALSE(results.by_index.contains(0)) << "nothing is called for a start its caller dropped";
  EXPECT_FALSE(fs::exists(dir_ / "dropped"));
  EXPECT_EQ(exits.total(), 1u);
}

TEST_F(ProcessSupervisorTest, OnRoundEndFollowsTheExitsOfItsRound) {
  // A caller that gathers ends and passes them on at the round's end misses none.
  std::mutex mutex;
  size_t gathered = 0, passed_on = 0;
  {
    ProcessSupervisor supervisor(
        [&](uint64_t, TaskExit) {
          std::lock_guard lock(mutex);
          ++gathered;
        },
        [&] {
          std::lock_guard lock(mutex);
          passed_on = gathered;
        });
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(supervisor.start(shell("true")));
    EXPECT_TRUE(eventually([&] {
      std::lock_guard lock(mutex);
      return passed_on == 8;
    }));
  }
  EXPECT_EQ(gathered, 8u);
}

}  // namespace
}  // namespace claimsched::agent
