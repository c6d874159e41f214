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
//     tasks; other work: one task, the next) and stay fitting for its whole
//     run (T to T + its max_run_time; for ever without one), on the room of
//     each node over time: its room now, plus what the tasks holding room
//     free when they end — a running task at its start plus its job's
//     max_run_time, a claim in flight at now plus it; a task of a job without
//     max_run_time never ends here — minus what the future starts booked
//     before it take, each from its T to its T + max_run_time.
//   - easy: the first such job of the class in queue order; conservative:
//     every such job, in queue order (at most
//     SchedulerConfig::max_future_starts a pass; those behind wait without).
//   - A later job (in queue order, of any class) starts now only if it does
//     not delay a future start: on every node, over its own run, it fits in
//     the room those future starts leave (so one that ends by T is free of
//     that start, and one that runs past T may take only room the start
//     does not need). A job that holds a start of its own is bound so by
//     every other start if it starts before its T or elsewhere; at its T it
//     takes the room it was booked.
//   - No finite T (the room is held by tasks without max_run_time): no
//     future start; the job waits as without backfilling, and says so.
//
// BackfillProfile is the pure part: the room ends of a pass, the search for
// T (a sweep of T over the times room comes, with each node's minimum room
// over [T, T + run) kept per dimension in monotonic deques: O(E log E) for
// E ends and start edges on the nodes searched), and a node's least room
// over a stretch of time.

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
    friend bool operator==(const Part&, const Part&) = default;
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

struct StartSearch;

/// When room frees in the future, over one pass: the ends of the tasks that
/// hold room now, by node.
class BackfillProfile {
 public:
  void clear() {
    ends_.clear();
    sorted_ = 0;
  }
  /// `room` frees on node n at `at` (kNever: never; not recorded). Cheap:
  /// the ends are put in order on the next question.
  void add_end(TimePoint at, NodeIndex n, const Resources& room);
  size_t size() const { return ends_.size(); }
  /// A hash of every end (equal profiles hash equal), and the earliest end
  /// (kNever if none).
  uint64_t print() const;
  TimePoint first_end() const;

  /// The earliest time T >= now at which `tasks` tasks of `per_task` fit at
  /// once on `nodes` (their room now in NodeRoom::free) and keep fitting
  /// until T + `run` (zero: for ever), with the room that frees and the room
  /// `starts` hold (each from its `at` to its until()). Parts go to `nodes`
  /// in their order. Nothing when no finite T exists.
  /// `most_before`: the most tasks that fit at any time before the start
  /// found (or at all, when none is).
  std::optional<FutureStart> earliest(const std::vector<NodeRoom>& nodes, const Resources& per_task, uint32_t tasks,
                                      Duration run, TimePoint now, const std::vector<const FutureStart*>& starts,
                                      uint64_t* most_before = nullptr) const;
  /// The least room node n has (element-wise) over [now, until), from its
  /// room now, what frees there, and what `starts` hold there.
  Resources least_room(NodeIndex n, const Resources& free, TimePoint now, TimePoint until,
                       const std::vector<const FutureStart*>& starts) const;
  /// The same for every `until` at once: the least room over [now, t) at
  /// each time t the room changes (ask it with least_until).
  struct LeastRoom {
    std::vector<std::pair<TimePoint, Resources>> before;
    Resources last;
    Resources least_until(TimePoint until) const;
  };
  LeastRoom least_rooms(NodeIndex n, const Resources& free, TimePoint now,
                        const std::vector<const FutureStart*>& starts) const;
  /// The least room node n has (element-wise) over [from, until) (kNever:
  /// for ever), from >= now.
  Resources least_room_over(NodeIndex n, const Resources& free, TimePoint now, TimePoint from, TimePoint until,
                            const std::vector<const FutureStart*>& starts) const;

  /// earliest(), answered from `last` (the last search, of the same job)
  /// when it must find the same start: the same question (nodes in the same
  /// order, task, count, run, equal starts, a now not earlier, that start
  /// not past), where the nodes whose room grew since (on a node, at some
  /// time from now on, its room now plus what frees by then is more than it
  /// was, in a dimension the task asks for) cannot make an earlier time fit
  /// (together they hold fewer tasks than the old search lacked) and the
  /// old parts still fit over the start's run, the grown nodes not taking
  /// more of them (backfill.cpp says why). Otherwise it searches, and
  /// records the search in `last`. Most passes of a busy cluster search its
  /// first waiting job's start again after a placement that took room
  /// elsewhere or ends before the start, or a task that ended early on a
  /// node or two.
  std::optional<FutureStart> earliest_again(StartSearch& last, const std::vector<NodeRoom>& nodes,
                                            const Resources& per_task, uint32_t tasks, Duration run, TimePoint now,
                                            const std::vector<const FutureStart*>& starts) const;

 private:
  struct End {
    NodeIndex node;
    TimePoint at;
    Resources room;
  };
  /// Sorts what was added since the last question into the rest.
  void settle() const;
  /// By node, then time, up to sorted_; the ends added since after.
  mutable std::vector<End> ends_;
  mutable size_t sorted_ = 0;
};

/// One earliest() search, kept by earliest_again: what it was asked (the
/// profile's ends copied) and what it found.
struct StartSearch {
  bool valid = false;
  std::vector<NodeRoom> nodes;
  Resources per_task;
  uint32_t tasks = 0;
  Duration run{0};
  TimePoint now{0};
  std::vector<FutureStart> starts;
  BackfillProfile profile;
  std::optional<FutureStart> found;
  /// At most this many tasks fit at any time from `now` until found's start.
  uint64_t most_before = 0;
};

}  // namespace claimsched::core
