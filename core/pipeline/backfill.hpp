#pragma once

// Backfilling (issue 14): the queue stage's reservations of a future start.
// Not the policy's holds (reservations.hpp: room set aside now, claimed once
// victims are freed): a future start books room at a time T that running
// tasks free by then, and keeps later jobs off it unless they leave it alone.
//
// The rules (the scheduler wires them, pipeline/backfill_pass.cpp):
//   - When a job of a class with `backfill = "easy"` or `"conservative"`
//     waits for room, it gets a future start: the earliest time T at which
//     its tasks fit at once (a gang or a fixed_share request: all its pending
//     tasks; other work: one task, the next), computed from when the tasks
//     that hold room now end — a running task at its start plus its job's
//     max_run_time, a claim in flight at now plus it; a task of a job without
//     max_run_time never ends here — and from the future starts made before
//     it, each holding its room from its T until T + its own max_run_time
//     (for ever without one).
//   - easy: the first such job of the class in queue order; conservative:
//     every such job, in the order the pass meets them.
//   - A later job (in queue order, of any class) starts now only if it does
//     not delay a future start: it ends by T (now + its max_run_time <= T),
//     or it takes only room the future start does not need — on each node of
//     the start, what frees there before T beyond what the start needs.
//   - No finite T (the room is held by tasks without max_run_time): no
//     future start; the job waits as without backfilling, and says so.
//
// BackfillProfile is the pure part: the room ends of a pass and the search
// for T, O(ends · log ends) per future start.

#include <optional>
#include <string>
#include <vector>

#include "core/class_config.hpp"
#include "core/cluster_view.hpp"
#include "core/ids.hpp"
#include "core/resources.hpp"

namespace claimsched::core {

/// A job's booked start at a future time (backfilling).
struct FutureStart {
  struct Part {
    NodeIndex node = 0;
    uint32_t tasks = 0;
    /// Room available on the node now that a later job which does not end
    /// by `at` must leave alone: what the start needs there beyond what
    /// frees there before `at` (element-wise, between zero and the room now).
    Resources keep;
  };
  JobId job;
  /// The view's index of the job's pool (its parts are there).
  uint32_t pool = 0;
  BackfillMode mode = BackfillMode::none;
  /// T, the scheduler's time.
  TimePoint at{0};
  /// The job's max_run_time: it holds the room from `at` to `at + run`
  /// (zero: for ever).
  Duration run{0};
  Resources per_task;
  std::vector<Part> parts;

  uint32_t tasks() const;
  /// When it gives the room back (kNever without a run time).
  TimePoint until() const;
  friend bool operator==(const FutureStart&, const FutureStart&) = default;
};

/// A node the search may use, and its room now.
struct NodeRoom {
  NodeIndex node = 0;
  Resources free;
};

/// When room frees in the future, over one pass: the ends of the tasks that
/// hold room now.
class BackfillProfile {
 public:
  void clear() { ends_.clear(); }
  /// `room` frees on node n at `at` (kNever: never; not recorded).
  void add_end(TimePoint at, NodeIndex n, const Resources& room);
  size_t size() const { return ends_.size(); }

  /// The earliest time T >= now at which `tasks` tasks of `per_task` fit at
  /// once on `nodes` (their room now in NodeRoom::free), with the room that
  /// frees by T and the room `starts` hold (each from its `at` to its
  /// until()); the room must stay there for `run` (zero: for ever), so a
  /// start that begins within [T, T + run) counts as holding its room from T.
  /// Parts go to `nodes` in their order. Nothing when no finite T exists.
  std::optional<FutureStart> earliest(const std::vector<NodeRoom>& nodes, const Resources& per_task, uint32_t tasks,
                                      Duration run, TimePoint now, const std::vector<FutureStart>& starts) const;

 private:
  struct End {
    TimePoint at;
    NodeIndex node;
    Resources room;
  };
  std::vector<End> ends_;
};

}  // namespace claimsched::core
