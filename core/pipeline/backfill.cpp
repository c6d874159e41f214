#include "core/pipeline/backfill.hpp"

#include <algorithm>

namespace claimsched::core {

namespace {

/// a + b, kNever when it would pass it (chains of long run times).
TimePoint later_by(TimePoint a, Duration b) {
  if (b.count() <= 0) return a;
  return a > kNever - b ? kNever : a + b;
}

}  // namespace

uint32_t FutureStart::tasks() const {
  uint32_t n = 0;
  for (const auto& p : parts) n += p.tasks;
  return n;
}

TimePoint FutureStart::until() const { return run.count() > 0 ? later_by(at, run) : kNever; }

void BackfillProfile::add_end(TimePoint at, NodeIndex n, const Resources& room) {
  if (at == kNever) return;
  ends_.push_back(End{at, n, room});
}

std::optional<FutureStart> BackfillProfile::earliest(const std::vector<NodeRoom>& nodes, const Resources& per_task,
                                                     uint32_t tasks, Duration run, TimePoint now,
                                                     const std::vector<FutureStart>& starts) const {
  if (tasks == 0 || nodes.empty()) return std::nullopt;
  NodeIndex top = 0;
  for (const auto& n : nodes) top = std::max(top, n.node);
  std::vector<int32_t> pos(static_cast<size_t>(top) + 1, -1);
  for (size_t i = 0; i < nodes.size(); ++i) pos[nodes[i].node] = static_cast<int32_t>(i);
  auto where = [&](NodeIndex n) { return n <= top ? pos[n] : -1; };
  // Room that comes (a task ends, a start gives its room back) and room
  // that goes (a start takes it), on the nodes searched.
  struct Step {
    TimePoint at;
    uint32_t i;
    Resources room;
  };
  std::vector<Step> ups, downs;
  for (const auto& e : ends_)
    if (int32_t i = where(e.node); i >= 0) ups.push_back({std::max(e.at, now), static_cast<uint32_t>(i), e.room});
  for (const auto& s : starts)
    for (const auto& p : s.parts) {
      int32_t i = where(p.node);
      if (i < 0) continue;
      Resources use = s.per_task.times(p.tasks);
      downs.push_back({std::max(s.at, now), static_cast<uint32_t>(i), use});
      if (TimePoint back = s.until(); back != kNever)
        ups.push_back({std::max(back, now), static_cast<uint32_t>(i), use});
    }
  auto by_time = [](const Step& a, const Step& b) { return a.at < b.at; };
  std::sort(ups.begin(), ups.end(), by_time);
  std::sort(downs.begin(), downs.end(), by_time);

  // Sweep T over the times room comes: the room of node i over [T, T + run)
  // is at least eff[i] = its room now + what came by T - what every start
  // beginning before T + run takes (a start that begins and ends inside the
  // window counts for all of it: safe, never optimistic).
  std::vector<Resources> eff(nodes.size());
  std::vector<uint32_t> fit(nodes.size(), 0);
  uint64_t total = 0;
  auto refit = [&](uint32_t i) {
    total -= fit[i];
    fit[i] = static_cast<uint32_t>(std::min<int64_t>(per_task.copies_fitting_in(eff[i]), tasks));
    total += fit[i];
  };
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    eff[i] = nodes[i].free;
    refit(i);
  }
  bool for_ever = run.count() <= 0;
  size_t u = 0, d = 0;
  TimePoint t = now;
  for (;;) {
    for (; u < ups.size() && ups[u].at <= t; ++u) {
      eff[ups[u].i] += ups[u].room;
      refit(ups[u].i);
    }
    TimePoint window_end = for_ever ? kNever : later_by(t, run);
    for (; d < downs.size() && (for_ever || downs[d].at < window_end); ++d) {
      eff[downs[d].i] -= downs[d].room;
      refit(downs[d].i);
    }
    if (total >= tasks) break;
    if (u == ups.size()) return std::nullopt;
    t = ups[u].at;
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
    Resources keep = (nodes[i].free - eff[i] + per_task.times(k)).max(Resources{});
    keep = keep.min(nodes[i].free.max(Resources{}));
    fs.parts.push_back(FutureStart::Part{nodes[i].node, k, keep});
  }
  return fs;
}

}  // namespace claimsched::core
