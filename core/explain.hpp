#pragma once

// Why a job's tasks wait, as data (`claimsched explain`): a verdict, the words
// for it, and counts over the nodes of the job's pool that a user can check
// (how many nodes match, could ever hold a task, have room now). Computed from
// a scheduler's view, on demand: nothing here runs on the placement path.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/job.hpp"
#include "core/locks/lock_queue.hpp"
#include "core/placement.hpp"

namespace claimsched::core {

/// What the nodes of one pool can do for one task shape.
struct PlacementCounts {
  uint32_t nodes = 0;
  /// Up (not draining, not down).
  uint32_t nodes_up = 0;
  /// Whose labels satisfy the job's constraints (any state).
  uint32_t nodes_matching = 0;
  /// Matching, and big enough for one task when empty (any state).
  uint32_t nodes_big_enough = 0;
  /// Matching, up, and with room for a task now.
  uint32_t nodes_with_room = 0;
  /// Tasks that fit now over all matching up nodes (at most `wanted`).
  uint64_t tasks_fitting_now = 0;
  /// Tasks the matching nodes could hold at once if they were empty (at most
  /// `wanted`): what a gang can ever get.
  uint64_t tasks_fitting_empty = 0;
  /// The matching node that comes closest to holding one task (its capacity;
  /// zero if no node matches).
  Resources largest;
};

/// Counts over the nodes of pool `pool` for `wanted` tasks of `per_task` with
/// `constraints`.
PlacementCounts count_placement(const ClusterView& view, uint32_t pool, const Resources& per_task,
                                 const std::vector<std::string>& constraints, uint64_t wanted);

enum class WaitVerdict : uint8_t {
  /// Every task ended.
  ended = 0,
  /// Nothing pending: every task is placed (or being placed).
  placed,
  /// Waiting for its turn in the queue.
  queued,
  /// Its claims were rejected; it tries again after a backoff.
  backing_off,
  /// Room has appeared; it is placed on the next pass.
  fits_now,
  /// No room now; may fit when capacity frees up.
  unschedulable,
  /// Can never run in its pool as the pool is (no node is big enough, or a
  /// gang larger than the pool).
  unresolvable,
  /// It holds a running slot of its class's lock queue and waits for a lock
  /// another job holds (or wants first).
  waiting_on_lock,
};

std::string_view to_string(WaitVerdict v);

/// A job of a lock queue (Ganeti's): where it stands.
struct LockExplanation {
  QueueOrder order = QueueOrder::fifo;
  std::string declared;
  /// Jobs of its class running or waiting on a lock, and the limit (0: none).
  uint32_t running = 0;
  uint32_t running_limit = 0;
  /// It holds a running slot (else it is in line for one).
  bool started = false;
  /// What it holds now (started), in the declaration's text form.
  std::string held;
  /// Started and waiting: the lock and the job in its way.
  std::optional<LockBlock> block;
  /// In line: its predictive value against the locks held now, its age in
  /// aging ticks and its weight (the seed's formula; the order uses it when
  /// predictive).
  std::optional<PredictiveValue> value;
  int64_t age_ticks = 0;
  double weight = 0;
  /// The job's declaration per level, for the comparison's rows.
  std::array<std::string, kLockLevels> levels;
};

struct Explanation {
  JobId job;
  WaitVerdict verdict = WaitVerdict::queued;
  /// The verdict in words, with the numbers that back it.
  std::string summary;
  uint32_t pending = 0;
  bool gang = false;
  /// Placement counts for its pending tasks (computed only when they wait
  /// for room: unschedulable, unresolvable, fits_now).
  PlacementCounts counts;
  bool counted = false;
  /// Set for a job that goes through its class's lock queue.
  std::optional<LockExplanation> locks;
  /// Backfilling: it holds a reservation to start then, on these nodes.
  std::optional<TimePoint> reserved_start;
  std::vector<NodeId> reserved_nodes;
};

/// The verdict and words for a parked job's pending tasks from `counts`:
/// fits_now, unschedulable or unresolvable (a gang needs all `pending` at once).
void explain_waiting(Explanation& e, const PlacementCounts& counts, std::string_view pool,
                     const Resources& per_task);

/// Why `job` can never run in its pool as the pool is now, or empty if it
/// could: no node big enough (naming the largest), or a gang larger than what
/// the pool holds at once. A pool without nodes says nothing (nodes may come).
std::string never_fits(const PlacementCounts& counts, const JobSpec& job);

}  // namespace claimsched::core
