#pragma once

// The cluster-wide invariants of the claim protocol, checked over what the
// nodes report: no node holds more than its capacity, no task is held twice.

#include <vector>

#include "core/protocol.hpp"
#include "core/status.hpp"

namespace claimsched::core {

struct ClusterTotals {
  Resources capacity;
  Resources allocated;
  Resources claimed;
  uint64_t allocations = 0;
  uint64_t claimed_tasks = 0;
  uint64_t nodes_over_capacity = 0;
  uint64_t duplicate_tasks = 0;
};

/// Sums what the nodes report and checks: each node's allocations + claims fit
/// its capacity and agree with its snapshot; every task (job, index) is
/// allocated at most once over all nodes (a task may be claimed on one node
/// while allocated on another: the claim expires). The error describes the
/// first violation; `totals` is filled either way.
Status check_cluster_invariants(const std::vector<NodeReport>& nodes, ClusterTotals& totals);

/// At rest, a pending task of a non-gang job that fits some node of its pool
/// (free capacity, labels) was stranded by its scheduler (a stale view, a lost
/// wake-up), not by fragmentation. The error names the first such task.
Status check_no_stranded_tasks(const std::vector<NodeReport>& nodes,
                               const std::vector<JobView>& queued);

}  // namespace claimsched::core
