#include "core/policy/policy.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy {

std::string_view to_string(SchedulingStatus s) {
  return s == SchedulingStatus::normal ? "normal" : "below_fair_share";
}

std::string_view to_string(StarvationStatus s) {
  switch (s) {
    case StarvationStatus::non_starving:
      return "non_starving";
    case StarvationStatus::starving:
      return "starving";
    case StarvationStatus::aggressively_starving:
      return "aggressively_starving";
  }
  return "unknown";
}

std::string_view to_string(AllocationClass c) {
  switch (c) {
    case AllocationClass::non_preemptible:
      return "non_preemptible";
    case AllocationClass::aggressively_preemptible:
      return "aggressively_preemptible";
    case AllocationClass::preemptible:
      return "preemptible";
  }
  return "unknown";
}

std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::regular:
      return "regular";
    case Stage::preemptive:
      return "preemptive";
    case Stage::aggressive:
      return "aggressive";
    case Stage::non_preemptible:
      return "non_preemptible";
    case Stage::defragmentation:
      return "defragmentation";
  }
  return "unknown";
}

std::string_view to_string(RemovalKind k) { return k == RemovalKind::preemption ? "preemption" : "eviction"; }

std::string_view to_string(RemovalReason r) {
  switch (r) {
    case RemovalReason::starvation:
      return "starvation";
    case RemovalReason::aggressive_starvation:
      return "aggressive_starvation";
    case RemovalReason::non_preemptible_request:
      return "non_preemptible_request";
    case RemovalReason::defragmentation:
      return "defragmentation";
    case RemovalReason::node_overcommitted:
      return "node_overcommitted";
    case RemovalReason::pool_resource_limits:
      return "pool_resource_limits";
    case RemovalReason::outside_pool:
      return "outside_pool";
  }
  return "unknown";
}

std::string_view to_string(CapReason r) {
  switch (r) {
    case CapReason::none:
      return "none";
    case CapReason::initialization_cap:
      return "initialization_cap";
    case CapReason::expand_by_doubling:
      return "expand_by_doubling";
    case CapReason::prediction:
      return "prediction";
  }
  return "unknown";
}

const JobRow* CycleResult::job(JobId id) const {
  auto it = std::lower_bound(jobs.begin(), jobs.end(), id, [](const JobRow& r, JobId v) { return r.id < v; });
  return it != jobs.end() && it->id == id ? &*it : nullptr;
}

const PoolRow* CycleResult::pool(std::string_view name) const {
  for (const auto& p : pools)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

SchedulingStatus status_of(Share usage, Share fair, double tolerance) {
  return static_cast<i128>(usage) * kShareOne < static_cast<i128>(fair) * ratio_to_share(tolerance)
             ? SchedulingStatus::below_fair_share
             : SchedulingStatus::normal;
}

void fill_shares(ShareRow& row, const Resources& scope, double tolerance) {
  row.scope = scope;
  row.demand_share = dominant_share_floor(row.demand, scope);
  row.fair_share_share = dominant_share_floor(row.fair_share, scope);
  row.usage_share = dominant_share_floor(row.usage, scope);
  row.scheduling = status_of(row.usage_share, row.fair_share_share, tolerance);
}

/// The cycle's result into `out`, whatever it held: its vectors are emptied
/// and filled again (their storage reused; a stage makes one every cycle).
void make_result(const Model& m, Plan&& plan, PolicyState&& next, const std::vector<std::string>& reasons,
                 bool allocation_rows, CycleResult& out, CycleBuffers& buffers) {
  out.now = m.now;
  out.jobs.clear();
  out.pools.clear();
  out.classes.clear();
  out.users.clear();
  // Jobs.
  auto& job_usage = buffers.job_usage;
  auto& job_fair = buffers.job_fair;
  auto& job_demand = buffers.job_demand;
  job_usage.resize(m.jobs.size());
  job_fair.resize(m.jobs.size());
  job_demand.resize(m.jobs.size());
  out.jobs.reserve(m.jobs.size());
  for (uint32_t ji = 0; ji < m.jobs.size(); ++ji) {
    const auto& j = m.jobs[ji];
    JobRow& r = out.jobs.emplace_back();  // filled in place: a row is large
    r.id = j.info->id;
    r.name = j.info->name;
    r.user = j.info->user;
    r.class_name = m.classes[j.cls].spec->name;
    r.pool = m.pools[j.pool].spec->name;
    r.policy = j.policy;
    r.preemptible = j.preemptible;
    r.running = j.running;
    r.pending = j.pending;
    r.cap = j.cap;
    r.cap_reason = j.cap_reason;
    r.task_share = j.delta;
    r.fair_tasks = j.delta > 0 ? static_cast<double>(j.fair) / static_cast<double>(j.delta) : 0.0;
    r.demand = j.per_task.times(j.running + j.pending);
    r.fair_share = fair_share_vector(j);
    for (uint32_t a : j.allocs()) {
      const auto& alloc = m.allocs[a];
      if (!alloc.lost) r.usage += alloc.res;
      if (!allocation_rows) continue;
      AllocationRow ar;
      ar.task = TaskRef{j.info->id, alloc.info->index};
      ar.node = m.nodes[alloc.node].info->id;
      ar.start = alloc.info->start;
      ar.cls = alloc.cls;
      ar.squatter = alloc.squatter;
      ar.interruptible = alloc.info->interruptible;
      ar.lost = alloc.lost;
      r.allocations.push_back(ar);
    }
    r.scope = m.pools[j.pool].scope_capacity;
    r.demand_share = dominant_share_floor(r.demand, r.scope);
    r.fair_share_share = j.fair;
    r.usage_share = j.usage;
    r.scheduling = j.scheduling;
    r.own_starvation = j.own_starvation;
    r.starvation = j.starvation;
    r.below_since = j.below_since;
    if (j.reserve_node != kNone) r.reserved_node = m.nodes[j.reserve_node].info->id;
    r.pending_reason = reasons.empty() ? std::string() : reasons[ji];
    job_usage[ji] = r.usage;
    job_fair[ji] = r.fair_share;
    job_demand[ji] = r.demand;
  }
  // out.jobs is in the model's job order (by id).
  for (const auto& p : plan.placements)
    if (uint32_t ji = m.find_job(p.job); ji != kNone) out.jobs[ji].placed += p.count;
  for (const auto& rm : plan.removals)
    if (uint32_t ji = m.find_job(rm.task.job); ji != kNone) ++out.jobs[ji].removed;
  auto& pool_jobs = buffers.pool_jobs;
  pool_jobs.assign(m.pools.size(), 0);
  for (const auto& j : m.jobs) ++pool_jobs[j.pool];
  for (uint32_t pi : m.postorder)
    if (m.pools[pi].parent != kNone) pool_jobs[m.pools[pi].parent] += pool_jobs[pi];
  // Pools, classes, users: a row each (the vectors grow once; rows are large).
  out.pools.reserve(m.pools.size());
  out.classes.reserve(m.classes.size());
  out.users.reserve(m.groups.size());
  for (uint32_t pi : m.preorder) {
    const auto& p = m.pools[pi];
    PoolRow r;
    r.name = p.spec->name;
    r.parent = p.spec->parent;
    r.own_capacity = p.own_capacity;
    r.resource_limits = p.spec->resource_limits;
    r.demand = p.demand_vec;
    r.fair_share = p.fair_vec;
    r.usage = p.usage_vec;
    r.scope = p.scope_capacity;
    r.demand_share = p.demand_share;
    r.fair_share_share = p.fair_share;
    r.usage_share = p.usage_share;
    r.scheduling = p.scheduling;
    r.starvation = p.starvation;
    r.below_since = p.below_since;
    r.nodes = static_cast<uint32_t>(p.nodes.size());
    r.jobs = pool_jobs[pi];
    out.pools.push_back(std::move(r));
    for (uint32_t ci : p.classes) {
      const auto& c = m.classes[ci];
      ClassRow cr;
      cr.name = c.spec->name;
      cr.pool = p.spec->name;
      cr.priority = c.spec->priority;
      cr.weight = c.spec->weight;
      cr.policy = c.spec->policy;
      cr.users = static_cast<uint32_t>(c.groups.size());
      for (uint32_t g : c.groups) {
        UserRow& ur = out.users.emplace_back();
        ur.class_name = c.spec->name;
        ur.user = std::string(m.users[m.groups[g].user].name);
        ur.jobs = static_cast<uint32_t>(m.groups[g].jobs.size());
        for (uint32_t ji : m.groups[g].jobs) {
          ur.demand += job_demand[ji];
          ur.fair_share += job_fair[ji];
          ur.usage += job_usage[ji];
        }
        fill_shares(ur, p.scope_capacity, p.tolerance);
        // As for jobs: below only while one of its jobs can gain a task.
        const auto& group_jobs = m.groups[g].jobs;
        if (std::none_of(group_jobs.begin(), group_jobs.end(), [&](uint32_t ji) {
              return m.jobs[ji].scheduling == SchedulingStatus::below_fair_share;
            }))
          ur.scheduling = SchedulingStatus::normal;
        cr.jobs += ur.jobs;
        cr.demand += ur.demand;
        cr.fair_share += ur.fair_share;
        cr.usage += ur.usage;
      }
      fill_shares(cr, p.scope_capacity, p.tolerance);
      out.classes.push_back(std::move(cr));
    }
  }
  out.plan = std::move(plan);
  out.next_state = std::move(next);
}

}  // namespace

Status run_cycle(const Snapshot& snapshot, const ClusterView& view, const PolicyState& state, CycleResult& out,
                 CycleBuffers& buffers, bool allocation_rows, bool reasons) {
  Model& model = buffers.model;
  if (auto st = build_model(snapshot, model); !st) return st;
  compute_fair_shares(model);
  PolicyState next;
  compute_statuses(model, state, next);
  buffers.pending_reasons.clear();
  Plan plan = plan_cycle(model, view, state, next, buffers.pending_reasons, reasons, buffers.plan);
  make_result(model, std::move(plan), std::move(next), buffers.pending_reasons, allocation_rows, out, buffers);
  return Status::ok();
}

Expected<CycleResult> run_cycle(const Snapshot& snapshot, const ClusterView& view, const PolicyState& state,
                                bool allocation_rows, bool reasons) {
  CycleBuffers buffers;
  CycleResult out;
  if (auto st = run_cycle(snapshot, view, state, out, buffers, allocation_rows, reasons); !st) return st.error();
  return out;
}

Expected<CycleResult> run_cycle(const Snapshot& snapshot, const PolicyState& state) {
  if (auto s = validate(snapshot); !s) return s.error();
  return run_cycle(snapshot, view_of(snapshot), state);
}

ClusterView view_of(const Snapshot& snap) {
  ClusterView view;
  // Parents before their children.
  std::map<std::string, const PoolSpec*> pools;
  for (const auto& p : snap.pools) pools.emplace(p.name, &p);
  std::function<uint32_t(const PoolSpec&)> add = [&](const PoolSpec& p) -> uint32_t {
    if (auto known = view.find_pool(p.name)) return *known;
    std::optional<uint32_t> parent;
    if (auto it = pools.find(p.parent); !p.parent.empty() && it != pools.end()) parent = add(*it->second);
    return view.add_pool(p.name, parent);
  };
  for (const auto& [name, p] : pools) add(*p);
  // Free room: what the node reports, else capacity minus the snapshot's
  // allocations on it (a reserve's is its whole machine).
  std::map<NodeId, Resources> used;
  std::map<std::string_view, ClassPolicy> policy;
  for (const auto& c : snap.classes) policy.emplace(c.name, c.policy);
  std::map<NodeId, const NodeInfo*> nodes;
  for (const auto& n : snap.nodes) nodes.emplace(n.id, &n);
  for (const auto& j : snap.jobs) {
    auto cls = policy.find(j.job_class.empty() ? snap.settings.default_class : j.job_class);
    bool reserve = cls != policy.end() && cls->second == ClassPolicy::reserve;
    for (const auto& a : j.allocations) {
      auto n = nodes.find(a.node);
      if (n != nodes.end()) used[a.node] += reserve ? n->second->capacity : j.per_task;
    }
  }
  for (const auto& [id, n] : nodes) {
    if (auto pool = view.find_pool(n->pool))
      view.add_node(spec_of(*n), *pool, snapshot_of(*n, n->free ? *n->free : n->capacity - used[n->id]));
  }
  return view;
}

Snapshot apply_plan(const Snapshot& snapshot, const CycleResult& result, TimePoint next_now,
                    const ApplyOptions& options) {
  Snapshot out = snapshot;
  std::map<JobId, JobInfo*> jobs;
  for (auto& j : out.jobs) jobs.emplace(j.id, &j);
  for (const auto& r : result.plan.removals) {
    auto it = jobs.find(r.task.job);
    if (it == jobs.end()) continue;
    auto& allocs = it->second->allocations;
    auto a = std::find_if(allocs.begin(), allocs.end(),
                          [&](const AllocationInfo& x) { return x.index == r.task.index; });
    if (a == allocs.end()) continue;
    allocs.erase(a);
    if (options.requeue_removed) ++it->second->pending;
  }
  for (const auto& p : result.plan.placements) {
    auto it = jobs.find(p.job);
    if (it == jobs.end()) continue;
    JobInfo& j = *it->second;
    TaskIndex next = 0;
    for (const auto& a : j.allocations) next = std::max<TaskIndex>(next, a.index + 1);
    for (uint32_t i = 0; i < p.count && j.pending > 0; ++i) {
      AllocationInfo a;
      a.index = next++;
      a.node = p.node;
      a.start = snapshot.now;
      a.initialized = options.initialized;
      a.interruptible = options.interruptible;
      j.allocations.push_back(a);
      --j.pending;
    }
  }
  for (auto& n : out.nodes) n.free.reset();
  out.now = next_now;
  return out;
}

}  // namespace claimsched::core::policy
