#pragma once

// Fair share and preemption: YTsaurus's starvation-driven preemption with
// DUCC's classes, quanta and node pools (issue 4), as one pure function.
//
//   PolicyState state;                         // empty at start
//   auto r = run_cycle(snapshot, state);       // Expected<CycleResult>
//   execute r->plan (removals, then placements whose waits_for are gone)
//   state = r->next_state;                     // carry the timers
//
// run_cycle reads nothing but its arguments: `now` is in the snapshot, there is
// no randomness, ties break on ids, and the same input gives the same output
// whatever the order of the snapshot's vectors.

#include <string>

#include "core/cluster_view.hpp"
#include "core/policy/model.hpp"
#include "core/policy/result.hpp"

namespace claimsched::core::policy {

/// One cycle: how much (fair shares), statuses and allocation classes, and the
/// plan of what to preempt and evict and where the room it makes goes, asking
/// the placement engine over `view` (the scheduler's cluster view). Free room
/// is the scheduler's queue's to fill (see evaluate() for the whole pipeline).
/// Errors are bad snapshots only.
/// Without `allocation_rows` the job rows carry no per-allocation rows: the
/// live scheduler reads only shares, ranks, caps and the plan, and a row per
/// running task every cycle is most of a cycle's allocations. Without
/// `reasons` the job rows carry no pending_reason (words nobody reads).
Expected<CycleResult> run_cycle(const Snapshot& snapshot, const ClusterView& view, const PolicyState& state = {},
                                bool allocation_rows = true, bool reasons = true);
/// The same over a view built from the snapshot (view_of).
Expected<CycleResult> run_cycle(const Snapshot& snapshot, const PolicyState& state = {});

/// The placement engine's view of a snapshot's nodes and pools: what a
/// scheduler that owned every pool of the snapshot would see.
ClusterView view_of(const Snapshot& snapshot);

/// Tables of pools, classes, users, jobs, allocations and the plan, for people.
std::string render_text(const CycleResult& result);

/// Only the tables of pools, classes, users and jobs: demand, fair share,
/// usage, scheduling and starvation status (for `claimsched pools`).
std::string render_shares(const CycleResult& result);

/// Why job `id` is pending, or what happens to it this cycle, in words (for
/// `claimsched explain`). Unknown id: says so.
std::string explain_job(const CycleResult& result, JobId id);

/// One removal in words: what was removed, why, for whom, and how (for the end
/// state of a preempted or evicted task).
std::string describe(const Removal& removal);

struct ApplyOptions {
  /// New allocations have passed initialization (DUCC).
  bool initialized = true;
  /// New allocations support interruption.
  bool interruptible = false;
  /// Removed tasks go back to pending (demand unchanged), as a real scheduler
  /// requeues preempted and evicted tasks.
  bool requeue_removed = true;
};

/// The snapshot after `result`'s plan was carried out completely at
/// snapshot.now (victims gone, placements running from snapshot.now), with
/// time moved to `next_now`. For simulations and tests; node `free` values are
/// dropped (recomputed from the allocations).
Snapshot apply_plan(const Snapshot& snapshot, const CycleResult& result, TimePoint next_now,
                    const ApplyOptions& options = {});

}  // namespace claimsched::core::policy
