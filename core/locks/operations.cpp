#include "core/locks/operations.hpp"

namespace claimsched::core {

std::string describe(const Operation& op) {
  return std::string(op.kind == OperationKind::drain_node ? "drain" : "undrain") + " node " + op.node_name;
}

LockDeclaration locks_of(const Operation& op) {
  LockDeclaration d;
  // Both change what may run on the node: alone on it, like a job that
  // rewrites it (Ganeti's node operations take the node lock exclusively).
  d[LockLevel::node] = LevelLock::of(LockMode::exclusive, {op.node_name});
  return d;
}

}  // namespace claimsched::core
