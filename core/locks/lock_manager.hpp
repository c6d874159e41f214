#pragma once

// The partition's lock manager (Ganeti's locking, deterministic): a starting
// job takes its locks one level at a time in a fixed order — the big lock
// first (every job that declares a lock takes it shared, a bgl job
// exclusive), then group, instance, node, node_res, network. A job that
// meets a conflicting lock keeps what it took and waits at that level; when
// locks are released, waiting jobs go on in the order they started. Taking
// levels in one order, and letting a job wait behind an earlier conflicting
// waiter on the same level, rules out deadlock: every wait is for a job at a
// higher level or for an earlier one at the same level.
//
// Unknown modes cannot be resolved here (nobody knows which names): the
// manager takes unknown-shared as all-shared and unknown-exclusive as
// all-exclusive on that level. A caller that learns the names resolves them
// before acquire().

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.hpp"
#include "core/locks/predictive.hpp"

namespace claimsched::core {

/// Where a job waits: the lock it cannot take and the job in its way.
struct LockBlock {
  /// nullopt: the big lock.
  std::optional<LockLevel> level;
  /// The name in conflict, or "*" for the whole level (all/unknown, bgl).
  std::string lock;
  JobId holder;
  /// The job in the way does not hold the lock yet: it waits for it too,
  /// and started earlier.
  bool holder_waits = false;

  /// "node 'n1' held by job 7" and the like.
  std::string to_string() const;
};

/// Two locks on one level that cannot be held at once (unknown as all).
bool locks_conflict(const LevelLock& a, const LevelLock& b);

class LockManager {
 public:
  /// Starts `job` with `locks`: takes what it can, level by level. Returns
  /// nothing when it holds them all, else where it waits. A job already known
  /// is left as it is.
  std::optional<LockBlock> acquire(JobId job, const LockDeclaration& locks);
  /// A job that ran before a restart: its locks are recorded as held without
  /// a check (they were granted before; the store's word is the truth).
  void adopt(JobId job, const LockDeclaration& locks);
  /// Drops everything `job` holds or waits for; waiting jobs go on. Returns
  /// the jobs that now hold all their locks, in the order they started.
  std::vector<JobId> release(JobId job);

  bool knows(JobId job) const { return entries_.contains(job); }
  bool holds_all(JobId job) const;
  /// Where `job` waits, if it does.
  std::optional<LockBlock> blocked_on(JobId job) const;
  /// What `job` holds now (the levels it took so far).
  LockDeclaration held_by(JobId job) const;
  /// What every known job holds, in job id order (the predictive value's
  /// "running jobs").
  std::vector<HeldLocks> holders() const;
  size_t jobs() const { return entries_.size(); }
  size_t waiting() const { return waiting_.size(); }

 private:
  /// Stage 0 is the big lock, stage 1 + l is level l; kStages: all taken.
  static constexpr uint8_t kStages = 1 + kLockLevels;
  struct Entry {
    LockDeclaration locks;
    uint64_t seq = 0;
    /// The next stage to take (kStages: holds everything).
    uint8_t stage = 0;
    std::optional<LockBlock> block;
  };
  /// Takes stages while it can; false when it had to stop.
  bool advance(JobId job, Entry& e);
  std::optional<LockBlock> conflict_at(JobId job, const Entry& e) const;

  std::map<JobId, Entry> entries_;
  /// Waiting jobs by start order.
  std::map<uint64_t, JobId> waiting_;
  uint64_t next_seq_ = 0;
};

}  // namespace claimsched::core
