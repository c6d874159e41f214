// Per-task cgroups (agent/cgroup.hpp): finding a delegated cgroup v2 tree
// from made-up /proc files and directories, writing a task's limits and
// reading its end from a made-up cgroup; then, where this machine delegates
// a real tree, a task over its memory.max killed by the kernel and reported
// oom_killed (skipped, with the reason, elsewhere).

#include "agent/cgroup.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "agent/process_supervisor.hpp"
#include "tests/agent/exits.hpp"

namespace claimsched::agent::cgroup_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class CgroupFakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("claimsched-cgroup-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
};

constexpr const char* kHybridMountinfo =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "31 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "32 31 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:10 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(Cgroup, FindsTheUnifiedMountAndTheProcessOwnGroup) {
  EXPECT_EQ(cgroup::v2_mount(kHybridMountinfo), "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup::v2_mount("36 35 0:30 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"),
            "/sys/fs/cgroup");
  EXPECT_FALSE(cgroup::v2_mount("32 31 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"));
  EXPECT_FALSE(cgroup::v2_mount(""));
  EXPECT_EQ(cgroup::own_path("4:memory:/x\n0::/system.slice/claimsched-agent.service\n"),
            "/system.slice/claimsched-agent.service");
  EXPECT_FALSE(cgroup::own_path("4:memory:/x\n1:cpu:/\n"));  // cgroup v1 only
}

TEST(Cgroup, CpuMaxIsTheJobsCpuPerHundredMilliseconds) {
  EXPECT_EQ(cgroup::cpu_max(1500), "150000 100000");
  EXPECT_EQ(cgroup::cpu_max(250), "25000 100000");
  EXPECT_EQ(cgroup::cpu_max(1), "1000 100000");  // the kernel's floor
  EXPECT_EQ(cgroup::cpu_max(0), "max 100000");
}

TEST_F(CgroupFakeTree, ATreeIsDelegatedOnlyWithMemoryCpuAndPids) {
  fs::path dir = root / "svc";
  fs::create_directories(dir);
  auto not_delegated = cgroup::check_delegated(dir.string());
  ASSERT_FALSE(not_delegated);
  EXPECT_NE(not_delegated.error().message.find("is not a cgroup v2 directory"), std::string::npos);
  // A hybrid machine's unified tree: the controllers are bound to v1.
  put(dir / "cgroup.controllers", "\n");
  put(dir / "cgroup.subtree_control", "");
  put(dir / "cgroup.procs", "");
  not_delegated = cgroup::check_delegated(dir.string());
  ASSERT_FALSE(not_delegated);
  EXPECT_NE(not_delegated.error().message.find("does not offer the memory controller"), std::string::npos)
      << not_delegated.error().message;
  put(dir / "cgroup.controllers", "cpuset cpu io memory hugetlb\n");
  not_delegated = cgroup::check_delegated(dir.string());
  ASSERT_FALSE(not_delegated);
  EXPECT_NE(not_delegated.error().message.find("pids"), std::string::npos);
  put(dir / "cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
  EXPECT_TRUE(cgroup::check_delegated(dir.string()));
}

TEST_F(CgroupFakeTree, FindsItsOwnGroupUnderTheMountAndTheDirectoryBesideItsLeaf) {
  fs::path proc = root / "proc";
  fs::path mount = root / "cg";
  put(proc / "mountinfo", "41 31 0:38 / " + mount.string() + " rw,relatime - cgroup2 cgroup2 rw\n");
  put(proc / "cgroup", "0::/agent.service\n");
  const fs::path own = mount / "agent.service";
  put(own / "cgroup.controllers", "cpu memory pids\n");
  put(own / "cgroup.subtree_control", "");
  put(own / "cgroup.procs", "");
  auto dir = cgroup::find_delegated("", proc.string());
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(*dir, (mount / "agent.service").string());
  // Restarted inside the leaf it made: the tasks still go beside it.
  put(proc / "cgroup", "0::/agent.service/agent\n");
  dir = cgroup::find_delegated("", proc.string());
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(*dir, (mount / "agent.service").string());
  // A configured directory wins; without a cgroup2 mount there is none.
  EXPECT_FALSE(cgroup::find_delegated((root / "elsewhere").string(), proc.string()));
  put(proc / "mountinfo", kHybridMountinfo);
  put(proc / "cgroup", "0::/\n");
  auto none = cgroup::find_delegated("", proc.string());
  ASSERT_FALSE(none);
  put(proc / "mountinfo", "32 31 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  none = cgroup::find_delegated("", proc.string());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no cgroup v2 hierarchy is mounted");
}

TEST_F(CgroupFakeTree, OpeningMovesTheAgentIntoALeafAndATaskGetsItsLimits) {
  // The kernel makes the interface files; here they are made by hand.
  put(root / "cgroup.subtree_control", "");
  put(root / "agent" / "cgroup.procs", "");
  auto tree = cgroup::Tree::open(root.string());
  ASSERT_TRUE(tree) << tree.error().message;
  EXPECT_EQ(slurp(root / "agent" / "cgroup.procs"), std::to_string(::getpid()));
  EXPECT_EQ(slurp(root / "cgroup.subtree_control"), "+memory +cpu +pids");

  fs::path task = root / "task-7";
  for (const char* file : {"memory.max", "memory.swap.max", "memory.oom.group", "cpu.max", "pids.max"})
    put(task / file, "");
  auto path = tree->create("7", {256u << 20, 1500, 4096});
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(*path, task.string());
  EXPECT_EQ(slurp(task / "memory.max"), std::to_string(256u << 20));
  EXPECT_EQ(slurp(task / "memory.swap.max"), "0");
  EXPECT_EQ(slurp(task / "memory.oom.group"), "1");
  EXPECT_EQ(slurp(task / "cpu.max"), "150000 100000");
  EXPECT_EQ(slurp(task / "pids.max"), "4096");
  // A cgroup without the files it needs (not a cgroup at all) is an error.
  auto bad = tree->create("8", {1u << 20, 0, 0});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("memory.max"), std::string::npos);
  EXPECT_FALSE(fs::exists(root / "task-8"));  // removed again

  // How the run ended, as the kernel counts it.
  EXPECT_FALSE(cgroup::Tree::usage(task.string()).oom_killed);
  put(task / "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n");
  put(task / "memory.peak", "268435456\n");
  auto usage = cgroup::Tree::usage(task.string());
  EXPECT_TRUE(usage.oom_killed);
  EXPECT_EQ(usage.peak_bytes, 268435456u);
  put(task / "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  EXPECT_FALSE(cgroup::Tree::usage(task.string()).oom_killed);
  fs::create_directories(root / "task-9");
  EXPECT_TRUE(cgroup::Tree::remove((root / "task-9").string()));
  EXPECT_FALSE(fs::exists(root / "task-9"));
}

using test_support::Exits;

/// The supervisor over a made-up delegated tree: each task's cgroup gets
/// the job's limits, the task joins it before its exec, and the end is read
/// from the cgroup: a SIGKILL the kernel counted in memory.events is
/// oom_killed, another is not; memory.peak is the peak.
TEST_F(CgroupFakeTree, TheSupervisorRunsEachTaskInItsCgroupAndReadsItsEndThere) {
  put(root / "cgroup.controllers", "cpu memory pids\n");
  put(root / "cgroup.subtree_control", "");
  put(root / "cgroup.procs", "");
  put(root / "agent" / "cgroup.procs", "");
  // The supervisor names task cgroups <its pid>-<n>; the kernel would make
  // their files, here they are made first.
  auto task_dir = [&](int n) { return root / ("task-" + std::to_string(::getpid()) + "-" + std::to_string(n)); };
  for (int n : {1, 2}) {
    for (const char* file : {"memory.max", "memory.oom.group", "cpu.max", "pids.max", "cgroup.procs"})
      put(task_dir(n) / file, "");
    put(task_dir(n) / "memory.peak", "77594624\n");
  }
  put(task_dir(1) / "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  put(task_dir(2) / "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  Exits exits;
  SupervisorOptions options;
  options.cgroups = true;
  options.cgroup_dir = root.string();
  ProcessSupervisor supervisor(exits.callback(), options);
  EXPECT_EQ(slurp(root / "cgroup.subtree_control"), "+memory +cpu +pids");

  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "kill -9 $$"};  // a SIGKILL, as the kernel's OOM kill sends
  spec.memory_limit_bytes = 64u << 20;
  spec.cpu_millicores = 500;
  auto first = supervisor.start(spec);
  ASSERT_TRUE(first) << first.error().message;
  auto exit = exits.wait(*first);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, TaskExit::How::oom_killed) << exit->detail;
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->detail,
            "exceeded its memory limit of 64 MiB (killed by the kernel in its cgroup); killed by signal 9 (SIGKILL)");
  EXPECT_EQ(exit->peak_memory_bytes, 77594624u);
  EXPECT_EQ(slurp(task_dir(1) / "memory.max"), std::to_string(64u << 20));
  EXPECT_EQ(slurp(task_dir(1) / "memory.oom.group"), "1");
  EXPECT_EQ(slurp(task_dir(1) / "cpu.max"), "50000 100000");
  EXPECT_EQ(slurp(task_dir(1) / "pids.max"), "4096");
  EXPECT_EQ(slurp(task_dir(1) / "cgroup.procs"), "0");  // written by the task itself, before its exec

  auto second = supervisor.start(spec);
  ASSERT_TRUE(second) << second.error().message;
  exit = exits.wait(*second);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, TaskExit::How::killed_by_signal) << exit->detail;
  EXPECT_EQ(slurp(task_dir(2) / "cgroup.procs"), "0");
}

TEST(CgroupV2, TheKernelKillsATaskOverItsMemoryMaxAndItIsReportedOomKilled) {
  auto dir = cgroup::find_delegated("");
  if (!dir) GTEST_SKIP() << "no delegated cgroup v2 tree here: " << dir.error().message;
  Exits exits;
  SupervisorOptions options;
  options.cgroups = true;
  // Off, so that only the kernel can kill the task.
  options.memory_sample_interval = core::Duration::zero();
  ProcessSupervisor supervisor(exits.callback(), options);
  LaunchSpec quiet;
  quiet.argv = {"/bin/sleep", "30"};
  quiet.memory_limit_bytes = 64u << 20;
  auto other = supervisor.start(quiet);
  ASSERT_TRUE(other) << other.error().message;
  LaunchSpec hog;
  hog.argv = {"/bin/sh", "-c", "(head -c 256M /dev/zero; sleep 30) | tail"};
  hog.memory_limit_bytes = 32u << 20;
  auto handle = supervisor.start(hog);
  ASSERT_TRUE(handle) << handle.error().message;
  auto exit = exits.wait(*handle);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->how, TaskExit::How::oom_killed) << exit->detail;
  EXPECT_FALSE(exits.ended(*other));
  supervisor.kill(*other, "test over");
  ASSERT_TRUE(exits.wait(*other));
}

}  // namespace
}  // namespace claimsched::agent::cgroup_test
