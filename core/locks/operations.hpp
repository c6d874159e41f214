#pragma once

// The cluster's own operations that go through the lock queue, with the
// locks each takes (Ganeti's static lock declarations per opcode): an
// operator's drain waits its turn behind the jobs that hold its node's lock
// instead of racing them; removing a pool waits behind the jobs that hold a
// group lock on it.

#include <string>
#include <vector>

#include "core/ids.hpp"
#include "core/locks/declaration.hpp"

namespace claimsched::core {

enum class OperationKind : uint8_t {
  /// `claimsched node drain NODE`: the node takes no new work.
  drain_node = 0,
  /// `claimsched node undrain NODE`: it takes work again.
  undrain_node,
  /// `claimsched pool remove POOL`: the partition stops serving the pool,
  /// if nothing uses it (check_pool_unused).
  remove_pool,
  /// `claimsched partition move PARTITION --to MEMBER` (HA): the member that
  /// owns the partition hands it to MEMBER, which keeps it while it lives.
  move_partition,
};

struct Operation {
  OperationKind kind = OperationKind::drain_node;
  NodeId node;
  /// The node's name: jobs name nodes in their lock declarations.
  std::string node_name;
  /// remove_pool: the pool's name (jobs name pools in `group` locks).
  std::string pool;
  /// move_partition: the partition, its pools (set by its scheduler), and the
  /// member it moves to.
  PartitionId partition;
  std::vector<std::string> pools;
  std::string member;
};

/// "drain node a1", "remove pool p1", "move partition 2 to m3".
std::string describe(const Operation& op);
/// The fixed table: drain and undrain take `node` exclusive on that node;
/// remove_pool takes `group` exclusive on the pool; move_partition takes
/// `group` shared on each of the partition's pools.
LockDeclaration locks_of(const Operation& op);

/// Operations share the lock queue with jobs; their ids live at and above
/// this, where no job's id may be (core::validate(JobSpec) refuses them; the
/// gateway's ids stay below 2^63).
inline constexpr uint64_t kFirstOperationId = uint64_t{1} << 63;
inline bool is_operation(JobId id) { return id.value >= kFirstOperationId; }

}  // namespace claimsched::core
