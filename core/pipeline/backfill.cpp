#include "core/pipeline/backfill.hpp"

#include <algorithm>
#include <deque>

namespace claimsched::core {

namespace {

/// a + b, kNever when it would pass it (chains of long run times).
TimePoint later_by(TimePoint a, Duration b) {
  if (b.count() <= 0) return a;
  return a > kNever - b ? kNever : a + b;
}

/// A change of a node's room at a time.
struct Edge {
  TimePoint at;
  Resources delta;
};

}  // namespace

uint32_t FutureStart::tasks() const {
  uint32_t n = 0;
  for (const auto& p : parts) n += p.tasks;
  return n;
}

TimePoint FutureStart::until() const { return run.count() > 0 ? later_by(at, run) : kNever; }

void BackfillProfile::add_end(TimePoint at, NodeIndex n, const Resources& room) {
  if (at == kNever) return;
  End e{n, at, room};
  auto by_node_then_time = [](const End& a, const End& b) { return a.node != b.node ? a.node < b.node : a.at < b.at; };
  ends_.insert(std::upper_bound(ends_.begin(), ends_.end(), e, by_node_then_time), e);
}

Resources BackfillProfile::least_room(NodeIndex n, const Resources& free, TimePoint now, TimePoint until,
                                      const std::vector<const FutureStart*>& starts) const {
  std::vector<Edge> edges;
  auto first = std::lower_bound(ends_.begin(), ends_.end(), n, [](const End& e, NodeIndex m) { return e.node < m; });
  for (auto it = first; it != ends_.end() && it->node == n && it->at < until; ++it)
    edges.push_back({std::max(it->at, now), it->room});
  for (const FutureStart* s : starts)
    for (const auto& p : s->parts) {
      if (p.node != n || s->at >= until) continue;
      Resources use = s->per_task.times(p.tasks);
      edges.push_back({std::max(s->at, now), Resources{} - use});
      if (TimePoint back = s->until(); back < until) edges.push_back({std::max(back, now), use});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
  Resources room = free;
  size_t i = 0;
  for (; i < edges.size() && edges[i].at <= now; ++i) room += edges[i].delta;
  Resources least = room;
  while (i < edges.size()) {
    TimePoint t = edges[i].at;
    for (; i < edges.size() && edges[i].at == t; ++i) room += edges[i].delta;
    least = least.min(room);
  }
  return least;
}

std::optional<FutureStart> BackfillProfile::earliest(const std::vector<NodeRoom>& nodes, const Resources& per_task,
                                                     uint32_t tasks, Duration run, TimePoint now,
                                                     const std::vector<const FutureStart*>& starts) const {
  if (tasks == 0 || nodes.empty()) return std::nullopt;
  // The dimensions that decide how many tasks fit.
  std::vector<DimensionId> dims;
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (per_task[d] > 0) dims.push_back(d);

  // Each node's room as steps over time: step 0 from now (with what is due
  // by now), then one step per time its room changes.
  struct Step {
    TimePoint from;
    Resources room;
  };
  std::vector<std::vector<Step>> steps(nodes.size());
  {
    NodeIndex top = 0;
    for (const auto& n : nodes) top = std::max(top, n.node);
    std::vector<int32_t> pos(static_cast<size_t>(top) + 1, -1);
    for (size_t i = 0; i < nodes.size(); ++i) pos[nodes[i].node] = static_cast<int32_t>(i);
    std::vector<std::vector<Edge>> edges(nodes.size());
    for (const auto& e : ends_)
      if (e.node <= top && pos[e.node] >= 0) edges[static_cast<size_t>(pos[e.node])].push_back({std::max(e.at, now), e.room});
    for (const FutureStart* s : starts)
      for (const auto& p : s->parts) {
        if (p.node > top || pos[p.node] < 0) continue;
        auto& into = edges[static_cast<size_t>(pos[p.node])];
        Resources use = s->per_task.times(p.tasks);
        into.push_back({std::max(s->at, now), Resources{} - use});
        if (TimePoint back = s->until(); back != kNever) into.push_back({std::max(back, now), use});
      }
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto& e = edges[i];
      std::sort(e.begin(), e.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
      Resources room = nodes[i].free;
      size_t k = 0;
      for (; k < e.size() && e[k].at <= now; ++k) room += e[k].delta;
      steps[i].push_back({now, room});
      while (k < e.size()) {
        TimePoint t = e[k].at;
        for (; k < e.size() && e[k].at == t; ++k) room += e[k].delta;
        steps[i].push_back({t, room});
      }
    }
  }

  // Sweep T over the times a step begins. A node's window [T, T + run)
  // holds the steps that begin before T + run and end after T; per
  // dimension a deque of those steps, least room first, gives its minimum.
  struct Mark {
    TimePoint at;
    uint32_t node;
    uint32_t step;
  };
  std::vector<Mark> enter, leave;
  for (uint32_t i = 0; i < nodes.size(); ++i)
    for (uint32_t k = 0; k < steps[i].size(); ++k) {
      enter.push_back({steps[i][k].from, i, k});
      if (k + 1 < steps[i].size()) leave.push_back({steps[i][k + 1].from, i, k});
    }
  auto by_time = [](const Mark& a, const Mark& b) { return a.at < b.at; };
  std::stable_sort(enter.begin(), enter.end(), by_time);
  std::stable_sort(leave.begin(), leave.end(), by_time);
  std::vector<std::deque<uint32_t>> window(nodes.size() * dims.size());
  std::vector<uint32_t> fit(nodes.size(), 0);
  uint64_t total = 0;
  std::vector<uint32_t> touched;
  auto refit = [&](uint32_t i) {
    int64_t copies = INT64_MAX;
    for (size_t d = 0; d < dims.size(); ++d) {
      const auto& q = window[i * dims.size() + d];
      int64_t least = q.empty() ? 0 : steps[i][q.front()].room[dims[d]];
      copies = std::min(copies, std::max<int64_t>(least, 0) / per_task[dims[d]]);
    }
    if (dims.empty()) copies = tasks;
    total -= fit[i];
    fit[i] = static_cast<uint32_t>(std::min<int64_t>(copies, tasks));
    total += fit[i];
  };
  bool for_ever = run.count() <= 0;
  size_t in = 0, out = 0;
  TimePoint t = now;
  for (;;) {
    TimePoint window_end = for_ever ? kNever : later_by(t, run);
    touched.clear();
    for (; out < leave.size() && leave[out].at <= t; ++out) {
      const Mark& m = leave[out];
      for (size_t d = 0; d < dims.size(); ++d) {
        auto& q = window[m.node * dims.size() + d];
        if (!q.empty() && q.front() == m.step) q.pop_front();
      }
      touched.push_back(m.node);
    }
    for (; in < enter.size() && (for_ever || enter[in].at < window_end); ++in) {
      const Mark& m = enter[in];
      if (m.step + 1 < steps[m.node].size() && steps[m.node][m.step + 1].from <= t) continue;  // over already
      for (size_t d = 0; d < dims.size(); ++d) {
        auto& q = window[m.node * dims.size() + d];
        int64_t v = steps[m.node][m.step].room[dims[d]];
        while (!q.empty() && steps[m.node][q.back()].room[dims[d]] >= v) q.pop_back();
        q.push_back(m.step);
      }
      touched.push_back(m.node);
    }
    for (uint32_t i : touched) refit(i);
    if (total >= tasks) break;
    // The next time a step begins (room can only grow there, or a start
    // leaves the window).
    TimePoint next = kNever;
    if (out < leave.size()) next = leave[out].at;
    if (next == kNever) return std::nullopt;
    t = next;
  }

  FutureStart fs;
  fs.at = t;
  fs.run = run;
  fs.per_task = per_task;
  uint32_t left = tasks;
  for (uint32_t i = 0; i < nodes.size() && left > 0; ++i) {
    if (fit[i] == 0) continue;
    uint32_t k = std::min(fit[i], left);
    left -= k;
    fs.parts.push_back(FutureStart::Part{nodes[i].node, k});
  }
  return fs;
}

}  // namespace claimsched::core
