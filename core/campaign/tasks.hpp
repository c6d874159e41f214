#pragma once

// The tasks of one campaign: which index is still to dispatch, every copy
// sent to a pool, and the rules that make a campaign finish once per index.
//
// - Dispatch takes the lowest pending indices; a withdrawn or failed copy
//   puts its index back (nothing is lost, nothing is failed by withdrawal).
// - Finalize (the seed's "finalize scheduling"): once nothing is pending,
//   still-running tasks are copied onto free slots, oldest start first, at
//   most `max_replicas` extra copies each. The first copy to succeed wins;
//   the others are to be cancelled and end as `cancelled_by_replica`.
// - An index counts as done exactly once, whatever the order of events.
// - Sinks: a pool where tasks "succeed" in next to no time while the same
//   campaign's tasks elsewhere run much longer, or succeed without the
//   declared output, is abandoned: no more dispatch there, its successes
//   become suspect and their indices run again elsewhere.
//
// Pure: time is a parameter; iteration orders are by index or copy id.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/campaign/spec.hpp"
#include "core/ids.hpp"

namespace claimsched::core::campaign {

/// One copy of a task sent to a pool; ids count from 0 in dispatch order.
using CopyId = uint64_t;

enum class CopyState : uint8_t {
  waiting,               ///< in the pool's queue
  running,
  succeeded,             ///< counted, unless a later sink verdict made it suspect
  failed,                ///< failed, lost or preempted: the index runs again
  withdrawn,             ///< taken back from the queue by flow control
  cancelled_by_replica,  ///< another copy of the index succeeded first
  cancelled,             ///< its pool was abandoned as a sink, or the campaign cancelled
  suspect,               ///< "succeeded" on a pool later found to be a sink
};

std::string_view to_string(CopyState state);

struct TaskCopy {
  CopyId id = 0;
  TaskIndex index = 0;
  std::string pool;
  TimePoint dispatched{0};
  std::optional<TimePoint> started;
  std::optional<TimePoint> ended;
  CopyState state = CopyState::waiting;
  /// Sent by finalize rather than by the ordinary dispatch.
  bool replica = false;

  bool live() const { return state == CopyState::waiting || state == CopyState::running; }
};

/// What a success changes.
struct SuccessOutcome {
  /// This copy made its index done (false: the index was done already).
  bool counted = false;
  /// The other live copies of the index, now to be cancelled.
  std::vector<CopyId> cancel;
};

/// Tunables of sink detection, as named constants rather than magic numbers.
inline constexpr uint32_t kSinkEvidence = 3;
inline constexpr uint32_t kSinkMuchLonger = 10;

/// One pool's record for the declared-output rule (wrong_output_reason).
struct OutputHistory {
  std::string pool;
  /// A copy was ever dispatched there.
  bool tried = false;
  /// Counted successes, and how many of them came without the declared output.
  uint32_t successes = 0;
  uint32_t without_output = 0;
};

/// Whether the campaign's declared output is wrong rather than some pool a
/// sink: no success anywhere produced it, and it was missing in at least two
/// pools, or in every pool tried (then on at least kSinkEvidence tasks).
/// The reason names the template. Nullopt when none is declared, or when
/// some pool produced it (a pool missing it then is a sink: sink_reason).
std::optional<std::string> wrong_output_reason(const std::string& declared_output,
                                               const std::vector<OutputHistory>& pools);

class CampaignTasks {
 public:
  explicit CampaignTasks(uint32_t task_count);

  /// Sends up to `n` pending indices to `pool` (none to an abandoned pool).
  std::vector<CopyId> dispatch(const std::string& pool, uint32_t n, TimePoint now);
  void started(CopyId copy, TimePoint now);
  /// `output_present`: the declared output exists (true when none declared).
  SuccessOutcome succeeded(CopyId copy, TimePoint now, bool output_present = true);
  /// Failed, lost or preempted (best-effort tasks): the index runs again
  /// unless another copy is live or it is done.
  void failed(CopyId copy, TimePoint now);
  /// A copy the caller has cancelled (a replica's loser, a sink's leftovers).
  void cancelled(CopyId copy, TimePoint now);
  /// Takes back up to `n` of `pool`'s waiting copies, newest first; their
  /// indices are pending again.
  std::vector<CopyId> withdraw(const std::string& pool, uint32_t n, TimePoint now);

  /// A withdrawn copy whose job had started after all (withdrawal raced the
  /// pool): live again, running, so that its end counts; its index leaves
  /// pending (a copy sent meanwhile is one more copy: the first success
  /// wins). False, and nothing changes, if it was not withdrawn or its
  /// index is done or the campaign cancelled.
  bool reclaim(CopyId copy, TimePoint started);

  /// Nothing pending, something still running or waiting: finalize time.
  bool finalizing() const;
  /// Finalize: up to `free` replicas on `pool`, for the oldest running
  /// indices first, each with fewer than `max_replicas` replicas already.
  std::vector<CopyId> replicate(const std::string& pool, uint32_t free, uint32_t max_replicas, TimePoint now);

  /// Every pool's record for wrong_output_reason, by pool name.
  std::vector<OutputHistory> output_histories() const;
  /// Why `pool` looks like a sink now, or nullopt.
  std::optional<std::string> sink_reason(const std::string& pool, TimePoint now, Duration sink_runtime) const;
  /// Stops dispatch to `pool`; its successes become suspect and run again.
  /// Returns its live copies, for the caller to cancel.
  std::vector<CopyId> abandon(const std::string& pool, std::string reason);
  bool abandoned(const std::string& pool) const { return abandoned_.contains(pool); }
  /// Why each abandoned pool was abandoned (for `campaign explain`).
  const std::map<std::string, std::string>& abandoned_pools() const { return abandoned_; }

  /// After a restart, a copy sent before it, as the store recorded it: live
  /// again (waiting; its job's status tells the rest), or, with
  /// `succeeded`, the index done by it. Success from before the restart is
  /// not sink evidence (its run time is unknown here). Nullopt, and nothing
  /// changes, when the index is out of range or already done.
  std::optional<CopyId> restore(TaskIndex index, const std::string& pool, bool replica, bool succeeded,
                                TimePoint dispatched);

  /// Cancels everything live (the campaign's cancel): returns those copies.
  std::vector<CopyId> cancel_all(TimePoint now);

  uint32_t task_count() const { return static_cast<uint32_t>(tasks_.size()); }
  uint32_t pending() const { return static_cast<uint32_t>(pending_.size()); }
  uint32_t done() const { return done_; }
  bool complete() const { return done_ == tasks_.size(); }
  uint32_t waiting(const std::string& pool) const;
  uint32_t running(const std::string& pool) const;
  const TaskCopy& copy(CopyId id) const { return copies_.at(id); }
  const std::vector<TaskCopy>& copies() const { return copies_; }
  /// The copy that made `index` done, if it is.
  std::optional<CopyId> winner(TaskIndex index) const;

 private:
  struct Task {
    std::vector<CopyId> live;
    std::optional<CopyId> winner;
    uint32_t replicas = 0;
  };
  struct PoolStats {
    uint32_t waiting = 0;
    uint32_t running = 0;
    uint32_t successes = 0;
    uint32_t without_output = 0;
    uint32_t dispatched = 0;
    std::vector<Duration> success_run_times;
  };

  TaskCopy& live_copy(CopyId id);
  /// Ends a live copy in `state`: counters, the index's live list, and the
  /// index back to pending when nothing else will finish it.
  void end(TaskCopy& c, CopyState state, TimePoint now);
  std::vector<CopyId> launch(const std::string& pool, const std::vector<TaskIndex>& indices, TimePoint now,
                             bool replica);

  std::vector<Task> tasks_;
  std::vector<TaskCopy> copies_;
  std::set<TaskIndex> pending_;
  /// Indices with a live copy, for finalize and sink evidence.
  std::set<TaskIndex> in_flight_;
  std::map<std::string, PoolStats> pools_;
  std::map<std::string, std::string> abandoned_;
  uint32_t done_ = 0;
  bool cancelled_ = false;
};

}  // namespace claimsched::core::campaign
