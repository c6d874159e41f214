#include "core/policy/driver.hpp"

#include "core/policy/policy.hpp"

#include <cmath>
#include <map>
#include <set>

namespace claimsched::core::policy {

Status PolicyConfig::validate() const {
  if (interval.count() <= 0)
    return make_error(Errc::invalid_argument, "policy interval must be positive");
  Snapshot probe;
  probe.settings = settings;
  probe.pools = pools;
  probe.classes = classes;
  probe.users = users;
  return policy::validate(probe);
}

PolicyDriver::PolicyDriver(PolicyConfig config) : config_(std::move(config)) {}

int32_t queue_boost(const JobRow& row) {
  // DESIGN.md's order within a priority: by deficit below fair share. Jobs
  // above their share go last, so room freed by preemption (or by tasks
  // ending) reaches the jobs it was freed for, not the ones it came from.
  if (row.usage_share > row.fair_share_share) return -2;
  if (row.fair_share_share <= 0) return 0;
  Share deficit = row.fair_share_share - row.usage_share;
  auto percent = static_cast<int32_t>(std::min<Share>(99, deficit * 100 / row.fair_share_share));
  int32_t boost = 1 + percent;
  if (row.starvation == StarvationStatus::starving) boost += 100;
  if (row.starvation == StarvationStatus::aggressively_starving) boost += 200;
  return boost;
}

Snapshot PolicyDriver::snapshot_of(const Scheduler& scheduler, TimePoint now) const {
  Snapshot snap;
  snap.now = now;
  snap.settings = config_.settings;
  if (snap.settings.default_class.empty()) snap.settings.default_class = scheduler.config().default_class;
  snap.pools = config_.pools;
  snap.classes = config_.classes;
  snap.users = config_.users;
  // The policy sees the partition as it will be once what is under way
  // lands: preempted tasks already gone (their room free), placements in
  // flight already running. Otherwise every cycle until the nodes answer
  // would see the preemptor still starving and preempt again.
  const ClusterView& view = scheduler.view();
  std::vector<Resources> freeing(view.node_count());
  std::set<TaskRef> leaving;
  scheduler.for_each_releasing([&](TaskRef task, NodeId node, const Resources& r) {
    if (auto n = view.find_node(node)) freeing[*n] += r;
    leaving.insert(task);
  });
  std::map<JobId, std::vector<AllocationInfo>> landing;
  scheduler.for_each_claim_in_flight([&](JobId job, const std::vector<TaskIndex>& tasks, NodeId node) {
    for (auto t : tasks) landing[job].push_back(AllocationInfo{t, node, now, false, true});
  });
  snap.nodes.reserve(view.node_count());
  for (NodeIndex n = 0; n < view.node_count(); ++n) {
    const NodeView& v = view.node(n);
    NodeInfo info;
    info.id = v.id;
    info.name = "node-" + std::to_string(v.id.value);
    info.pool = view.pool(v.pool).name;
    info.capacity = v.capacity;
    info.free = v.available() + freeing[n];
    info.state = v.state;
    info.labels = v.labels;
    snap.nodes.push_back(std::move(info));
  }
  scheduler.for_each_job([&](const JobRecord& j) {
    if (j.finished()) return;
    JobInfo info;
    info.id = j.spec.id;
    info.name = j.spec.name;
    info.user = j.spec.user;
    info.job_class = j.spec.job_class;
    info.per_task = j.spec.per_task;
    info.pending = j.pending();
    info.preemptible = j.spec.preemptible;
    info.submit_time = j.spec.submit_time;
    info.constraints = j.spec.constraints;
    info.initialized = true;
    for (TaskIndex t = 0; t < j.tasks.size(); ++t) {
      const TaskRecord& r = j.tasks[t];
      if (r.state != TaskState::running || !r.node || leaving.count(TaskRef{j.spec.id, t})) continue;
      AllocationInfo a;
      a.index = t;
      a.node = view.node(*r.node).id;
      a.start = r.started;
      a.initialized = true;
      info.allocations.push_back(a);
    }
    if (auto it = landing.find(j.spec.id); it != landing.end())
      info.allocations.insert(info.allocations.end(), it->second.begin(), it->second.end());
    snap.jobs.push_back(std::move(info));
  });
  return snap;
}

Expected<CycleSummary> PolicyDriver::cycle(Scheduler& scheduler, TimePoint now, Outbox& out) {
  auto result = run_cycle(snapshot_of(scheduler, now), state_);
  if (!result) return result.error();
  state_ = result->next_state;
  CycleSummary summary;
  for (const Removal& r : result->plan.removals) {
    TaskState kind = r.kind == RemovalKind::preemption ? TaskState::preempted : TaskState::evicted;
    if (scheduler.preempt(r.task, kind, describe(r), now, out, r.preemptor)) {
      ++(kind == TaskState::preempted ? summary.preemptions : summary.evictions);
    } else {
      ++summary.skipped;
    }
  }
  for (const JobRow& row : result->jobs) {
    int32_t boost = queue_boost(row);
    if (boost > 0) ++summary.boosted;
    scheduler.set_fair_share(row.id, boost, static_cast<uint32_t>(std::ceil(row.fair_tasks)));
  }
  last_ = std::move(*result);
  return summary;
}

}  // namespace claimsched::core::policy
