#pragma once

// Fixed-point helpers shared by the policy's phases (internal).

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/policy/result.hpp"
#include "core/placement.hpp"
#include "core/resources.hpp"

namespace claimsched::core::policy {

__extension__ typedef __int128 i128;

inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + ((a % b != 0) && ((a > 0) == (b > 0))); }

/// floor(a * b / c) without overflow in the product; saturates at int64 max.
inline int64_t mul_div_floor(int64_t a, int64_t b, int64_t c) {
  i128 v = static_cast<i128>(a) * b / c;
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

/// share * ratio, both fixed point.
inline Share scale(Share share, Share ratio) { return mul_div_floor(share, ratio, kShareOne); }

/// Dominant share of `r` in `total`, rounded up; 0 if `r` needs a dimension
/// `total` lacks (or `r` is zero).
inline Share dominant_share_ceil(const Resources& r, const Resources& total) {
  Share best = 0;
  for (DimensionId d = 0; d < kMaxDimensions; ++d) {
    if (r[d] <= 0) continue;
    if (total[d] <= 0) return 0;
    i128 num = static_cast<i128>(r[d]) * kShareOne;
    i128 s = (num + total[d] - 1) / total[d];
    best = std::max<Share>(best, s > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                                         : static_cast<Share>(s));
  }
  return best;
}

/// Dominant share of `r` in `total`, rounded down; dimensions `total` lacks are skipped.
inline Share dominant_share_floor(const Resources& r, const Resources& total) {
  Share best = 0;
  for (DimensionId d = 0; d < kMaxDimensions; ++d) {
    if (r[d] <= 0 || total[d] <= 0) continue;
    best = std::max<Share>(best, mul_div_floor(r[d], kShareOne, total[d]));
  }
  return best;
}


}  // namespace claimsched::core::policy
