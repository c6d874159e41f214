#include "core/campaign/predictor.hpp"

#include <algorithm>
#include <cmath>

namespace claimsched::core::campaign {

namespace {

/// (NB_SUBMITTED - EXCESS) / NB_SUBMITTED; the floor when nothing was
/// submitted (the waiting tasks are older than the last round).
double adaptive_decrease(const PoolObservation& pool, uint32_t excess, double floor) {
  double submitted = pool.old_ratio * pool.old_free;
  if (submitted <= 0) return floor;
  return (submitted - excess) / submitted;
}

/// 1 / (NB_RUNNING / (OLD_JR * OLD_FREE)).
double adaptive_increase(const PoolObservation& pool) {
  double submitted = pool.old_ratio * pool.old_free;
  if (submitted <= 0 || pool.running == 0) return pool.old_ratio;
  return 1.0 / (pool.running / submitted);
}

}  // namespace

RatioUpdate next_ratio(RatioAlgorithm algorithm, const PoolObservation& pool) {
  double max_resources = std::max<uint32_t>(pool.max_resources, 1);
  double floor = 1.0 / max_resources;
  RatioUpdate out;
  if (pool.waiting > pool.allowed_waiting) {
    out.move = RatioMove::decrease;
    out.excess = pool.waiting - pool.allowed_waiting;
    out.ratio = algorithm == RatioAlgorithm::slow_start ? floor : adaptive_decrease(pool, out.excess, floor);
  } else {
    out.move = RatioMove::increase;
    out.ratio = algorithm == RatioAlgorithm::two_way_adaptive ? adaptive_increase(pool) : pool.old_ratio * 2;
  }
  out.ratio = std::clamp(out.ratio, floor, max_resources);
  return out;
}

FlowDecision flow_control(const RatioUpdate& update, uint32_t free, uint32_t waiting, uint32_t max_waiting,
                          uint32_t undispatched) {
  FlowDecision out;
  if (update.move == RatioMove::decrease) {
    out.withdraw = std::min(update.excess, waiting);
    waiting -= out.withdraw;
  }
  if (free == 0) return out;
  uint64_t wanted = static_cast<uint64_t>(std::ceil(update.ratio * free));
  uint64_t room = uint64_t{free} + max_waiting > waiting ? uint64_t{free} + max_waiting - waiting : 0;
  out.dispatch = static_cast<uint32_t>(std::min({wanted, room, uint64_t{undispatched}}));
  return out;
}

void Throughput::record(TimePoint at, Duration run_time) {
  recent_.push_back(at);
  while (recent_.front() <= at - window_) recent_.pop_front();
  total_run_time_ += run_time;
  ++successes_;
}

double Throughput::per_second(TimePoint now) const {
  auto in_window = std::upper_bound(recent_.begin(), recent_.end(), now - window_);
  auto until_now = std::upper_bound(recent_.begin(), recent_.end(), now);
  auto count = std::max<std::ptrdiff_t>(0, until_now - in_window);
  Duration measured = window_;
  if (first_dispatch_ && now - *first_dispatch_ < window_) measured = now - *first_dispatch_;
  if (measured <= Duration::zero()) return 0;
  return static_cast<double>(count) / std::chrono::duration<double>(measured).count();
}

std::optional<Duration> Throughput::mean_run_time() const {
  if (successes_ == 0) return std::nullopt;
  return total_run_time_ / static_cast<int64_t>(successes_);
}

std::optional<TimePoint> Throughput::eta(TimePoint now, uint64_t remaining) const {
  double rate = per_second(now);
  if (remaining == 0) return now;
  if (rate <= 0) return std::nullopt;
  return now + std::chrono::round<Duration>(std::chrono::duration<double>(remaining / rate));
}

}  // namespace claimsched::core::campaign
