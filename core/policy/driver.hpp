#pragma once

// Runs the fair-share and preemption policy on a live partition scheduler:
// each cycle builds a Snapshot from the scheduler's jobs and view, runs
// run_cycle, and applies what it says. Removals become Scheduler::preempt
// (the allocation ends as preempted or evicted, with the reason and the
// preemptor in words; the task runs again later). Jobs the policy finds below
// their fair share are boosted in the scheduler's queue, the most starving
// first, so the room the removals free goes to them. The scheduler's own
// placement still decides nodes; the plan's placements are advice it agrees
// with, not orders (they may name nodes before victims are gone).
//
// Pure like the rest of core/: time and the scheduler are parameters.

#include <optional>
#include <string>
#include <vector>

#include "core/policy/model.hpp"
#include "core/policy/result.hpp"
#include "core/scheduler.hpp"

namespace claimsched::core::policy {

struct PolicyConfig {
  /// Must hold every pool the scheduler's nodes are in.
  std::vector<PoolSpec> pools;
  std::vector<ClassSpec> classes;
  std::vector<UserSpec> users;
  PolicySettings settings;
  /// How often a cycle runs.
  Duration interval = std::chrono::seconds(1);

  Status validate() const;
};

struct CycleSummary {
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  /// Jobs boosted because they are below their fair share.
  uint32_t boosted = 0;
  /// Removals the scheduler refused (the task ended meanwhile).
  uint32_t skipped = 0;
};

/// Where a job goes in its priority level of the scheduler's queue: above
/// its fair share -2 (last), at it 0, below it 1..100 by how far below, plus
/// 100 when starving and 200 when aggressively starving. (The scheduler
/// itself moves a job that reaches its fair share in tasks to -1: behind
/// those below their share, ahead of those above it.)
int32_t queue_boost(const JobRow& row);

class PolicyDriver {
 public:
  explicit PolicyDriver(PolicyConfig config);

  const PolicyConfig& config() const { return config_; }

  /// The policy's view of `scheduler` at `now`.
  Snapshot snapshot_of(const Scheduler& scheduler, TimePoint now) const;

  /// One cycle: snapshot, run_cycle, apply (releases go to `out`).
  Expected<CycleSummary> cycle(Scheduler& scheduler, TimePoint now, Outbox& out);

  /// The last cycle's result (shares, statuses, plan), for reports and explain.
  const std::optional<CycleResult>& last() const { return last_; }

 private:
  PolicyConfig config_;
  PolicyState state_;
  std::optional<CycleResult> last_;
};

}  // namespace claimsched::core::policy
