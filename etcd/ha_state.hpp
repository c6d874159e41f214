#pragma once

// What claimsched keeps in etcd for its HA members, in one place: the keys,
// their values, and the whole state read back from one prefix read.
//
//   <prefix>members/<name>             {"address","host","pid"}   on the member's lease
//   <prefix>owner/<partition>          {"member","epoch"}         on the owner's lease
//   <prefix>epoch/<partition>          "<last epoch handed out>"  permanent, +1 per owner
//   <prefix>history/<partition>/<epoch> "<first sequence>"        permanent: when each epoch began
//   <prefix>candidate/<partition>/<name> {"round","applied","epoch","eligible"} on the member's lease
//   <prefix>pin/<partition>            {"member"}                 on that member's lease
//
// <prefix> is "<[ha] prefix>/<cluster_id>/". An owner key exists only while
// its owner's lease lives: a dead owner's key vanishes with its lease. The
// epoch counter is bumped in the same transaction that creates the owner key
// (if the key is absent and the counter unchanged), so epochs are strictly
// increasing per partition: the fencing token every claim carries. A pin
// (`claimsched partition move`) keeps the partition with its member while
// that member lives: it is on the member's own lease.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ownership.hpp"
#include "etcd/etcd_client.hpp"

namespace claimsched::etcd {

struct MemberRecord {
  std::string name;
  /// host:port of its gateway (clients, agents and peers connect there).
  std::string address;
  std::string host;
  int64_t pid = 0;
  int64_t lease = 0;
};

struct OwnerRecord {
  std::string member;
  core::Epoch epoch = 0;
  int64_t lease = 0;
  /// Names this incarnation of the key (a later owner's is larger).
  int64_t create_revision = 0;
};

struct CandidateRecord {
  std::string member;
  /// The epoch counter the bid is for (the next owner gets round + 1).
  core::Epoch round = 0;
  uint64_t applied = 0;
  core::Epoch store_epoch = 0;
  /// False: it cannot run the partition (see core::OwnerCandidate).
  bool eligible = true;
};

struct PartitionState {
  std::optional<OwnerRecord> owner;
  /// The last epoch handed out, and the counter key's mod revision (0: never).
  core::Epoch epoch_counter = 0;
  int64_t epoch_mod_revision = 0;
  std::vector<core::EpochStart> history;
  std::vector<CandidateRecord> candidates;
  /// The member an operator moved it to (empty: none, balance decides).
  std::string pinned_to;
};

/// Everything under the prefix at one revision.
struct HaState {
  int64_t revision = 0;
  std::map<std::string, MemberRecord> members;
  std::map<core::PartitionId, PartitionState> partitions;
  /// Keys under the prefix that do not parse (named in warnings, ignored).
  std::vector<std::string> malformed;
};

class HaKeys {
 public:
  /// `prefix` is the [ha] prefix ("/claimsched"), `cluster_id` the cluster's.
  HaKeys(std::string prefix, const std::string& cluster_id);

  const std::string& root() const { return root_; }
  std::string member(const std::string& name) const { return root_ + "members/" + name; }
  std::string owner(core::PartitionId p) const { return root_ + "owner/" + std::to_string(p.value); }
  std::string epoch(core::PartitionId p) const { return root_ + "epoch/" + std::to_string(p.value); }
  std::string history(core::PartitionId p, core::Epoch e) const;
  std::string candidate(core::PartitionId p, const std::string& name) const {
    return root_ + "candidate/" + std::to_string(p.value) + "/" + name;
  }
  std::string pin(core::PartitionId p) const { return root_ + "pin/" + std::to_string(p.value); }

  static std::string member_value(const MemberRecord& m);
  static std::string owner_value(const std::string& member, core::Epoch epoch);
  static std::string pin_value(const std::string& member);
  static std::string candidate_value(core::Epoch round, uint64_t applied, core::Epoch store_epoch,
                                     bool eligible = true);

  /// Reads a prefix read's keys back into a state.
  HaState parse(const Range& range) const;

 private:
  std::string root_;
};

}  // namespace claimsched::etcd
