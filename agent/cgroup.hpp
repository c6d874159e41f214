#pragma once

// Per-task limits through a delegated cgroup v2 tree: every task runs in a
// cgroup of its own with memory.max (its job's memory; memory.swap.max 0,
// memory.oom.group 1: the kernel kills the whole task, never half of it),
// cpu.max (its job's cpu as a quota per 100 ms period) and pids.max. The
// kernel then enforces all of it, also for processes that leave the task's
// process group, and memory.events tells an OOM kill from any other
// SIGKILL; memory.peak gives the peak.
//
// Delegated means: the unified hierarchy is mounted, the directory offers
// the memory, cpu and pids controllers, and this process may create cgroups
// under it, enable controllers in it and move processes into them
// (systemd's Delegate=yes, a container with its own cgroup namespace, or a
// directory an administrator chowned to the agent's user). Because a cgroup
// that hands controllers to its children may hold no process itself, the
// agent first moves itself into a leaf `agent` beside its tasks' cgroups:
//   DIR/agent          the agent and the tasks' keepers
//   DIR/task-<handle>  one task, moved there by its keeper's child before exec
// Where none of this holds (cgroup v1 or hybrid machines, an undelegated
// tree), ProcessSupervisor falls back to agent/memory_limit.hpp and says why
// in a warning at start.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::agent::cgroup {

/// Where the unified (v2) hierarchy is mounted, from the text of
/// /proc/self/mountinfo; nullopt if it is not.
std::optional<std::string> v2_mount(std::string_view mountinfo);
/// The process's cgroup in the unified hierarchy ("/system.slice/x"), from
/// the text of /proc/self/cgroup (its "0::" line); nullopt if none.
std::optional<std::string> own_path(std::string_view proc_cgroup);

/// Whether `dir` is a cgroup v2 directory delegated to this process; the
/// error says what is missing, for the fallback's warning.
core::Status check_delegated(const std::string& dir);

/// The directory this agent's tasks' cgroups go under: `configured` if not
/// empty, else its own cgroup (read from `proc_self`, normally
/// "/proc/self"), checked by check_delegated.
core::Expected<std::string> find_delegated(const std::string& configured, const std::string& proc_self = "/proc/self");

/// The limits of one task; zero means none for that controller.
struct Limits {
  uint64_t memory_bytes = 0;
  int64_t cpu_millicores = 0;
  uint64_t pids = 0;
};

/// cpu.max for `millicores` ("max 100000" for none), a quota per 100 ms.
std::string cpu_max(int64_t millicores);

/// How a task's cgroup saw its run.
struct Usage {
  /// memory.events counted an OOM kill.
  bool oom_killed = false;
  /// memory.peak, 0 where the kernel has none (before 5.19).
  uint64_t peak_bytes = 0;
};

/// A delegated directory set up for tasks (see the file comment).
class Tree {
 public:
  /// Moves this process into DIR/agent (unless it is already in a child of
  /// DIR) and enables memory, cpu and pids for DIR's children.
  static core::Expected<Tree> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  /// Creates DIR/task-<name> with `limits`; returns its path.
  core::Expected<std::string> create(const std::string& name, const Limits& limits) const;
  static Usage usage(const std::string& path);
  /// Kills what is left in `path` (cgroup.kill, else each process in
  /// cgroup.procs) and removes it; false while it is not empty yet (the
  /// caller tries again later).
  static bool remove(const std::string& path);

 private:
  std::string dir_;
};

/// The delegated tree to run tasks in (find_delegated(configured), then
/// Tree::open), or nothing with a warning that says why and that memory
/// limits fall back to sampling every `memory_sample_interval`.
std::optional<Tree> open_for_tasks(const std::string& configured, core::Duration memory_sample_interval);

}  // namespace claimsched::agent::cgroup
