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

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <tuple>

#include "core/capacity_index.hpp"
#include "core/duration.hpp"
#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy {

namespace {

std::string fmt_share(Share s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", share_to_double(s));
  return buf;
}

std::string fmt_tasks(Share fair, Share delta) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f",
                delta > 0 ? static_cast<double>(fair) / static_cast<double>(delta) : 0.0);
  return buf;
}

std::string fmt_ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string job_label(const ModelJob& j) { return "job " + std::to_string(j.info->id.value); }

std::string node_label(const ModelNode& n) {
  return n.info->name.empty() ? "node " + std::to_string(n.info->id.value) : "node " + n.info->name;
}

class Planner {
 public:
  Planner(const Model& m, const ClusterView& view, const PolicyState& state, PolicyState& next,
          std::vector<std::string>& reasons)
      : m_(m), view_(view), pre_(m.snapshot->settings.preemption), state_(state), next_(next), reasons_(reasons) {}

  Plan run() {
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

 private:
  // ---------------------------------------------------------------- state
  void init() {
    const size_t nj = m_.jobs.size();
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
    vnode_.assign(m_.nodes.size(), 0);
    for (size_t n = 0; n < m_.nodes.size(); ++n) {
      auto v = view_.find_node(m_.nodes[n].info->id);
      vnode_[n] = v ? *v : kNone;
    }
    // Victim preference per node: preemptible work before non-preemptible,
    // squatters before residents, preemptible before aggressively preemptible
    // before non-preemptible, still initializing before initialized, newest
    // first.
    node_order_.resize(m_.nodes.size());
    node_sorted_.assign(m_.nodes.size(), 0);
  }

  /// Node n's allocations, best victim first (sorted on first use: most nodes
  /// are never searched for victims).
  const std::vector<uint32_t>& victims_on(uint32_t n) {
    if (!node_sorted_[n]) {
      node_order_[n] = m_.nodes[n].allocs;
      std::sort(node_order_[n].begin(), node_order_[n].end(),
                [&](uint32_t x, uint32_t y) { return prefer(x, y); });
      node_sorted_[n] = 1;
    }
    return node_order_[n];
  }

  /// Node n runs a task, not job c's, that may be preempted (what
  /// find_victims's eligible() asks first of every victim).
  bool runs_preemptible_work(uint32_t n, uint32_t c) const {
    for (uint32_t a : m_.nodes[n].allocs) {
      const auto& alloc = m_.allocs[a];
      if (!removed_[a] && alloc.job != c && !alloc.info->landing && m_.jobs[alloc.job].preemptible) return true;
    }
    return false;
  }

  /// True if allocation x is a better victim than y.
  bool prefer(uint32_t x, uint32_t y) const {
    const auto& a = m_.allocs[x];
    const auto& b = m_.allocs[y];
    const auto& ja = m_.jobs[a.job];
    const auto& jb = m_.jobs[b.job];
    // Within a class, the one that wastes the least work goes first (DUCC):
    // a task still initializing, then the newest.
    auto key = [](const ModelAlloc& al, const ModelJob& j) {
      return std::make_tuple(!j.preemptible, !al.squatter, 2 - static_cast<int>(al.cls), al.info->initialized);
    };
    auto ka = key(a, ja), kb = key(b, jb);
    if (ka != kb) return ka < kb;
    if (a.info->start != b.info->start) return a.info->start > b.info->start;
    if (ja.info->id != jb.info->id) return ja.info->id > jb.info->id;
    return a.info->index > b.info->index;
  }

  void add_pool_usage(uint32_t pool, const Resources& r, int sign) {
    for (uint32_t p = pool; p != kNone; p = m_.pools[p].parent)
      if (!m_.pools[p].spec->resource_limits.empty()) {
        if (sign > 0)
          pool_usage_[p] += r;
        else
          pool_usage_[p] -= r;
      }
  }

  /// How many more tasks of job j the resource_limits of its pools allow.
  int64_t limits_headroom(uint32_t j) const {
    const auto& job = m_.jobs[j];
    int64_t best = INT64_MAX;
    for (uint32_t p = job.pool; p != kNone; p = m_.pools[p].parent) {
      const auto& limits = m_.pools[p].spec->resource_limits;
      for (DimensionId d = 0; d < kMaxDimensions; ++d) {
        if (!limits.has(d) || job.per_task[d] <= 0) continue;
        int64_t room = limits.values[d] - pool_usage_[p][d];
        best = std::min(best, room <= 0 ? 0 : room / job.per_task[d]);
      }
    }
    return best;
  }

  /// May job j run on node n at all: the node is in the pools the job may
  /// use (its own; preemptible work also the subpools) and passes the
  /// placement engine's filter.
  bool may_use(uint32_t j, uint32_t n) const {
    const auto& job = m_.jobs[j];
    const auto& node = m_.nodes[n];
    if (!node.schedulable || vnode_[n] == kNone) return false;
    bool pool_ok = job.preemptible ? m_.in_subtree(node.pool, job.domain) : node.pool == job.domain;
    const auto* constraints = job.info->constraints.empty() ? nullptr : &job.info->constraints;
    return pool_ok && node_accepts(view_.node(vnode_[n]), constraints);
  }

  /// How many tasks of `per_task` node n takes in `room` (the engine's count:
  /// resources and the node's starting limit).
  uint32_t fitting(uint32_t n, const Resources& per_task, const Resources& room, uint32_t limit) const {
    return tasks_fitting(view_.node(vnode_[n]), per_task, room, limit);
  }

  /// Satisfaction order: usage/fair of x below that of y (fair 0 = infinite).
  bool less_satisfied(uint32_t x, uint32_t y) const {
    Share fx = m_.fair[x], fy = m_.fair[y];
    if (fx <= 0 || fy <= 0) return fx > 0 && fy <= 0;
    return static_cast<i128>(usage_[x]) * fy < static_cast<i128>(usage_[y]) * fx;
  }

  /// Placement order: best priority first, then least satisfied, then submit time, then id.
  bool before(uint32_t x, uint32_t y) const {
    if (priority_[x] != priority_[y]) return priority_[x] > priority_[y];
    if (less_satisfied(x, y)) return true;
    if (less_satisfied(y, x)) return false;
    const auto& a = *m_.jobs[x].info;
    const auto& b = *m_.jobs[y].info;
    if (a.submit_time != b.submit_time) return a.submit_time < b.submit_time;
    return a.id < b.id;
  }

  // ---------------------------------------------------------------- actions
  void remove(uint32_t a, RemovalKind kind, RemovalReason reason, std::optional<uint32_t> preemptor,
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

  void place(uint32_t j, uint32_t n, uint32_t count, Stage stage, const Resources& per_task,
             std::vector<TaskRef> waits_for = {}) {
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

  // ---------------------------------------------------------------- 1-3: corrections
  void evict_outside() {
    for (uint32_t j = 0; j < m_.jobs.size(); ++j)
      for (uint32_t a : m_.jobs[j].allocs()) {
        const auto& alloc = m_.allocs[a];
        if (alloc.lost || !alloc.outside) continue;
        const auto& node = m_.nodes[alloc.node];
        const auto& job = m_.jobs[j];
        remove(a, RemovalKind::eviction, RemovalReason::outside_pool, std::nullopt, "",
               node_label(node) + " is in pool '" + m_.pools[node.pool].spec->name + "', outside the pool" +
                   std::string(job.preemptible ? "s" : "") + " of class '" + m_.classes[job.cls].spec->name +
                   "' (" + (job.preemptible ? "subtree of '" : "only '") + m_.pools[job.pool].spec->name +
                   "'): node or class configuration changed");
      }
  }

  static bool helps(const Resources& r, const Resources& have, const Resources& need) {
    for (DimensionId d = 0; d < kMaxDimensions; ++d)
      if (have[d] < need[d] && r[d] > 0) return true;
    return false;
  }

  void fix_overcommitted_nodes() {
    for (uint32_t n = 0; n < m_.nodes.size(); ++n) {
      if (!m_.nodes[n].alive || !free_[n].any_negative()) continue;
      Resources zero;
      for (uint32_t a : victims_on(n)) {
        if (!free_[n].any_negative()) break;
        if (removed_[a] || m_.allocs[a].info->landing || !helps(m_.allocs[a].res, free_[n], zero)) continue;
        const auto& job = m_.jobs[m_.allocs[a].job];
        Resources before = free_[n];
        remove(a, job.preemptible ? RemovalKind::preemption : RemovalKind::eviction,
               RemovalReason::node_overcommitted, std::nullopt, "",
               node_label(m_.nodes[n]) + " is over its resources (free " + before.to_string() +
                   " after its allocations of " + m_.nodes[n].info->capacity.to_string() + ")");
      }
    }
  }

  void fix_pool_limits() {
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
          useful =
              useful || (limits.has(d) && pool_usage_[p][d] > limits.values[d] && m_.allocs[a].res[d] > 0);
        if (!useful) continue;
        const auto& job = m_.jobs[m_.allocs[a].job];
        std::string detail = "pool '" + m_.pools[p].spec->name + "' uses " + pool_usage_[p].to_string() +
                             ", over its resource_limits " + limits.to_string();
        remove(a, job.preemptible ? RemovalKind::preemption : RemovalKind::eviction,
               RemovalReason::pool_resource_limits, std::nullopt, m_.pools[p].spec->name, std::move(detail));
      }
    }
  }

  // ---------------------------------------------------------------- victims
  struct VictimSet {
    std::vector<uint32_t> allocs;
    Share cost = 0;
  };

  /// The minimal set of allocations on node n whose removal lets one task of
  /// `per_task` (or `count` of them) start: candidates newest first (squatters
  /// first), then those not needed dropped. `mode` says who may be a victim.
  enum class Mode { starvation, aggressive, defragmentation, request };

  std::optional<VictimSet> find_victims(uint32_t n, uint32_t c, const Resources& need, Mode mode) {
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
    if (mode == Mode::starvation || mode == Mode::aggressive)
      starving_pool = inherited_from(c, mode == Mode::aggressive);
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
      bool reclaim = (mode == Mode::starvation || mode == Mode::aggressive) && alloc.squatter &&
                     cand.pool == node_pool && victim.pool != node_pool;
      if (mode != Mode::request) {
        if (!reclaim && alloc.cls == AllocationClass::non_preemptible) return false;
        if (!reclaim && alloc.cls == AllocationClass::aggressively_preemptible && mode != Mode::aggressive)
          return false;
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
        if (pre_.non_preemptible_resource_usage_threshold.strictly_above(
                victim.per_task.times(running_[alloc.job] - t)))
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

  /// kNone if job c's own starvation is enough for the stage; otherwise the
  /// lowest pool above it that starves enough (YTsaurus: a job below its fair
  /// share starves with its pool, and then preempts outside that pool, since
  /// what its pool lacks is held by others).
  uint32_t inherited_from(uint32_t c, bool aggressive) const {
    const auto& job = m_.jobs[c];
    auto enough = [&](StarvationStatus s) {
      return aggressive ? s == StarvationStatus::aggressively_starving : s != StarvationStatus::non_starving;
    };
    if (enough(job.own_starvation)) return kNone;
    for (uint32_t p = job.pool; p != kNone; p = m_.pools[p].parent)
      if (enough(m_.pools[p].starvation)) return p;
    return kNone;
  }

  std::string starving_text(uint32_t c) const {
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

  std::vector<TaskRef> commit_victims(const VictimSet& v, uint32_t c, RemovalReason reason,
                                      const std::string& why) {
    std::vector<TaskRef> refs;
    for (uint32_t a : v.allocs) {
      const auto& alloc = m_.allocs[a];
      const auto& victim = m_.jobs[alloc.job];
      std::string detail =
          why + "; victim " + job_label(victim) + " runs " + std::to_string(running_[alloc.job]) +
          " tasks, usage " + fmt_share(usage_[alloc.job]) + ", fair share " + fmt_share(victim.fair) +
          "; allocation " + std::string(to_string(alloc.cls)) + (alloc.squatter ? ", squatter" : "");
      refs.push_back(TaskRef{victim.info->id, alloc.info->index});
      remove(a, RemovalKind::preemption, reason, c, "", std::move(detail));
    }
    return refs;
  }

  // ---------------------------------------------------------------- 4: non-preemptible requests
  void place_non_preemptible() {
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
                                    m_.classes[job.cls].spec->name + ") was granted " +
                                    std::to_string(job.pending) + " tasks by the how-much phase and needs " +
                                    need.to_string() + " on " + node_label(m_.nodes[n]));
        }
        place(j, n, k, Stage::non_preemptible, job.per_task, std::move(refs));
      }
    }
  }

  void place_reserve(uint32_t j) {
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
    std::vector<TaskRef> refs =
        commit_victims(v, j, RemovalReason::non_preemptible_request,
                       job_label(job) + " (reserve class " + m_.classes[job.cls].spec->name +
                           ") reserves all of " + node_label(m_.nodes[n]));
    // The claim is for the whole machine as it is (its memory may exceed the
    // quanta it was matched by).
    place(j, n, 1, Stage::non_preemptible, m_.nodes[n].info->capacity, std::move(refs));
  }

  // ---------------------------------------------------------------- 5: fragmentation
  /// Could one task of job j fit the free room of its pools, in all?
  bool room_somewhere(uint32_t j) const {
    const auto& job = m_.jobs[j];
    Resources total;
    uint32_t end = job.preemptible ? subtree_end_[job.domain] : preorder_pos_[job.domain] + 1;
    for (uint32_t pos = preorder_pos_[job.domain]; pos < end; ++pos) total += pool_free_[m_.preorder[pos]];
    return job.per_task.fits_in(total);
  }

  /// Would the placement engine find a node with room for one task of job j?
  /// (Asked once per task shape and pool: the answer is the same for all.)
  bool node_room(uint32_t j) {
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

  /// DUCC's fragmentation: a job with a fair share of at least one task that
  /// the queue could not give even one, although the free room of its pools
  /// held one in all (no node had it whole) when the queue looked, or does now.
  void find_fragmented() {
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

  // ---------------------------------------------------------------- 6: preemptive stages
  bool starving_candidate(uint32_t j, bool aggressive) const {
    const auto& job = m_.jobs[j];
    if (job.policy != ClassPolicy::fair_share || job.unresolvable) return false;
    if (aggressive ? job.starvation != StarvationStatus::aggressively_starving
                   : job.starvation == StarvationStatus::non_starving)
      return false;
    return pending_[j] > 0 && running_[j] < job.cap && usage_[j] < job.fair && limits_headroom(j) > 0;
  }

  void preemptive_stages() {
    std::vector<uint32_t> starving;
    for (uint32_t j = 0; j < m_.jobs.size(); ++j)
      if (starving_candidate(j, false)) starving.push_back(j);
    if (starving.empty()) return;
    std::vector<uint32_t> tried_nodes(m_.jobs.size(), 0), backoff_nodes(m_.jobs.size(), 0);
    // A node's candidates are bound to its pool or (preemptible work) an
    // ancestor. Those without constraints are the same on every usable
    // node of a pool: one group per pool, counted per node instead of
    // walked per node (the walk, nodes x starving jobs, is what costs).
    std::vector<std::vector<uint32_t>> by_pool(m_.pools.size()), constrained_by_pool(m_.pools.size());
    for (uint32_t j : starving)
      (m_.jobs[j].info->constraints.empty() ? by_pool : constrained_by_pool)[m_.jobs[j].pool].push_back(j);
    // Who is a (non-aggressive) candidate changes only when a stage places
    // or preempts: asked again then, not per node.
    std::vector<char> candidate(m_.jobs.size(), 0);
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
        g = Group{};
      }
    };
    auto refresh = [&] {
      settle_groups();
      for (uint32_t j : starving) candidate[j] = starving_candidate(j, false);
    };
    refresh();
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
      auto local = [&](bool aggressive) {
        std::vector<uint32_t> out;
        for_each_local(aggressive, [&](uint32_t j) { out.push_back(j); });
        return out;
      };
      auto in_stage_order = [&](std::vector<uint32_t> out) {
        std::sort(out.begin(), out.end(), [&](uint32_t x, uint32_t y) {
          bool sx = m_.nodes[n].pool != m_.jobs[x].pool, sy = m_.nodes[n].pool != m_.jobs[y].pool;
          if (sx != sy) return !sx;  // residents of the node's pool first
          return before(x, y);
        });
        return out;
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
      auto last = std::lower_bound(state_.node_last_preemptive_scheduling.begin(),
                                   state_.node_last_preemptive_scheduling.end(), m_.nodes[n].info->id,
                                   [](const auto& e, NodeId id) { return e.first < id; });
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
      run_stage(n, in_stage_order(local(false)), false);
      run_stage(n, in_stage_order(local(true)), true);
      if (plan_.stats.tasks_placed + plan_.removals.size() != decided) refresh();
    }
    settle_groups();
    for (uint32_t j : starving) {
      if (placed_[j] > 0 || pending_[j] == 0) continue;
      const auto& job = m_.jobs[j];
      std::string note =
          std::string(to_string(job.starvation)) +
          (job.below_since == kNever ? std::string(" (pool)") : " for " + human_duration(m_.now - job.below_since));
      if (tried_nodes[j] > 0)
        note += "; on " + std::to_string(tried_nodes[j]) +
                " node(s) no preemptible allocations make room for " + job.per_task.to_string();
      if (backoff_nodes[j] > 0)
        note += "; " + std::to_string(backoff_nodes[j]) + " node(s) in preemptive_scheduling_backoff (" +
                format_duration(pre_.preemptive_scheduling_backoff) + ")";
      notes_[j] = note;
    }
  }

  /// One preemptive stage on node n: at most one new allocation.
  void run_stage(uint32_t n, const std::vector<uint32_t>& cands, bool aggressive) {
    for (uint32_t c : cands) {
      if (!starving_candidate(c, aggressive)) continue;
      const auto& job = m_.jobs[c];
      if (fitting(n, job.per_task, free_[n], 1) > 0) {
        place(c, n, 1, aggressive ? Stage::aggressive : Stage::preemptive, job.per_task);
        return;
      }
      auto v = find_victims(n, c, job.per_task, aggressive ? Mode::aggressive : Mode::starvation);
      if (!v) continue;
      std::string why =
          starving_text(c) + "; it needs " + job.per_task.to_string() + " on " + node_label(m_.nodes[n]);
      auto refs = commit_victims(
          *v, c, aggressive ? RemovalReason::aggressive_starvation : RemovalReason::starvation, why);
      place(c, n, 1, aggressive ? Stage::aggressive : Stage::preemptive, job.per_task, std::move(refs));
      return;
    }
  }

  // ---------------------------------------------------------------- 7: defragmentation
  void defragment() {
    std::vector<uint32_t> order;
    for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
      const auto& job = m_.jobs[j];
      if (fragmented_[j] && running_[j] == 0 && placed_[j] == 0 && pending_[j] > 0 && job.cap >= 1 &&
          job.delta > 0 && job.fair >= job.delta && limits_headroom(j) > 0)
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
        notes_[j] = "fragmented: no node where jobs above their fair share make room for one task of " +
                    job.per_task.to_string();
        continue;
      }
      auto refs =
          commit_victims(best_set, j, RemovalReason::defragmentation,
                         job_label(job) + " has a fair share of " + fmt_tasks(job.fair, job.delta) +
                             " tasks but no task because free room is fragmented (DUCC defragmentation); "
                             "it needs " +
                             job.per_task.to_string() + " on " + node_label(m_.nodes[best]));
      place(j, best, 1, Stage::defragmentation, job.per_task, std::move(refs));
    }
  }

  // ---------------------------------------------------------------- state, reasons
  void update_backoff() {
    auto& out = next_.node_last_preemptive_scheduling;
    out.clear();
    std::sort(stage_ran_.begin(), stage_ran_.end());
    size_t k = 0;
    for (const auto& [id, at] : state_.node_last_preemptive_scheduling) {
      while (k < stage_ran_.size() && m_.nodes[stage_ran_[k]].info->id < id) {
        out.emplace_back(m_.nodes[stage_ran_[k]].info->id, m_.now);
        ++k;
      }
      if (k < stage_ran_.size() && m_.nodes[stage_ran_[k]].info->id == id) continue;
      // Keep only timers that still hold a node back, of nodes that still exist.
      auto it = std::lower_bound(m_.nodes.begin(), m_.nodes.end(), id,
                                 [](const ModelNode& node, NodeId v) { return node.info->id < v; });
      bool exists = it != m_.nodes.end() && it->info->id == id;
      if (exists && at <= m_.now && m_.now - at < pre_.preemptive_scheduling_backoff)
        out.emplace_back(id, at);
    }
    for (; k < stage_ran_.size(); ++k) out.emplace_back(m_.nodes[stage_ran_[k]].info->id, m_.now);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end(), [](auto& a, auto& b) { return a.first == b.first; }),
              out.end());
  }

  std::string cap_text(const ModelJob& j) const {
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

  void finish() {
    plan_.stats.placements = static_cast<uint32_t>(plan_.placements.size());
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
        r = job.fair == 0
                ? "fair share is 0: better priorities, residents or limits take its pool's room"
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

  const Model& m_;
  const ClusterView& view_;
  const PreemptionSettings& pre_;
  const PolicyState& state_;
  PolicyState& next_;
  std::vector<std::string>& reasons_;
  Plan plan_;
  std::vector<Resources> free_;
  std::vector<Resources> pool_free_;
  std::vector<int64_t> running_, pending_;
  std::vector<int32_t> priority_;
  std::vector<Share> usage_;
  std::vector<uint32_t> placed_, removed_count_;
  std::vector<std::string> notes_;
  std::vector<char> removed_;
  std::vector<Resources> pool_usage_;
  std::vector<uint32_t> preorder_pos_, subtree_end_;
  std::vector<std::vector<uint32_t>> node_order_;
  std::vector<char> node_sorted_;
  std::vector<uint32_t> stage_ran_;
  std::vector<char> fragmented_;
  /// The view's node of each model node (kNone: not in the view).
  std::vector<uint32_t> vnode_;
  /// node_room's answers by (shape, pool, preemptible).
  std::vector<std::tuple<Resources, uint32_t, bool, bool>> room_cache_;
};

}  // namespace

Plan plan_cycle(const Model& model, const ClusterView& view, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons) {
  return Planner(model, view, state, next, pending_reasons).run();
}

}  // namespace claimsched::core::policy
