// plan_cycle: what the policy preempts and evicts, and where the room it
// makes goes (see engine.hpp). Free room is not planned here: the scheduler's
// queue places into it, in fair-share order, before the policy runs (a
// partition's pipeline runs schedule, then the policy cycle, then schedule).
// Every question about where a task fits goes to the placement engine
// (core/placement.hpp) over the scheduler's cluster view; this file keeps
// only the policy's own bookkeeping of what the plan frees and takes.
//
// Steps, in this order, each on the planned state the previous ones left:
//   1. evictions: allocations on nodes outside the pools their job may use;
//   2. nodes over their resources: remove allocations until they fit
//      (preemptible work first; non-preemptible work is evicted last);
//   3. pools over their resource_limits: same, over the pool's work;
//   4. non-preemptible requests granted by the how-much phase: placed whole,
//      in the room of fair-share allocations if free room is short (DUCC);
//   5. (the regular stage, free room only, is the scheduler's queue; the jobs
//      it could not place although their pools have room for a task in all
//      are fragmented);
//   6. preemptive stages, node by node (YTsaurus): starving jobs in the room of
//      preemptible allocations, then aggressively starving jobs also in the
//      room of aggressively preemptible ones; at most one new allocation per
//      stage and node, at most once per preemptive_scheduling_backoff per node;
//      the victims are the minimal set, newest first, squatters before residents
//      (and a resident of a pool may take any squatter's task in that pool);
//   7. defragmentation (DUCC): a job with a fair share of at least one task
//      that still has none, although its nodes have enough free room for one
//      task in all (the free room is fragmented), gets room on one node from
//      jobs above their fair share, at once (no starvation timeout).
// A preemption never takes a job below what its allocations' classes protect,
// and never makes the victim less satisfied (usage / fair share) than the
// preemptor was (in the aggressive stage: than the preemptor will be). A job
// that starves only through its pool preempts outside that pool. So the least
// satisfaction only grows, and a preemptor's new task is not taken back by its
// victim under unchanged demand (no preemption cycles).

#include "core/policy/planner.hpp"

namespace claimsched::core::policy::planning {

Plan Planner::run() {
  init();
  evict_outside();
  fix_overcommitted_nodes();
  fix_pool_limits();
  place_non_preemptible();
  find_fragmented();
  preemptive_stages();
  if (m_.snapshot->settings.defragmentation) defragment();
  update_backoff();
  finish();
  return std::move(plan_);
}

void Planner::init() {
  const size_t nj = m_.jobs.size();
  // The buffers may hold the last cycle's: what grows by push_back starts empty.
  stage_ran_.clear();
  room_cache_.clear();
  free_.resize(m_.nodes.size());
  for (size_t n = 0; n < m_.nodes.size(); ++n) free_[n] = m_.nodes[n].free;
  running_.resize(nj);
  pending_.resize(nj);
  priority_.resize(nj);
  for (size_t j = 0; j < nj; ++j) priority_[j] = m_.classes[m_.jobs[j].cls].spec->priority;
  usage_.resize(nj);
  placed_.assign(nj, 0);
  removed_count_.assign(nj, 0);
  notes_.assign(nj, {});
  for (size_t j = 0; j < nj; ++j) {
    running_[j] = m_.jobs[j].running;
    pending_[j] = m_.jobs[j].pending;
    usage_[j] = m_.jobs[j].usage;
  }
  removed_.assign(m_.allocs.size(), 0);
  any_preemptible_ = std::any_of(m_.allocs.begin(), m_.allocs.end(),
                                 [&](const ModelAlloc& a) { return !a.info->landing && m_.jobs[a.job].preemptible; });
  pool_usage_.assign(m_.pools.size(), Resources{});
  for (const auto& a : m_.allocs)
    if (!a.lost) add_pool_usage(m_.jobs[a.job].pool, a.res, +1);
  // Pre-order positions: a pool's subtree is a contiguous range.
  preorder_pos_.resize(m_.pools.size());
  subtree_end_.resize(m_.pools.size());
  for (uint32_t i = 0; i < m_.preorder.size(); ++i) preorder_pos_[m_.preorder[i]] = i;
  for (uint32_t p : m_.postorder) {
    uint32_t end = preorder_pos_[p] + 1;
    for (uint32_t c : m_.pools[p].children) end = std::max(end, subtree_end_[c]);
    subtree_end_[p] = end;
  }
  pool_free_.assign(m_.pools.size(), Resources{});
  for (size_t n = 0; n < m_.nodes.size(); ++n)
    if (m_.nodes[n].schedulable) pool_free_[m_.nodes[n].pool] += free_[n];
  // The placement engine's node for each of the model's.
  // A scheduler's snapshot lists the view's nodes in the view's order: the
  // node at the same index is asked first.
  vnode_.assign(m_.nodes.size(), 0);
  for (size_t n = 0; n < m_.nodes.size(); ++n) {
    NodeId id = m_.nodes[n].info->id;
    if (n < view_.node_count() && view_.node(static_cast<NodeIndex>(n)).id == id) {
      vnode_[n] = static_cast<uint32_t>(n);
      continue;
    }
    auto v = view_.find_node(id);
    vnode_[n] = v ? *v : kNone;
  }
  // Victim preference per node: preemptible work before non-preemptible,
  // squatters before residents, preemptible before aggressively preemptible
  // before non-preemptible, still initializing before initialized, newest
  // first.
  node_order_.resize(m_.nodes.size());
  node_sorted_.assign(m_.nodes.size(), 0);
}

void Planner::remove(uint32_t a, RemovalKind kind, RemovalReason reason, std::optional<uint32_t> preemptor,
                     std::string pool, std::string detail) {
  const auto& alloc = m_.allocs[a];
  const auto& job = m_.jobs[alloc.job];
  removed_[a] = 1;
  free_[alloc.node] += alloc.res;
  if (m_.nodes[alloc.node].schedulable) {
    pool_free_[m_.nodes[alloc.node].pool] += alloc.res;
  }
  --running_[alloc.job];
  usage_[alloc.job] -= job.delta;
  ++removed_count_[alloc.job];
  add_pool_usage(job.pool, alloc.res, -1);
  Removal r;
  r.task = TaskRef{job.info->id, alloc.info->index};
  r.node = m_.nodes[alloc.node].info->id;
  r.kind = kind;
  r.reason = reason;
  if (preemptor) r.preemptor = m_.jobs[*preemptor].info->id;
  r.pool = std::move(pool);
  r.cls = alloc.cls;
  r.squatter = alloc.squatter;
  r.interrupt = kind == RemovalKind::preemption && alloc.info->interruptible;
  r.kill_after = r.interrupt ? pre_.allocation_preemption_timeout : Duration{0};
  r.detail = std::move(detail);
  if (kind == RemovalKind::preemption)
    ++plan_.stats.preemptions;
  else
    ++plan_.stats.evictions;
  ++plan_.stats.by_reason[static_cast<size_t>(reason)];
  plan_.removals.push_back(std::move(r));
}

void Planner::place(uint32_t j, uint32_t n, uint32_t count, Stage stage, const Resources& per_task,
                    std::vector<TaskRef> waits_for) {
  Resources total = per_task.times(count);
  free_[n] -= total;
  pool_free_[m_.nodes[n].pool] -= total;
  running_[j] += count;
  pending_[j] -= count;
  placed_[j] += count;
  usage_[j] += static_cast<Share>(count) * m_.jobs[j].delta;
  add_pool_usage(m_.jobs[j].pool, total, +1);
  plan_.stats.tasks_placed += count;
  // Consecutive free-room placements of one job on one node in one stage merge.
  if (waits_for.empty() && !plan_.placements.empty()) {
    auto& last = plan_.placements.back();
    if (last.job == m_.jobs[j].info->id && last.node == m_.nodes[n].info->id && last.stage == stage &&
        last.waits_for.empty() && last.per_task == per_task) {
      last.count += count;
      return;
    }
  }
  plan_.placements.push_back(
      Placement{m_.jobs[j].info->id, m_.nodes[n].info->id, count, stage, per_task, std::move(waits_for)});
}

void Planner::evict_outside() {
  for (uint32_t j = 0; j < m_.jobs.size(); ++j)
    for (uint32_t a : m_.jobs[j].allocs()) {
      const auto& alloc = m_.allocs[a];
      if (alloc.lost || !alloc.outside) continue;
      const auto& node = m_.nodes[alloc.node];
      const auto& job = m_.jobs[j];
      remove(a, RemovalKind::eviction, RemovalReason::outside_pool, std::nullopt, "",
             node_label(node) + " is in pool '" + m_.pools[node.pool].spec->name + "', outside the pool" +
                 std::string(job.preemptible ? "s" : "") + " of class '" + m_.classes[job.cls].spec->name + "' (" +
                 (job.preemptible ? "subtree of '" : "only '") + m_.pools[job.pool].spec->name +
                 "'): node or class configuration changed");
    }
}

bool Planner::helps(const Resources& r, const Resources& have, const Resources& need) {
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (have[d] < need[d] && r[d] > 0) return true;
  return false;
}

void Planner::fix_overcommitted_nodes() {
  for (uint32_t n = 0; n < m_.nodes.size(); ++n) {
    if (!m_.nodes[n].alive || !free_[n].any_negative()) continue;
    Resources zero;
    for (uint32_t a : victims_on(n)) {
      if (!free_[n].any_negative()) break;
      if (removed_[a] || m_.allocs[a].info->landing || !helps(m_.allocs[a].res, free_[n], zero)) continue;
      const auto& job = m_.jobs[m_.allocs[a].job];
      Resources before = free_[n];
      remove(a, job.preemptible ? RemovalKind::preemption : RemovalKind::eviction, RemovalReason::node_overcommitted,
             std::nullopt, "",
             node_label(m_.nodes[n]) + " is over its resources (free " + before.to_string() +
                 " after its allocations of " + m_.nodes[n].info->capacity.to_string() + ")");
    }
  }
}

void Planner::fix_pool_limits() {
  for (uint32_t p : m_.postorder) {
    const auto& limits = m_.pools[p].spec->resource_limits;
    if (limits.empty() || limits.allows(pool_usage_[p])) continue;
    std::vector<uint32_t> cands;
    for (uint32_t j = 0; j < m_.jobs.size(); ++j)
      if (m_.in_subtree(m_.jobs[j].pool, p))
        for (uint32_t a : m_.jobs[j].allocs())
          if (!removed_[a] && !m_.allocs[a].lost && !m_.allocs[a].info->landing) cands.push_back(a);
    std::sort(cands.begin(), cands.end(), [&](uint32_t x, uint32_t y) { return prefer(x, y); });
    for (uint32_t a : cands) {
      if (limits.allows(pool_usage_[p])) break;
      bool useful = false;
      for (DimensionId d = 0; d < kMaxDimensions; ++d)
        useful = useful || (limits.has(d) && pool_usage_[p][d] > limits.values[d] && m_.allocs[a].res[d] > 0);
      if (!useful) continue;
      const auto& job = m_.jobs[m_.allocs[a].job];
      std::string detail = "pool '" + m_.pools[p].spec->name + "' uses " + pool_usage_[p].to_string() +
                           ", over its resource_limits " + limits.to_string();
      remove(a, job.preemptible ? RemovalKind::preemption : RemovalKind::eviction, RemovalReason::pool_resource_limits,
             std::nullopt, m_.pools[p].spec->name, std::move(detail));
    }
  }
}

void Planner::place_non_preemptible() {
  std::vector<uint32_t> order;
  for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
    const auto& job = m_.jobs[j];
    if (job.policy != ClassPolicy::fair_share && job.granted && pending_[j] > 0) order.push_back(j);
  }
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const auto& a = m_.jobs[x];
    const auto& b = m_.jobs[y];
    int32_t pa = m_.classes[a.cls].spec->priority, pb = m_.classes[b.cls].spec->priority;
    if (pa != pb) return pa > pb;
    if (a.info->submit_time != b.info->submit_time) return a.info->submit_time < b.info->submit_time;
    return a.info->id < b.info->id;
  });
  for (uint32_t j : order) {
    const auto& job = m_.jobs[j];
    if (job.policy == ClassPolicy::reserve) {
      place_reserve(j);
      continue;
    }
    const auto& pool = m_.pools[job.pool];
    // The whole request or nothing: first in free room, else also in the room
    // of fair-share allocations.
    auto plan = [&](bool with_victims) {
      std::vector<std::pair<uint32_t, uint32_t>> counts;
      int64_t left = pending_[j];
      for (uint32_t n : pool.nodes) {
        if (left <= 0) break;
        if (!may_use(j, n)) continue;
        Resources room = free_[n];
        if (with_victims)
          for (uint32_t a : m_.nodes[n].allocs)
            if (!removed_[a] && !m_.allocs[a].info->landing && m_.jobs[m_.allocs[a].job].preemptible)
              room += m_.allocs[a].res;
        int64_t k = fitting(n, job.per_task, room, static_cast<uint32_t>(left));
        if (k > 0) {
          counts.emplace_back(n, static_cast<uint32_t>(k));
          left -= k;
        }
      }
      if (left > 0) counts.clear();
      return counts;
    };
    auto counts = plan(false);
    bool victims = false;
    if (counts.empty()) {
      counts = plan(true);
      victims = true;
    }
    if (counts.empty()) {
      notes_[j] = "pool '" + pool.spec->name + "' has no room for all " + std::to_string(pending_[j]) +
                  " tasks of the request even after preempting fair-share work";
      continue;
    }
    for (auto [n, k] : counts) {
      std::vector<TaskRef> refs;
      Resources need = job.per_task.times(k);
      if (victims && !need.fits_in(free_[n])) {
        auto v = find_victims(n, j, need, Mode::request);
        if (!v) continue;  // cannot happen: the room was counted above
        refs = commit_victims(*v, j, RemovalReason::non_preemptible_request,
                              job_label(job) + " (" + std::string(to_string(job.policy)) + " class " +
                                  m_.classes[job.cls].spec->name + ") was granted " + std::to_string(job.pending) +
                                  " tasks by the how-much phase and needs " + need.to_string() + " on " +
                                  node_label(m_.nodes[n]));
      }
      place(j, n, k, Stage::non_preemptible, job.per_task, std::move(refs));
    }
  }
}

void Planner::place_reserve(uint32_t j) {
  const auto& job = m_.jobs[j];
  uint32_t n = job.reserve_node;
  if (n == kNone) return;
  VictimSet v;
  for (uint32_t a : m_.nodes[n].allocs) {
    if (removed_[a]) continue;
    if (m_.allocs[a].info->landing) {
      notes_[j] = "its machine " + node_label(m_.nodes[n]) + " is being claimed by other work; next cycle";
      return;
    }
    v.allocs.push_back(a);
  }
  std::vector<TaskRef> refs = commit_victims(v, j, RemovalReason::non_preemptible_request,
                                             job_label(job) + " (reserve class " + m_.classes[job.cls].spec->name +
                                                 ") reserves all of " + node_label(m_.nodes[n]));
  // The claim is for the whole machine as it is (its memory may exceed the
  // quanta it was matched by).
  place(j, n, 1, Stage::non_preemptible, m_.nodes[n].info->capacity, std::move(refs));
}

bool Planner::room_somewhere(uint32_t j) const {
  const auto& job = m_.jobs[j];
  Resources total;
  uint32_t end = job.preemptible ? subtree_end_[job.domain] : preorder_pos_[job.domain] + 1;
  for (uint32_t pos = preorder_pos_[job.domain]; pos < end; ++pos) total += pool_free_[m_.preorder[pos]];
  return job.per_task.fits_in(total);
}

bool Planner::node_room(uint32_t j) {
  const auto& job = m_.jobs[j];
  auto pool = view_.find_pool(m_.pools[job.domain].spec->name);
  if (!pool) return false;
  bool constrained = !job.info->constraints.empty();
  for (const auto& [shape, domain, preemptible, answer] : room_cache_)
    if (!constrained && shape == job.per_task && domain == *pool && preemptible == job.preemptible) return answer;
  PlacementRequest req;
  req.per_task = job.per_task;
  req.pool = *pool;
  req.subpools = job.preemptible;
  req.constraints = constrained ? &job.info->constraints : nullptr;
  req.explain = false;
  bool answer = core::place(view_, req, PlacementPolicy{}).verdict == PlacementVerdict::fit;
  if (!constrained) room_cache_.emplace_back(job.per_task, *pool, job.preemptible, answer);
  return answer;
}

void Planner::find_fragmented() {
  fragmented_.assign(m_.jobs.size(), 0);
  for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
    const auto& job = m_.jobs[j];
    if (job.policy != ClassPolicy::fair_share || job.unresolvable || pending_[j] <= 0 || running_[j] > 0 ||
        placed_[j] > 0 || job.cap < 1 || job.delta <= 0 || job.fair < job.delta)
      continue;
    if (limits_headroom(j) <= 0) continue;
    // Seen so by the queue when it looked, or so now.
    if (job.info->fragmented || (room_somewhere(j) && !node_room(j))) fragmented_[j] = 1;
  }
}

void Planner::update_backoff() {
  auto& out = next_.node_last_preemptive_scheduling;
  out.clear();
  // At most one entry per old timer and per node a stage ran on: one allocation, not one per doubling.
  out.reserve(state_.node_last_preemptive_scheduling.size() + stage_ran_.size());
  // Both mostly in order already (the stages walk the nodes in order).
  if (!std::is_sorted(stage_ran_.begin(), stage_ran_.end())) std::sort(stage_ran_.begin(), stage_ran_.end());
  size_t k = 0;
  auto it = m_.nodes.begin();
  for (const auto& [id, at] : state_.node_last_preemptive_scheduling) {
    while (k < stage_ran_.size() && m_.nodes[stage_ran_[k]].info->id < id) {
      out.emplace_back(m_.nodes[stage_ran_[k]].info->id, m_.now);
      ++k;
    }
    if (k < stage_ran_.size() && m_.nodes[stage_ran_[k]].info->id == id) continue;
    // Keep only timers that still hold a node back, of nodes that still
    // exist (both by id: one walk along the nodes, no search per timer).
    if (it != m_.nodes.end() && id < it->info->id) it = m_.nodes.begin();
    while (it != m_.nodes.end() && it->info->id < id) ++it;
    bool exists = it != m_.nodes.end() && it->info->id == id;
    if (exists && at <= m_.now && m_.now - at < pre_.preemptive_scheduling_backoff) out.emplace_back(id, at);
  }
  for (; k < stage_ran_.size(); ++k) out.emplace_back(m_.nodes[stage_ran_[k]].info->id, m_.now);
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end(), [](auto& a, auto& b) { return a.first == b.first; }), out.end());
}

std::string Planner::cap_text(const ModelJob& j) const {
  const auto& cls = *m_.classes[j.cls].spec;
  switch (j.cap_reason) {
    case CapReason::initialization_cap:
      return "initialization cap of class '" + cls.name + "': at most " + std::to_string(j.cap) +
             " tasks until one task has passed initialization";
    case CapReason::expand_by_doubling:
      return "expand-by-doubling in class '" + cls.name + "': at most " + std::to_string(j.cap) +
             " tasks this cycle (twice the " + std::to_string(j.started) + " running)";
    case CapReason::prediction:
      return "prediction in class '" + cls.name + "': " + std::to_string(j.cap) +
             " tasks finish the remaining work before a new task could be initialized";
    case CapReason::none:
      break;
  }
  return "";
}

void Planner::finish() {
  plan_.stats.placements = static_cast<uint32_t>(plan_.placements.size());
  if (!words_) return;
  reasons_.assign(m_.jobs.size(), {});
  for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
    const auto& job = m_.jobs[j];
    if (pending_[j] <= 0) continue;
    std::string& r = reasons_[j];
    if (job.unresolvable) {
      r = "unresolvable: " + job.unresolvable_reason;
    } else if (job.policy != ClassPolicy::fair_share) {
      r = !job.granted ? "not granted: " + job.grant_reason
                       : (notes_[j].empty() ? std::string("waits for room") : notes_[j]);
    } else if (running_[j] >= job.cap) {
      r = job.cap_reason != CapReason::none ? "capped: " + cap_text(job) : "runs all the tasks it may";
    } else if (limits_headroom(j) <= 0) {
      r = "resource_limits: a pool from '" + m_.pools[job.pool].spec->name + "' up is at its limit";
    } else if (usage_[j] >= job.fair) {
      r = job.fair == 0 ? "fair share is 0: better priorities, residents or limits take its pool's room"
                        : "at its fair share (" + fmt_tasks(job.fair, job.delta) + " tasks): waits for free room";
    } else if (!notes_[j].empty()) {
      r = "below its fair share of " + fmt_tasks(job.fair, job.delta) + " tasks; " + notes_[j];
    } else if (job.scheduling == SchedulingStatus::normal) {
      r = "within tolerance of its fair share (" + fmt_tasks(job.fair, job.delta) + " tasks, tolerance " +
          fmt_ratio(m_.pools[job.pool].tolerance) + "): waits for free room";
    } else if (job.starvation == StarvationStatus::non_starving) {
      const auto& pool = m_.pools[job.pool];
      r = "below its fair share of " + fmt_tasks(job.fair, job.delta) + " tasks for " +
          human_duration(m_.now - job.below_since) + "; starving (and preempting) in " +
          human_duration(job.below_since + pool.starvation_timeout - m_.now) + " if still below";
    } else if (placed_[j] > 0) {
      r = "below its fair share of " + fmt_tasks(job.fair, job.delta) + " tasks and " +
          std::string(to_string(job.starvation)) + "; gets " + std::to_string(placed_[j]) +
          " task(s) this cycle (preemptive stages start at most one per node and stage), more next cycle";
    } else {
      r = "below its fair share of " + fmt_tasks(job.fair, job.delta) + " tasks and " +
          std::string(to_string(job.starvation)) + "; no node could make room this cycle";
    }
  }
}

}  // namespace claimsched::core::policy::planning

namespace claimsched::core::policy {

Plan plan_cycle(const Model& model, const ClusterView& view, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons, bool reasons) {
  PlanBuffers buffers;
  return plan_cycle(model, view, state, next, pending_reasons, reasons, buffers);
}

Plan plan_cycle(const Model& model, const ClusterView& view, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons, bool reasons, PlanBuffers& buffers) {
  return planning::Planner(model, view, state, next, pending_reasons, reasons, buffers).run();
}

}  // namespace claimsched::core::policy
