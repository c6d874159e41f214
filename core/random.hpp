#pragma once

// Seeded, platform-independent randomness (std::uniform_*_distribution differ
// between standard libraries; these do not).

#include <cstdint>

namespace claimsched::core {

/// SplitMix64: a stateless mix of a seed and an index, for "the i-th random
/// thing" without keeping state per i.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return mix64(state_ - 0x9E3779B97F4A7C15ULL);
  }
  /// Uniform in [0, n).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }

 private:
  uint64_t state_;
};

}  // namespace claimsched::core
