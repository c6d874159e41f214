#include "core/locks/operations.hpp"

namespace claimsched::core {

std::string describe(const Operation& op) {
  switch (op.kind) {
    case OperationKind::drain_node:
      return "drain node " + op.node_name;
    case OperationKind::undrain_node:
      return "undrain node " + op.node_name;
    case OperationKind::remove_pool:
      return "remove pool " + op.pool;
    case OperationKind::move_partition:
      return "move partition " + std::to_string(op.partition.value) + " to " + op.member;
  }
  return "unknown operation";
}

LockDeclaration locks_of(const Operation& op) {
  LockDeclaration d;
  if (op.kind == OperationKind::remove_pool) {
    // The pool as a whole goes away: alone on it, after every job that
    // declared a group lock on it (Ganeti's group removal takes the group
    // lock exclusively).
    d[LockLevel::group] = LevelLock::of(LockMode::exclusive, {op.pool});
    return d;
  }
  if (op.kind == OperationKind::move_partition) {
    // Its scheduler changes hands, its running jobs do not: it goes beside
    // jobs that share its pools, after any job (or removal) that holds one
    // of them alone - such a job expects one scheduler from start to end.
    d[LockLevel::group] = LevelLock::of(LockMode::shared, op.pools);
    return d;
  }
  // Both change what may run on the node: alone on it, like a job that
  // rewrites it (Ganeti's node operations take the node lock exclusively).
  d[LockLevel::node] = LevelLock::of(LockMode::exclusive, {op.node_name});
  return d;
}

}  // namespace claimsched::core
