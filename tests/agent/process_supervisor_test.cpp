// ProcessSupervisor against real processes (/bin/sh, sleep, true). Each test
// waits for what it expects with a deadline, never for a fixed time, and
// leaves no process running: the supervisor's destructor kills what is left.

#include "agent/process_supervisor.hpp"

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

#include "agent/keeper.hpp"
#include "tests/agent/exits.hpp"
#include "tests/agent/supervisor_fixture.hpp"

namespace claimsched::agent {
namespace {

using namespace supervisor_test;

TEST_F(ProcessSupervisorTest, TrueExitsZero) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  LaunchSpec spec;
  spec.argv = {"true"};  // found in PATH
  spec.max_run_time = 10s;
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().to_string();
  EXPECT_NE(*handle, 0u);
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::exited);
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_TRUE(exit->succeeded());
  EXPECT_EQ(supervisor.running(), 0u);
  EXPECT_FALSE(exits.threads().contains(std::this_thread::get_id()));
}

TEST_F(ProcessSupervisorTest, ExitCodeIsReported) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("exit 3"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::exited);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->succeeded());
  EXPECT_EQ(exit->detail, "exited with status 3");
}

TEST_F(ProcessSupervisorTest, DeathBySignalIsReported) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("kill -9 $$"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::killed_by_signal);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->exit_code, -1);
  EXPECT_EQ(exit->detail, "killed by signal 9 (SIGKILL)");
}

TEST_F(ProcessSupervisorTest, MaxRunTimeKillsTheWholeGroup) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("echo $$; sleep 30 & sleep 30");
  spec.max_run_time = 200ms;
  auto began = Clock::now();
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  auto took = Clock::now() - began;
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::timed_out);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_NE(exit->detail.find("maximum run time of 200ms"), std::string::npos) << exit->detail;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 1500ms);
  pid_t pgid = wait_for_pid(dir_ / "out.txt");
  ASSERT_GT(pgid, 0);
  EXPECT_TRUE(eventually([&] { return !group_alive(pgid); })) << "a sleep of group " << pgid << " survived";
}

TEST_F(ProcessSupervisorTest, LeftoversOfAFinishedTaskAreKilled) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("echo $$; sleep 30 &"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_TRUE(exit->succeeded()) << exit->detail;
  pid_t pgid = wait_for_pid(dir_ / "out.txt");
  EXPECT_TRUE(eventually([&] { return !group_alive(pgid); }));
}

TEST_F(ProcessSupervisorTest, TaskEnvironmentIsVisible) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("echo $CLAIMSCHED_JOB_ID $CLAIMSCHED_TASK_INDEX $CLAIMSCHED_NODE $CLAIMSCHED_RESOURCES");
  spec.env = task_environment(core::JobId{42}, 7, "node-a", core::Resources::cpu_memory(2000, int64_t{4} << 30));
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().to_string();
  ASSERT_TRUE(exits.wait(*handle));
  EXPECT_EQ(read_file(dir_ / "out.txt"), "42 7 node-a cpu=2,memory=4Gi\n");
}

TEST_F(ProcessSupervisorTest, EnvironmentIsInheritedWithoutClaimschedVariables) {
  ::setenv("CLAIMSCHED_AGENT_TOKEN", "secret", 1);
  ::setenv("AGENT_TEST_INHERITED", "yes", 1);
  ::setenv("AGENT_TEST_OVERRIDDEN", "agent", 1);
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("echo ${CLAIMSCHED_AGENT_TOKEN-unset} $AGENT_TEST_INHERITED $AGENT_TEST_OVERRIDDEN");
  spec.env = {{"AGENT_TEST_OVERRIDDEN", "first"}, {"AGENT_TEST_OVERRIDDEN", "task"}};
  auto handle = supervisor.start(spec);
  ::unsetenv("CLAIMSCHED_AGENT_TOKEN");
  ::unsetenv("AGENT_TEST_INHERITED");
  ::unsetenv("AGENT_TEST_OVERRIDDEN");
  ASSERT_TRUE(handle) << handle.error().to_string();
  ASSERT_TRUE(exits.wait(*handle));
  EXPECT_EQ(read_file(dir_ / "out.txt"), "unset yes task\n");
}

TEST_F(ProcessSupervisorTest, WorkdirIsHonouredAndRelativeOutputPathsUseIt) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  fs::create_directories(dir_ / "work");
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "pwd -P"};
  spec.workdir = (dir_ / "work").string();
  spec.stdout_path = "logs/task-0/out.txt";  // parents created, under workdir
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().to_string();
  ASSERT_TRUE(exits.wait(*handle));
  EXPECT_EQ(read_file(dir_ / "work/logs/task-0/out.txt"), fs::canonical(dir_ / "work").string() + "\n");
}

// The agent's job directories: made by the keeper (forked from the zygote,
// exec'd, or a fork of the agent), one level, before the task runs there; a
// start whose directory cannot be made fails and says so, as a missing
// workdir does.
TEST_F(ProcessSupervisorTest, AWorkdirTheKeeperMakesExistsBeforeTheTaskRunsThere) {
  for (std::string mode : {"zygote", "exec", "fork"}) {
    SCOPED_TRACE(mode + " keeper");
    Exits exits;
    SupervisorOptions options;
    options.fork_keepers = mode == "fork";
    options.keeper_zygote = mode == "zygote";
    ProcessSupervisor supervisor(exits.callback(), options);
    const fs::path job = dir_ / ("job-" + mode);
    LaunchSpec spec;
    spec.argv = {"/bin/sh", "-c", "pwd -P; echo x > left.txt; echo err >&2"};
    spec.workdir = job.string();
    spec.make_workdir = true;
    spec.lazy_output = true;
    spec.stdout_path = (job / "0.out").string();
    spec.stderr_path = (job / "0.err").string();
    spec.exit_path = (job / "0.1.exit").string();
    for (int run = 0; run < 2; ++run) {  // the second finds it made
      auto handle = supervisor.start(spec);
      ASSERT_TRUE(handle) << handle.error().to_string();
      auto exit = exits.wait(*handle);
      ASSERT_TRUE(exit);
      EXPECT_EQ(exit->exit_code, 0) << exit->detail;
    }
    const std::string where = fs::canonical(job).string() + "\n";
    EXPECT_EQ(read_file(job / "0.out"), where + where);
    EXPECT_EQ(read_file(job / "0.err"), "err\nerr\n");
    EXPECT_EQ(read_file(job / "left.txt"), "x\n");
    EXPECT_EQ(keeper::read_exit_file((job / "0.1.exit").string()), 0) << "its keeper records its end";
    // Where the file system takes extended attributes (this one), the
    // record is one of the directory: no file of its own.
    char probe[8];
    if (::getxattr(job.c_str(), "user.claimsched.0.1.exit", probe, sizeof probe) > 0) {
      EXPECT_FALSE(fs::exists(job / "0.1.exit"));
    }

    spec.workdir = (dir_ / "no-parent" / "job").string();
    spec.stdout_path = spec.stderr_path = spec.exit_path = "";
    auto r = supervisor.start(spec);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, core::Errc::io_error);
    EXPECT_EQ(r.error().stage, core::SpawnStage::output);
    EXPECT_NE(r.error().message.find("creating the working directory '" + spec.workdir + "'"), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("No such file or directory"), std::string::npos) << r.error().message;
    EXPECT_EQ(exits.total(), 2u) << "a failed start reports no exit";
  }
}

TEST_F(ProcessSupervisorTest, OutputIsAppendedToSeparateFiles) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("echo out; echo err >&2");
  spec.stdout_path = (dir_ / "a/b/out.txt").string();
  spec.stderr_path = (dir_ / "c/err.txt").string();
  for (int i = 0; i < 2; ++i) {
    auto handle = supervisor.start(spec);
    ASSERT_TRUE(handle) << handle.error().to_string();
    ASSERT_TRUE(exits.wait(*handle));
  }
  EXPECT_EQ(read_file(dir_ / "a/b/out.txt"), "out\nout\n");
  EXPECT_EQ(read_file(dir_ / "c/err.txt"), "err\nerr\n");
}

TEST_F(ProcessSupervisorTest, MissingCommandFailsTheStart) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  LaunchSpec spec;
  spec.argv = {"claimsched-no-such-command"};
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, core::Errc::io_error);
  EXPECT_NE(r.error().message.find("command not found: 'claimsched-no-such-command'"), std::string::npos)
      << r.error().message;

  spec.argv = {"/nonexistent/dir/cmd", "x"};
  r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, core::Errc::io_error);
  EXPECT_NE(r.error().message.find("No such file or directory"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("/nonexistent/dir/cmd"), std::string::npos) << r.error().message;

  auto failure = TaskExit::start_failure(r.error());
  EXPECT_EQ(failure.how, How::failed_to_start);
  EXPECT_EQ(failure.detail, r.error().message);
  EXPECT_EQ(supervisor.running(), 0u);
  EXPECT_EQ(exits.total(), 0u);
}

TEST_F(ProcessSupervisorTest, NonExecutableCommandFailsTheStart) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  fs::create_directories(dir_ / "bin");
  std::ofstream(dir_ / "bin/script") << "#!/bin/sh\nexit 0\n";
  ::chmod((dir_ / "bin/script").c_str(), 0644);

  LaunchSpec spec;
  spec.argv = {(dir_ / "bin/script").string()};
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Permission denied"), std::string::npos) << r.error().message;

  spec.argv = {"script"};
  spec.env = {{"PATH", (dir_ / "bin").string()}};
  r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is not executable"), std::string::npos) << r.error().message;

  spec.argv = {dir_.string()};  // a directory
  spec.env.clear();
  r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Permission denied"), std::string::npos) << r.error().message;
  EXPECT_EQ(exits.total(), 0u);
}

TEST_F(ProcessSupervisorTest, BadWorkdirFailsTheStart) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("true");
  spec.workdir = (dir_ / "missing").string();
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, core::Errc::io_error);
  EXPECT_EQ(r.error().message, "working directory '" + spec.workdir + "' does not exist");

  std::ofstream(dir_ / "file") << "x";
  spec.workdir = (dir_ / "file").string();
  r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is not a directory"), std::string::npos) << r.error().message;
}

TEST_F(ProcessSupervisorTest, BadOutputPathFailsTheStart) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("true");
  spec.stdout_path = dir_.string();  // a directory
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("stdout"), std::string::npos) << r.error().message;

  std::ofstream(dir_ / "file") << "x";
  spec = shell("true");
  spec.stderr_path = (dir_ / "file/err.txt").string();  // parent is a file
  r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("stderr"), std::string::npos) << r.error().message;
}

TEST_F(ProcessSupervisorTest, LazyOutputMakesAFileOnlyForAStreamTheTaskWritesTo) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto run = [&](std::string script, const fs::path& out, const fs::path& err) {
    auto spec = shell(std::move(script));
    spec.lazy_output = true;
    spec.stdout_path = out.string();
    spec.stderr_path = err.string();
    auto handle = supervisor.start(spec);
    EXPECT_TRUE(handle) << handle.error().to_string();
    if (!handle) return std::optional<TaskExit>();
    return exits.wait(*handle);
  };
  auto quiet = run("true", dir_ / "q/out.txt", dir_ / "q/err.txt");
  ASSERT_TRUE(quiet && quiet->succeeded());
  EXPECT_FALSE(fs::exists(dir_ / "q/out.txt")) << "nothing printed, no file";
  EXPECT_FALSE(fs::exists(dir_ / "q/err.txt"));

  auto failed = run("echo out; echo err >&2; exit 3", dir_ / "s/out.txt", dir_ / "s/err.txt");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->exit_code, 3);
  EXPECT_EQ(read_file(dir_ / "s/out.txt"), "out\n");
  EXPECT_EQ(read_file(dir_ / "s/err.txt"), "err\n");
  // Appended, like the files opened at the start.
  ASSERT_TRUE(run("echo again", dir_ / "s/out.txt", dir_ / "s/err.txt"));
  EXPECT_EQ(read_file(dir_ / "s/out.txt"), "out\nagain\n");

  // One file for both streams keeps the order they were written in.
  ASSERT_TRUE(run("echo a; echo b >&2; echo c", dir_ / "both.txt", dir_ / "both.txt"));
  EXPECT_EQ(read_file(dir_ / "both.txt"), "a\nb\nc\n");

  // More than a pipe holds, all of it, also what it wrote just before exiting.
  ASSERT_TRUE(run("head -c 300000 /dev/zero | tr '\\0' x; echo", dir_ / "big.txt", dir_ / "big.err"));
  std::string big = read_file(dir_ / "big.txt");
  EXPECT_EQ(big.size(), 300001u);
  EXPECT_EQ(big.find_first_not_of('x'), 300000u);
  EXPECT_FALSE(fs::exists(dir_ / "big.err"));
}

TEST_F(ProcessSupervisorTest, LazyOutputOfARunningTaskIsInItsFileAsItIsWritten) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto spec = shell("echo early; exec sleep 30");
  spec.lazy_output = true;
  auto handle = supervisor.start(spec);
  ASSERT_TRUE(handle) << handle.error().to_string();
  EXPECT_TRUE(eventually([&] { return read_file(dir_ / "out.txt") == "early\n"; }));
  EXPECT_EQ(supervisor.running(), 1u);
  supervisor.kill(*handle, "the test is over");
  ASSERT_TRUE(exits.wait(*handle));
}

TEST_F(ProcessSupervisorTest, LazyOutputWhoseDirectoryCannotBeMadeFailsTheStart) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  std::ofstream(dir_ / "file") << "x";
  auto spec = shell("true");
  spec.lazy_output = true;
  spec.stderr_path = (dir_ / "file/err.txt").string();  // parent is a file
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().stage, core::SpawnStage::output);
  EXPECT_NE(r.error().message.find("stderr"), std::string::npos) << r.error().message;
}

TEST_F(ProcessSupervisorTest, MalformedSpecsAreRejected) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto expect_invalid = [&](const LaunchSpec& spec) {
    auto r = supervisor.start(spec);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, core::Errc::invalid_argument) << r.error().to_string();
  };
  expect_invalid(LaunchSpec{});
  LaunchSpec spec;
  spec.argv = {""};
  expect_invalid(spec);
  spec.argv = {"/bin/echo", std::string("a\0b", 3)};
  expect_invalid(spec);
  spec = shell("true");
  spec.env = {{"A=B", "c"}};
  expect_invalid(spec);
  spec.env = {{"", "c"}};
  expect_invalid(spec);
  spec = shell("true");
  spec.max_run_time = -1s;
  expect_invalid(spec);
  spec = shell("true");
  spec.workdir = std::string("/tmp\0x", 6);
  expect_invalid(spec);

  // Too large for execve: an error, not a crash.
  spec = shell("true");
  spec.env = {{"HUGE", std::string(1 << 20, 'x')}};
  auto r = supervisor.start(spec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Argument list too long"), std::string::npos) << r.error().message;
  EXPECT_EQ(exits.total(), 0u);
  EXPECT_EQ(supervisor.running(), 0u);
}

TEST_F(ProcessSupervisorTest, KillOnRequest) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("exec sleep 30"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  EXPECT_EQ(supervisor.running(), 1u);
  supervisor.kill(*handle, "the job was cancelled");
  supervisor.kill(*handle, "twice");
  supervisor.kill(*handle + 1000, "unknown");
  auto exit = exits.wait(*handle, 3s);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::killed_on_request);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->detail, "killed on request: the job was cancelled; killed by signal 15 (SIGTERM)");
  supervisor.kill(*handle, "after the end");
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(exits.count(*handle), 1u);
  EXPECT_EQ(exits.total(), 1u);
  EXPECT_EQ(supervisor.running(), 0u);
}

TEST_F(ProcessSupervisorTest, KillEscalatesToSigkillAfterTheGrace) {
  Exits exits;
  SupervisorOptions options;
  options.kill_grace = 300ms;
  ProcessSupervisor supervisor(exits.callback(), options);
  // The shell and its sleep ignore SIGTERM.
  auto handle = supervisor.start(shell("trap '' TERM; echo $$; sleep 30"));
  ASSERT_TRUE(handle) << handle.error().to_string();
  pid_t pgid = wait_for_pid(dir_ / "out.txt");  // the trap is set
  auto began = Clock::now();
  supervisor.kill(*handle, "stop");
  auto exit = exits.wait(*handle, 3s);
  auto took = Clock::now() - began;
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::killed_on_request);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);
  EXPECT_TRUE(eventually([&] { return !group_alive(pgid); }));
}

TEST_F(ProcessSupervisorTest, ManyConcurrentProcessesAreEachReportedOnce) {
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  constexpr int kThreads = 4, kPerThread = 50;
  std::mutex mutex;
  std::map<uint64_t, int> expected;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int code = (t * kPerThread + i) % 7;
        LaunchSpec spec;
        spec.argv = {"/bin/sh", "-c", "exit " + std::to_string(code)};
        auto handle = supervisor.start(spec);
        if (!handle) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mutex);
        expected[*handle] = code;
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(expected.size(), size_t{kThreads * kPerThread});
  ASSERT_TRUE(exits.wait_total(expected.size()));
  std::this_thread::sleep_for(50ms);  // a duplicate would show up now
  EXPECT_EQ(exits.total(), expected.size());
  for (auto [handle, code] : expected) {
    ASSERT_EQ(exits.count(handle), 1u) << handle;
    auto exit = exits.wait(handle);
    EXPECT_EQ(exit->how, How::exited);
    EXPECT_EQ(exit->exit_code, code);
  }
  EXPECT_EQ(exits.threads().size(), 1u);  // all from the supervisor's thread
  EXPECT_EQ(supervisor.running(), 0u);
}

TEST_F(ProcessSupervisorTest, DestructorKillsAndReportsRunningProcesses) {
  Exits exits;
  std::vector<uint64_t> handles;
  std::vector<pid_t> pgids;
  auto began = Clock::now();
  {
    ProcessSupervisor supervisor(exits.callback());
    for (int i = 0; i < 3; ++i) {
      auto spec = shell("echo $$; sleep 30 & sleep 30");
      spec.stdout_path = (dir_ / ("out" + std::to_string(i))).string();
      auto handle = supervisor.start(spec);
      ASSERT_TRUE(handle) << handle.error().to_string();
      handles.push_back(*handle);
      pgids.push_back(wait_for_pid(spec.stdout_path));
    }
    EXPECT_EQ(supervisor.running(), 3u);
  }
  EXPECT_LT(Clock::now() - began, 3s);
  EXPECT_EQ(exits.total(), 3u);
  for (auto handle : handles) {
    ASSERT_EQ(exits.count(handle), 1u);
    auto exit = exits.wait(handle);
    EXPECT_EQ(exit->how, How::killed_on_request);
    EXPECT_NE(exit->detail.find("supervisor shutting down"), std::string::npos) << exit->detail;
  }
  for (auto pgid : pgids) EXPECT_TRUE(eventually([&] { return !group_alive(pgid); })) << pgid;
}

TEST_F(ProcessSupervisorTest, OnExitMayStartAndKillInline) {
  Exits exits;
  std::atomic<ProcessSupervisor*> self{nullptr};
  std::atomic<uint64_t> second{0};
  std::atomic<bool> start_failed{false};
  auto record = exits.callback();
  auto on_exit = [&](uint64_t handle, TaskExit exit) {
    if (second.load() == 0) {
      auto spec = shell("exec sleep 30");
      auto h = self.load()->start(spec);
      if (h) {
        second = *h;
        self.load()->kill(*h, "inline");
      } else {
        start_failed = true;
      }
    }
    record(handle, std::move(exit));
  };
  ProcessSupervisor supervisor(on_exit);
  self = &supervisor;
  auto first = supervisor.start(shell("true"));
  ASSERT_TRUE(first) << first.error().to_string();
  ASSERT_TRUE(exits.wait_total(2, 5s));
  EXPECT_FALSE(start_failed.load());
  auto exit = exits.wait(second.load());
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, How::killed_on_request);
}

TEST_F(ProcessSupervisorTest, ChildDiesWithTheAgent) {
  // A helper process plays the agent: it starts a task and dies without
  // running the destructor. PR_SET_PDEATHSIG must kill the task.
  const fs::path pid_file = dir_ / "pid";
  pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    ProcessSupervisor supervisor(nullptr);
    LaunchSpec spec;
    spec.argv = {"/bin/sh", "-c", "echo $$ > " + pid_file.string() + ".tmp && mv " + pid_file.string() +
                                      ".tmp " + pid_file.string() + " && exec sleep 30"};
    if (!supervisor.start(spec)) ::_exit(2);
    for (int i = 0; i < 500 && !fs::exists(pid_file); ++i) ::usleep(10'000);
    ::_exit(fs::exists(pid_file) ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  pid_t task = wait_for_pid(pid_file);
  ASSERT_GT(task, 0);
  EXPECT_TRUE(eventually([&] { return !alive(task); })) << "task " << task << " outlived its agent";
  if (alive(task)) ::kill(task, SIGKILL);
}

TEST_F(ProcessSupervisorTest, ChildGetsCleanDescriptorsAndSignals) {
  // An agent descriptor without O_CLOEXEC and an ignored SIGPIPE.
  int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  Exits exits;
  ProcessSupervisor supervisor(exits.callback());
  auto handle = supervisor.start(shell("test -e /proc/$$/fd/" + std::to_string(leaky) +
                                       " && echo leaked || echo clean; grep SigIgn /proc/$$/status; ls -l "
                                       "/proc/$$/fd/0"));
  ::close(leaky);
  ::signal(SIGPIPE, old_pipe);
  ASSERT_TRUE(handle) << handle.error().to_string();
  ASSERT_TRUE(exits.wait(*handle));
  std::string out = read_file(dir_ / "out.txt");
  EXPECT_TRUE(out.starts_with("clean\n")) << out;
  auto ign = out.find("SigIgn:");
  ASSERT_NE(ign, std::string::npos) << out;
  uint64_t mask = std::stoull(out.substr(ign + 7), nullptr, 16);
  EXPECT_EQ(mask & (uint64_t{1} << (SIGPIPE - 1)), 0u) << out;
  EXPECT_NE(out.find("/dev/null"), std::string::npos) << out;
}

TEST(TaskEnvironmentTest, NamesEveryVariable) {
  auto env = task_environment(core::JobId{9}, 3, "n1", core::Resources::cpu_memory(1500, 512 << 20));
  std::vector<std::pair<std::string, std::string>> want{
      {"CLAIMSCHED_JOB_ID", "9"},
      {"CLAIMSCHED_TASK_INDEX", "3"},
      {"CLAIMSCHED_NODE", "n1"},
      {"CLAIMSCHED_RESOURCES", "cpu=1500m,memory=512Mi"},
      {"CLAIMSCHED_CPU_MILLICORES", "1500"},
      {"CLAIMSCHED_MEMORY_BYTES", std::to_string(512 << 20)},
  };
  EXPECT_EQ(env, want);

  auto with_gpu = core::Resources::of({{core::dim::cpu, 2000}, {core::dim::gpu, 2}});
  env = task_environment(core::JobId{1}, 0, "n2", with_gpu);
  ASSERT_EQ(env.size(), 7u);
  EXPECT_EQ(env.back(), (std::pair<std::string, std::string>{"CLAIMSCHED_GPU", "2"}));
  EXPECT_EQ(env[3].second, "cpu=2,gpu=2");
}

TEST(TaskExitTest, HowHasNames) {
  EXPECT_EQ(to_string(How::exited), "exited");
  EXPECT_EQ(to_string(How::timed_out), "timed out");
  EXPECT_EQ(to_string(How::failed_to_start), "failed to start");
}

}  // namespace
}  // namespace claimsched::agent
