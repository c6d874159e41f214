// YTsaurus statuses: below_fair_share with tolerance, starvation timers, the
// classification of every job's allocations (see engine.hpp).

#include <algorithm>

#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy {

namespace {

template <class Key>
const TimePoint* find_since(const std::vector<std::pair<Key, TimePoint>>& v, const Key& key) {
  auto it =
      std::lower_bound(v.begin(), v.end(), key, [](const auto& e, const Key& k) { return e.first < k; });
  return it != v.end() && it->first == key ? &it->second : nullptr;
}

bool below(Share usage, Share fair, double tolerance) {
  return static_cast<i128>(usage) * kShareOne < static_cast<i128>(fair) * ratio_to_share(tolerance);
}

/// Whether one more task keeps the job within its fair share (or it has
/// none yet): below its share by less than a whole task, nothing can bring it
/// closer (a task more puts it above, and preempting for it takes another job
/// below), so it is not below: it would starve forever otherwise.
bool room_for_a_task(Share usage, Share fair, Share task) {
  return usage == 0 || task <= 0 || static_cast<i128>(usage) + task <= fair;
}

/// Starvation after `since` (YTsaurus: starving after the timeout below fair
/// share, aggressively starving after the aggressive timeout when enabled).
StarvationStatus starvation_of(TimePoint now, TimePoint since, const ModelPool& pool) {
  Duration d = now - since;
  if (pool.aggressive_enabled && d >= pool.aggressive_starvation_timeout)
    return StarvationStatus::aggressively_starving;
  if (d >= pool.starvation_timeout) return StarvationStatus::starving;
  return StarvationStatus::non_starving;
}

}  // namespace

void compute_statuses(Model& m, const PolicyState& state, PolicyState& next) {
  const TimePoint now = m.now;
  next.job_below_fair_share_since.clear();
  next.pool_below_fair_share_since.clear();

  for (size_t i = 0; i < m.jobs.size(); ++i) {
    auto& j = m.jobs[i];
    j.fair = i < m.fair.size() ? m.fair[i] : 0;
    const auto& pool = m.pools[j.pool];
    j.scheduling = below(j.usage, j.fair, pool.tolerance) && room_for_a_task(j.usage, j.fair, j.delta)
                       ? SchedulingStatus::below_fair_share
                       : SchedulingStatus::normal;
    j.own_starvation = StarvationStatus::non_starving;
    j.below_since = kNever;
    if (j.scheduling == SchedulingStatus::below_fair_share) {
      const TimePoint* prev = find_since(state.job_below_fair_share_since, j.info->id);
      j.below_since = prev && *prev <= now ? *prev : now;
      j.own_starvation = starvation_of(now, j.below_since, pool);
      next.job_below_fair_share_since.emplace_back(j.info->id, j.below_since);
    }
  }

  // Pools: the work bound to the subtree (subpools first).
  for (auto& p : m.pools) p.demand_vec = p.fair_vec = p.usage_vec = Resources{};
  for (const auto& j : m.jobs) {
    auto& p = m.pools[j.pool];
    p.demand_vec += j.per_task.times(j.running + j.pending);
    p.fair_vec += fair_share_vector(j);
    for (uint32_t a : j.allocs())
      if (!m.allocs[a].lost) p.usage_vec += m.allocs[a].res;
  }
  for (uint32_t pi : m.postorder) {
    auto& p = m.pools[pi];
    if (p.parent != kNone) {
      m.pools[p.parent].demand_vec += p.demand_vec;
      m.pools[p.parent].fair_vec += p.fair_vec;
      m.pools[p.parent].usage_vec += p.usage_vec;
    }
  }
  for (auto& p : m.pools) {  // by name
    p.demand_share = dominant_share_floor(p.demand_vec, p.scope_capacity);
    p.fair_share = dominant_share_floor(p.fair_vec, p.scope_capacity);
    p.usage_share = dominant_share_floor(p.usage_vec, p.scope_capacity);
    p.scheduling = below(p.usage_share, p.fair_share, p.tolerance) ? SchedulingStatus::below_fair_share
                                                                   : SchedulingStatus::normal;
    p.starvation = StarvationStatus::non_starving;
    p.below_since = kNever;
    if (p.scheduling == SchedulingStatus::below_fair_share) {
      const TimePoint* prev = find_since(state.pool_below_fair_share_since, p.spec->name);
      p.below_since = prev && *prev <= now ? *prev : now;
      p.starvation = starvation_of(now, p.below_since, p);
      next.pool_below_fair_share_since.emplace_back(p.spec->name, p.below_since);
    }
  }

  const auto& pre = m.snapshot->settings.preemption;
  for (auto& j : m.jobs) {
    // A job below its fair share starves with its pool (YTsaurus enable_pool_starvation).
    j.starvation = j.own_starvation;
    if (pre.enable_pool_starvation && j.scheduling == SchedulingStatus::below_fair_share)
      for (uint32_t p = j.pool; p != kNone; p = m.pools[p].parent)
        j.starvation = std::max(j.starvation, m.pools[p].starvation);

    // Allocations by start time: the prefix before an allocation decides its
    // class (the one that crosses a threshold stays on the lower side).
    uint32_t k = 0;
    Share aggressive_bound = scale(j.fair, m.aggressive_threshold);
    Share preemptible_bound = scale(j.fair, m.preemption_threshold);
    for (uint32_t a : j.allocs()) {
      auto& alloc = m.allocs[a];
      if (alloc.lost) continue;
      if (!j.preemptible) {
        alloc.cls = AllocationClass::non_preemptible;
      } else {
        Share prefix = static_cast<Share>(std::min<i128>(static_cast<i128>(k) * j.delta, kShareOne * 1000));
        if (prefix < aggressive_bound ||
            pre.non_preemptible_resource_usage_threshold.strictly_above(j.per_task.times(k)))
          alloc.cls = AllocationClass::non_preemptible;
        else if (prefix < preemptible_bound)
          alloc.cls = AllocationClass::aggressively_preemptible;
        else
          alloc.cls = AllocationClass::preemptible;
      }
      ++k;
    }
  }
}

}  // namespace claimsched::core::policy
