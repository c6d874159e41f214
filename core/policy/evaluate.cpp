// evaluate(): claimsched policy eval as the partition's own pipeline.

#include <algorithm>
#include <map>
#include <set>

#include "core/policy/policy.hpp"
#include "core/policy/stage.hpp"

namespace claimsched::core::policy {

namespace {

/// The scheduler a partition owning every pool of the snapshot would have.
SchedulerConfig config_of(const Snapshot& snap) {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.epoch = 1;
  for (const auto& p : snap.pools) {
    c.pools.push_back(p.name);
    if (!p.parent.empty()) c.pool_parents.emplace_back(p.name, p.parent);
    if (!p.resource_limits.empty()) c.pool_limits.emplace_back(p.name, p.resource_limits);
  }
  c.classes = snap.classes;
  c.default_class = snap.settings.default_class.empty() && !snap.classes.empty() ? snap.classes.front().name
                                                                                  : snap.settings.default_class;
  c.quantum = snap.settings.quantum;
  c.global_allotment = snap.settings.global_allotment;
  for (const auto& u : snap.users)
    if (u.allotment) c.user_allotments.emplace_back(u.name, *u.allotment);
  std::sort(c.user_allotments.begin(), c.user_allotments.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // One pass places everything that fits: the whole queue, claims as big as
  // a node takes (the plan groups them per job and node anyway).
  c.max_claims_in_flight = UINT32_MAX;
  c.max_tasks_per_claim = UINT32_MAX;
  return c;
}

}  // namespace

Expected<CycleResult> evaluate(const Snapshot& snap, const PolicyState& state) {
  if (auto s = validate(snap); !s) return s.error();
  SchedulerConfig config = config_of(snap);
  if (auto s = config.validate(); !s) return s.error();
  Scheduler sched(config);
  // Nodes, in id order (the order a fill-first scan visits them).
  ClusterView reference = view_of(snap);
  std::vector<const NodeInfo*> nodes;
  for (const auto& n : snap.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const NodeInfo* n : nodes) {
    const NodeView& v = reference.node(*reference.find_node(n->id));
    if (auto st = sched.add_node(spec_of(*n), snapshot_of(*n, v.reported_free)); !st) return st.error();
  }
  // Jobs with their allocations: running where the snapshot says, adopted
  // as a node's report would have them adopted.
  std::map<NodeId, std::vector<Allocation>> on_node;
  for (const auto& info : snap.jobs) {
    JobSpec spec;
    spec.id = info.id;
    spec.name = info.name;
    spec.user = info.user;
    spec.job_class = info.job_class.empty() ? config.default_class : info.job_class;
    const ClassConfig* cls = config.find_class(spec.job_class);
    spec.pool = !info.pool.empty() ? info.pool : cls ? cls->pool : std::string();
    spec.per_task = info.per_task;
    spec.preemptible = info.preemptible;
    spec.submit_time = info.submit_time;
    spec.constraints = info.constraints;
    // Tasks: the allocations' indices, the pending ones in the first free
    // indices, anything in between already ended.
    std::set<TaskIndex> used;
    for (const auto& a : info.allocations) used.insert(a.index);
    TaskIndex count = static_cast<TaskIndex>(used.size()) + info.pending;
    if (!used.empty()) count = std::max<TaskIndex>(count, *used.rbegin() + 1);
    spec.count = std::max<TaskIndex>(count, 1);
    std::vector<RestoredTask> tasks;
    uint32_t pending = info.pending;
    for (TaskIndex t = 0; t < spec.count; ++t) {
      RestoredTask r;
      r.index = t;
      if (used.count(t)) {
        auto a = std::find_if(info.allocations.begin(), info.allocations.end(),
                              [&](const AllocationInfo& x) { return x.index == t; });
        r.state = TaskState::running;
        r.node = a->node;
      } else if (pending > 0) {
        --pending;
        r.state = TaskState::pending;
      } else {
        r.state = TaskState::succeeded;
      }
      tasks.push_back(r);
    }
    Resources per_task = info.per_task;
    if (auto st = sched.restore_job(spec, std::move(tasks), snap.now); !st) return st.error();
    for (const auto& a : info.allocations) {
      Allocation al;
      al.task = TaskRef{info.id, a.index};
      al.partition = config.partition;
      al.running = true;
      al.resources = per_task;
      on_node[a.node].push_back(al);
    }
  }
  Outbox out;
  for (const NodeInfo* n : nodes) {
    NodeReport report;
    report.spec.id = n->id;
    report.spec.pool = n->pool;
    report.allocations = on_node[n->id];
    sched.reconcile_node(report, snap.now, out);
  }
  for (const auto& info : snap.jobs)
    for (const auto& a : info.allocations)
      sched.restore_started(TaskRef{info.id, a.index}, a.start, a.initialized);
  out.clear();

  PolicyConfig policy;
  policy.pools = snap.pools;
  policy.settings = snap.settings;
  PolicyStage stage(policy);
  stage.set_state(state);
  for (const auto& n : snap.nodes)
    if (!n.name.empty()) stage.observe_name(n.id, n.name);
  for (const auto& info : snap.jobs) {
    stage.observe(info.id, info.initialized, info.prediction);
    for (const auto& a : info.allocations)
      if (a.interruptible) stage.observe_interruptible(TaskRef{info.id, a.index});
  }
  // Ranked and capped as the last cycle left it, the queue fills free room;
  // then the cycle decides what to take away and where that room goes.
  sched.start(snap.now);
  auto given = stage.rank(sched, snap.now);
  if (!given) return given.error();
  sched.schedule(snap.now, out);
  std::map<std::pair<JobId, NodeId>, Placement> regular;
  std::vector<std::pair<JobId, NodeId>> order;
  for (const auto& c : out.claims) {
    auto key = std::make_pair(c.job, c.node);
    // The queue's placements: free room only (regular), or a
    // non-preemptible request placed whole.
    const JobRecord* j = sched.job(c.job);
    Stage stage_of = j && config.classes[j->class_index].non_preemptible() ? Stage::non_preemptible : Stage::regular;
    auto [it, fresh] = regular.try_emplace(key, Placement{c.job, c.node, 0, stage_of, c.per_task, {}});
    if (fresh) order.push_back(key);
    it->second.count += static_cast<uint32_t>(c.tasks.size());
  }
  auto summary = stage.cycle(sched, snap.now, out);
  if (!summary) return summary.error();
  // The shares and statuses of the state as given; the plan, what stays
  // pending after it and the timers from the cycle.
  const CycleResult& cycle = *stage.last();
  CycleResult result = std::move(*given);
  result.next_state = cycle.next_state;
  result.plan = cycle.plan;
  for (auto& row : result.jobs)
    if (const JobRow* after = cycle.job(row.id)) row.pending_reason = after->pending_reason;
  std::vector<Placement> placements;
  for (const auto& key : order) placements.push_back(regular.at(key));
  for (auto& p : result.plan.placements) placements.push_back(std::move(p));
  result.plan.placements = std::move(placements);
  // Per job, what this cycle places (the queue's share included) and removes.
  for (auto& row : result.jobs) {
    row.placed = 0;
    const JobRow* after = cycle.job(row.id);
    row.removed = after ? after->removed : 0;
  }
  for (const auto& p : result.plan.placements)
    if (auto it = std::lower_bound(result.jobs.begin(), result.jobs.end(), p.job,
                                   [](const JobRow& r, JobId id) { return r.id < id; });
        it != result.jobs.end() && it->id == p.job)
      it->placed += p.count;
  result.plan.stats.placements = static_cast<uint32_t>(result.plan.placements.size());
  result.plan.stats.tasks_placed = 0;
  for (const auto& p : result.plan.placements) result.plan.stats.tasks_placed += p.count;
  return result;
}

}  // namespace claimsched::core::policy
