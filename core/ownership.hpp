#pragma once

// Who owns which partition when several `claimsched server` members run
// (DESIGN.md, "HA"): the pure decisions, with etcd, actors and stores left to
// the callers.
//
// - balance: partitions spread evenly over the live members, moving as few as
//   possible when a member joins or leaves.
// - history: every owner's epoch begins at a sequence number of the
//   partition's change log (its first write, the fence). A store is a prefix
//   of the current owner's log iff it holds nothing an owner after its own
//   epoch never had: consistent_with_history.
// - election: when a partition has no owner, every live member says how far
//   its copy goes; the copy that is consistent and furthest wins, so an
//   acknowledged write (held by the owner and at least one standby) survives
//   the owner's death: choose_owner.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.hpp"

namespace claimsched::core {

/// Owner per partition after rebalancing `partitions` over `members`:
/// every member gets floor(P/N) or ceil(P/N) of them (the larger shares go to
/// the members that hold the most now, then to the first in name order, so a
/// member that joins takes nothing it does not need); a partition stays with
/// its current owner while that owner is live and not above its share; the
/// others go to the members furthest below theirs (ties: name order).
/// A partition `pinned` to a live member (an operator moved it there:
/// `claimsched partition move`) goes to that member and counts towards its
/// share; the others balance around it. A pin to a member not in `members`
/// is ignored.
/// Deterministic: it depends only on its arguments. Empty `members`: empty.
std::map<PartitionId, std::string> balance_partitions(
    const std::vector<PartitionId>& partitions, const std::vector<std::string>& members,
    const std::map<PartitionId, std::string>& current, const std::map<PartitionId, std::string>& pinned = {});

/// When an owner's epoch began: its first write's sequence number.
struct EpochStart {
  Epoch epoch = 0;
  uint64_t first_sequence = 0;

  friend bool operator==(const EpochStart&, const EpochStart&) = default;
};

/// True if a store whose last owner epoch is `store_epoch` and which holds
/// changes up to `applied` is a prefix of the log that `history` (every
/// epoch's start, any order) describes: no epoch after `store_epoch` began at
/// or before `applied`. A store that is not consistent diverged (a deposed
/// owner wrote what its successor never had) and must be rebuilt from a
/// checkpoint of the current owner.
bool consistent_with_history(std::span<const EpochStart> history, Epoch store_epoch, uint64_t applied);

/// A member's bid for a vacant partition.
struct OwnerCandidate {
  std::string member;
  /// How far its copy of the partition goes, and the epoch it was written in.
  uint64_t applied = 0;
  Epoch store_epoch = 0;
  /// False: the member cannot run the partition (its disk failed under it);
  /// it bids so that nobody waits for it, and never wins.
  bool eligible = true;
};

/// The candidate that should own the partition: among the eligible ones
/// consistent with `history`, the one with the most applied; ties go to
/// `preferred` (the balanced owner), then to the smallest name. nullopt if
/// none qualifies.
std::optional<std::string> choose_owner(std::span<const OwnerCandidate> candidates,
                                        std::span<const EpochStart> history, std::string_view preferred);

}  // namespace claimsched::core
