#pragma once

// A latency histogram with log-linear buckets (HdrHistogram's idea): relative
// error below 1/kSubBuckets at any magnitude, constant memory, mergeable.

#include <array>
#include <cstddef>
#include <cstdint>

namespace claimsched::core {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 5;  // 32 sub-buckets: ~3% error
  static constexpr int kSubBuckets = 1 << kSubBucketBits;
  static constexpr int kMagnitudes = 64 - kSubBucketBits;

  void record(uint64_t value, uint64_t times = 1);
  void merge(const Histogram& other);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  /// The smallest recorded-bucket value v such that at least q (0..1) of the
  /// values are <= v (upper bound of the bucket, clamped to max()).
  uint64_t quantile(double q) const;
  /// The sum of the recorded values.
  uint64_t sum() const { return sum_; }
  /// How many recorded values are at most `v`, to bucket precision: a value
  /// counts if its bucket's upper bound is at most `v` (Prometheus' cumulative
  /// buckets, `le`).
  uint64_t count_at_most(uint64_t v) const;

 private:
  static size_t bucket_of(uint64_t v);
  static uint64_t upper_bound_of(size_t bucket);

  std::array<uint64_t, kMagnitudes * kSubBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = UINT64_MAX;
};

}  // namespace claimsched::core
