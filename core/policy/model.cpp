#include "core/policy/model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

namespace claimsched::core::policy {

namespace {

Error invalid(std::string message) { return make_error(Errc::invalid_argument, std::move(message)); }

std::string job_name(const JobInfo& j) { return "job " + std::to_string(j.id.value); }

bool ratio_ok(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

Status PreemptionSettings::validate() const {
  if (fair_share_starvation_timeout.count() < 0)
    return invalid("fair_share_starvation_timeout must not be negative");
  if (fair_share_aggressive_starvation_timeout.count() < 0)
    return invalid("fair_share_aggressive_starvation_timeout must not be negative");
  if (!ratio_ok(fair_share_starvation_tolerance, 0.0, 1.0))
    return invalid("fair_share_starvation_tolerance must be in [0, 1], got " +
                   std::to_string(fair_share_starvation_tolerance));
  if (!ratio_ok(preemption_satisfaction_threshold, 1e-9, 1000.0))
    return invalid("preemption_satisfaction_threshold must be > 0, got " +
                   std::to_string(preemption_satisfaction_threshold));
  if (!ratio_ok(aggressive_preemption_satisfaction_threshold, 0.0, 1000.0))
    return invalid("aggressive_preemption_satisfaction_threshold must be >= 0, got " +
                   std::to_string(aggressive_preemption_satisfaction_threshold));
  if (aggressive_preemption_satisfaction_threshold > preemption_satisfaction_threshold)
    return invalid("aggressive_preemption_satisfaction_threshold (" +
                   std::to_string(aggressive_preemption_satisfaction_threshold) +
                   ") must not exceed preemption_satisfaction_threshold (" +
                   std::to_string(preemption_satisfaction_threshold) + ")");
  if (non_preemptible_resource_usage_threshold.values.any_negative())
    return invalid("non_preemptible_resource_usage_threshold must not be negative");
  if (preemptive_scheduling_backoff.count() < 0)
    return invalid("preemptive_scheduling_backoff must not be negative");
  if (allocation_preemption_timeout.count() < 0)
    return invalid("allocation_preemption_timeout must not be negative");
  return Status::ok();
}

Status PolicySettings::validate() const {
  if (auto s = preemption.validate(); !s) return s;
  if (quantum < 0) return invalid("quantum must not be negative");
  if (global_allotment.values.any_negative()) return invalid("global_allotment must not be negative");
  return Status::ok();
}

Status validate(const Snapshot& snap) {
  if (auto s = snap.settings.validate(); !s)
    return make_error(s.error().code, "settings: " + s.error().message);

  // Pools: unique names, known parents, no cycle.
  std::map<std::string_view, const PoolSpec*> pools;
  for (const auto& p : snap.pools) {
    if (p.name.empty()) return invalid("pools: a pool has an empty name");
    if (!pools.emplace(p.name, &p).second)
      return make_error(Errc::duplicate, "pools: pool '" + p.name + "' is defined twice");
    if (p.resource_limits.values.any_negative())
      return invalid("pool '" + p.name + "': resource_limits must not be negative");
    if (p.overrides.fair_share_starvation_tolerance &&
        !ratio_ok(*p.overrides.fair_share_starvation_tolerance, 0.0, 1.0))
      return invalid("pool '" + p.name + "': fair_share_starvation_tolerance must be in [0, 1]");
    if ((p.overrides.fair_share_starvation_timeout &&
         p.overrides.fair_share_starvation_timeout->count() < 0) ||
        (p.overrides.fair_share_aggressive_starvation_timeout &&
         p.overrides.fair_share_aggressive_starvation_timeout->count() < 0))
      return invalid("pool '" + p.name + "': starvation timeouts must not be negative");
  }
  for (const auto& p : snap.pools) {
    if (p.parent.empty()) continue;
    if (!pools.count(p.parent))
      return make_error(Errc::unknown_name, "pool '" + p.name + "': parent '" + p.parent + "' is not a pool");
    // Walk up at most pools.size() steps: a longer walk is a cycle.
    const PoolSpec* cur = &p;
    for (size_t steps = 0; !cur->parent.empty(); ++steps) {
      if (steps > snap.pools.size()) return invalid("pool '" + p.name + "': the parent chain is a cycle");
      cur = pools.at(cur->parent);
    }
  }

  auto in_pool_subtree = [&](const std::string& pool, const std::string& ancestor) {
    auto it = pools.find(pool);
    for (size_t steps = 0; it != pools.end() && steps <= snap.pools.size(); ++steps) {
      if (it->second->name == ancestor) return true;
      if (it->second->parent.empty()) return false;
      it = pools.find(it->second->parent);
    }
    return false;
  };
  // Lookups only (nothing iterates these maps), so hashing is safe for determinism.
  if (auto s = validate_classes(snap.classes); !s) return s;
  std::unordered_map<std::string_view, const ClassSpec*> classes;
  for (const auto& c : snap.classes) {
    classes.emplace(c.name, &c);
    if (c.pool.empty()) return invalid("class '" + c.name + "': pool is required");
    if (!pools.count(c.pool))
      return make_error(Errc::unknown_name, "class '" + c.name + "': pool '" + c.pool + "' is not a pool");
  }
  if (!snap.settings.default_class.empty() && !classes.count(snap.settings.default_class))
    return make_error(Errc::unknown_name,
                      "settings: default_class '" + snap.settings.default_class + "' is not a class");

  std::set<std::string_view> users;
  for (const auto& u : snap.users) {
    if (u.name.empty()) return invalid("users: a user has an empty name");
    if (!users.insert(u.name).second)
      return make_error(Errc::duplicate, "users: user '" + u.name + "' is defined twice");
    if (u.allotment && u.allotment->values.any_negative())
      return invalid("user '" + u.name + "': allotment must not be negative");
  }

  // Sorted ids, not a map: this runs every policy cycle.
  std::vector<uint32_t> node_ids;
  node_ids.reserve(snap.nodes.size());
  for (const auto& n : snap.nodes) node_ids.push_back(n.id.value);
  // A scheduler's snapshot lists them in order already.
  if (!std::is_sorted(node_ids.begin(), node_ids.end())) std::sort(node_ids.begin(), node_ids.end());
  for (size_t i = 1; i < node_ids.size(); ++i)
    if (node_ids[i] == node_ids[i - 1])
      return make_error(Errc::duplicate, "node " + std::to_string(node_ids[i]) + " is defined twice");
  // Ids are usually dense (a scheduler's 1..n): a table, else a binary
  // search (this is asked for every allocation every cycle).
  std::vector<char> node_table;
  if (!node_ids.empty() && node_ids.back() < 4 * node_ids.size() + 1024) {
    node_table.assign(node_ids.back() + 1, 0);
    for (uint32_t id : node_ids) node_table[id] = 1;
  }
  auto is_node = [&](NodeId id) {
    if (!node_table.empty()) return id.value < node_table.size() && node_table[id.value] != 0;
    return std::binary_search(node_ids.begin(), node_ids.end(), id.value);
  };
  const std::string* known_pool = nullptr;
  for (const auto& n : snap.nodes) {
    // Built only for an error: this runs for every node every policy cycle.
    auto what = [&] { return "node " + std::to_string(n.id.value); };
    if (n.pool.empty()) return invalid(what() + ": pool is required");
    // Nodes come in runs of one pool: a name equal to the last one found is a pool.
    if (!(known_pool && *known_pool == n.pool)) {
      if (!pools.count(n.pool)) return make_error(Errc::unknown_name, what() + ": pool '" + n.pool + "' is not a pool");
      known_pool = &n.pool;
    }
    if (n.capacity.any_negative()) return invalid(what() + ": capacity must not be negative");
    if (n.free && !n.free->fits_in(n.capacity)) return invalid(what() + ": free exceeds capacity");
    for (const auto& l : n.labels)
      if (l.empty()) return invalid(what() + ": empty label");
  }

  {
    std::vector<JobId> ids;
    ids.reserve(snap.jobs.size());
    for (const auto& j : snap.jobs) ids.push_back(j.id);
    if (!std::is_sorted(ids.begin(), ids.end())) std::sort(ids.begin(), ids.end());
    for (size_t i = 1; i < ids.size(); ++i)
      if (ids[i] == ids[i - 1])
        return make_error(Errc::duplicate, "job " + std::to_string(ids[i].value) + " is defined twice");
  }
  // Jobs come in runs of one class: the last class found is asked first.
  const std::string* last_class = nullptr;
  const ClassSpec* last_spec = nullptr;
  for (const auto& j : snap.jobs) {
    // Names are built only for errors: this loop runs for every job.
    auto what = [&] { return job_name(j); };
    if (j.user.empty()) return invalid(what() + ": user is required");
    const std::string& cls_name = j.job_class.empty() ? snap.settings.default_class : j.job_class;
    if (cls_name.empty()) return invalid(what() + ": class is required (no settings.default_class)");
    if (!(last_class && *last_class == cls_name)) {
      auto found = classes.find(cls_name);
      if (found == classes.end())
        return make_error(Errc::unknown_name, what() + ": class '" + cls_name + "' is not a class");
      last_class = &cls_name;
      last_spec = found->second;
    }
    const ClassSpec* cls_spec = last_spec;
    if (!j.pool.empty() && !in_pool_subtree(j.pool, cls_spec->pool))
      return invalid(what() + ": pool '" + j.pool + "' is not pool '" + cls_spec->pool + "' of class '" + cls_name +
                     "' or below it (a class is bound to one pool)");
    if (j.per_task.any_negative()) return invalid(what() + ": per_task must not be negative");
    if (j.per_task.is_zero()) return invalid(what() + ": per_task must request some resource");
    if (j.pending > 10'000'000) return invalid(what() + ": pending must be at most 10000000");
    if (cls_spec->policy == ClassPolicy::reserve && j.per_task[dim::memory] <= 0)
      return invalid(what() + ": class '" + cls_name +
                     "' has policy reserve, which matches machines by memory; per_task must give memory");
    if (cls_spec->policy == ClassPolicy::reserve && j.pending + j.allocations.size() > 1)
      return invalid(what() + ": class '" + cls_name +
                     "' has policy reserve, which takes exactly one machine per job; the job asks for " +
                     std::to_string(j.pending + j.allocations.size()));
    for (const auto& c : j.constraints)
      if (auto s = validate_label_selector(c); !s)
        return make_error(s.error().code, what() + ": " + s.error().message);
    if (j.prediction && (j.prediction->time_per_item.count() < 0 || j.prediction->init_time.count() < 0))
      return invalid(what() + ": prediction times must not be negative");
    // Indices in increasing order (as a scheduler's snapshot lists them)
    // cannot repeat; otherwise each is compared with those before it.
    bool increasing = true;
    for (size_t i = 1; i < j.allocations.size() && increasing; ++i)
      increasing = j.allocations[i - 1].index < j.allocations[i].index;
    for (size_t i = 0; i < j.allocations.size(); ++i) {
      const auto& a = j.allocations[i];
      auto awhat = [&] { return what() + " allocation " + std::to_string(a.index); };
      for (size_t k = 0; k < i && !increasing && j.allocations.size() <= 64; ++k)
        if (j.allocations[k].index == a.index)
          return make_error(Errc::duplicate, awhat() + " is listed twice");
      if (!is_node(a.node))
        return make_error(Errc::unknown_name,
                          awhat() + ": node " + std::to_string(a.node.value) + " is not a node");
      if (a.start > snap.now) return invalid(awhat() + ": start is after now");
    }
    if (!increasing && j.allocations.size() > 64) {
      std::vector<TaskIndex> idx;
      for (const auto& a : j.allocations) idx.push_back(a.index);
      std::sort(idx.begin(), idx.end());
      for (size_t i = 1; i < idx.size(); ++i)
        if (idx[i] == idx[i - 1])
          return make_error(Errc::duplicate,
                            what() + " allocation " + std::to_string(idx[i]) + " is listed twice");
    }
  }
  return Status::ok();
}

NodeSpec spec_of(const NodeInfo& n) {
  NodeSpec spec;
  spec.id = n.id;
  spec.name = n.name;
  spec.pool = n.pool;
  spec.capacity = n.capacity;
  spec.labels = n.labels;
  return spec;
}

NodeSnapshot snapshot_of(const NodeInfo& n, const Resources& free) {
  NodeSnapshot s;
  s.node = n.id;
  s.state = n.state;
  s.capacity = n.capacity;
  s.free = free;
  return s;
}

}  // namespace claimsched::core::policy
