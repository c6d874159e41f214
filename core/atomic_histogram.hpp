#pragma once

// A histogram that a hot path updates with no lock and no allocation (three
// relaxed atomic additions), read by a metrics scrape on another thread:
// Prometheus' cumulative buckets at fixed bounds, a sum and a count.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace claimsched::core {

/// What a scrape reads: `at_most[i]` values were at most `bounds[i]` (in the
/// exposed unit, ascending); `count` in all, summing to `sum`.
struct HistogramCounts {
  std::vector<double> bounds;
  std::vector<uint64_t> at_most;
  double sum = 0;
  uint64_t count = 0;
};

class AtomicHistogram {
 public:
  /// `bounds` ascending, in the recorded integer unit; `unit` converts that
  /// unit to the exposed one (1e-9: nanoseconds recorded, seconds exposed).
  AtomicHistogram(std::vector<uint64_t> bounds, double unit)
      : bounds_(std::move(bounds)), unit_(unit), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
    for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
  }
  AtomicHistogram(const AtomicHistogram&) = delete;
  AtomicHistogram& operator=(const AtomicHistogram&) = delete;

  void observe(uint64_t value) noexcept {
    // The first bound >= value: Prometheus' `le`.
    auto i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  /// The counts so far. The count is the buckets' sum, so the +Inf bucket and
  /// `_count` always agree; a value observed during the read may be in the
  /// buckets and not yet in the sum, or the other way round.
  HistogramCounts snapshot() const {
    HistogramCounts out;
    out.bounds.reserve(bounds_.size());
    out.at_most.reserve(bounds_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      running += buckets_[i].load(std::memory_order_relaxed);
      out.bounds.push_back(static_cast<double>(bounds_[i]) * unit_);
      out.at_most.push_back(running);
    }
    out.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
    out.sum = static_cast<double>(sum_.load(std::memory_order_relaxed)) * unit_;
    return out;
  }

 private:
  std::vector<uint64_t> bounds_;
  double unit_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> sum_{0};
};

}  // namespace claimsched::core
