// build_model: the snapshot indexed for the phases (see engine.hpp).

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy {

namespace {

/// Memory rounded up (tasks) or down (nodes) to the quantum.
Resources round_task(Resources r, int64_t quantum) {
  if (quantum > 0 && r[dim::memory] > 0) r.set(dim::memory, ceil_div(r[dim::memory], quantum) * quantum);
  return r;
}

Resources round_node(Resources r, int64_t quantum) {
  if (quantum > 0) r.set(dim::memory, r[dim::memory] / quantum * quantum);
  return r;
}

/// Keeps the capacities not dominated by another one, sorted.
void pareto(std::vector<Resources>& shapes) {
  // A pool's nodes are mostly alike: repeats are dropped first by a scan
  // against the few distinct shapes (this runs every policy cycle), so the
  // sort sees those only. Many distinct shapes: the sort alone.
  constexpr size_t kScanned = 16;
  size_t distinct = 0;
  for (size_t i = 0; i < shapes.size() && distinct <= kScanned; ++i) {
    bool seen = false;
    for (size_t k = 0; k < distinct && !seen; ++k) seen = shapes[k] == shapes[i];
    if (!seen) shapes[distinct++] = shapes[i];
  }
  if (distinct <= kScanned) shapes.resize(distinct);
  std::sort(shapes.begin(), shapes.end(),
            [](const Resources& a, const Resources& b) { return a.values() < b.values(); });
  shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
  // Compacted in place (the vector keeps its storage for the next cycle).
  // A shape dropped before i is dominated by one never dropped (domination
  // is transitive), so asking the kept ones [0, kept) and the shapes not yet
  // looked at (i, size) finds what asking every original would.
  size_t kept = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    bool dominated = false;
    for (size_t k = 0; k < kept && !dominated; ++k)
      dominated = shapes[i].fits_in(shapes[k]) && !(shapes[i] == shapes[k]);
    for (size_t k = i + 1; k < shapes.size() && !dominated; ++k)
      dominated = shapes[i].fits_in(shapes[k]) && !(shapes[i] == shapes[k]);
    if (!dominated) shapes[kept++] = shapes[i];
  }
  shapes.resize(kept);
}

bool fits_some(const Resources& r, const std::vector<Resources>& shapes) {
  for (const auto& s : shapes)
    if (r.fits_in(s)) return true;
  return false;
}

/// DUCC's job cap (RmJob.initJobCap), in tasks. Growth is measured from the
/// tasks that run (j.started), not those landing this cycle.
uint32_t ducc_cap(const ModelJob& j, const ClassSpec& cls, CapReason& reason) {
  reason = CapReason::none;
  uint32_t base = j.running + j.pending;
  if (j.policy != ClassPolicy::fair_share) return base;
  uint32_t potential = base;
  const auto& pred = j.info->prediction;
  if (cls.prediction && pred && j.initialized && pred->time_per_item.count() > 0) {
    // Work the running tasks get done before a new task could be initialized
    // (plus the fudge); what is left is what new tasks could help with.
    double target = static_cast<double>((pred->init_time + cls.prediction_fudge).count());
    double done = std::round(target * j.started / static_cast<double>(pred->time_per_item.count()));
    uint64_t projected = done >= static_cast<double>(pred->remaining_work)
                             ? 0
                             : pred->remaining_work - static_cast<uint64_t>(done);
    if (projected < base) {
      potential = std::max<uint32_t>(static_cast<uint32_t>(projected), j.started);
      if (potential < base) reason = CapReason::prediction;
    }
  }
  bool init_wait = !j.initialized;
  uint32_t cap = potential;
  if (init_wait && cls.initialization_cap > 0) {
    cap = std::min(potential, cls.initialization_cap);
    if (cap < potential) reason = CapReason::initialization_cap;
  } else if (!init_wait && cls.expand_by_doubling) {
    cap = j.started == 0 ? std::min(base, std::max<uint32_t>(1, cls.initialization_cap))
                         : static_cast<uint32_t>(std::min<uint64_t>(potential, 2ULL * j.started));
    if (cap < potential) reason = CapReason::expand_by_doubling;
  }
  return cap;
}

}  // namespace

bool Model::in_subtree(uint32_t pool, uint32_t ancestor) const {
  while (pool != kNone && pools[pool].depth >= pools[ancestor].depth) {
    if (pool == ancestor) return true;
    pool = pools[pool].parent;
  }
  return false;
}

uint32_t Model::find_job(JobId id) const {
  auto it = std::lower_bound(jobs.begin(), jobs.end(), id,
                             [](const ModelJob& j, JobId v) { return j.info->id < v; });
  return it != jobs.end() && it->info->id == id ? static_cast<uint32_t>(it - jobs.begin()) : kNone;
}

Share ratio_to_share(double ratio) {
  return static_cast<Share>(std::llround(ratio * static_cast<double>(kShareOne)));
}

Expected<Model> build_model(const Snapshot& snap) {
  Model m;
  if (auto s = build_model(snap, m); !s) return s.error();
  return m;
}

void Model::clear() {
  // Every element is set to a default one by assignment: the vectors and
  // strings inside keep their storage for the next cycle.
  static const ModelPool kPool;
  static const ModelClass kClass;
  static const ModelJob kJob;
  for (auto& p : pools) p = kPool;
  for (auto& c : classes) c = kClass;
  for (auto& j : jobs) j = kJob;
  preorder.clear();
  postorder.clear();
  groups.clear();
  users.clear();
  // Nodes keep their places: build_model sets every field of each.
  allocs.clear();
  node_allocs.clear();
  dims.clear();
  fair.clear();
  packed_job.clear();
  packed_r.clear();
  packed_delta.clear();
  packed_demand.clear();
  np_jobs.clear();
  np_user_usage.clear();
  np_group_usage.clear();
}

Status build_model(const Snapshot& snap, Model& m) {
  if (auto s = validate(snap); !s) return s;
  const auto& settings = snap.settings;
  const int64_t quantum = settings.quantum;
  m.clear();
  Model::Scratch& x = m.scratch;
  m.snapshot = &snap;
  m.now = snap.now;
  m.tolerance_default = ratio_to_share(settings.preemption.fair_share_starvation_tolerance);
  m.preemption_threshold = ratio_to_share(settings.preemption.preemption_satisfaction_threshold);
  m.aggressive_threshold = ratio_to_share(settings.preemption.aggressive_preemption_satisfaction_threshold);

  // Pools, by name; the tree in pre-order and post-order.
  auto& pool_specs = x.pool_specs;
  pool_specs.clear();
  for (const auto& p : snap.pools) pool_specs.push_back(&p);
  std::sort(pool_specs.begin(), pool_specs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  auto& pool_index = x.pool_index;
  pool_index.clear();
  m.pools.resize(pool_specs.size());
  for (uint32_t i = 0; i < pool_specs.size(); ++i) {
    m.pools[i].spec = pool_specs[i];
    pool_index.emplace(pool_specs[i]->name, i);
  }
  auto& roots = x.roots;
  roots.clear();
  for (uint32_t i = 0; i < m.pools.size(); ++i) {
    const auto& parent = m.pools[i].spec->parent;
    if (parent.empty()) {
      roots.push_back(i);
    } else {
      m.pools[i].parent = pool_index.at(parent);
      m.pools[m.pools[i].parent].children.push_back(i);  // by name: i ascends
    }
  }
  auto& stack = x.stack;
  stack.clear();
  for (auto r = roots.rbegin(); r != roots.rend(); ++r) stack.push_back({*r, 0});
  // Iterative DFS: pre-order on entry, post-order on exit.
  while (!stack.empty()) {
    auto& [p, next] = stack.back();
    if (next == 0) m.preorder.push_back(p);
    if (next < m.pools[p].children.size()) {
      uint32_t c = m.pools[p].children[next++];
      m.pools[c].depth = m.pools[p].depth + 1;
      stack.push_back({c, 0});
    } else {
      m.postorder.push_back(p);
      stack.pop_back();
    }
  }
  for (uint32_t p : m.preorder) {
    auto& pool = m.pools[p];
    const auto& o = pool.spec->overrides;
    const auto& pre = settings.preemption;
    if (pool.parent == kNone) {
      pool.starvation_timeout = pre.fair_share_starvation_timeout;
      pool.aggressive_starvation_timeout = pre.fair_share_aggressive_starvation_timeout;
      pool.tolerance = pre.fair_share_starvation_tolerance;
      pool.aggressive_enabled = pre.enable_aggressive_starvation;
    } else {
      const auto& parent = m.pools[pool.parent];
      pool.starvation_timeout = parent.starvation_timeout;
      pool.aggressive_starvation_timeout = parent.aggressive_starvation_timeout;
      pool.tolerance = parent.tolerance;
      pool.aggressive_enabled = parent.aggressive_enabled;
    }
    if (o.fair_share_starvation_timeout) pool.starvation_timeout = *o.fair_share_starvation_timeout;
    if (o.fair_share_aggressive_starvation_timeout)
      pool.aggressive_starvation_timeout = *o.fair_share_aggressive_starvation_timeout;
    if (o.fair_share_starvation_tolerance) pool.tolerance = *o.fair_share_starvation_tolerance;
    if (o.enable_aggressive_starvation) pool.aggressive_enabled = *o.enable_aggressive_starvation;
  }

  // Classes, by name.
  auto& class_specs = x.class_specs;
  class_specs.clear();
  for (const auto& c : snap.classes) class_specs.push_back(&c);
  std::sort(class_specs.begin(), class_specs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  // Lookups only (nothing iterates it), so hashing is safe for determinism.
  auto& class_index = x.class_index;
  class_index.clear();
  m.classes.resize(class_specs.size());
  for (uint32_t i = 0; i < class_specs.size(); ++i) {
    m.classes[i].spec = class_specs[i];
    m.classes[i].pool = pool_index.at(class_specs[i]->pool);
    class_index.emplace(class_specs[i]->name, i);
    m.pools[m.classes[i].pool].classes.push_back(i);
  }
  for (auto& pool : m.pools)
    std::stable_sort(pool.classes.begin(), pool.classes.end(), [&](uint32_t a, uint32_t b) {
      return m.classes[a].spec->priority > m.classes[b].spec->priority;
    });

  // Users: those configured and those that own jobs, by name. Distinct names
  // are found by hashing (lookups only), then sorted.
  auto& user_index = x.user_index;
  user_index.clear();
  auto& user_names = x.user_names;
  user_names.clear();
  for (const auto& u : snap.users)
    if (user_index.emplace(u.name, 0).second) user_names.push_back(u.name);
  // Each job's entry, by its place in snap.jobs: its user's index is read
  // from there below rather than hashed again (this runs per job per cycle;
  // the map's values stay where they are as it grows).
  auto& user_slot = x.user_slot;
  user_slot.resize(snap.jobs.size());
  for (size_t k = 0; k < snap.jobs.size(); ++k) {
    auto [it, fresh] = user_index.emplace(snap.jobs[k].user, 0);
    if (fresh) user_names.push_back(snap.jobs[k].user);
    user_slot[k] = &it->second;
  }
  std::sort(user_names.begin(), user_names.end());
  m.users.resize(user_names.size());
  for (uint32_t i = 0; i < user_names.size(); ++i) {
    m.users[i].name = user_names[i];
    m.users[i].allotment = &settings.global_allotment;
    user_index[user_names[i]] = i;
  }
  auto user_of = [&](std::string_view name) { return user_index.at(name); };
  for (const auto& u : snap.users)
    if (u.allotment) m.users[user_of(u.name)].allotment = &*u.allotment;

  // Nodes and jobs come in runs of one pool and class: the last name looked
  // up is asked first (these run for every node and job every cycle).
  auto cached = [](auto& index) {
    return [&index, last = std::string_view(), value = kNone](std::string_view name) mutable {
      if (value == kNone || name != last) {
        value = index.at(name);
        last = name;
      }
      return value;
    };
  };
  auto pool_of = cached(pool_index);
  auto class_of = cached(class_index);

  // Nodes, by id.
  auto& node_specs = x.node_specs;
  node_specs.clear();
  for (const auto& n : snap.nodes) node_specs.push_back(&n);
  auto node_by_id = [](auto* a, auto* b) { return a->id < b->id; };
  // A scheduler's snapshot lists them in order already.
  if (!std::is_sorted(node_specs.begin(), node_specs.end(), node_by_id))
    std::sort(node_specs.begin(), node_specs.end(), node_by_id);
  m.nodes.resize(node_specs.size());
  for (uint32_t i = 0; i < node_specs.size(); ++i) {
    auto& n = m.nodes[i];
    n.has_non_preemptible = false;
    n.reserved = false;
    n.info = node_specs[i];
    n.pool = pool_of(n.info->pool);
    n.schedulable = n.info->state == NodeState::up;
    n.alive = n.info->state != NodeState::down;
    Resources cap = round_node(n.info->capacity, quantum);
    // The part of a node's memory below one quantum is never usable (none
    // without a quantum: nothing to subtract, for every node every cycle).
    if (!n.info->free)
      n.free = cap;
    else if (quantum > 0)
      n.free = *n.info->free - (n.info->capacity - cap);
    else
      n.free = *n.info->free;
    n.reports_free = n.info->free.has_value();
    auto& pool = m.pools[n.pool];
    pool.nodes.push_back(i);
    if (n.schedulable) {
      pool.own_capacity += cap;
      // A pool's nodes come mostly alike and in runs: a repeat of the last
      // shape is not pushed (pareto drops repeats anyway).
      if (pool.own_shapes.empty() || !(pool.own_shapes.back() == cap)) pool.own_shapes.push_back(cap);
    }
  }
  // Node ids are usually dense: a table, else a binary search.
  auto& node_table = x.node_table;
  node_table.clear();
  if (!node_specs.empty() && node_specs.back()->id.value < 4 * node_specs.size() + 1024) {
    node_table.assign(node_specs.back()->id.value + 1, kNone);
    for (uint32_t i = 0; i < node_specs.size(); ++i) node_table[node_specs[i]->id.value] = i;
  }
  auto node_of = [&](NodeId id) {
    if (!node_table.empty()) return node_table[id.value];
    return static_cast<uint32_t>(std::lower_bound(node_specs.begin(), node_specs.end(), id,
                                                  [](auto* n, NodeId v) { return n->id < v; }) -
                                 node_specs.begin());
  };
  for (uint32_t p : m.postorder) {
    auto& pool = m.pools[p];
    pareto(pool.own_shapes);
    pool.scope_capacity += pool.own_capacity;
    pool.scope_shapes.insert(pool.scope_shapes.end(), pool.own_shapes.begin(), pool.own_shapes.end());
    pareto(pool.scope_shapes);
    if (pool.parent != kNone) {
      auto& parent = m.pools[pool.parent];
      parent.scope_capacity += pool.scope_capacity;
      parent.scope_shapes.insert(parent.scope_shapes.end(), pool.scope_shapes.begin(),
                                 pool.scope_shapes.end());
    }
  }

  // Jobs, by id.
  auto& job_specs = x.job_specs;
  job_specs.clear();
  for (const auto& j : snap.jobs) job_specs.push_back(&j);
  auto by_id = [](auto* a, auto* b) { return a->id < b->id; };
  if (!std::is_sorted(job_specs.begin(), job_specs.end(), by_id))
    std::sort(job_specs.begin(), job_specs.end(), by_id);
  m.jobs.resize(job_specs.size());
  size_t alloc_count = 0;
  uint16_t job_dims = 0;
  for (const auto* j : job_specs) alloc_count += j->allocations.size();
  m.allocs.reserve(alloc_count);
  for (uint32_t i = 0; i < job_specs.size(); ++i) {
    auto& j = m.jobs[i];
    j.info = job_specs[i];
    j.cls = class_of(j.info->job_class.empty() ? settings.default_class : j.info->job_class);
    const auto& cls = *m.classes[j.cls].spec;
    j.pool = m.classes[j.cls].pool;
    j.domain = j.info->pool.empty() ? j.pool : pool_of(j.info->pool);
    j.user = *user_slot[static_cast<size_t>(j.info - snap.jobs.data())];
    j.policy = cls.policy;
    j.preemptible = cls.policy == ClassPolicy::fair_share && j.info->preemptible;
    j.per_task = round_task(j.info->per_task, quantum);
    j.pending = j.info->pending;
    j.initialized = j.info->initialized;
    j.alloc_begin = static_cast<uint32_t>(m.allocs.size());
    for (const auto& a : j.info->allocations) {
      ModelAlloc ma;
      ma.job = i;
      ma.node = node_of(a.node);
      ma.info = &a;
      const auto& node = m.nodes[ma.node];
      ma.lost = !node.alive;
      ma.res = cls.policy == ClassPolicy::reserve ? round_node(node.info->capacity, quantum) : j.per_task;
      if (cls.policy == ClassPolicy::reserve) j.reserve_node = ma.node;
      bool allowed = j.preemptible ? m.in_subtree(node.pool, j.domain) : node.pool == j.domain;
      ma.outside = !allowed;
      ma.squatter = allowed && node.pool != j.domain;
      if (!ma.lost) {
        ++j.running;
        if (!a.landing) ++j.started;
        if (a.initialized) j.initialized = true;
      }
      m.allocs.push_back(ma);
    }
    j.alloc_end = static_cast<uint32_t>(m.allocs.size());
    std::sort(m.allocs.begin() + j.alloc_begin, m.allocs.end(), [](const ModelAlloc& x, const ModelAlloc& y) {
      return x.info->start != y.info->start ? x.info->start < y.info->start : x.info->index < y.info->index;
    });
    if (j.reserve_node != kNone) j.per_task = round_node(m.nodes[j.reserve_node].info->capacity, quantum);
    j.cap = ducc_cap(j, cls, j.cap_reason);
    for (DimensionId d = 0; d < kMaxDimensions; ++d)
      if (j.per_task[d] > 0) job_dims = static_cast<uint16_t>(job_dims | (1U << d));

    // Can any node the job may use hold one task?
    const auto& pool = m.pools[j.pool];
    if (j.policy == ClassPolicy::reserve) {
      bool any = false;
      for (uint32_t n : pool.nodes)
        any = any || (m.nodes[n].schedulable &&
                      reserve_matches(j.info->per_task, m.nodes[n].info->capacity, quantum));
      if (!any && j.reserve_node == kNone) {
        j.unresolvable = true;
        j.unresolvable_reason =
            "no machine in pool '" + pool.spec->name + "' matches memory " +
            format_quantity(dim::memory, j.info->per_task[dim::memory]) +
            (quantum > 0 ? " within one quantum (" + format_quantity(dim::memory, quantum) + ")"
                         : " exactly");
      }
    } else if (!fits_some(j.per_task, j.preemptible ? pool.scope_shapes : pool.own_shapes)) {
      j.unresolvable = true;
      j.unresolvable_reason = "no node " + std::string(j.preemptible ? "in the subtree of" : "directly in") +
                              " pool '" + pool.spec->name + "' can hold one task of " +
                              j.per_task.to_string();
    }
    j.delta = dominant_share_ceil(j.per_task, pool.scope_capacity);
    if (j.delta == 0 && !j.unresolvable) {
      j.unresolvable = true;
      j.unresolvable_reason = "pool '" + pool.spec->name + "' lacks a resource the job asks for";
    }
  }
  m.np_user_usage.assign(m.users.size(), Resources{});
  {
    // Each node's allocations, in allocation order: a counting sort into one vector.
    auto& start = x.start;
    start.assign(m.nodes.size() + 1, 0);
    for (const auto& a : m.allocs)
      if (!a.lost) ++start[a.node + 1];
    for (size_t n = 1; n < start.size(); ++n) start[n] += start[n - 1];
    m.node_allocs.resize(start.back());
    auto& next = x.next;
    next.assign(start.begin(), start.end() - 1);
    for (uint32_t a = 0; a < m.allocs.size(); ++a)
      if (!m.allocs[a].lost) m.node_allocs[next[m.allocs[a].node]++] = a;
    std::span<const uint32_t> all(m.node_allocs);
    for (uint32_t n = 0; n < m.nodes.size(); ++n) m.nodes[n].allocs = all.subspan(start[n], start[n + 1] - start[n]);
  }
  for (auto& a : m.allocs)
    if (!a.lost) {
      auto& node = m.nodes[a.node];
      const auto& job = m.jobs[a.job];
      if (!node.reports_free) node.free -= a.res;
      if (!job.preemptible) node.has_non_preemptible = true;
      if (job.policy == ClassPolicy::reserve) node.reserved = true;
      if (job.policy != ClassPolicy::fair_share && !a.outside) m.np_user_usage[job.user] += a.res;
    }

  // (class, user) groups, ordered by class then user then job id: two stable
  // counting sorts over jobs that are already in id order.
  auto& by_user = x.by_user;
  by_user.resize(m.jobs.size());
  // The model's packed_job, once filled (the last cycle's, kept for its storage).
  auto& order = m.packed_job;
  order.resize(m.jobs.size());
  {
    auto& count = x.count;
    count.assign(m.users.size() + 1, 0);
    for (const auto& j : m.jobs) ++count[j.user + 1];
    for (size_t u = 1; u < count.size(); ++u) count[u] += count[u - 1];
    for (uint32_t i = 0; i < m.jobs.size(); ++i) by_user[count[m.jobs[i].user]++] = i;
    auto& ccount = x.ccount;
    ccount.assign(m.classes.size() + 1, 0);
    for (const auto& j : m.jobs) ++ccount[j.cls + 1];
    for (size_t c = 1; c < ccount.size(); ++c) ccount[c] += ccount[c - 1];
    for (uint32_t i : by_user) order[ccount[m.jobs[i].cls]++] = i;
  }
  for (uint32_t pos = 0; pos < order.size(); ++pos) {
    uint32_t i = order[pos];
    auto& j = m.jobs[i];
    if (m.groups.empty() || m.groups.back().cls != j.cls || m.groups.back().user != j.user) {
      m.groups.push_back(ModelGroup{j.cls, j.user, {}, pos, pos});
      m.classes[j.cls].groups.push_back(static_cast<uint32_t>(m.groups.size() - 1));
    }
    j.group = static_cast<uint32_t>(m.groups.size() - 1);
    m.groups.back().packed_end = pos + 1;
  }
  for (auto& g : m.groups)
    g.jobs = std::span<const uint32_t>(m.packed_job).subspan(g.packed_begin, g.packed_end - g.packed_begin);

  // Dimensions in use.
  Resources any;
  for (const auto& p : m.pools) any += p.scope_capacity;
  uint16_t used = 0;
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (any[d] > 0) used = static_cast<uint16_t>(used | (1U << d));
  used = static_cast<uint16_t>(used | job_dims);
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if ((used >> d) & 1U) m.dims.push_back(d);

  const size_t nd = m.dims.size();
  m.packed_r.resize(m.jobs.size() * nd);
  m.packed_delta.resize(m.jobs.size());
  m.packed_demand.resize(m.jobs.size());
  m.np_group_usage.assign(m.groups.size(), Resources{});
  for (uint32_t i = 0; i < m.jobs.size(); ++i) {
    auto& j = m.jobs[i];
    j.usage = static_cast<Share>(std::min<i128>(static_cast<i128>(j.running) * j.delta, INT64_MAX));
    j.demand = j.unresolvable
                   ? 0
                   : static_cast<Share>(std::min<i128>(static_cast<i128>(j.cap) * j.delta, kShareOne));
  }
  for (uint32_t pos = 0; pos < m.packed_job.size(); ++pos) {
    uint32_t i = m.packed_job[pos];
    auto& j = m.jobs[i];
    m.packed_delta[pos] = j.delta;
    m.packed_demand[pos] = j.policy == ClassPolicy::fair_share ? j.demand : 0;
    for (size_t k = 0; k < nd; ++k) m.packed_r[pos * nd + k] = j.per_task[m.dims[k]];
    if (j.policy != ClassPolicy::fair_share) {
      m.np_jobs.push_back(i);
      for (uint32_t a : j.allocs())
        if (!m.allocs[a].lost && !m.allocs[a].outside) m.np_group_usage[j.group] += m.allocs[a].res;
    }
  }
  return Status::ok();
}

}  // namespace claimsched::core::policy
