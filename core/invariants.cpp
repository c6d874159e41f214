#include "core/invariants.hpp"

#include <algorithm>
#include <map>

#include "core/placement.hpp"

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

Status check_policy_invariants(const std::vector<NodeReport>& nodes, const SchedulerConfig& config,
                               const std::function<const JobSpec*(JobId)>& job_of,
                               const std::vector<JobView>& queued, PolicyTotals& totals) {
  totals = PolicyTotals{};
  std::string first_problem;
  auto problem = [&](std::string what) {
    if (first_problem.empty()) first_problem = std::move(what);
  };
  auto class_of = [&](const JobSpec& job) {
    return config.find_class(job.job_class.empty() ? std::string_view(config.default_class) : job.job_class);
  };
  // What each user holds: over all non-preemptible classes, and per class.
  std::map<std::string, Resources> by_user;
  std::map<std::pair<std::string, const ClassConfig*>, Resources> by_user_class;
  for (const auto& n : nodes) {
    if (std::find(config.pools.begin(), config.pools.end(), n.spec.pool) == config.pools.end()) continue;
    for (const auto& a : n.allocations) {
      const JobSpec* job = job_of(a.task.job);
      if (!job) {
        problem("node " + n.spec.name + " runs task " + std::to_string(a.task.job.value) + "." +
                std::to_string(a.task.index) + " of a job nobody submitted");
        continue;
      }
      const ClassConfig* cls = class_of(*job);
      if (!cls || !cls->non_preemptible()) continue;
      ++totals.non_preemptible_tasks;
      Resources held = a.resources;
      if (cls->policy == ClassPolicy::reserve) {
        ++totals.reserved_machines;
        held = reservation_charge(a.resources, config.quantum);
        if (n.allocations.size() != 1 || !n.claims.empty() || !(a.resources == n.snapshot.capacity))
          problem("reservation " + std::to_string(a.task.job.value) + " holds " + a.resources.to_string() +
                  " of node " + n.spec.name + " (" + n.snapshot.capacity.to_string() + ") beside " +
                  std::to_string(n.allocations.size() - 1) + " other allocation(s) and " +
                  std::to_string(n.claims.size()) + " claim(s): not a whole machine of its own");
        if (!reserve_matches(job->per_task, n.snapshot.capacity, config.quantum))
          problem("reservation " + std::to_string(a.task.job.value) + " asked for " + job->per_task.to_string() +
                  " and holds node " + n.spec.name + " of " + n.snapshot.capacity.to_string() +
                  ", whose memory does not match within the quantum");
      }
      by_user[job->user] += held;
      by_user_class[{job->user, cls}] += held;
    }
  }
  for (const auto& [user, held] : by_user)
    if (const Limits& cap = config.allotment_of(user); !cap.allows(held))
      problem("user '" + user + "' holds " + held.to_string() + " of non-preemptible work, over the allotment " +
              cap.to_string());
  for (const auto& [key, held] : by_user_class)
    if (const Limits& cap = key.second->allotment_of(key.first); !cap.allows(held))
      problem("user '" + key.first + "' holds " + held.to_string() + " in class '" + key.second->name +
              "', over its allotment " + cap.to_string());
  for (const auto& view : queued) {
    const ClassConfig* cls = class_of(view.spec);
    uint32_t pending = view.count_in(TaskState::pending);
    if (!cls || !cls->non_preemptible() || pending == 0) continue;
    // A reservation asks for a machine, counted as at least its request.
    Resources asks = cls->policy == ClassPolicy::reserve ? reservation_charge(view.spec.per_task, config.quantum)
                                                         : view.spec.per_task.times(pending);
    const std::string& user = view.spec.user;
    if (!config.allotment_of(user).allows(by_user[user] + asks) ||
        !cls->allotment_of(user).allows(by_user_class[{user, cls}] + asks))
      totals.refused_by_allotment.push_back(view.spec.id);
  }
  if (!first_problem.empty()) return make_error(Errc::wrong_state, first_problem);
  return Status::ok();
}

}  // namespace claimsched::core
