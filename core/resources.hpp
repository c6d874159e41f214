#pragma once

// Resources: a vector of named non-negative integer dimensions. cpu is in
// millicores, memory and disk in bytes, gpu and operator-defined dimensions in
// units. This is the one place that does resource arithmetic and `fits`.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace claimsched::core {

using DimensionId = uint8_t;

/// Dimensions are a fixed-size array rather than a map: a node, a claim and an
/// allocation each carry several Resources, and 10k nodes with 100 tasks each
/// must stay small and cheap to compare. Eight covers the four built-in
/// dimensions plus four operator-defined ones.
inline constexpr size_t kMaxDimensions = 8;

namespace dim {
inline constexpr DimensionId cpu = 0;
inline constexpr DimensionId memory = 1;
inline constexpr DimensionId gpu = 2;
inline constexpr DimensionId disk = 3;
}  // namespace dim

/// Maps dimension names to ids. Process-wide and append-only: ids depend on
/// the order in which operator-defined names first appear, so ids never cross
/// a process boundary (the wire and the disk use names).
class DimensionRegistry {
 public:
  /// Returns the id of `name`, registering it if new.
  static Expected<DimensionId> intern(std::string_view name);
  /// The error intern(name) would give for a name not registered yet, if
  /// `pending` (other new names, to be registered with it) were registered
  /// first: an invalid name, or too many dimensions. Registers nothing.
  static Status check_new_name(std::string_view name, const std::vector<std::string>& pending);
  static std::optional<DimensionId> find(std::string_view name);
  static std::string_view name(DimensionId id);
  /// Number of registered dimensions (ids are 0 .. count()-1).
  static size_t count();
};

class Resources {
 public:
  constexpr Resources() = default;

  static Resources of(std::initializer_list<std::pair<DimensionId, int64_t>> values) {
    Resources r;
    for (auto [d, v] : values) r.values_[d] = v;
    return r;
  }
  static Resources cpu_memory(int64_t millicores, int64_t memory_bytes) {
    return of({{dim::cpu, millicores}, {dim::memory, memory_bytes}});
  }

  /// Parses `cpu=2,memory=4Gi,gpu=1` (also `cpu=500m`, `cpu=1.5`,
  /// `memory=512Mi`, `disk=10G`). Unknown names become operator-defined
  /// dimensions. The error names the offending item.
  static Expected<Resources> parse(std::string_view text);

  /// The inverse of parse: `cpu=2,memory=4Gi`; zero dimensions are omitted.
  std::string to_string() const;

  int64_t operator[](DimensionId d) const { return values_[d]; }
  void set(DimensionId d, int64_t v) { values_[d] = v; }

  Resources& operator+=(const Resources& o) {
    for (size_t i = 0; i < kMaxDimensions; ++i) values_[i] += o.values_[i];
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    for (size_t i = 0; i < kMaxDimensions; ++i) values_[i] -= o.values_[i];
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  Resources times(int64_t n) const {
    Resources r = *this;
    for (auto& v : r.values_) v *= n;
    return r;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  /// True if every dimension of this is <= the same dimension of `available`.
  bool fits_in(const Resources& available) const {
    for (size_t i = 0; i < kMaxDimensions; ++i)
      if (values_[i] > available.values_[i]) return false;
    return true;
  }
  /// How many copies of this fit in `available` (a large number if this is zero).
  /// Inline, as min and max: placement and the capacity index call them
  /// millions of times a replay.
  int64_t copies_fitting_in(const Resources& available) const {
    int64_t best = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < kMaxDimensions; ++i) {
      if (values_[i] <= 0) continue;
      best = std::min(best, std::max<int64_t>(available.values_[i], 0) / values_[i]);
    }
    return best;
  }
  /// Element-wise minimum / maximum.
  Resources min(const Resources& o) const {
    Resources r;
    for (size_t i = 0; i < kMaxDimensions; ++i) r.values_[i] = values_[i] < o.values_[i] ? values_[i] : o.values_[i];
    return r;
  }
  Resources max(const Resources& o) const {
    Resources r;
    for (size_t i = 0; i < kMaxDimensions; ++i) r.values_[i] = values_[i] < o.values_[i] ? o.values_[i] : values_[i];
    return r;
  }

  bool is_zero() const {
    for (auto v : values_)
      if (v != 0) return false;
    return true;
  }
  bool any_negative() const {
    for (auto v : values_)
      if (v < 0) return true;
    return false;
  }

  /// max over dimensions of this[d] / total[d], for dimensions where total > 0.
  /// A demand in a dimension the total lacks makes the share infinite.
  double dominant_share(const Resources& total) const;
  /// The dimension that realises dominant_share (cpu if all are zero).
  DimensionId dominant_dimension(const Resources& total) const;

  const std::array<int64_t, kMaxDimensions>& values() const { return values_; }

 private:
  std::array<int64_t, kMaxDimensions> values_{};
};

/// Parses a single quantity for dimension `d` ("2", "500m", "4Gi").
Expected<int64_t> parse_quantity(DimensionId d, std::string_view text);
/// Formats a single quantity for dimension `d` the way parse_quantity reads it.
std::string format_quantity(DimensionId d, int64_t value);

}  // namespace claimsched::core
