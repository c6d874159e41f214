#include "core/locks/predictive.hpp"

#include <algorithm>
#include <cstdlib>

namespace claimsched::core {

namespace {

/// One cell of the seed's table: its value when the two name lists meet
/// (j = i) and when they do not; the same for cells that name nothing.
struct Cell {
  LockWeight met;
  LockWeight apart;
};
constexpr Cell same(LockWeight w) { return {w, w}; }

// Rows: the pending job's lock; columns: the running job's lock. Order:
// None, Shared, UnknownShared, AllShared, Exclusive, UnknownExclusive, AllExclusive.
constexpr std::array<std::array<Cell, kLockModes>, kLockModes> kTable{{
    // None
    {same(0), same(0), same(0), same(0), same(0), same(0), same(0)},
    // Shared(i)
    {same(3), same(0), same(0), same(0), Cell{30, 3}, same(15), same(30)},
    // UnknownShared
    {same(3), same(3), same(3), same(3), same(15), same(15), same(30)},
    // AllShared
    {same(3), same(3), same(3), same(3), same(30), same(30), same(30)},
    // Exclusive(i)
    {same(5), Cell{30, 5}, same(15), same(30), Cell{30, 5}, same(15), same(30)},
    // UnknownExclusive
    {same(5), same(15), same(15), same(30), same(15), same(15), same(30)},
    // AllExclusive
    {same(5), same(30), same(30), same(30), same(30), same(30), same(30)},
}};

const LevelLock& all_exclusive() {
  static const LevelLock l{LockMode::all_exclusive, {}};
  return l;
}

}  // namespace

LockWeight lock_weight(const LevelLock& pending, const LevelLock& held) {
  const Cell& c = kTable[static_cast<size_t>(pending.mode)][static_cast<size_t>(held.mode)];
  if (c.met == c.apart) return c.met;
  return names_meet(pending.names, held.names) ? c.met : c.apart;
}

PredictiveValue static_predictive_value(const LockDeclaration& pending, const std::vector<HeldLocks>& running,
                                        LockWeight base_value) {
  PredictiveValue v;
  v.base_value = base_value;
  if (pending.bgl) {
    v.bgl = true;
    v.value = base_value + kBglWeight;
    return v;
  }
  v.value = base_value;
  for (LockLevel level : kAllLockLevels) {
    LevelTerm& term = v.levels[static_cast<size_t>(level)];
    const HeldLocks* worst = nullptr;
    for (const HeldLocks& r : running) {
      LockWeight w = lock_weight(pending[level], r.locks.bgl ? all_exclusive() : r.locks[level]);
      if (!worst || w > term.weight) {
        term.weight = w;
        worst = &r;
      }
    }
    if (worst) {  // words only for the one that counts (this runs per pending job and start)
      term.against = worst->job;
      term.held = worst->locks.bgl ? "bgl" : worst->locks[level].to_string();
    }
    v.value += term.weight;
  }
  return v;
}

std::string format_tenths(LockWeight w) {
  std::string s = std::to_string(w / kTenths);
  if (w % kTenths != 0) s += "." + std::to_string(std::abs(w % kTenths));
  return s;
}

int64_t age_in_ticks(TimePoint queued_at, TimePoint now, Duration tick) {
  if (now <= queued_at || tick.count() <= 0) return 0;
  return (now - queued_at) / tick;
}

int64_t weight_key(LockWeight spv, int64_t age_ticks, uint32_t k) {
  int64_t left = static_cast<int64_t>(k) - std::clamp<int64_t>(age_ticks, 0, k);
  return static_cast<int64_t>(spv) * left;
}

double weight_value(LockWeight spv, int64_t age_ticks, uint32_t k) {
  if (k == 0) return 0;
  return static_cast<double>(weight_key(spv, age_ticks, k)) / (static_cast<double>(kTenths) * k);
}

}  // namespace claimsched::core
