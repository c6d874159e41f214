#pragma once

// The predictor (CiGri's Spritz) and the flow control it drives, per campaign
// and pool.
//
// The job ratio JR is the inverse of the resources one task needs, so that
// a bigger ratio dispatches more: each round the campaign dispatches
// ratio × free tasks to the pool. It starts at 1 (one resource per job).
// After each round the predictor moves it, exactly as the seed writes:
//
//   if (waiting > allowed) decrease JR else increase JR
//
//   slow_start:            increase JR = OLD_JR * 2
//                          decrease JR = 1 / MAX_RESOURCES
//   two_way_adaptive:      increase JR = 1 / (NB_RUNNING / (OLD_JR * OLD_FREE))
//                          decrease JR = (NB_SUBMITTED - EXCESS) / NB_SUBMITTED
//   adaptive_down_exp_up:  increase JR = OLD_JR * 2
//                          decrease JR = (NB_SUBMITTED - EXCESS) / NB_SUBMITTED
//
// with NB_SUBMITTED = OLD_JR * OLD_FREE (the seed's own expansion) and
// EXCESS = waiting - allowed. (The seed's second decrease line is garbled,
// "JR = 1) / (OLD_JR * OLD_FREE)"; its first line and its definition of
// NB_SUBMITTED are what this implements.)
//
// Where a formula has no meaning the ratio does not move: an adaptive
// increase after a round that submitted nothing or with nothing running has
// no evidence to adapt to. The ratio stays within [1 / MAX_RESOURCES,
// MAX_RESOURCES]: below, not even one task per pool would pass (the seed's
// own floor, slow_start's decrease); above, doubling would only overflow,
// since flow control caps every round anyway.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>

#include "core/campaign/spec.hpp"
#include "core/ids.hpp"

namespace claimsched::core::campaign {

inline constexpr double kInitialRatio = 1.0;

/// What the predictor sees of one pool after a round.
struct PoolObservation {
  /// This campaign's tasks waiting in the pool's queue.
  uint32_t waiting = 0;
  /// This campaign's tasks running in the pool.
  uint32_t running = 0;
  /// The seed's "allowed" (CampaignSpec::effective_allowed_waiting).
  uint32_t allowed_waiting = 0;
  /// The pool's size in task slots (MAX_RESOURCES).
  uint32_t max_resources = 1;
  /// The ratio of the previous round and the free slots it was applied to.
  double old_ratio = kInitialRatio;
  uint32_t old_free = 0;
};

/// Which of the seed's two branches a round took.
enum class RatioMove : uint8_t { increase, decrease };

struct RatioUpdate {
  double ratio = kInitialRatio;
  RatioMove move = RatioMove::increase;
  /// Waiting tasks above `allowed` (0 on an increase): flow control
  /// withdraws them.
  uint32_t excess = 0;
};

RatioUpdate next_ratio(RatioAlgorithm algorithm, const PoolObservation& pool);

/// One round's flow control for a pool.
struct FlowDecision {
  /// New tasks to send to the pool.
  uint32_t dispatch = 0;
  /// Waiting tasks to take back (not failed: they return to the campaign).
  uint32_t withdraw = 0;
};

/// ratio × free tasks (rounded up: a positive ratio and a free slot always
/// let one task through), never so many that more than `max_waiting` could
/// wait at once (tasks beyond the free slots wait), never more than
/// `undispatched`; and, after a decrease, the update's excess withdrawn.
FlowDecision flow_control(const RatioUpdate& update, uint32_t free, uint32_t waiting, uint32_t max_waiting,
                          uint32_t undispatched);

/// Throughput over a sliding window, mean run time and ETA of a campaign or
/// of one of its pools. Fed in time order; time is a parameter. Once the
/// first dispatch is known, the rate divides by the part of the window that
/// has elapsed since it: early on the window's empty start (before anything
/// ran) would make the throughput, and so the ETA, look far worse than it is.
class Throughput {
 public:
  explicit Throughput(Duration window) : window_(window) {}

  /// A task succeeded at `at` (not before the previous one) after running
  /// `run_time`.
  void record(TimePoint at, Duration run_time);
  /// A task was dispatched at `at`; the earliest counts (the start of the
  /// measured time). Without one the whole window is the measured time.
  void dispatched(TimePoint at) {
    if (!first_dispatch_ || at < *first_dispatch_) first_dispatch_ = at;
  }
  /// Successes per second over (now - window, now], the window cut to what
  /// has elapsed since the first dispatch.
  double per_second(TimePoint now) const;
  /// Mean run time of every success recorded; nullopt before the first.
  std::optional<Duration> mean_run_time() const;
  /// When `remaining` more successes will have happened at the current
  /// throughput; nullopt while the window holds none.
  std::optional<TimePoint> eta(TimePoint now, uint64_t remaining) const;

 private:
  Duration window_;
  /// Success times, oldest first; those before the last window are dropped.
  std::deque<TimePoint> recent_;
  Duration total_run_time_{0};
  uint64_t successes_ = 0;
  std::optional<TimePoint> first_dispatch_;
};

}  // namespace claimsched::core::campaign
