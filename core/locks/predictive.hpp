#pragma once

// Ganeti's predictive value (seeds/ganeti-predictive-queue.txt): how likely a
// pending job is to block on a lock, given the locks the running jobs hold.
// Exactly the seed's table and pseudo-code:
//
//   if job.hasBGL(): return base_value + 15
//   value = base_value
//   for level in lock_levels: value += max(compare(job[level], running_jobs[level]))
//   weight = spv(job) * (1 - job.Age()/K)        (age in ticks, floored at 0)
//
// Weights are kept in tenths (0.3 is 3) so sums and comparisons are exact.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.hpp"
#include "core/locks/declaration.hpp"

namespace claimsched::core {

/// A lock weight in tenths: 0, 3 (0.3), 5 (0.5), 15 (1.5), 30 (3).
using LockWeight = int32_t;
inline constexpr LockWeight kTenths = 10;
/// The big lock's value above base_value: the worst cell (3) times the levels.
inline constexpr LockWeight kBglWeight = 150;

/// The seed's comparison: `pending` is the lock of a job in the queue, `held`
/// the lock a running job holds on the same level (the first and second
/// operands of the seed's table; the table is not symmetric). Named cells
/// ("if j=i") count as equal when the two lists share a name.
LockWeight lock_weight(const LevelLock& pending, const LevelLock& held);

/// What a running job holds (its actual locks, not its declaration).
struct HeldLocks {
  JobId job;
  LockDeclaration locks;
};

/// One level's term of the value: the worst cell and the running job that
/// gave it (none when no running job holds anything there).
struct LevelTerm {
  LockWeight weight = 0;
  std::optional<JobId> against;
  /// The lock `against` holds on this level, in text form.
  std::string held;
};

struct PredictiveValue {
  /// The static predictive value (spv), in tenths.
  LockWeight value = 0;
  LockWeight base_value = 0;
  /// The job declares the big lock: value is base_value + 15.
  bool bgl = false;
  std::array<LevelTerm, kLockLevels> levels;
};

/// The static predictive value of `pending` against the locks of `running`
/// (a running job holding the big lock holds every level all-exclusive).
PredictiveValue static_predictive_value(const LockDeclaration& pending, const std::vector<HeldLocks>& running,
                                        LockWeight base_value);

/// "1.3", "16", "0.5": a weight in tenths as the seed writes it.
std::string format_tenths(LockWeight w);

/// The job's age, quantized: whole ticks since it was queued (0 before).
int64_t age_in_ticks(TimePoint queued_at, TimePoint now, Duration tick);

/// The seed's weight, spv * (1 - age/K) floored at 0, scaled by 10*K so that
/// it is an exact integer: spv_tenths * (K - min(age, K)). Jobs of one queue
/// share K, so this orders them exactly as the weight does. k must be > 0.
int64_t weight_key(LockWeight spv, int64_t age_ticks, uint32_t k);
/// The weight itself (for display): weight_key / (10 K).
double weight_value(LockWeight spv, int64_t age_ticks, uint32_t k);

}  // namespace claimsched::core
