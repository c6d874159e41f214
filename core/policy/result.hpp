#pragma once

// What one policy cycle says: the fair share, usage and statuses of every pool,
// class, user and job; how every allocation is classified; and the plan of the
// next cycle (what to place, what to preempt or evict, and why). Plain data:
// the scheduler actor executes the plan, `claimsched policy eval` prints it.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.hpp"
#include "core/policy/model.hpp"
#include "core/resources.hpp"

namespace claimsched::core::policy {

/// A fraction of a pool's capacity in fixed point: kShareOne is the whole pool.
/// Every share is relative to the capacity of the pool subtree the entity's
/// work may use (for a job or class: the subtree of the class's pool).
/// kShareOne = lcm(1..16) * 10^6, so halves, thirds, ... sixteenths and
/// decimal fractions of a pool are exact.
using Share = int64_t;
inline constexpr Share kShareOne = 720'720'000'000;

inline double share_to_double(Share s) { return static_cast<double>(s) / static_cast<double>(kShareOne); }

/// YTsaurus scheduling status.
enum class SchedulingStatus : uint8_t {
  /// Usage share >= fair share * fair_share_starvation_tolerance.
  normal = 0,
  below_fair_share,
};

/// YTsaurus starvation status.
enum class StarvationStatus : uint8_t {
  non_starving = 0,
  /// Below fair share for fair_share_starvation_timeout: may preempt preemptible allocations.
  starving,
  /// Below fair share for the aggressive timeout: may also preempt aggressively preemptible ones.
  aggressively_starving,
};

/// YTsaurus allocation classes, by the start-time prefix of the job's usage.
enum class AllocationClass : uint8_t {
  non_preemptible = 0,
  /// Preempted only for aggressively starving jobs.
  aggressively_preemptible,
  preemptible,
};

/// The stage of the cycle that decided a placement.
enum class Stage : uint8_t {
  /// Free resources only.
  regular = 0,
  /// A starving job, in the room of preemptible allocations.
  preemptive,
  /// An aggressively starving job, also in the room of aggressively preemptible ones.
  aggressive,
  /// A fixed_share or reserve request, in the room of fair-share allocations (DUCC).
  non_preemptible,
  /// A job that could not get even one task because space is fragmented (DUCC).
  defragmentation,
};

/// Preemption is policy (fair share, defragmentation, YTsaurus's three
/// reasons); eviction is not (configuration changed, or only non-preemptible
/// work is left to remove). A task's end state says which (TaskState::preempted
/// vs TaskState::evicted).
enum class RemovalKind : uint8_t { preemption = 0, eviction };

enum class RemovalReason : uint8_t {
  /// To start an allocation of a starving job (YTsaurus reason 1).
  starvation = 0,
  /// Same, in the aggressive stage.
  aggressive_starvation,
  /// To make room for a fixed_share or reserve request granted by the how-much phase.
  non_preemptible_request,
  /// DUCC defragmentation.
  defragmentation,
  /// The allocations on the node exceed its resources (YTsaurus reason 2).
  node_overcommitted,
  /// The resource_limits of a pool are violated (YTsaurus reason 3).
  pool_resource_limits,
  /// The node is no longer in a pool the job may use (node or class configuration changed).
  outside_pool,
};
inline constexpr size_t kRemovalReasons = 7;

std::string_view to_string(SchedulingStatus s);
std::string_view to_string(StarvationStatus s);
std::string_view to_string(AllocationClass c);
std::string_view to_string(Stage s);
std::string_view to_string(RemovalKind k);
std::string_view to_string(RemovalReason r);

/// Why a job's demand was capped below running + pending in the how-much phase.
enum class CapReason : uint8_t {
  none = 0,
  initialization_cap,
  expand_by_doubling,
  prediction,
};
std::string_view to_string(CapReason r);

/// Demand, fair share and usage of one entity. Vectors are in accounted units
/// (memory rounded to quanta when a quantum is set); shares are dominant shares
/// of `scope`, the capacity of the pool subtree the entity's work may use.
struct ShareRow {
  Resources demand;
  Resources fair_share;
  Resources usage;
  Resources scope;
  Share demand_share = 0;
  Share fair_share_share = 0;
  Share usage_share = 0;
  SchedulingStatus scheduling = SchedulingStatus::normal;
};

struct PoolRow : ShareRow {
  std::string name;
  std::string parent;
  /// Capacity of the pool's own nodes (up nodes only).
  Resources own_capacity;
  Limits resource_limits;
  StarvationStatus starvation = StarvationStatus::non_starving;
  /// When it went below fair share; kNever when it is not below.
  TimePoint below_since = kNever;
  uint32_t nodes = 0;
  uint32_t jobs = 0;
};

struct ClassRow : ShareRow {
  std::string name;
  std::string pool;
  int32_t priority = 0;
  uint32_t weight = 1;
  ClassPolicy policy = ClassPolicy::fair_share;
  uint32_t users = 0;
  uint32_t jobs = 0;
};

/// A user within one class (DUCC divides a class's share among its users).
struct UserRow : ShareRow {
  std::string class_name;
  std::string user;
  uint32_t jobs = 0;
};

struct AllocationRow {
  TaskRef task;
  NodeId node;
  TimePoint start{0};
  AllocationClass cls = AllocationClass::non_preemptible;
  /// Runs in a subpool of its class's pool (DUCC squatter); evicted first.
  bool squatter = false;
  bool interruptible = false;
  /// On a down node: ignored (the task is lost, not the policy's business).
  bool lost = false;
};

struct JobRow : ShareRow {
  JobId id;
  std::string name;
  std::string user;
  std::string class_name;
  std::string pool;
  ClassPolicy policy = ClassPolicy::fair_share;
  bool preemptible = true;
  uint32_t running = 0;
  uint32_t pending = 0;
  /// Tasks the how-much phase let the job ask for (running + pending, or less).
  uint32_t cap = 0;
  CapReason cap_reason = CapReason::none;
  /// Fair share in tasks (fractional).
  double fair_tasks = 0;
  /// Dominant share of one task.
  Share task_share = 0;
  /// Own status; `starvation` below includes what the job inherits from its pools.
  StarvationStatus own_starvation = StarvationStatus::non_starving;
  StarvationStatus starvation = StarvationStatus::non_starving;
  TimePoint below_since = kNever;
  /// reserve: the machine chosen for it (or running on).
  std::optional<NodeId> reserved_node;
  std::vector<AllocationRow> allocations;
  /// Tasks the plan places for it / removes from it.
  uint32_t placed = 0;
  uint32_t removed = 0;
  /// Why pending tasks stay pending after this cycle, in words; empty if none stay.
  std::string pending_reason;
};

/// Start `count` tasks of `job` on `node`. When `waits_for` is not empty the
/// room comes from those removals: claim only after they have released it.
struct Placement {
  JobId job;
  NodeId node;
  uint32_t count = 1;
  Stage stage = Stage::regular;
  /// What one task takes (a reserve takes the whole machine).
  Resources per_task;
  std::vector<TaskRef> waits_for;
};

/// Remove a running task. For a preemption with `interrupt`, send the task an
/// interruption signal and kill it after `kill_after`; otherwise kill it now.
struct Removal {
  TaskRef task;
  NodeId node;
  RemovalKind kind = RemovalKind::preemption;
  RemovalReason reason = RemovalReason::starvation;
  /// The job the room is for (YTsaurus preempted_for); none for corrections.
  std::optional<JobId> preemptor;
  /// pool_resource_limits: the pool whose limits were violated.
  std::string pool;
  AllocationClass cls = AllocationClass::preemptible;
  bool squatter = false;
  bool interrupt = false;
  Duration kill_after{0};
  /// The decision in words, with the numbers it was made on.
  std::string detail;
};

struct CycleStats {
  uint32_t placements = 0;
  uint32_t tasks_placed = 0;
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  std::array<uint32_t, kRemovalReasons> by_reason{};
  /// Nodes whose preemptive stages were skipped because of preemptive_scheduling_backoff.
  uint32_t nodes_in_backoff = 0;
};

struct Plan {
  std::vector<Placement> placements;
  std::vector<Removal> removals;
  CycleStats stats;
};

struct CycleResult {
  TimePoint now{0};
  /// Pools in tree pre-order (a parent before its subpools, siblings by name).
  std::vector<PoolRow> pools;
  /// Classes by pool (pre-order), then priority (best first), then name.
  std::vector<ClassRow> classes;
  /// By class (as above), then user name.
  std::vector<UserRow> users;
  /// By job id.
  std::vector<JobRow> jobs;
  Plan plan;
  /// Carry this into the next cycle.
  PolicyState next_state;

  const JobRow* job(JobId id) const;
  const PoolRow* pool(std::string_view name) const;
};

}  // namespace claimsched::core::policy
