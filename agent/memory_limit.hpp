#pragma once

// Enforcing a task's memory limit without cgroups: the supervisor samples
// the resident memory of every limited task's process group from /proc and
// kills a group that holds more than its job asked for (SIGKILL, as the
// kernel's OOM killer would), reporting the end as oom_killed.
//
// Why sampling and not rlimits: RLIMIT_AS (and RLIMIT_DATA, which counts
// private writable mappings) limit address space, not memory: the JVM, Go,
// ASan and anything that reserves large arenas fails at start with memory
// to spare, and a program over the limit sees a failed malloc (an abort, a
// core, an exception) that no one can tell from any other failure. RLIMIT_RSS
// is ignored by Linux. The sampled sum of the group's resident sets is what
// the job declared it needs, is read from outside the task (nothing is set in
// the child) and ends in a kill the agent knows it made.
//
// Limits of the fallback (a delegated cgroup v2 tree has none of them,
// agent/cgroup.hpp): a task that allocates faster than the sampling interval
// overshoots by up to (rate x interval) before it dies (a task is first
// sampled once it has run one interval, between one and two intervals after
// its start: a sample reads every process's stat file, and most tasks of a
// burst of short ones end before they would be seen); processes that leave
// the task's process group (setsid) are not counted; shared pages (a forked
// worker pool's copy-on-write pages, shared memory) count once per process
// that maps them; page cache is not counted. RLIMIT_NPROC is not set either:
// it counts every process of the user, the agent's and other tasks'
// included, so no per-task value for it is sound.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace claimsched::agent {

/// What /proc/<pid>/stat says about one process.
struct ProcStat {
  pid_t pgrp = 0;
  /// When it started, in clock ticks since boot: tells it from a later
  /// process that got its pid.
  uint64_t start_ticks = 0;
  /// Resident pages.
  uint64_t rss_pages = 0;
};

/// Parses the text of /proc/<pid>/stat; nullopt if it is not one (the
/// command in parentheses may hold spaces and ')').
std::optional<ProcStat> parse_proc_stat(std::string_view text);

/// ProcStat::start_ticks of process `pid`; 0 if it is gone.
uint64_t process_start_ticks(pid_t pid);

/// The memory held by one process group.
struct GroupMemory {
  uint64_t resident_bytes = 0;
  uint32_t processes = 0;
};

/// Sums the resident memory of the processes in each group of `groups`
/// (process group ids), reading `proc_root` (normally "/proc"). A group's
/// leader is not counted: it is the task's keeper, whose resident set (a
/// fork of the agent shares the agent's pages) is not the task's. Groups
/// with no process besides their leader are absent. Processes that vanish
/// while being read are skipped.
std::map<pid_t, GroupMemory> sample_groups(const std::string& proc_root, const std::set<pid_t>& groups);

}  // namespace claimsched::agent
