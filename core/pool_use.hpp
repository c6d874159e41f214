#pragma once

// Whether a pool may be removed (`claimsched pool remove`): nothing may use
// it any more. The scheduler gathers what uses it; this decides and says why
// not, in words an operator can act on.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.hpp"
#include "core/node.hpp"
#include "core/error.hpp"

namespace claimsched::core {

/// What uses a pool.
struct PoolUse {
  /// Its jobs not in a final state, in id order.
  std::vector<JobId> unfinished_jobs;
  /// Its nodes registered and not down, by name, with their state.
  std::vector<std::pair<std::string, NodeState>> live_nodes;
  /// Pools below it: removing it would leave them without a parent.
  std::vector<std::string> subpools;
};

/// OK when nothing uses `pool`; else Errc::wrong_state naming what does:
/// "pool p1 is in use: 2 unfinished job(s) (e.g. 123), node a1 is up".
Status check_pool_unused(std::string_view pool, const PoolUse& use);

}  // namespace claimsched::core
