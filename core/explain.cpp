#include "core/explain.hpp"

#include <algorithm>
#include <limits>

namespace claimsched::core {

namespace {

/// How close `capacity` comes to holding one `per_task`: the smallest ratio
/// over the dimensions the task asks for.
double closeness(const Resources& capacity, const Resources& per_task) {
  double worst = std::numeric_limits<double>::infinity();
  for (size_t d = 0; d < kMaxDimensions; ++d) {
    auto id = static_cast<DimensionId>(d);
    if (per_task[id] <= 0) continue;
    worst = std::min(worst, static_cast<double>(capacity[id]) / static_cast<double>(per_task[id]));
  }
  return worst;
}

std::string tasks(uint64_t n) { return std::to_string(n) + (n == 1 ? " task" : " tasks"); }
std::string nodes(uint64_t n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

}  // namespace

std::string_view to_string(WaitVerdict v) {
  switch (v) {
    case WaitVerdict::ended:
      return "ended";
    case WaitVerdict::placed:
      return "placed";
    case WaitVerdict::queued:
      return "queued";
    case WaitVerdict::backing_off:
      return "backing_off";
    case WaitVerdict::fits_now:
      return "fits_now";
    case WaitVerdict::unschedulable:
      return "unschedulable";
    case WaitVerdict::unresolvable:
      return "unresolvable";
    case WaitVerdict::waiting_on_lock:
      return "waiting_on_lock";
  }
  return "unknown";
}

PlacementCounts count_placement(const ClusterView& view, uint32_t pool, const Resources& per_task,
                                 const std::vector<std::string>& constraints, uint64_t wanted) {
  PlacementCounts c;
  double best = -1;
  for (NodeIndex n : view.pool(pool).nodes) {
    const NodeView& v = view.node(n);
    ++c.nodes;
    bool up = v.state == NodeState::up;
    c.nodes_up += up;
    if (!label_selectors_match(constraints, v.labels)) continue;
    ++c.nodes_matching;
    double close = closeness(v.capacity, per_task);
    if (close > best) {
      best = close;
      c.largest = v.capacity;
    }
    int64_t when_empty = per_task.copies_fitting_in(v.capacity);
    if (when_empty <= 0) continue;
    ++c.nodes_big_enough;
    c.tasks_fitting_empty = std::min<uint64_t>(wanted, c.tasks_fitting_empty + static_cast<uint64_t>(when_empty));
    if (!up) continue;
    uint32_t now = tasks_that_fit(v, per_task, static_cast<uint32_t>(std::min<uint64_t>(wanted, UINT32_MAX)));
    if (now == 0) continue;
    ++c.nodes_with_room;
    c.tasks_fitting_now = std::min<uint64_t>(wanted, c.tasks_fitting_now + now);
  }
  return c;
}

std::string never_fits(const PlacementCounts& c, const JobSpec& job) {
  if (c.nodes == 0) return "";
  std::string where = "pool '" + job.pool + "'";
  if (c.nodes_matching == 0)
    return "no node of " + where + " satisfies the constraints (" + std::to_string(c.nodes) + " node(s) there)";
  if (c.nodes_big_enough == 0)
    return "no node of " + where + " can hold one task of " + job.per_task.to_string() + "; the largest has " +
           c.largest.to_string();
  if (job.gang && c.tasks_fitting_empty < job.count)
    return "a gang of " + tasks(job.count) + " runs all at once, but the nodes of " + where + " hold at most " +
           std::to_string(c.tasks_fitting_empty) + " of them together";
  return "";
}

void explain_waiting(Explanation& e, const PlacementCounts& c, std::string_view pool, const Resources& per_task) {
  e.counts = c;
  e.counted = true;
  std::string in = "pool '" + std::string(pool) + "'";
  if (c.nodes == 0) {
    e.verdict = WaitVerdict::unresolvable;
    e.summary = in + " has no nodes yet: it waits for one to join";
    return;
  }
  if (c.nodes_matching == 0) {
    e.verdict = WaitVerdict::unresolvable;
    e.summary = "no node of " + in + " satisfies its constraints (" + nodes(c.nodes) + " there)";
    return;
  }
  if (c.nodes_big_enough == 0) {
    e.verdict = WaitVerdict::unresolvable;
    e.summary = "no node of " + in + " can hold one task of " + per_task.to_string() + "; the largest has " +
                c.largest.to_string();
    return;
  }
  if (e.gang) {
    if (c.tasks_fitting_empty < e.pending) {
      e.verdict = WaitVerdict::unresolvable;
      e.summary = "a gang of " + tasks(e.pending) + " runs all at once, but the nodes of " + in +
                  " hold at most " + std::to_string(c.tasks_fitting_empty) + " of them together";
    } else if (c.tasks_fitting_now >= e.pending) {
      e.verdict = WaitVerdict::fits_now;
      e.summary = "room has appeared for the whole gang; it is placed on the next pass";
    } else {
      e.verdict = WaitVerdict::unschedulable;
      e.summary = "a gang of " + tasks(e.pending) + " waits until all fit at once: room for " +
                  std::to_string(c.tasks_fitting_now) + " now (" + nodes(c.nodes_with_room) + " with room, " +
                  std::to_string(c.tasks_fitting_empty) + " when the pool is empty)";
    }
    return;
  }
  if (c.tasks_fitting_now > 0) {
    e.verdict = WaitVerdict::fits_now;
    e.summary = "room has appeared for " + tasks(c.tasks_fitting_now) + "; placed on the next pass";
    return;
  }
  e.verdict = WaitVerdict::unschedulable;
  e.summary = "waiting for capacity: " + nodes(c.nodes_big_enough) + " of " + in + " could hold a task (" +
              std::to_string(c.nodes_up) + " up), none has room for " + per_task.to_string() + " now";
}

}  // namespace claimsched::core
