#pragma once

// The cluster-wide invariants of the claim protocol, checked over what the
// nodes report: no node holds more than its capacity, no task is held twice.

#include <vector>

#include <functional>

#include "core/pipeline/scheduler.hpp"
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

struct PolicyTotals {
  /// Tasks of fixed_share and reserve jobs the nodes hold.
  uint64_t non_preemptible_tasks = 0;
  /// Reserve tasks, each on a machine of its own.
  uint64_t reserved_machines = 0;
  /// Pending non-preemptible jobs the allotments refuse: granting them would
  /// take their user past an allotment.
  std::vector<JobId> refused_by_allotment;
};

/// DUCC's rules for non-preemptible work, over what the nodes of one
/// scheduler's pools hold at rest (each partition's scheduler enforces its
/// allotments over the work it holds): what one user's fixed_share and reserve
/// tasks hold is within the user's allotment over all those classes and within
/// each class's allotment, a reservation counted as its whole machine (see
/// reservation_charge); every reserve task holds a whole machine alone whose
/// memory matches its request within the quantum. `job_of` gives a job's
/// spec from its id (nullptr: unknown, an error). Of the `queued` jobs, the
/// non-preemptible ones whose whole request would take their user past an
/// allotment are listed in `totals.refused_by_allotment` (they wait rightly,
/// not stranded). The error names the first violation; `totals` is filled
/// either way.
Status check_policy_invariants(const std::vector<NodeReport>& nodes, const SchedulerConfig& config,
                               const std::function<const JobSpec*(JobId)>& job_of,
                               const std::vector<JobView>& queued, PolicyTotals& totals);

}  // namespace claimsched::core
