#include "core/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace claimsched::core {

// The last bucket: values of 2^63 and above (magnitude 59 would need one
// more row of sub-buckets) share it; quantile() reports max() for it.
constexpr size_t kLastBucket = size_t{Histogram::kMagnitudes} * Histogram::kSubBuckets - 1;

size_t Histogram::bucket_of(uint64_t v) {
  if (v < kSubBuckets) return static_cast<size_t>(v);
  int msb = 63 - std::countl_zero(v);            // >= kSubBucketBits
  int magnitude = msb - kSubBucketBits + 1;      // 1..
  uint64_t sub = (v >> (msb - kSubBucketBits)) & (kSubBuckets - 1);
  return std::min(static_cast<size_t>(magnitude) * kSubBuckets + static_cast<size_t>(sub),
                  kLastBucket);
}

uint64_t Histogram::upper_bound_of(size_t bucket) {
  size_t magnitude = bucket / kSubBuckets;
  uint64_t sub = bucket % kSubBuckets;
  if (magnitude == 0) return sub;
  int shift = static_cast<int>(magnitude) - 1;
  uint64_t base = (uint64_t{kSubBuckets} | sub) << shift;
  return base + ((uint64_t{1} << shift) - 1);
}

void Histogram::record(uint64_t value, uint64_t times) {
  if (times == 0) return;
  buckets_[bucket_of(value)] += times;
  count_ += times;
  sum_ += value * times;
  max_ = std::max(max_, value);
  min_ = std::min(min_, value);
}

void Histogram::merge(const Histogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

uint64_t Histogram::count_at_most(uint64_t v) const {
  uint64_t n = 0;
  for (size_t b = 0; b <= kLastBucket && upper_bound_of(b) <= v; ++b) n += buckets_[b];
  return n;
}

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return i == kLastBucket ? max_ : std::min(upper_bound_of(i), max_);
  }
  return max_;
}

}  // namespace claimsched::core
