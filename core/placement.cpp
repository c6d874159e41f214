#include "core/placement.hpp"

#include <algorithm>

namespace claimsched::core {

std::string_view to_string(ScorerKind k) {
  switch (k) {
    case ScorerKind::fill_first:
      return "fill_first";
    case ScorerKind::spread:
      return "spread";
  }
  return "unknown";
}

Expected<ScorerKind> parse_scorer(std::string_view s) {
  if (s == "fill_first" || s == "fill-first") return ScorerKind::fill_first;
  if (s == "spread") return ScorerKind::spread;
  return make_error(Errc::parse_error,
                    "unknown scorer '" + std::string(s) + "' (fill_first, spread)");
}

bool node_accepts(const NodeView& node, const std::vector<std::string>* constraints) {
  return node.state == NodeState::up && (!constraints || label_selectors_match(*constraints, node.labels));
}

uint32_t tasks_that_fit(const NodeView& node, const Resources& per_task, uint32_t limit) {
  return tasks_fitting(node, per_task, node.available(), limit);
}

uint32_t tasks_fitting(const NodeView& node, const Resources& per_task, const Resources& room, uint32_t limit) {
  int64_t n = std::min<int64_t>(limit, per_task.copies_fitting_in(room));
  if (node.max_starting > 0) {
    int64_t busy = static_cast<int64_t>(node.reported_starting) + node.in_flight_tasks;
    n = std::min<int64_t>(n, std::max<int64_t>(0, static_cast<int64_t>(node.max_starting) - busy));
  }
  return static_cast<uint32_t>(std::max<int64_t>(n, 0));
}

bool reserve_matches(const Resources& request, const Resources& machine, int64_t quantum) {
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (d != dim::memory && request[d] > machine[d]) return false;
  int64_t want = request[dim::memory];
  int64_t have = machine[dim::memory];
  if (want <= 0) return false;
  if (quantum <= 0) return want == have;
  int64_t want_quanta = want / quantum + (want % quantum != 0);
  return want_quanta == have / quantum;
}

bool machine_free_for(const NodeView& node, const Resources& request, int64_t quantum,
                      const std::vector<std::string>* constraints) {
  return node_accepts(node, constraints) && reserve_matches(request, node.capacity, quantum) &&
         node.available() == node.capacity && node.in_flight_changes == 0;
}

std::optional<NodeIndex> find_free_machine(const ClusterView& view, uint32_t pool, const Resources& request,
                                           int64_t quantum, const std::vector<std::string>* constraints) {
  for (NodeIndex n : view.pool(pool).nodes)
    if (machine_free_for(view.node(n), request, quantum, constraints)) return n;
  return std::nullopt;
}

std::optional<Hole> best_hole(std::vector<Hole> holes) {
  std::optional<Hole> best;
  for (auto& h : holes) {
    if (best && (h.victims.size() > best->victims.size() ||
                 (h.victims.size() == best->victims.size() && h.cost >= best->cost)))
      continue;
    best = std::move(h);
  }
  return best;
}

namespace {

// Fraction of the node in use after placing `tasks`, averaged over the
// dimensions the job asks for.
double fullness_after(const NodeView& node, const Resources& per_task, uint32_t tasks) {
  double sum = 0;
  int dims = 0;
  Resources after = node.available() - per_task.times(tasks);
  for (size_t d = 0; d < kMaxDimensions; ++d) {
    auto id = static_cast<DimensionId>(d);
    if (per_task[id] <= 0 || node.capacity[id] <= 0) continue;
    sum += 1.0 - static_cast<double>(after[id]) / static_cast<double>(node.capacity[id]);
    ++dims;
  }
  return dims == 0 ? 0.0 : sum / dims;
}

double score(const NodeView& node, const Resources& per_task, uint32_t tasks,
             const PlacementPolicy& policy) {
  double total = 0;
  double full = fullness_after(node, per_task, tasks);
  for (const auto& s : policy.scorers)
    total += s.weight * (s.kind == ScorerKind::fill_first ? full : 1.0 - full);
  return total;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// Why nothing fits, and whether it ever can. Runs only when placement failed,
// and looks at each node: the pool's element-wise maxima cannot tell "every
// dimension fits on some node" from "some node fits every dimension".
PlacementResult why_not(const ClusterView& view, const PlacementRequest& request) {
  PlacementResult r;
  r.verdict = PlacementVerdict::unresolvable;
  const PoolView& pool = view.pool(request.pool);
  const std::string what = request.per_task.to_string();
  const std::string where = "pool '" + pool.name + "'";
  if (pool.nodes.empty()) {
    r.reason = where + " has no nodes";
    return r;
  }
  auto matches = [&](const NodeView& v) {
    return !request.constraints || label_selectors_match(*request.constraints, v.labels);
  };
  bool big = false, big_match = false, room = false, room_match = false;
  for (NodeIndex n : pool.nodes) {
    const NodeView& v = view.node(n);
    if (!request.per_task.fits_in(v.capacity)) continue;
    big = true;
    big_match |= matches(v);
    if (v.state != NodeState::up || !request.per_task.fits_in(v.available())) continue;
    room = true;
    room_match |= matches(v);
  }
  if (!big) {
    r.reason = "no node in " + where + " is big enough for one task of " + what +
               " (largest per dimension: " + pool.max_capacity.to_string() + ")";
    return r;
  }
  if (!big_match) {
    r.reason = "no node in " + where + " that is big enough for one task of " + what +
               " matches the constraints " + join(*request.constraints);
    return r;
  }
  r.verdict = PlacementVerdict::unschedulable;
  if (!room) {
    Resources best = pool.index.max_available();
    r.reason = "no node in " + where + " has " + what + " free now (most free per dimension: " +
               (best[0] < 0 ? std::string("none usable")
                            : best.is_zero() ? std::string("nothing") : best.to_string()) +
               ")";
  } else if (!room_match) {
    r.reason = "nodes in " + where + " with " + what + " free do not match the constraints " +
               join(*request.constraints);
  } else {
    r.reason = "nodes in " + where + " with " + what + " free are at their starting limit";
  }
  return r;
}

}  // namespace

static PlacementResult place_in_pool(const ClusterView& view, const PlacementRequest& request,
                                     const PlacementPolicy& policy) {
  PlacementResult result;
  const PoolView& pool = view.pool(request.pool);
  if (pool.nodes.empty() || !request.per_task.fits_in(pool.max_capacity)) {
    if (request.explain) return why_not(view, request);
    result.verdict = PlacementVerdict::unresolvable;
    return result;
  }
  uint32_t limit = std::min(request.tasks_wanted, request.max_tasks_per_claim);
  uint32_t wanted_candidates = std::max<uint32_t>(1, policy.candidates);
  bool have = false;
  double best_score = 0;
  uint32_t seen = 0;

  // Returns true to keep looking.
  auto consider = [&](size_t slot) {
    NodeIndex n = pool.nodes[slot];
    const NodeView& node = view.node(n);
    if (request.constraints && !label_selectors_match(*request.constraints, node.labels))
      return true;
    uint32_t tasks = tasks_that_fit(node, request.per_task, limit);
    if (tasks == 0) return true;
    double s = policy.scorers.size() <= 1 && wanted_candidates == 1
                   ? 0.0
                   : score(node, request.per_task, tasks, policy);
    if (!have || s > best_score || (s == best_score && n < result.node)) {
      have = true;
      best_score = s;
      result.node = n;
      result.tasks = tasks;
    }
    return ++seen < wanted_candidates;
  };

  ScorerKind order = policy.scorers.empty() ? ScorerKind::fill_first : policy.scorers.front().kind;
  if (order == ScorerKind::fill_first) {
    size_t size = pool.index.size();
    size_t start = size == 0 ? 0 : request.rotation % size;
    // The index returns the first fitting slot the predicate accepts; the
    // predicate returns false while we want more candidates, so collection
    // continues after each accepted slot.
    auto scan = [&](size_t from, size_t to) {
      size_t pos = from;
      bool first = true;
      while (pos < to) {
        bool stop = false;
        auto accept = [&](size_t slot) {
          stop = !consider(slot);
          return true;
        };
        // Only the scan's first lookup starts at the same slot every time.
        auto found = first ? pool.index.find_first_remembered(request.per_task, pos, to, accept)
                           : pool.index.find_first(request.per_task, pos, to, accept);
        first = false;
        if (!found || stop) return stop;
        pos = *found + 1;
      }
      return false;
    };
    size_t own_end = request.span >= size ? size : start + request.span;
    // The own stretch upward (wrapping past the end when it does).
    bool stop = scan(start, std::min(own_end, size));
    if (!stop && own_end > size) stop = scan(0, own_end - size);
    if (!stop && request.span < size) {
      // The rest downward from the node before the stretch.
      size_t rest_from = own_end > size ? own_end - size : own_end;  // first node not in the stretch
      auto down = [&](size_t from, size_t to) {  // slots [from, to), highest first
        bool first = true;
        while (to > from) {
          bool halt = false;
          auto accept = [&](size_t slot) {
            halt = !consider(slot);
            return true;
          };
          // Only the scan's first lookup ends at the same slot every time.
          auto found = first ? pool.index.find_last_remembered(request.per_task, from, to, accept)
                             : pool.index.find_last(request.per_task, from, to, accept);
          first = false;
          if (!found || halt) return halt;
          to = *found;
        }
        return false;
      };
      if (start >= rest_from) {
        down(rest_from, start);
      } else if (!down(0, start)) {
        down(rest_from, size);
      }
    } else if (!stop && request.span >= size) {
      scan(0, start);
    }
  } else {
    DimensionId d = request.per_task.dominant_dimension(pool.total_capacity);
    pool.index.visit_descending(d, request.per_task, [&](size_t slot) { return consider(slot); });
  }

  if (have) {
    result.verdict = PlacementVerdict::fit;
    return result;
  }
  if (request.explain) return why_not(view, request);
  result.verdict = PlacementVerdict::unschedulable;
  return result;
}

PlacementResult place(const ClusterView& view, const PlacementRequest& request, const PlacementPolicy& policy) {
  PlacementResult own = place_in_pool(view, request, policy);
  if (own.verdict == PlacementVerdict::fit || !request.subpools) return own;
  // DUCC: preemptible work that exhausted its pool goes on to its subpools.
  PlacementRequest sub = request;
  bool schedulable = own.verdict == PlacementVerdict::unschedulable;
  for (uint32_t p : view.pool(request.pool).descendants) {
    sub.pool = p;
    PlacementResult r = place_in_pool(view, sub, policy);
    if (r.verdict == PlacementVerdict::fit) return r;
    schedulable = schedulable || r.verdict == PlacementVerdict::unschedulable;
  }
  if (schedulable) own.verdict = PlacementVerdict::unschedulable;
  if (request.explain && !view.pool(request.pool).descendants.empty()) own.reason += " (nor in its subpools)";
  return own;
}

}  // namespace claimsched::core
