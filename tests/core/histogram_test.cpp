// The latency histogram: quantiles within the promised relative error on
// known distributions, merging, and the edges of the value range.

#include "core/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/random.hpp"

namespace claimsched::core {
namespace {

// 32 sub-buckets: a bucket is at most 1/32 of its lower bound wide.
constexpr double kRelativeError = 1.0 / Histogram::kSubBuckets;

// The exact q-quantile as Histogram defines it: the smallest recorded value v
// with at least q of the values <= v.
uint64_t exact_quantile(std::vector<uint64_t> values, double q) {
  std::sort(values.begin(), values.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

void expect_quantiles_close(const std::vector<uint64_t>& values, const Histogram& h,
                            const char* what) {
  for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0}) {
    uint64_t exact = exact_quantile(values, q);
    uint64_t got = h.quantile(q);
    // Never below the true quantile (an upper bound), at most one bucket above.
    EXPECT_GE(got, exact) << what << " q=" << q;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1 + kRelativeError) + 1)
        << what << " q=" << q << " exact " << exact;
  }
}

TEST(Histogram, EmptyIsAllZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.quantile(0.5), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(Histogram, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v = 0; v < 32; ++v) h.record(v);
  EXPECT_EQ(h.count(), 32u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 31u);
  EXPECT_EQ(h.quantile(0.5), 15u);
  EXPECT_EQ(h.quantile(1.0), 31u);
  EXPECT_EQ(h.quantile(0.0), 0u);
  EXPECT_DOUBLE_EQ(h.mean(), 15.5);
}

TEST(Histogram, QuantilesOfUniformValues) {
  Histogram h;
  std::vector<uint64_t> values;
  for (uint64_t v = 1; v <= 100'000; ++v) {
    h.record(v);
    values.push_back(v);
  }
  expect_quantiles_close(values, h, "uniform");
  EXPECT_EQ(h.quantile(1.0), 100'000u);  // clamped to the maximum
  EXPECT_DOUBLE_EQ(h.mean(), 50'000.5);
}

TEST(Histogram, QuantilesOfSkewedDistributions) {
  Rng rng(7);
  std::vector<uint64_t> exponential, lognormal, bimodal;
  Histogram he, hl, hb;
  for (int i = 0; i < 200'000; ++i) {
    // Latencies in nanoseconds: exponential around 2ms, log-normal over
    // several orders of magnitude, and fast/slow modes.
    auto e = static_cast<uint64_t>(-std::log(1 - rng.unit()) * 2e6);
    double u1 = std::max(rng.unit(), 1e-12), u2 = rng.unit();
    double normal = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    auto l = static_cast<uint64_t>(std::exp(13 + 2 * normal));
    uint64_t b =
        rng.chance(0.9) ? 50'000 + rng.below(10'000) : 3'000'000'000 + rng.below(1'000'000);
    exponential.push_back(e);
    lognormal.push_back(l);
    bimodal.push_back(b);
    he.record(e);
    hl.record(l);
    hb.record(b);
  }
  expect_quantiles_close(exponential, he, "exponential");
  expect_quantiles_close(lognormal, hl, "log-normal");
  expect_quantiles_close(bimodal, hb, "bimodal");
}

TEST(Histogram, RecordManyAtOnce) {
  Histogram once, many;
  for (int i = 0; i < 1000; ++i) once.record(12'345);
  many.record(12'345, 1000);
  many.record(99, 0);  // zero times records nothing
  EXPECT_EQ(many.count(), 1000u);
  EXPECT_EQ(many.quantile(0.5), once.quantile(0.5));
  EXPECT_EQ(many.min(), 12'345u);
  EXPECT_DOUBLE_EQ(many.mean(), 12'345.0);
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  Rng rng(11);
  Histogram a, b, all;
  std::vector<uint64_t> values;
  for (int i = 0; i < 50'000; ++i) {
    uint64_t v = rng.below(1'000'000'000);
    (i % 3 == 0 ? a : b).record(v);
    all.record(v);
    values.push_back(v);
  }
  Histogram merged = a;
  merged.merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.mean(), all.mean());
  for (double q : {0.1, 0.5, 0.9, 0.99}) EXPECT_EQ(merged.quantile(q), all.quantile(q)) << q;
  expect_quantiles_close(values, merged, "merged");
  // Merging an empty histogram changes nothing; merging into one copies.
  Histogram empty;
  merged.merge(empty);
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.count(), all.count());
  empty.merge(a);
  EXPECT_EQ(empty.quantile(0.5), a.quantile(0.5));
  EXPECT_EQ(empty.min(), a.min());
}

TEST(Histogram, HugeValuesStayInRange) {
  // A caller that records a sentinel like UINT64_MAX must not corrupt the
  // histogram: the count, min and max stay exact.
  Histogram h;
  h.record(10);
  h.record(uint64_t{1} << 63);
  h.record(UINT64_MAX);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.min(), 10u);
  EXPECT_EQ(h.max(), UINT64_MAX);
  EXPECT_EQ(h.quantile(1.0), UINT64_MAX);
  EXPECT_EQ(h.quantile(0.3), 10u);
  EXPECT_GE(h.quantile(0.6), uint64_t{1} << 62);
  // Large values below 2^63 keep their 1/32 precision.
  Histogram big;
  big.record(uint64_t{3} << 61);
  EXPECT_GE(big.quantile(0.5), uint64_t{3} << 61);
  EXPECT_LE(static_cast<double>(big.quantile(0.5)),
            static_cast<double>(uint64_t{3} << 61) * (1 + kRelativeError));
}

}  // namespace
}  // namespace claimsched::core
