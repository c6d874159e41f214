#pragma once

// The planner behind plan_cycle (plan.cpp; see there for its steps): the
// policy's own bookkeeping of what a cycle frees and takes. Internal to
// core/policy: plan.cpp holds the corrections, requests and reasons,
// plan_preemption.cpp the victims, the preemptive stages and
// defragmentation.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/capacity_index.hpp"
#include "core/duration.hpp"
#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy::planning {

inline std::string fmt_share(Share s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", share_to_double(s));
  return buf;
}

inline std::string fmt_tasks(Share fair, Share delta) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", delta > 0 ? static_cast<double>(fair) / static_cast<double>(delta) : 0.0);
  return buf;
}

inline std::string fmt_ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

inline std::string job_label(const ModelJob& j) { return "job " + std::to_string(j.info->id.value); }

inline std::string node_label(const ModelNode& n) {
  return n.info->name.empty() ? "node " + std::to_string(n.info->id.value) : "node " + n.info->name;
}

class Planner {
 public:
  /// Works in `b`: the vectors below are b's (kept by a stage across cycles).
  Planner(const Model& m, const ClusterView& view, const PolicyState& state, PolicyState& next,
          std::vector<std::string>& reasons, bool words, PlanBuffers& b)
      : m_(m),
        view_(view),
        pre_(m.snapshot->settings.preemption),
        state_(state),
        next_(next),
        reasons_(reasons),
        words_(words),
        b_(b),
        free_(b.free),
        pool_free_(b.pool_free),
        running_(b.running),
        pending_(b.pending),
        priority_(b.priority),
        usage_(b.usage),
        placed_(b.placed),
        removed_count_(b.removed_count),
        notes_(b.notes),
        removed_(b.removed),
        pool_usage_(b.pool_usage),
        preorder_pos_(b.preorder_pos),
        subtree_end_(b.subtree_end),
        node_order_(b.node_order),
        node_sorted_(b.node_sorted),
        stage_ran_(b.stage_ran),
        fragmented_(b.fragmented),
        vnode_(b.vnode),
        room_cache_(b.room_cache) {}

  Plan run();

 private:
  // ---------------------------------------------------------------- state
  void init();

  /// Node n's allocations, best victim first (sorted on first use: most nodes
  /// are never searched for victims).
  const std::vector<uint32_t>& victims_on(uint32_t n);

  /// Node n runs a task, not job c's, that may be preempted (what
  /// find_victims's eligible() asks first of every victim).
  bool runs_preemptible_work(uint32_t n, uint32_t c) const;

  /// True if allocation x is a better victim than y.
  bool prefer(uint32_t x, uint32_t y) const;

  void add_pool_usage(uint32_t pool, const Resources& r, int sign);

  /// How many more tasks of job j the resource_limits of its pools allow.
  int64_t limits_headroom(uint32_t j) const;

  /// May job j run on node n at all: the node is in the pools the job may
  /// use (its own; preemptible work also the subpools) and passes the
  /// placement engine's filter.
  bool may_use(uint32_t j, uint32_t n) const;

  /// How many tasks of `per_task` node n takes in `room` (the engine's count:
  /// resources and the node's starting limit).
  uint32_t fitting(uint32_t n, const Resources& per_task, const Resources& room, uint32_t limit) const;

  /// Satisfaction order: usage/fair of x below that of y (fair 0 = infinite).
  bool less_satisfied(uint32_t x, uint32_t y) const;

  /// Placement order: best priority first, then least satisfied, then submit time, then id.
  bool before(uint32_t x, uint32_t y) const;

  // ---------------------------------------------------------------- actions
  void remove(uint32_t a, RemovalKind kind, RemovalReason reason, std::optional<uint32_t> preemptor, std::string pool,
              std::string detail);

  void place(uint32_t j, uint32_t n, uint32_t count, Stage stage, const Resources& per_task,
             std::vector<TaskRef> waits_for = {});

  // ---------------------------------------------------------------- 1-3: corrections
  void evict_outside();

  static bool helps(const Resources& r, const Resources& have, const Resources& need);

  void fix_overcommitted_nodes();

  void fix_pool_limits();

  // ---------------------------------------------------------------- victims
  struct VictimSet {
    std::vector<uint32_t> allocs;
    Share cost = 0;
  };

  /// The minimal set of allocations on node n whose removal lets one task of
  /// `per_task` (or `count` of them) start: candidates newest first (squatters
  /// first), then those not needed dropped. `mode` says who may be a victim.
  enum class Mode { starvation, aggressive, defragmentation, request };

  std::optional<VictimSet> find_victims(uint32_t n, uint32_t c, const Resources& need, Mode mode);

  /// kNone if job c's own starvation is enough for the stage; otherwise the
  /// lowest pool above it that starves enough (YTsaurus: a job below its fair
  /// share starves with its pool, and then preempts outside that pool, since
  /// what its pool lacks is held by others).
  uint32_t inherited_from(uint32_t c, bool aggressive) const;

  std::string starving_text(uint32_t c) const;

  std::vector<TaskRef> commit_victims(const VictimSet& v, uint32_t c, RemovalReason reason, const std::string& why);

  // ---------------------------------------------------------------- 4: non-preemptible requests
  void place_non_preemptible();

  void place_reserve(uint32_t j);

  // ---------------------------------------------------------------- 5: fragmentation
  /// Could one task of job j fit the free room of its pools, in all?
  bool room_somewhere(uint32_t j) const;

  /// Would the placement engine find a node with room for one task of job j?
  /// (Asked once per task shape and pool: the answer is the same for all.)
  bool node_room(uint32_t j);

  /// DUCC's fragmentation: a job with a fair share of at least one task that
  /// the queue could not give even one, although the free room of its pools
  /// held one in all (no node had it whole) when the queue looked, or does now.
  void find_fragmented();

  // ---------------------------------------------------------------- 6: preemptive stages
  bool starving_candidate(uint32_t j, bool aggressive) const;

  void preemptive_stages();

  /// One preemptive stage on node n: at most one new allocation, for the
  /// first of `cands` in stage order (residents of n's pool first, then
  /// before()) that can have one. `cands` is used up.
  void run_stage(uint32_t n, std::vector<uint32_t>& cands, bool aggressive);

  // ---------------------------------------------------------------- 7: defragmentation
  void defragment();

  // ---------------------------------------------------------------- state, reasons
  void update_backoff();

  std::string cap_text(const ModelJob& j) const;

  void finish();

  const Model& m_;
  const ClusterView& view_;
  const PreemptionSettings& pre_;
  const PolicyState& state_;
  PolicyState& next_;
  std::vector<std::string>& reasons_;
  /// Build the pending reasons (and the notes they are made of); decisions never read them.
  bool words_ = true;
  Plan plan_;
  PlanBuffers& b_;
  std::vector<Resources>& free_;
  std::vector<Resources>& pool_free_;
  std::vector<int64_t>& running_;
  std::vector<int64_t>& pending_;
  std::vector<int32_t>& priority_;
  std::vector<Share>& usage_;
  std::vector<uint32_t>& placed_;
  std::vector<uint32_t>& removed_count_;
  std::vector<std::string>& notes_;
  std::vector<char>& removed_;
  /// Some allocation of the model could be a victim (its job is
  /// preemptible and it runs already). Removals only lower that: when none
  /// can, no node runs preemptible work, asked per node and stage.
  bool any_preemptible_ = false;
  std::vector<Resources>& pool_usage_;
  std::vector<uint32_t>& preorder_pos_;
  std::vector<uint32_t>& subtree_end_;
  std::vector<std::vector<uint32_t>>& node_order_;
  std::vector<char>& node_sorted_;
  std::vector<uint32_t>& stage_ran_;
  std::vector<char>& fragmented_;
  /// The view's node of each model node (kNone: not in the view).
  std::vector<uint32_t>& vnode_;
  /// node_room's answers by (shape, pool, preemptible).
  std::vector<std::tuple<Resources, uint32_t, bool, bool>>& room_cache_;
};

// The small questions every stage asks, inline where both files ask them.

inline const std::vector<uint32_t>& Planner::victims_on(uint32_t n) {
  if (!node_sorted_[n]) {
    node_order_[n].assign(m_.nodes[n].allocs.begin(), m_.nodes[n].allocs.end());
    std::sort(node_order_[n].begin(), node_order_[n].end(), [&](uint32_t x, uint32_t y) { return prefer(x, y); });
    node_sorted_[n] = 1;
  }
  return node_order_[n];
}

inline bool Planner::runs_preemptible_work(uint32_t n, uint32_t c) const {
  if (!any_preemptible_) return false;
  for (uint32_t a : m_.nodes[n].allocs) {
    const auto& alloc = m_.allocs[a];
    if (!removed_[a] && alloc.job != c && !alloc.info->landing && m_.jobs[alloc.job].preemptible) return true;
  }
  return false;
}

inline bool Planner::prefer(uint32_t x, uint32_t y) const {
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

inline void Planner::add_pool_usage(uint32_t pool, const Resources& r, int sign) {
  for (uint32_t p = pool; p != kNone; p = m_.pools[p].parent)
    if (!m_.pools[p].spec->resource_limits.empty()) {
      if (sign > 0)
        pool_usage_[p] += r;
      else
        pool_usage_[p] -= r;
    }
}

inline int64_t Planner::limits_headroom(uint32_t j) const {
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

inline bool Planner::may_use(uint32_t j, uint32_t n) const {
  const auto& job = m_.jobs[j];
  const auto& node = m_.nodes[n];
  if (!node.schedulable || vnode_[n] == kNone) return false;
  bool pool_ok = job.preemptible ? m_.in_subtree(node.pool, job.domain) : node.pool == job.domain;
  const auto* constraints = job.info->constraints.empty() ? nullptr : &job.info->constraints;
  return pool_ok && node_accepts(view_.node(vnode_[n]), constraints);
}

inline uint32_t Planner::fitting(uint32_t n, const Resources& per_task, const Resources& room, uint32_t limit) const {
  return tasks_fitting(view_.node(vnode_[n]), per_task, room, limit);
}

inline bool Planner::less_satisfied(uint32_t x, uint32_t y) const {
  Share fx = m_.fair[x], fy = m_.fair[y];
  if (fx <= 0 || fy <= 0) return fx > 0 && fy <= 0;
  return static_cast<i128>(usage_[x]) * fy < static_cast<i128>(usage_[y]) * fx;
}

inline bool Planner::before(uint32_t x, uint32_t y) const {
  if (priority_[x] != priority_[y]) return priority_[x] > priority_[y];
  if (less_satisfied(x, y)) return true;
  if (less_satisfied(y, x)) return false;
  const auto& a = *m_.jobs[x].info;
  const auto& b = *m_.jobs[y].info;
  if (a.submit_time != b.submit_time) return a.submit_time < b.submit_time;
  return a.id < b.id;
}

inline bool Planner::starving_candidate(uint32_t j, bool aggressive) const {
  const auto& job = m_.jobs[j];
  if (job.policy != ClassPolicy::fair_share || job.unresolvable) return false;
  if (aggressive ? job.starvation != StarvationStatus::aggressively_starving
                 : job.starvation == StarvationStatus::non_starving)
    return false;
  return pending_[j] > 0 && running_[j] < job.cap && usage_[j] < job.fair && limits_headroom(j) > 0;
}

}  // namespace claimsched::core::policy::planning
