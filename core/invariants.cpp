#include "core/invariants.hpp"

#include <algorithm>

namespace claimsched::core {

Status check_cluster_invariants(const std::vector<NodeReport>& nodes, ClusterTotals& totals) {
  totals = ClusterTotals{};
  std::vector<TaskRef> held;
  std::string first_problem;
  auto problem = [&](std::string what) {
    if (first_problem.empty()) first_problem = std::move(what);
  };
  for (const auto& n : nodes) {
    Resources allocated;
    Resources claimed;
    for (const auto& a : n.allocations) {
      allocated += a.resources;
      held.push_back(a.task);
    }
    // Claims are not counted as holding a task: after a reply timeout a
    // scheduler rightly places a task elsewhere while its first claim waits
    // for its ttl; only two allocations of one task are a violation.
    for (const auto& c : n.claims) {
      claimed += c.total();
      totals.claimed_tasks += c.tasks.size();
    }
    totals.capacity += n.snapshot.capacity;
    totals.allocated += allocated;
    totals.claimed += claimed;
    totals.allocations += n.allocations.size();
    if (!(allocated + claimed).fits_in(n.snapshot.capacity)) {
      ++totals.nodes_over_capacity;
      problem("node " + n.spec.name + " is over capacity: allocated " + allocated.to_string() +
              " + claimed " + claimed.to_string() + " > " + n.snapshot.capacity.to_string());
    }
    if (!(n.snapshot.capacity - allocated - claimed == n.snapshot.free))
      problem("node " + n.spec.name + " reports free " + n.snapshot.free.to_string() +
              " but holds allocated " + allocated.to_string() + " + claimed " +
              claimed.to_string() + " of " + n.snapshot.capacity.to_string());
  }
  std::sort(held.begin(), held.end());
  for (size_t i = 1; i < held.size(); ++i) {
    if (held[i] == held[i - 1]) {
      ++totals.duplicate_tasks;
      problem("task " + std::to_string(held[i].job.value) + "." + std::to_string(held[i].index) +
              " is allocated more than once");
    }
  }
  if (!first_problem.empty()) return make_error(Errc::wrong_state, first_problem);
  return Status::ok();
}

Status check_no_stranded_tasks(const std::vector<NodeReport>& nodes,
                               const std::vector<JobView>& queued) {
  for (const auto& job : queued) {
    if (job.spec.gang || job.count_in(TaskState::pending) == 0) continue;
    for (const auto& n : nodes) {
      if (n.spec.pool != job.spec.pool || !job.spec.per_task.fits_in(n.snapshot.free) ||
          !label_selectors_match(job.spec.constraints, n.spec.labels))
        continue;
      return make_error(Errc::wrong_state,
                           "job " + std::to_string(job.spec.id.value) + " has " +
                               std::to_string(job.count_in(TaskState::pending)) +
                               " pending task(s) of " + job.spec.per_task.to_string() +
                               " that fit node " + n.spec.name + " (free " +
                               n.snapshot.free.to_string() + "): stranded by its scheduler");
    }
  }
  return Status::ok();
}

}  // namespace claimsched::core
