// plan_cycle: what the next cycle places, preempts and evicts (see engine.hpp).
//
// Steps, in this order, each on the planned state the previous ones left:
//   1. evictions: allocations on nodes outside the pools their job may use;
//   2. nodes over their resources: remove allocations until they fit
//      (preemptible work first; non-preemptible work is evicted last);
//   3. pools over their resource_limits: same, over the pool's work;
//   4. non-preemptible requests granted by the how-much phase: placed whole,
//      in the room of fair-share allocations if free room is short (DUCC);
//   5. regular stage: free room only; first every job up to its fair share
//      (whole tasks), then what is left to whoever is least satisfied;
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
  Planner(const Model& m, const PolicyState& state, PolicyState& next, std::vector<std::string>& reasons)
      : m_(m), pre_(m.snapshot->settings.preemption), state_(state), next_(next), reasons_(reasons) {}

  Plan run() {
    init();
    evict_outside();
    fix_overcommitted_nodes();
    fix_pool_limits();
    place_non_preemptible();
    regular_stage();
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
    // Per pool, an index of its own nodes' free room (slot = position in the
    // pool's node list) for fill-first scans that skip what cannot fit.
    index_.resize(m_.pools.size());
    slot_.assign(m_.nodes.size(), 0);
    for (size_t p = 0; p < m_.pools.size(); ++p)
      for (uint32_t n : m_.pools[p].nodes)
        slot_[n] = static_cast<uint32_t>(
            index_[p].add(m_.nodes[n].schedulable ? free_[n] : CapacityIndex::unavailable()));
    // Victim preference per node: preemptible work before non-preemptible,
    // squatters before residents, preemptible before aggressively preemptible
    // before non-preemptible, newest first.
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

  /// True if allocation x is a better victim than y.
  bool prefer(uint32_t x, uint32_t y) const {
    const auto& a = m_.allocs[x];
    const auto& b = m_.allocs[y];
    const auto& ja = m_.jobs[a.job];
    const auto& jb = m_.jobs[b.job];
    auto key = [](const ModelAlloc& al, const ModelJob& j) {
      return std::make_tuple(!j.preemptible, !al.squatter, 2 - static_cast<int>(al.cls));
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

  bool may_use(uint32_t j, uint32_t n) const {
    const auto& job = m_.jobs[j];
    const auto& node = m_.nodes[n];
    if (!node.schedulable) return false;
    bool pool_ok = job.preemptible ? m_.in_subtree(node.pool, job.pool) : node.pool == job.pool;
    return pool_ok && label_selectors_match(job.info->constraints, node.info->labels);
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
      index_[m_.nodes[alloc.node].pool].update(slot_[alloc.node], free_[alloc.node]);
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
    index_[m_.nodes[n].pool].update(slot_[n], free_[n]);
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
        if (removed_[a] || !helps(m_.allocs[a].res, free_[n], zero)) continue;
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
            if (!removed_[a] && !m_.allocs[a].lost) cands.push_back(a);
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
    Resources acc = free_[n];
    VictimSet out;
    std::vector<std::pair<uint32_t, uint32_t>> taken;  // (job, count) tentatively removed
    auto taken_of = [&](uint32_t j) -> uint32_t& {
      for (auto& e : taken)
        if (e.first == j) return e.second;
      taken.emplace_back(j, 0);
      return taken.back().second;
    };
    const auto& cand = m_.jobs[c];
    // A job that starves only through a pool takes from outside that pool.
    uint32_t starving_pool = kNone;
    if (mode == Mode::starvation || mode == Mode::aggressive)
      starving_pool = inherited_from(c, mode == Mode::aggressive);
    for (uint32_t a : victims_on(n)) {
      if (need.fits_in(acc)) break;
      const auto& alloc = m_.allocs[a];
      if (removed_[a] || alloc.job == c || !helps(alloc.res, acc, need)) continue;
      const auto& victim = m_.jobs[alloc.job];
      if (!victim.preemptible) continue;
      if (starving_pool != kNone && m_.in_subtree(victim.pool, starving_pool)) continue;
      // DUCC: a pool belongs to its residents. A squatter yields to a resident
      // of the pool it squats in whatever its class: the class thresholds do
      // not protect it; the satisfaction rule below still does (so the two
      // jobs never take tasks back and forth).
      uint32_t node_pool = m_.nodes[n].pool;
      bool reclaim = (mode == Mode::starvation || mode == Mode::aggressive) && alloc.squatter &&
                     cand.pool == node_pool && victim.pool != node_pool;
      if (mode != Mode::request) {
        if (!reclaim && alloc.cls == AllocationClass::non_preemptible) continue;
        if (!reclaim && alloc.cls == AllocationClass::aggressively_preemptible && mode != Mode::aggressive)
          continue;
        uint32_t t = taken_of(alloc.job) + 1;
        Share after = usage_[alloc.job] - static_cast<Share>(t) * victim.delta;
        // The victim keeps what its allocations' class protects ...
        // (In the aggressive stage preemptible and aggressively preemptible
        // allocations form one set, protected down to the aggressive threshold:
        // its newest go first, whichever class they started the cycle in.)
        Share thr = mode == Mode::aggressive || alloc.cls == AllocationClass::aggressively_preemptible
                        ? m_.aggressive_threshold
                        : m_.preemption_threshold;
        if (!reclaim && static_cast<i128>(after) * kShareOne < static_cast<i128>(victim.fair) * thr) continue;
        if (pre_.non_preemptible_resource_usage_threshold.strictly_above(
                victim.per_task.times(running_[alloc.job] - t)))
          continue;
        // ... and stays more satisfied than the preemptor was; in the
        // aggressive stage (where victims go below their fair share) at least
        // as satisfied as the preemptor will be, so the two never swap places.
        Share cand_usage = mode == Mode::aggressive ? usage_[c] + cand.delta : usage_[c];
        if (victim.fair > 0) {
          i128 lhs = static_cast<i128>(after) * cand.fair;
          i128 rhs = static_cast<i128>(cand_usage) * victim.fair;
          if (mode == Mode::aggressive ? lhs < rhs : lhs <= rhs) continue;
        }
      }
      ++taken_of(alloc.job);
      out.allocs.push_back(a);
      acc += alloc.res;
    }
    if (!need.fits_in(acc)) return std::nullopt;
    // Drop what is not needed (the last one taken always is).
    for (size_t i = out.allocs.size(); i-- > 1;) {
      const auto& r = m_.allocs[out.allocs[i - 1]].res;
      if (need.fits_in(acc - r)) {
        acc -= r;
        out.allocs.erase(out.allocs.begin() + static_cast<long>(i - 1));
      }
    }
    for (uint32_t a : out.allocs) out.cost += m_.jobs[m_.allocs[a].job].delta;
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
              if (!removed_[a] && m_.jobs[m_.allocs[a].job].preemptible) room += m_.allocs[a].res;
          int64_t k = std::min<int64_t>(left, job.per_task.copies_fitting_in(room));
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
    for (uint32_t a : m_.nodes[n].allocs)
      if (!removed_[a]) v.allocs.push_back(a);
    std::vector<TaskRef> refs =
        commit_victims(v, j, RemovalReason::non_preemptible_request,
                       job_label(job) + " (reserve class " + m_.classes[job.cls].spec->name +
                           ") reserves all of " + node_label(m_.nodes[n]));
    // The claim is for the whole machine as it is (its memory may exceed the
    // quanta it was matched by).
    place(j, n, 1, Stage::non_preemptible, m_.nodes[n].info->capacity, std::move(refs));
  }

  // ---------------------------------------------------------------- 5: regular stage
  /// Allowed pools of job j: its own, then (preemptible work only) its subpools in pre-order.
  enum class Where { anywhere, own_pool, subpools };

  /// Places up to `want` tasks of job j in free room, fill-first: its own
  /// pool's nodes in order, then (preemptible work only) its subpools' in
  /// pre-order. Returns how many.
  int64_t place_free(uint32_t j, int64_t want, Where where = Where::anywhere) {
    const auto& job = m_.jobs[j];
    int64_t done = 0;
    want = std::min(want, limits_headroom(j));
    if (want <= 0) return 0;
    bool constrained = !job.info->constraints.empty();
    uint32_t begin = preorder_pos_[job.pool] + (where == Where::subpools ? 1 : 0);
    uint32_t end =
        job.preemptible && where != Where::own_pool ? subtree_end_[job.pool] : preorder_pos_[job.pool] + 1;
    for (uint32_t pos = begin; pos < end && done < want; ++pos) {
      uint32_t p = m_.preorder[pos];
      const auto& nodes = m_.pools[p].nodes;
      auto accept = [&](size_t slot) {
        return !constrained ||
               label_selectors_match(job.info->constraints, m_.nodes[nodes[slot]].info->labels);
      };
      auto& failed = no_room_[p];
      if (!constrained && std::find(failed.begin(), failed.end(), job.per_task) != failed.end()) continue;
      while (done < want && job.per_task.fits_in(pool_free_[p])) {
        auto slot = index_[p].find_first_remembered(job.per_task, 0, nodes.size(), accept);
        if (!slot) {
          // No node of the pool holds this shape; free room only shrinks
          // until the regular stage ends, so that stays true.
          if (!constrained && failed.size() < 256) failed.push_back(job.per_task);
          break;
        }
        uint32_t n = nodes[*slot];
        int64_t k = std::min(want - done, job.per_task.copies_fitting_in(free_[n]));
        place(j, n, static_cast<uint32_t>(k), Stage::regular, job.per_task);
        done += k;
      }
    }
    return done;
  }

  bool regular_candidate(uint32_t j) const {
    const auto& job = m_.jobs[j];
    return job.policy == ClassPolicy::fair_share && !job.unresolvable && pending_[j] > 0 &&
           running_[j] < job.cap;
  }

  /// Could one task of job j fit the free room of its pools, in all?
  bool room_somewhere(uint32_t j) const {
    const auto& job = m_.jobs[j];
    Resources total;
    uint32_t end = job.preemptible ? subtree_end_[job.pool] : preorder_pos_[job.pool] + 1;
    for (uint32_t pos = preorder_pos_[job.pool]; pos < end; ++pos) total += pool_free_[m_.preorder[pos]];
    return job.per_task.fits_in(total);
  }

  /// Could one task of job j fit on one node of its pools (the indexes keep
  /// each pool's element-wise maximum of free room)?
  bool node_room(uint32_t j) const {
    const auto& job = m_.jobs[j];
    uint32_t end = job.preemptible ? subtree_end_[job.pool] : preorder_pos_[job.pool] + 1;
    for (uint32_t pos = preorder_pos_[job.pool]; pos < end; ++pos)
      if (job.per_task.fits_in(index_[m_.preorder[pos]].max_available())) return true;
    return false;
  }

  int64_t fair_want(uint32_t j) const {
    const auto& job = m_.jobs[j];
    int64_t fair_tasks = job.delta > 0 ? job.fair / job.delta : 0;
    return std::min<int64_t>({fair_tasks, job.cap, running_[j] + pending_[j]}) - running_[j];
  }

  /// The placement order of the regular stage, as a key per job (the exact
  /// comparison of before() costs too much for 100k jobs; the satisfaction
  /// here is a double, computed the same way every time, so still
  /// deterministic).
  struct Key {
    int32_t neg_priority;
    double satisfaction;
    int64_t submit;
    uint64_t id;
    friend bool operator<(const Key& a, const Key& b) {
      return std::tie(a.neg_priority, a.satisfaction, a.submit, a.id) <
             std::tie(b.neg_priority, b.satisfaction, b.submit, b.id);
    }
  };
  Key key_of(uint32_t j) const {
    Share fair = m_.fair[j];
    double sat = fair > 0 ? static_cast<double>(usage_[j]) / static_cast<double>(fair)
                          : std::numeric_limits<double>::infinity();
    const auto& info = *m_.jobs[j].info;
    return Key{-priority_[j], sat, info.submit_time.count(), info.id.value};
  }

  void regular_stage() {
    // Free room only shrinks in this stage: a job that fits no node now gets
    // nothing; if its pools have the room in all, it is fragmented.
    std::vector<uint32_t> order;
    fragmented_.assign(m_.jobs.size(), 0);
    no_room_.assign(m_.pools.size(), {});
    for (uint32_t j = 0; j < m_.jobs.size(); ++j) {
      if (!regular_candidate(j)) continue;
      if (node_room(j))
        order.push_back(j);
      else if (fair_want(j) > 0)
        fragmented_[j] = room_somewhere(j) && limits_headroom(j) > 0;
    }

    std::vector<std::pair<Key, uint32_t>> keyed;
    keyed.reserve(order.size());
    for (uint32_t j : order) keyed.emplace_back(key_of(j), j);
    std::sort(keyed.begin(), keyed.end());
    for (size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
    // Pass 1: every job up to its fair share in whole tasks, residents of a
    // pool before squatters from above (1a: own pools only, 1b: subpools). A
    // job that gets nothing although its nodes have room for a task in all is
    // fragmented.
    std::vector<int64_t> want(m_.jobs.size(), 0), got(m_.jobs.size(), 0);
    auto room_in_all = [&](uint32_t j) { return room_somewhere(j) && limits_headroom(j) > 0; };
    for (uint32_t j : order) {
      want[j] = fair_want(j);
      if (want[j] <= 0) continue;
      got[j] = place_free(j, want[j], Where::own_pool);
      if (got[j] == 0) fragmented_[j] = room_in_all(j);
    }
    for (uint32_t j : order) {
      if (want[j] <= 0 || got[j] >= want[j] || !m_.jobs[j].preemptible) continue;
      got[j] += place_free(j, want[j] - got[j], Where::subpools);
      if (got[j] > 0) fragmented_[j] = 0;
    }
    // Pass 2: free room that is left, one task at a time to the least
    // satisfied. A job that got less than it wanted in pass 1 found no node
    // and would find none now (room only shrank).
    std::set<std::pair<Key, uint32_t>> queue;
    for (uint32_t j : order)
      if (got[j] >= want[j] && regular_candidate(j) && node_room(j)) queue.emplace(key_of(j), j);
    while (!queue.empty()) {
      uint32_t j = queue.begin()->second;
      queue.erase(queue.begin());
      if (place_free(j, 1) == 0) continue;
      if (regular_candidate(j) && node_room(j)) queue.emplace(key_of(j), j);
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
    // A node's candidates are bound to its pool or (preemptible work) an ancestor.
    std::vector<std::vector<uint32_t>> by_pool(m_.pools.size());
    for (uint32_t j : starving) by_pool[m_.jobs[j].pool].push_back(j);
    for (uint32_t n = 0; n < m_.nodes.size(); ++n) {
      if (!m_.nodes[n].schedulable) continue;
      auto local = [&](bool aggressive) {
        std::vector<uint32_t> out;
        for (uint32_t p = m_.nodes[n].pool; p != kNone; p = m_.pools[p].parent)
          for (uint32_t j : by_pool[p])
            if (starving_candidate(j, aggressive) && may_use(j, n)) out.push_back(j);
        std::sort(out.begin(), out.end(), [&](uint32_t x, uint32_t y) {
          bool sx = m_.nodes[n].pool != m_.jobs[x].pool, sy = m_.nodes[n].pool != m_.jobs[y].pool;
          if (sx != sy) return !sx;  // residents of the node's pool first
          return before(x, y);
        });
        return out;
      };
      auto cands = local(false);
      if (cands.empty()) continue;
      auto last = std::lower_bound(state_.node_last_preemptive_scheduling.begin(),
                                   state_.node_last_preemptive_scheduling.end(), m_.nodes[n].info->id,
                                   [](const auto& e, NodeId id) { return e.first < id; });
      if (last != state_.node_last_preemptive_scheduling.end() && last->first == m_.nodes[n].info->id &&
          last->second <= m_.now && m_.now - last->second < pre_.preemptive_scheduling_backoff) {
        ++plan_.stats.nodes_in_backoff;
        for (uint32_t j : cands) ++backoff_nodes[j];
        continue;
      }
      stage_ran_.push_back(n);
      for (uint32_t j : cands) ++tried_nodes[j];
      run_stage(n, cands, false);
      run_stage(n, local(true), true);
    }
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
      if (job.per_task.fits_in(free_[n])) {
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
      // The nodes of its pools (own pool first), the one needing the fewest
      // victims (then the least share taken, then the first).
      uint32_t end = job.preemptible ? subtree_end_[job.pool] : preorder_pos_[job.pool] + 1;
      bool free_fit = false;
      for (uint32_t pos = preorder_pos_[job.pool]; pos < end && !free_fit; ++pos)
        for (uint32_t n : m_.pools[m_.preorder[pos]].nodes) {
          if (!may_use(j, n)) continue;
          if (job.per_task.fits_in(free_[n])) {
            best = n;
            best_set = {};
            free_fit = true;
            break;
          }
          auto v = find_victims(n, j, job.per_task, Mode::defragmentation);
          if (!v) continue;
          if (best == kNone || v->allocs.size() < best_set.allocs.size() ||
              (v->allocs.size() == best_set.allocs.size() && v->cost < best_set.cost)) {
            best = n;
            best_set = std::move(*v);
          }
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
               " tasks this cycle (twice the " + std::to_string(j.running) + " running)";
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
  std::vector<CapacityIndex> index_;
  /// Regular stage: per pool, task shapes no node has room for.
  std::vector<std::vector<Resources>> no_room_;
  std::vector<uint32_t> slot_;
};

}  // namespace

Plan plan_cycle(const Model& model, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons) {
  return Planner(model, state, next, pending_reasons).run();
}

}  // namespace claimsched::core::policy
