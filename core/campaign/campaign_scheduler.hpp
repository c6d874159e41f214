#pragma once

// One campaign's scheduler (the seed's "Scheduler", one per running
// campaign): each round, for every pool the metascheduler offers it, in
// order, it
//   0. fails the whole campaign if no pool ever produced its declared output
//      (a wrong path, not a sink: abandoning pool after pool would not help);
//   1. abandons the pool if it has become a sink (its live copies are to be
//      cancelled, its suspect tasks run again elsewhere);
//   2. moves the pool's job ratio with the campaign's algorithm (the first
//      round uses the initial ratio, 1);
//   3. withdraws the excess waiting tasks after a decrease, then dispatches
//      ratio × free tasks within the flood limit;
//   4. at the end of the campaign, replicates still-running tasks onto the
//      slots left free (finalize).
// Task events (start, success, failure) arrive between rounds. Pure: the
// caller runs the copies and says what happened, with the time.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/campaign/predictor.hpp"
#include "core/campaign/spec.hpp"
#include "core/campaign/tasks.hpp"

namespace claimsched::core::campaign {

/// A pool as offered for one round, in task slots.
struct PoolOffer {
  std::string pool;
  uint32_t free = 0;
  uint32_t size = 0;
};

/// What a round asks the caller to do.
struct RoundPlan {
  /// New copies to queue in their pools (replicas included; see TaskCopy).
  std::vector<CopyId> dispatched;
  /// Waiting copies taken back: remove them from their pools' queues.
  std::vector<CopyId> withdrawn;
  /// Live copies to cancel; report each with cancelled() once it is gone.
  std::vector<CopyId> cancel;
  /// Pools abandoned this round as sinks, with the reason.
  std::vector<std::pair<std::string, std::string>> abandoned;
  /// The campaign failed this round (its declared output is wrong): `cancel`
  /// holds every live copy.
  std::optional<std::string> failure;
};

/// Throughput window of the ETA (the seed's Spritz uses recent history).
inline constexpr Duration kThroughputWindow = std::chrono::minutes(10);

/// The predictor's state for one pool (for `campaign status`).
struct PoolFlow {
  double ratio = kInitialRatio;
  uint32_t last_free = 0;
  bool observed = false;
  RatioMove last_move = RatioMove::increase;
  /// This pool's successes for this campaign.
  Throughput throughput{kThroughputWindow};
};

class CampaignScheduler {
 public:
  explicit CampaignScheduler(CampaignSpec spec);

  RoundPlan round(TimePoint now, const std::vector<PoolOffer>& offers);

  void started(CopyId copy, TimePoint now) { tasks_.started(copy, now); }
  /// Success: returns the other live copies of the index, to cancel (every
  /// live copy when this success shows the declared output wrong: failure()).
  SuccessOutcome succeeded(CopyId copy, TimePoint now, bool output_present = true);
  /// Why the campaign failed by itself: no pool ever produced the declared
  /// output (wrong_output_reason). Nothing is dispatched after that.
  const std::optional<std::string>& failure() const { return failure_; }
  void failed(CopyId copy, TimePoint now) { tasks_.failed(copy, now); }
  void cancelled(CopyId copy, TimePoint now) { tasks_.cancelled(copy, now); }
  /// The campaign's cancel: nothing more is dispatched; returns the live
  /// copies, already ended as cancelled, whose jobs the caller stops.
  std::vector<CopyId> cancel_all(TimePoint now) { return tasks_.cancel_all(now); }
  /// A withdrawn copy found running after all (CampaignTasks::reclaim).
  bool reclaim(CopyId copy, TimePoint started) { return tasks_.reclaim(copy, started); }
  /// After a restart (CampaignTasks::restore).
  std::optional<CopyId> restore(TaskIndex index, const std::string& pool, bool replica, bool succeeded,
                                TimePoint dispatched) {
    return tasks_.restore(index, pool, replica, succeeded, dispatched);
  }

  const CampaignSpec& spec() const { return spec_; }
  const CampaignTasks& tasks() const { return tasks_; }
  const std::map<std::string, PoolFlow>& flows() const { return flows_; }
  /// When the campaign should be done at the current throughput.
  std::optional<TimePoint> eta(TimePoint now) const {
    return throughput_.eta(now, tasks_.task_count() - tasks_.done());
  }
  /// The campaign's successes per second over the window.
  double throughput(TimePoint now) const { return throughput_.per_second(now); }
  std::optional<Duration> mean_run_time() const { return throughput_.mean_run_time(); }

 private:
  CampaignSpec spec_;
  CampaignTasks tasks_;
  std::map<std::string, PoolFlow> flows_;
  Throughput throughput_{kThroughputWindow};
  std::optional<std::string> failure_;

  /// Fails the campaign if its declared output is wrong; returns the live
  /// copies it cancels (none if it does not fail now).
  std::vector<CopyId> check_output(TimePoint now);
};

}  // namespace claimsched::core::campaign
