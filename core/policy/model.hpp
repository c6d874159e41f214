#pragma once

// The input of the fair-share and preemption policy: one immutable snapshot of
// a partition (pool tree, classes, users, nodes, jobs with their running
// allocations, the settings, `now`) plus the small memory the policy carries
// from one cycle to the next (PolicyState). Everything here is plain data; the
// policy itself is a pure function of (Snapshot, PolicyState), see policy.hpp.
//
// Names follow the two source documents: YTsaurus's preemption settings keep
// their YTsaurus names and defaults (taken from YTsaurus's pool-tree config,
// since the preemption page gives none); DUCC's class attributes keep DUCC's
// names (deploy/POLICY.md lists every field with its default).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/class_config.hpp"
#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/node.hpp"
#include "core/resources.hpp"

namespace claimsched::core::policy {

using namespace std::chrono_literals;

using core::ClassPolicy;
using core::Limits;
using core::parse_class_policy;
using core::to_string;
/// A scheduling class (DUCC): the same type the live scheduler uses.
using ClassSpec = core::ClassConfig;

/// YTsaurus's preemption settings, with YTsaurus's defaults.
struct PreemptionSettings {
  /// Below fair share this long: starving.
  Duration fair_share_starvation_timeout = 30s;
  /// Below fair share this long (and aggressive starvation enabled): aggressively starving.
  Duration fair_share_aggressive_starvation_timeout = 120s;
  /// below_fair_share when usage share < fair share * tolerance (dominant resource).
  double fair_share_starvation_tolerance = 0.8;
  bool enable_aggressive_starvation = false;
  /// A job below its fair share inherits the starvation of its pool or an ancestor.
  bool enable_pool_starvation = true;
  /// Allocations whose start-time prefix reaches fair share * this are preemptible.
  double preemption_satisfaction_threshold = 1.0;
  /// ... and those whose prefix reaches fair share * this are aggressively
  /// preemptible; must not exceed preemption_satisfaction_threshold.
  double aggressive_preemption_satisfaction_threshold = 0.2;
  /// A job's allocations are non-preemptible while the usage before them is
  /// strictly below this (so a job using less is never preempted). Empty: off.
  Limits non_preemptible_resource_usage_threshold;
  /// Preemptive stages run on a node at most once per this.
  Duration preemptive_scheduling_backoff = 5s;
  /// An interruptible victim gets this long to finish before it is killed.
  Duration allocation_preemption_timeout = 10s;

  Status validate() const;
};

struct PolicySettings {
  PreemptionSettings preemption;
  /// DUCC's share quantum for memory, in bytes: a task's memory is rounded up
  /// to a multiple, a node's memory down. 0: memory is counted exactly.
  int64_t quantum = 0;
  /// DUCC defragmentation: a job that cannot get even one task because space
  /// is fragmented preempts a few tasks of jobs above their fair share.
  bool defragmentation = true;
  /// DUCC's ducc.rm.global_allotment: per user, over all non-preemptible
  /// classes together. Empty: unlimited. users[].allotment overrides it.
  Limits global_allotment;
  /// The class of a job that names none. Empty: such a job is an error.
  std::string default_class;

  Status validate() const;
};

/// Pool options that override the tree-wide preemption settings (YTsaurus
/// allows some settings per pool). Inherited by subpools.
struct PoolOverrides {
  std::optional<Duration> fair_share_starvation_timeout;
  std::optional<Duration> fair_share_aggressive_starvation_timeout;
  std::optional<double> fair_share_starvation_tolerance;
  std::optional<bool> enable_aggressive_starvation;

  friend bool operator==(const PoolOverrides&, const PoolOverrides&) = default;
};

/// A node pool (DUCC nodepool): a set of nodes, a node of the tree.
struct PoolSpec {
  std::string name;
  /// Empty for a root. Several roots are allowed; they never share anything.
  std::string parent;
  /// YTsaurus resource_limits: the usage of all work bound to this pool and its
  /// subpools stays within these; violations are preempted.
  Limits resource_limits;
  PoolOverrides overrides;
};


struct UserSpec {
  std::string name;
  /// Overrides PolicySettings::global_allotment for this user.
  std::optional<Limits> allotment;
};

struct NodeInfo {
  NodeId id;
  std::string name;
  std::string pool;
  Resources capacity;
  /// What the node reports as free (may be negative when over its resources).
  /// Absent: capacity minus the allocations of the snapshot on it.
  std::optional<Resources> free;
  NodeState state = NodeState::up;
  std::vector<std::string> labels;
};

/// The node as a scheduler registers it, and its snapshot with `free` (the
/// views the policy and `policy eval` build from a snapshot).
NodeSpec spec_of(const NodeInfo& n);
NodeSnapshot snapshot_of(const NodeInfo& n, const Resources& free);

/// One running task of a job on a node.
struct AllocationInfo {
  TaskIndex index = 0;
  NodeId node;
  /// When its (last) task started; allocations are classified in this order.
  TimePoint start{0};
  /// The task supports interruption: a preempted one gets a signal and
  /// allocation_preemption_timeout to finish.
  bool interruptible = false;
  /// The task has passed initialization (DUCC).
  bool initialized = false;
  /// Not running yet: a claim in flight or room held for it. It counts as
  /// the job's, but is never a victim (there is nothing to take away yet).
  bool landing = false;
};

/// What DUCC's prediction needs to know about a job, as observed by its agents.
struct PredictionInfo {
  /// Work items (or tasks) not done yet.
  uint64_t remaining_work = 0;
  /// Mean time one allocation takes for one item; zero: not known yet.
  Duration time_per_item{0};
  /// Mean initialization time of the job's tasks.
  Duration init_time{0};
};

struct JobInfo {
  JobId id;
  std::string name;
  std::string user;
  /// Empty: PolicySettings::default_class.
  std::string job_class;
  /// Where its tasks may run: empty for the class's pool, else that pool or
  /// one below it.
  std::string pool;
  Resources per_task;
  /// Tasks not running yet.
  uint32_t pending = 0;
  std::vector<AllocationInfo> allocations;
  /// false: never preempted even in a fair_share class (evictions only), and
  /// never a squatter.
  bool preemptible = true;
  TimePoint submit_time{0};
  std::vector<std::string> constraints;
  /// Some task of the job has passed initialization at some point (DUCC). An
  /// initialized allocation also counts.
  bool initialized = false;
  std::optional<PredictionInfo> prediction;
  /// The scheduler's queue found no node for one task although the free room
  /// of its pools holds one in all (DUCC: fragmented; defragmentation may
  /// open a hole for it).
  bool fragmented = false;
};

struct Snapshot {
  TimePoint now{0};
  PolicySettings settings;
  std::vector<PoolSpec> pools;
  std::vector<ClassSpec> classes;
  std::vector<UserSpec> users;
  std::vector<NodeInfo> nodes;
  std::vector<JobInfo> jobs;
};

/// What the policy remembers between cycles: when each job and pool went below
/// its fair share (the starvation timers) and when each node last ran a
/// preemptive stage (the backoff). Sorted by key; run_cycle returns the next one.
struct PolicyState {
  std::vector<std::pair<JobId, TimePoint>> job_below_fair_share_since;
  std::vector<std::pair<std::string, TimePoint>> pool_below_fair_share_since;
  std::vector<std::pair<NodeId, TimePoint>> node_last_preemptive_scheduling;

  friend bool operator==(const PolicyState&, const PolicyState&) = default;
};

/// Checks everything that can be checked about the snapshot on its own: names
/// resolve, ids are unique, the pool tree has no cycle, numbers are in range.
/// The error names the offending entity and field.
Status validate(const Snapshot& snapshot);

}  // namespace claimsched::core::policy
