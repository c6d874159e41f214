// The planner's victims, preemptive stages and defragmentation (steps 6 and
// 7 of plan.cpp's list): who may be taken for whom, node by node.

#include "core/policy/planner.hpp"

namespace claimsched::core::policy::planning {

std::optional<Planner::VictimSet> Planner::find_victims(uint32_t n, uint32_t c, const Resources& need, Mode mode) {
  std::vector<std::pair<uint32_t, uint32_t>> taken;  // (job, count) tentatively removed
  auto taken_of = [&](uint32_t j) -> uint32_t& {
    for (auto& e : taken)
      if (e.first == j) return e.second;
    taken.emplace_back(j, 0);
    return taken.back().second;
  };
  // Most nodes of a cluster of jobs that cannot be preempted have no
  // victim at all: say so before sorting and sizing anything.
  if (!need.fits_in(free_[n]) && !runs_preemptible_work(n, c)) return std::nullopt;
  const auto& cand = m_.jobs[c];
  // A job that starves only through a pool takes from outside that pool.
  uint32_t starving_pool = kNone;
  if (mode == Mode::starvation || mode == Mode::aggressive) starving_pool = inherited_from(c, mode == Mode::aggressive);
  std::vector<uint32_t> allocs;
  std::vector<Resources> res;
  for (uint32_t a : victims_on(n)) {
    if (removed_[a] || m_.allocs[a].job == c || m_.allocs[a].info->landing) continue;
    allocs.push_back(a);
    res.push_back(m_.allocs[a].res);
  }
  // Who may be a victim is policy; which of them make room is the engine's.
  auto eligible = [&](size_t i) {
    const auto& alloc = m_.allocs[allocs[i]];
    const auto& victim = m_.jobs[alloc.job];
    if (!victim.preemptible) return false;
    if (starving_pool != kNone && m_.in_subtree(victim.pool, starving_pool)) return false;
    // DUCC: a pool belongs to its residents. A squatter yields to a resident
    // of the pool it squats in whatever its class: the class thresholds do
    // not protect it; the satisfaction rule below still does (so the two
    // jobs never take tasks back and forth).
    uint32_t node_pool = m_.nodes[n].pool;
    bool reclaim = (mode == Mode::starvation || mode == Mode::aggressive) && alloc.squatter && cand.pool == node_pool &&
                   victim.pool != node_pool;
    if (mode != Mode::request) {
      if (!reclaim && alloc.cls == AllocationClass::non_preemptible) return false;
      if (!reclaim && alloc.cls == AllocationClass::aggressively_preemptible && mode != Mode::aggressive) return false;
      uint32_t t = taken_of(alloc.job) + 1;
      Share after = usage_[alloc.job] - static_cast<Share>(t) * victim.delta;
      // The victim keeps what its allocations' class protects ...
      // (In the aggressive stage preemptible and aggressively preemptible
      // allocations form one set, protected down to the aggressive threshold:
      // its newest go first, whichever class they started the cycle in.)
      Share thr = mode == Mode::aggressive || alloc.cls == AllocationClass::aggressively_preemptible
                      ? m_.aggressive_threshold
                      : m_.preemption_threshold;
      if (!reclaim && static_cast<i128>(after) * kShareOne < static_cast<i128>(victim.fair) * thr) return false;
      if (pre_.non_preemptible_resource_usage_threshold.strictly_above(victim.per_task.times(running_[alloc.job] - t)))
        return false;
      // ... and stays more satisfied than the preemptor was; in the
      // aggressive stage (where victims go below their fair share) at least
      // as satisfied as the preemptor will be, so the two never swap places.
      Share cand_usage = mode == Mode::aggressive ? usage_[c] + cand.delta : usage_[c];
      if (victim.fair > 0) {
        i128 lhs = static_cast<i128>(after) * cand.fair;
        i128 rhs = static_cast<i128>(cand_usage) * victim.fair;
        if (mode == Mode::aggressive ? lhs < rhs : lhs <= rhs) return false;
      }
    }
    ++taken_of(alloc.job);
    return true;
  };
  auto chosen = minimal_victims(free_[n], need, res, eligible);
  if (!chosen) return std::nullopt;
  VictimSet out;
  for (size_t i : *chosen) {
    out.allocs.push_back(allocs[i]);
    out.cost += m_.jobs[m_.allocs[allocs[i]].job].delta;
  }
  return out;
}

uint32_t Planner::inherited_from(uint32_t c, bool aggressive) const {
  const auto& job = m_.jobs[c];
  auto enough = [&](StarvationStatus s) {
    return aggressive ? s == StarvationStatus::aggressively_starving : s != StarvationStatus::non_starving;
  };
  if (enough(job.own_starvation)) return kNone;
  for (uint32_t p = job.pool; p != kNone; p = m_.pools[p].parent)
    if (enough(m_.pools[p].starvation)) return p;
  return kNone;
}

std::string Planner::starving_text(uint32_t c) const {
  const auto& j = m_.jobs[c];
  // How long, not since when: the policy's clock means nothing to a reader.
  std::string since = j.below_since == kNever ? std::string("pool starvation")
                                              : "below its fair share for " + human_duration(m_.now - j.below_since);
  // The numbers its status was computed on, when the cycle began: this
  // cycle's own placements may have raised its usage since.
  std::string s = job_label(j) + " (user " + j.info->user + ", class " + m_.classes[j.cls].spec->name + ") is " +
                  std::string(to_string(j.starvation)) + " (" + since + "): usage " + fmt_share(j.usage) +
                  " < fair share " + fmt_share(j.fair) + " x tolerance " + fmt_ratio(m_.pools[j.pool].tolerance) +
                  " when the cycle began";
  if (usage_[c] != j.usage) s += " (" + fmt_share(usage_[c]) + " with this cycle's placements)";
  if (j.starvation != j.own_starvation) s += "; it starves with its pool";
  return s;
}

std::vector<TaskRef> Planner::commit_victims(const VictimSet& v, uint32_t c, RemovalReason reason,
                                             const std::string& why) {
  std::vector<TaskRef> refs;
  for (uint32_t a : v.allocs) {
    const auto& alloc = m_.allocs[a];
    const auto& victim = m_.jobs[alloc.job];
    std::string detail = why + "; victim " + job_label(victim) + " runs " + std::to_string(running_[alloc.job]) +
                         " tasks, usage " + fmt_share(usage_[alloc.job]) + ", fair share " + fmt_share(victim.fair) +
                         "; allocation " + std::string(to_string(alloc.cls)) + (alloc.squatter ? ", squatter" : "");
    refs.push_back(TaskRef{victim.info->id, alloc.info->index});
    remove(a, RemovalKind::preemption, reason, c, "", std::move(detail));
  }
  return refs;
}

void Planner::preemptive_stages() {
  // The vectors below are the buffers' (kept across cycles), set again here.
  std::vector<uint32_t>& starving = b_.starving;
  starving.clear();
  for (uint32_t j = 0; j < m_.jobs.size(); ++j)
    if (starving_candidate(j, false)) starving.push_back(j);
  if (starving.empty()) return;
  std::vector<uint32_t>& tried_nodes = b_.tried_nodes;
  std::vector<uint32_t>& backoff_nodes = b_.backoff_nodes;
  tried_nodes.assign(m_.jobs.size(), 0);
  backoff_nodes.assign(m_.jobs.size(), 0);
  // The aggressive stage has candidates only among aggressively starving
  // jobs (a status fixed for the cycle); mostly there are none, and then
  // it is not walked per node.
  bool any_aggressive = std::any_of(starving.begin(), starving.end(), [&](uint32_t j) {
    return m_.jobs[j].starvation == StarvationStatus::aggressively_starving;
  });
  // A node's candidates are bound to its pool or (preemptible work) an
  // ancestor. Those without constraints are the same on every usable
  // node of a pool: one group per pool, counted per node instead of
  // walked per node (the walk, nodes x starving jobs, is what costs).
  std::vector<std::vector<uint32_t>>& by_pool = b_.by_pool;
  std::vector<std::vector<uint32_t>>& constrained_by_pool = b_.constrained_by_pool;
  by_pool.resize(m_.pools.size());
  constrained_by_pool.resize(m_.pools.size());
  for (auto& list : by_pool) list.clear();
  for (auto& list : constrained_by_pool) list.clear();
  for (uint32_t j : starving)
    (m_.jobs[j].info->constraints.empty() ? by_pool : constrained_by_pool)[m_.jobs[j].pool].push_back(j);
  // Who is a (non-aggressive) candidate changes only when a stage places
  // or preempts: asked again then, not per node.
  std::vector<char>& candidate = b_.candidate;
  candidate.assign(m_.jobs.size(), 0);
  struct Group {
    bool built = false;
    std::vector<uint32_t> members;
    /// Element-wise least task of the members: if it does not fit, none does.
    Resources least;
    uint32_t tried = 0, in_backoff = 0;
  };
  std::vector<Group> groups(m_.pools.size());
  auto group_of = [&](uint32_t pool) -> Group& {
    Group& g = groups[pool];
    if (g.built) return g;
    g.built = true;
    g.members.clear();
    for (uint32_t p = pool; p != kNone; p = m_.pools[p].parent)
      for (uint32_t j : by_pool[p]) {
        const auto& job = m_.jobs[j];
        // may_use's pool rule, the node's own part asked per node.
        bool pool_ok = job.preemptible ? m_.in_subtree(pool, job.domain) : pool == job.domain;
        if (!candidate[j] || !pool_ok) continue;
        g.least = g.members.empty() ? job.per_task : g.least.min(job.per_task);
        g.members.push_back(j);
      }
    return g;
  };
  auto settle_groups = [&] {
    for (auto& g : groups) {
      for (uint32_t j : g.members) {
        tried_nodes[j] += g.tried;
        backoff_nodes[j] += g.in_backoff;
      }
      // Emptied in place: its members' storage serves the next build.
      g.built = false;
      g.members.clear();
      g.tried = g.in_backoff = 0;
    }
  };
  auto refresh = [&] {
    settle_groups();
    for (uint32_t j : starving) candidate[j] = starving_candidate(j, false);
  };
  refresh();
  auto last = state_.node_last_preemptive_scheduling.begin();
  std::vector<uint32_t> cands;
  for (uint32_t n = 0; n < m_.nodes.size(); ++n) {
    if (!m_.nodes[n].schedulable) continue;
    // What may_use asks of the node itself.
    if (vnode_[n] == kNone || view_.node(vnode_[n]).state != NodeState::up) continue;
    auto for_each_local = [&](bool aggressive, auto&& f) {
      for (uint32_t p = m_.nodes[n].pool; p != kNone; p = m_.pools[p].parent)
        for (const auto* list : {&by_pool[p], &constrained_by_pool[p]})
          for (uint32_t j : *list)
            if ((aggressive ? starving_candidate(j, true) : candidate[j]) && may_use(j, n)) f(j);
    };
    auto for_each_constrained = [&](auto&& f) {
      for (uint32_t p = m_.nodes[n].pool; p != kNone; p = m_.pools[p].parent)
        for (uint32_t j : constrained_by_pool[p])
          if (candidate[j] && may_use(j, n)) f(j);
    };
    // One vector for every node's candidates (filled per stage, used up by it).
    auto local = [&](bool aggressive) -> std::vector<uint32_t>& {
      cands.clear();
      for_each_local(aggressive, [&](uint32_t j) { cands.push_back(j); });
      return cands;
    };
    Group& group = group_of(m_.nodes[n].pool);
    size_t count = group.members.size();
    bool one_fits = false;
    if (count > 0 && group.least.fits_in(free_[n]))
      for (uint32_t j : group.members)
        if (m_.jobs[j].per_task.fits_in(free_[n])) {
          one_fits = true;
          break;
        }
    for_each_constrained([&](uint32_t j) {
      ++count;
      one_fits = one_fits || m_.jobs[j].per_task.fits_in(free_[n]);
    });
    if (count == 0) continue;
    // The backoff timers are by node id, the model's nodes too: one walk
    // along both rather than a search per node.
    while (last != state_.node_last_preemptive_scheduling.end() && last->first < m_.nodes[n].info->id) ++last;
    if (last != state_.node_last_preemptive_scheduling.end() && last->first == m_.nodes[n].info->id &&
        last->second <= m_.now && m_.now - last->second < pre_.preemptive_scheduling_backoff) {
      ++plan_.stats.nodes_in_backoff;
      ++group.in_backoff;
      for_each_constrained([&](uint32_t j) { ++backoff_nodes[j]; });
      continue;
    }
    stage_ran_.push_back(n);
    ++group.tried;
    for_each_constrained([&](uint32_t j) { ++tried_nodes[j]; });
    // Looked at either way (its backoff starts); the stages themselves
    // only where one could place (a candidate fits the room left) or
    // preempt (the node runs preemptible work).
    if (!one_fits && !runs_preemptible_work(n, kNone)) continue;
    size_t decided = plan_.stats.tasks_placed + plan_.removals.size();
    run_stage(n, local(false), false);
    if (any_aggressive) run_stage(n, local(true), true);
    if (plan_.stats.tasks_placed + plan_.removals.size() != decided) refresh();
  }
  settle_groups();
  if (!words_) return;
  for (uint32_t j : starving) {
    if (placed_[j] > 0 || pending_[j] == 0) continue;
    const auto& job = m_.jobs[j];
    std::string note =
        std::string(to_string(job.starvation)) +
        (job.below_since == kNever ? std::string(" (pool)") : " for " + human_duration(m_.now - job.below_since));
    if (tried_nodes[j] > 0)
      note += "; on " + std::to_string(tried_nodes[j]) + " node(s) no preemptible allocations make room for " +
              job.per_task.to_string();
    if (backoff_nodes[j] > 0)
      note += "; " + std::to_string(backoff_nodes[j]) + " node(s) in preemptive_scheduling_backoff (" +
              format_duration(pre_.preemptive_scheduling_backoff) + ")";
    notes_[j] = note;
  }
}

void Planner::run_stage(uint32_t n, std::vector<uint32_t>& cands, bool aggressive) {
  // Stage order is total (before() ends with the id): the first candidate
  // is found by one scan, since the stage mostly ends there; only if it
  // cannot have a task are the others taken from a heap one at a time (a
  // sort per node of every starving job cost more than the stages).
  auto later = [&](uint32_t x, uint32_t y) {
    bool sx = m_.nodes[n].pool != m_.jobs[x].pool, sy = m_.nodes[n].pool != m_.jobs[y].pool;
    if (sx != sy) return sx;  // residents of the node's pool first
    return before(y, x);
  };
  // Whether candidate c gets its task here (and the stage ends).
  auto attempt = [&](uint32_t c) {
    if (!starving_candidate(c, aggressive)) return false;
    const auto& job = m_.jobs[c];
    if (fitting(n, job.per_task, free_[n], 1) > 0) {
      place(c, n, 1, aggressive ? Stage::aggressive : Stage::preemptive, job.per_task);
      return true;
    }
    auto v = find_victims(n, c, job.per_task, aggressive ? Mode::aggressive : Mode::starvation);
    if (!v) return false;
    std::string why = starving_text(c) + "; it needs " + job.per_task.to_string() + " on " + node_label(m_.nodes[n]);
    auto refs =
        commit_victims(*v, c, aggressive ? RemovalReason::aggressive_starvation : RemovalReason::starvation, why);
    place(c, n, 1, aggressive ? Stage::aggressive : Stage::preemptive, job.per_task, std::move(refs));
    return true;
  };
  if (cands.empty()) return;
  size_t first = 0;
  for (size_t i = 1; i < cands.size(); ++i)
    if (later(cands[first], cands[i])) first = i;
  if (attempt(cands[first])) return;
  cands[first] = cands.back();
  cands.pop_back();
  std::make_heap(cands.begin(), cands.end(), later);
  while (!cands.empty()) {
    std::pop_heap(cands.begin(), cands.end(), later);
    uint32_t c = cands.back();
    cands.pop_back();
    if (attempt(c)) return;
  }
}

void Planner::defragment() {
  std::vector<uint32_t> order;
  for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
    const auto& job = m_.jobs[j];
    if (fragmented_[j] && running_[j] == 0 && placed_[j] == 0 && pending_[j] > 0 && job.cap >= 1 && job.delta > 0 &&
        job.fair >= job.delta && limits_headroom(j) > 0)
      order.push_back(j);
  }
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return before(x, y); });
  for (uint32_t j : order) {
    const auto& job = m_.jobs[j];
    uint32_t best = kNone;
    VictimSet best_set;
    // The nodes of its pools (own pool first); the engine picks the hole.
    uint32_t end = job.preemptible ? subtree_end_[job.domain] : preorder_pos_[job.domain] + 1;
    std::vector<Hole> holes;
    std::vector<VictimSet> sets;
    for (uint32_t pos = preorder_pos_[job.domain]; pos < end && best == kNone; ++pos)
      for (uint32_t n : m_.pools[m_.preorder[pos]].nodes) {
        if (!may_use(j, n)) continue;
        if (fitting(n, job.per_task, free_[n], 1) > 0) {
          best = n;  // room appeared (an earlier hole): no victims
          break;
        }
        auto v = find_victims(n, j, job.per_task, Mode::defragmentation);
        if (!v) continue;
        holes.push_back(Hole{n, std::vector<size_t>(v->allocs.begin(), v->allocs.end()), v->cost});
        sets.push_back(std::move(*v));
      }
    if (best == kNone)
      if (auto h = best_hole(holes)) {
        best = h->node;
        for (auto& set : sets)
          if (std::vector<size_t>(set.allocs.begin(), set.allocs.end()) == h->victims) best_set = std::move(set);
      }
    if (best == kNone) {
      if (words_)
        notes_[j] = "fragmented: no node where jobs above their fair share make room for one task of " +
                    job.per_task.to_string();
      continue;
    }
    auto refs = commit_victims(best_set, j, RemovalReason::defragmentation,
                               job_label(job) + " has a fair share of " + fmt_tasks(job.fair, job.delta) +
                                   " tasks but no task because free room is fragmented (DUCC defragmentation); "
                                   "it needs " +
                                   job.per_task.to_string() + " on " + node_label(m_.nodes[best]));
    place(j, best, 1, Stage::defragmentation, job.per_task, std::move(refs));
  }
}

}  // namespace claimsched::core::policy::planning
