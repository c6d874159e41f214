#include "core/pipeline/backfill.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <utility>

#include "core/random.hpp"

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

/// The changes `starts` make to node `n`'s room (each of their parts there:
/// taken at its start, given back at its end, both at `now` at the earliest),
/// in time order.
std::vector<Edge> edges_of_starts(NodeIndex n, TimePoint now, const std::vector<const FutureStart*>& starts) {
  std::vector<Edge> edges;
  for (const FutureStart* s : starts)
    for (const auto& p : s->parts) {
      if (p.node != n) continue;
      Resources use = s->per_task.times(p.tasks);
      edges.push_back({std::max(s->at, now), Resources{} - use});
      if (TimePoint back = s->until(); back != kNever) edges.push_back({std::max(back, now), use});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
  return edges;
}

/// Node `n`'s ends in `ends` (sorted by node, then time).
template <class Ends>
std::pair<typename Ends::const_iterator, typename Ends::const_iterator> ends_of(const Ends& ends, NodeIndex n) {
  auto first = std::lower_bound(ends.begin(), ends.end(), n, [](const auto& x, NodeIndex m) { return x.node < m; });
  auto last = first;
  while (last != ends.end() && last->node == n) ++last;
  return {first, last};
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
  ends_.push_back(End{n, at, room});
}

uint64_t BackfillProfile::print() const {
  // A sum of one hash per end: equal profiles hash equal in whatever order
  // their ends came, so nothing is sorted for it (this runs every
  // backfilling pass, over every running task).
  uint64_t h = mix64(ends_.size());
  for (const auto& e : ends_) {
    uint64_t x = mix64(mix64(e.node) ^ static_cast<uint64_t>(e.at.count()));
    // The dimensions in use only, each with its number.
    for (size_t d = 0; d < kMaxDimensions; ++d)
      if (int64_t v = e.room.values()[d]; v != 0) x = mix64(x ^ (d << 59) ^ static_cast<uint64_t>(v));
    h += mix64(x);
  }
  return h;
}

TimePoint BackfillProfile::first_end() const {
  TimePoint t = kNever;
  for (const auto& e : ends_) t = std::min(t, e.at);
  return t;
}

void BackfillProfile::settle() const {
  if (sorted_ == ends_.size()) return;
  auto by_node_then_time = [](const End& a, const End& b) { return a.node != b.node ? a.node < b.node : a.at < b.at; };
  auto middle = ends_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  std::sort(middle, ends_.end(), by_node_then_time);
  std::inplace_merge(ends_.begin(), middle, ends_.end(), by_node_then_time);
  sorted_ = ends_.size();
}

Resources BackfillProfile::least_room(NodeIndex n, const Resources& free, TimePoint now, TimePoint until,
                                      const std::vector<const FutureStart*>& starts) const {
  return least_rooms(n, free, now, starts).least_until(until);
}

Resources BackfillProfile::LeastRoom::least_until(TimePoint until) const {
  auto it = std::lower_bound(before.begin(), before.end(), until,
                             [](const std::pair<TimePoint, Resources>& e, TimePoint t) { return e.first < t; });
  return it == before.end() ? last : it->second;
}

BackfillProfile::LeastRoom BackfillProfile::least_rooms(NodeIndex n, const Resources& free, TimePoint now,
                                                        const std::vector<const FutureStart*>& starts) const {
  settle();
  // The node's ends are in time order already (so is max(at, now)): they are
  // walked in place, merged with the starts' few edges there, sorted (this
  // runs for every node of the binding starts, every backfilling pass).
  auto ends = ends_of(ends_, n);
  auto e = ends.first, e_end = ends.second;
  std::vector<Edge> edges = edges_of_starts(n, now, starts);
  size_t k = 0;
  // The next time the room changes, if any; then everything due by a time.
  auto next = [&](TimePoint& t) {
    bool any = e != e_end || k < edges.size();
    if (e != e_end) t = std::max(e->at, now);
    if (k < edges.size() && (e == e_end || edges[k].at < t)) t = edges[k].at;
    return any;
  };
  Resources room = free;
  auto take_until = [&](TimePoint t) {
    for (; e != e_end && std::max(e->at, now) <= t; ++e) room += e->room;
    for (; k < edges.size() && edges[k].at <= t; ++k) room += edges[k].delta;
  };
  LeastRoom out;
  out.before.reserve(static_cast<size_t>(e_end - e) + edges.size());
  take_until(now);
  Resources least = room;
  for (TimePoint t{0}; next(t);) {
    out.before.emplace_back(t, least);  // the least over [now, t)
    take_until(t);
    least = least.min(room);
  }
  out.last = least;
  return out;
}

Resources BackfillProfile::least_room_over(NodeIndex n, const Resources& free, TimePoint now, TimePoint from,
                                           TimePoint until, const std::vector<const FutureStart*>& starts) const {
  settle();
  auto ends = ends_of(ends_, n);
  auto e = ends.first, e_end = ends.second;
  std::vector<Edge> edges = edges_of_starts(n, now, starts);
  size_t k = 0;
  Resources room = free;
  auto take_until = [&](TimePoint t) {
    for (; e != e_end && std::max(e->at, now) <= t; ++e) room += e->room;
    for (; k < edges.size() && edges[k].at <= t; ++k) room += edges[k].delta;
  };
  take_until(from);
  Resources least = room;
  for (;;) {
    TimePoint t = kNever;
    if (e != e_end) t = std::max(e->at, now);
    if (k < edges.size()) t = std::min(t, edges[k].at);
    if (t == kNever || (until != kNever && t >= until)) break;
    take_until(t);
    least = least.min(room);
  }
  return least;
}

std::optional<FutureStart> BackfillProfile::earliest_again(StartSearch& last, const std::vector<NodeRoom>& nodes,
                                                           const Resources& per_task, uint32_t tasks, Duration run,
                                                           TimePoint now,
                                                           const std::vector<const FutureStart*>& starts) const {
  settle();
  // Why the start T found last is found again when this holds. Both
  // searches see the same starts, and from `now` on (now >= last.now) the
  // same room of theirs: a start's edges count at max(edge, now). Let R0
  // and R1 be a node's room at t >= now before and after. A node fits the
  // least copies of the task its room holds over [t, t + run), capped at
  // `tasks`; the search's answer is the first t where the nodes' fits add
  // up to `tasks` (its times are exact: the sum can only grow where a step
  // begins), the parts taken greedily in node order, min(fit, left).
  //  - Before T: where R1 <= R0 at every t >= now (per dimension the task
  //    asks for) a node fits no more than it did at any t; a node where
  //    room grew fits at most `most` (the copies of the most room it has at
  //    any time). So at every t in [now, T) the sum is at most what it was
  //    (last.most_before, at most the old search's largest sum before T,
  //    which fell short) plus the grown nodes' `most`: short still if that
  //    is below `tasks`, and no T' < T.
  //  - At T: each part's node fits its count over [T, T + run) (checked),
  //    so T' = T. Every part but the last took its node's whole fit: on a
  //    node that did not grow the fit can only stay equal; a grown one must
  //    fit exactly its count (checked). The last keeps its count. A node
  //    before the last part without a part had no fit: still none where
  //    room did not grow, and a grown one must fit none (checked). So the
  //    parts are the same.
  // No start found (none finite) stays none where no room grew.
  if (last.valid && now >= last.now && tasks == last.tasks && run == last.run && per_task == last.per_task &&
      nodes.size() == last.nodes.size() && starts.size() == last.starts.size() &&
      (!last.found || last.found->at >= now)) {
    bool same = true;
    for (size_t i = 0; i < nodes.size() && same; ++i) same = nodes[i].node == last.nodes[i].node;
    for (size_t i = 0; i < starts.size() && same; ++i) same = *starts[i] == last.starts[i];
    std::vector<DimensionId> dims;
    for (DimensionId d = 0; d < kMaxDimensions; ++d)
      if (per_task[d] > 0) dims.push_back(d);
    const size_t nd = dims.size();
    // Rooms in the task's dimensions alone (nd values): the walk below
    // runs over every node at every pass.
    using Room = std::array<int64_t, kMaxDimensions>;
    auto load = [&](Room& r, const Resources& from) {
      for (size_t k = 0; k < nd; ++k) r[k] = from[dims[k]];
    };
    auto add = [&](Room& r, const Resources& more) {
      for (size_t k = 0; k < nd; ++k) r[k] += more[dims[k]];
    };
    auto above = [&](const Room& r1, const Room& r0) {
      for (size_t k = 0; k < nd; ++k)
        if (r1[k] > r0[k]) return true;
      return false;
    };
    auto copies = [&](const Resources& room) {
      return static_cast<uint64_t>(std::min<int64_t>(per_task.copies_fitting_in(room), tasks));
    };
    // Nodes where room grew (by position in `nodes`), and the sum of their
    // `most`; nodes where it changed at all (a node whose room is what it
    // was fits what it did at T: it is not asked again).
    std::vector<size_t> grown;
    std::vector<char> changed(nodes.size(), 0);
    uint64_t grown_most = 0;
    const auto& old_ends = last.profile.ends_;
    // The nodes mostly come in index order: each node's ends are found by
    // walking on from the last node's (back to the first when not after it).
    auto a = old_ends.cbegin();
    auto b = std::as_const(ends_).cbegin();
    for (size_t i = 0; i < nodes.size() && same; ++i) {
      NodeIndex n = nodes[i].node;
      if (i > 0 && n <= nodes[i - 1].node) {
        a = old_ends.cbegin();
        b = std::as_const(ends_).cbegin();
      }
      while (a != old_ends.cend() && a->node < n) ++a;
      while (b != ends_.cend() && b->node < n) ++b;
      Room r0, r1;
      load(r0, last.nodes[i].free);
      load(r1, nodes[i].free);
      // Everything due by now counts now (last.now <= now).
      for (; a != old_ends.cend() && a->node == n && a->at <= now; ++a) add(r0, a->room);
      for (; b != ends_.cend() && b->node == n && b->at <= now; ++b) add(r1, b->room);
      bool grew = above(r1, r0);
      bool moved = grew || above(r0, r1);
      Room most = r1;
      for (;;) {
        bool more_a = a != old_ends.cend() && a->node == n, more_b = b != ends_.cend() && b->node == n;
        if (!more_a && !more_b) break;
        TimePoint t = more_a && more_b ? std::min(a->at, b->at) : more_a ? a->at : b->at;
        for (; a != old_ends.cend() && a->node == n && a->at == t; ++a) add(r0, a->room);
        for (; b != ends_.cend() && b->node == n && b->at == t; ++b) add(r1, b->room);
        grew = grew || above(r1, r0);
        moved = moved || grew || above(r0, r1);
        for (size_t k = 0; k < nd; ++k) most[k] = std::max(most[k], r1[k]);
      }
      changed[i] = moved;
      if (grew) {
        grown.push_back(i);
        Resources room;
        for (size_t k = 0; k < nd; ++k) room.set(dims[k], most[k]);
        grown_most += copies(room);
        // Enough grown room to fit the job sooner: it is searched again.
        same = last.found && last.most_before + grown_most < tasks;
      }
    }
    if (same && !grown.empty()) same = last.found && last.most_before + grown_most < tasks;
    if (same && last.found) {
      const FutureStart& fs = *last.found;
      TimePoint until = run.count() <= 0 ? kNever : later_by(fs.at, run);
      auto fit_at_start = [&](size_t i) {
        return copies(least_room_over(nodes[i].node, nodes[i].free, now, fs.at, until, starts));
      };
      // Parts are in node order: walk the nodes along with them.
      size_t g = 0, i = 0;
      for (size_t k = 0; k < fs.parts.size() && same; ++k, ++i) {
        const auto& part = fs.parts[k];
        for (; i < nodes.size() && nodes[i].node != part.node; ++i)
          if (g < grown.size() && grown[g] == i) {
            same = fit_at_start(i) == 0;
            ++g;
            if (!same) break;
          }
        if (!same || i == nodes.size()) {
          same = false;
          break;
        }
        bool node_grew = g < grown.size() && grown[g] == i;
        if (node_grew) ++g;
        if (!changed[i]) continue;
        uint64_t fit = fit_at_start(i);
        same = k + 1 == fs.parts.size() || !node_grew ? fit >= part.tasks : fit == part.tasks;
      }
    }
    // `last` stays as it is: it is a search that was made, and the next
    // search is compared with it as well as with this one (copying the
    // profile at every pass would cost much of what is saved).
    if (same) return last.found;
  }
  auto found = earliest(nodes, per_task, tasks, run, now, starts, &last.most_before);
  last.valid = true;
  last.nodes = nodes;
  last.per_task = per_task;
  last.tasks = tasks;
  last.run = run;
  last.now = now;
  last.starts.clear();
  for (const FutureStart* s : starts) last.starts.push_back(*s);
  last.profile.ends_ = ends_;
  last.profile.sorted_ = sorted_;
  last.found = found;
  return found;
}

std::optional<FutureStart> BackfillProfile::earliest(const std::vector<NodeRoom>& nodes, const Resources& per_task,
                                                     uint32_t tasks, Duration run, TimePoint now,
                                                     const std::vector<const FutureStart*>& starts,
                                                     uint64_t* most_before) const {
  if (most_before) *most_before = 0;
  if (tasks == 0 || nodes.empty()) return std::nullopt;
  settle();
  // Only the dimensions the task asks for decide how many fit: every room
  // below is kept in those alone (nd values), which keeps the sweep small.
  std::vector<DimensionId> dims;
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (per_task[d] > 0) dims.push_back(d);
  const size_t nd = dims.size();

  // The starts' edges (room taken at T, given back at T + run), by node
  // then time; their amounts in `amounts`, nd per edge.
  struct StartEdge {
    NodeIndex node;
    uint32_t amount;
    TimePoint at;
  };
  std::vector<StartEdge> start_edges;
  std::vector<int64_t> amounts;
  for (const FutureStart* s : starts)
    for (const auto& p : s->parts) {
      auto add = [&](TimePoint at, int64_t sign) {
        start_edges.push_back({p.node, static_cast<uint32_t>(amounts.size()), at});
        for (DimensionId d : dims) amounts.push_back(sign * s->per_task[d] * p.tasks);
      };
      add(std::max(s->at, now), -1);
      if (TimePoint back = s->until(); back != kNever) add(std::max(back, now), 1);
    }
  std::sort(start_edges.begin(), start_edges.end(), [](const StartEdge& a, const StartEdge& b) {
    return a.node != b.node ? a.node < b.node : a.at < b.at;
  });

  // Each node's room as steps over time: step 0 from now (with what is due
  // by now), then one step per time its room changes; flat, node by node,
  // from the node's ends (in order already) merged with its start edges.
  std::vector<TimePoint> from;
  std::vector<int64_t> room_of;  // nd per step
  std::vector<uint32_t> first(nodes.size() + 1, 0);  // node i's steps: [first[i], first[i + 1])
  std::vector<int64_t> room(nd);
  // The nodes mostly come in index order: each search starts where the
  // last node's ended, unless this node is not after it.
  auto ends_from = ends_.begin();
  auto starts_from = start_edges.begin();
  NodeIndex last_node = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    first[i] = static_cast<uint32_t>(from.size());
    NodeIndex n = nodes[i].node;
    if (i > 0 && n <= last_node) {
      ends_from = ends_.begin();
      starts_from = start_edges.begin();
    }
    last_node = n;
    auto e = std::lower_bound(ends_from, ends_.end(), n, [](const End& x, NodeIndex m) { return x.node < m; });
    auto s =
        std::lower_bound(starts_from, start_edges.end(), n, [](const StartEdge& x, NodeIndex m) { return x.node < m; });
    auto e_end = e;
    auto s_end = s;
    while (e_end != ends_.end() && e_end->node == n) ++e_end;
    while (s_end != start_edges.end() && s_end->node == n) ++s_end;
    ends_from = e_end;
    starts_from = s_end;
    for (size_t d = 0; d < nd; ++d) room[d] = nodes[i].free[dims[d]];
    auto next_time = [&] {
      TimePoint t = kNever;
      if (e != e_end) t = std::max(e->at, now);
      if (s != s_end) t = std::min(t, s->at);
      return t;
    };
    auto take_until = [&](TimePoint t) {
      for (; e != e_end && std::max(e->at, now) <= t; ++e)
        for (size_t d = 0; d < nd; ++d) room[d] += e->room[dims[d]];
      for (; s != s_end && s->at <= t; ++s)
        for (size_t d = 0; d < nd; ++d) room[d] += amounts[s->amount + d];
    };
    auto step = [&](TimePoint t) {
      from.push_back(t);
      room_of.insert(room_of.end(), room.begin(), room.end());
    };
    take_until(now);
    step(now);
    for (TimePoint t = next_time(); t != kNever; t = next_time()) {
      take_until(t);
      step(t);
    }
  }
  first[nodes.size()] = static_cast<uint32_t>(from.size());
  auto value = [&](uint32_t k, size_t d) { return room_of[k * nd + d]; };

  // Sweep T over the times a step begins. A node's window [T, T + run)
  // holds the steps that begin before T + run and end after T; per
  // dimension a monotonic deque of those steps (least room at the front,
  // in a stretch of `ring` as long as the node's steps) gives its minimum.
  // A step k > 0 of a node enters the window when T + run passes its
  // beginning and step k - 1 leaves it when T reaches it: one list of the
  // later steps' beginnings, in time order, serves both.
  struct Mark {
    TimePoint at;
    uint32_t node;
    uint32_t step;  // index into the steps
  };
  std::vector<Mark> begins;
  begins.reserve(from.size());
  for (uint32_t i = 0; i < nodes.size(); ++i)
    for (uint32_t k = first[i] + 1; k < first[i + 1]; ++k) begins.push_back({from[k], i, k});
  std::sort(begins.begin(), begins.end(), [](const Mark& a, const Mark& b) {
    return a.at != b.at ? a.at < b.at : a.node != b.node ? a.node < b.node : a.step < b.step;
  });
  std::vector<uint32_t> ring(from.size() * nd);
  std::vector<uint32_t> head(nodes.size() * nd), tail(nodes.size() * nd);
  for (uint32_t i = 0; i < nodes.size(); ++i)
    for (size_t d = 0; d < nd; ++d)
      head[i * nd + d] = tail[i * nd + d] = static_cast<uint32_t>(first[i] * nd + d * (first[i + 1] - first[i]));
  std::vector<uint32_t> fit(nodes.size(), 0);
  uint64_t total = 0;
  auto push = [&](uint32_t i, uint32_t k) {
    for (size_t d = 0; d < nd; ++d) {
      size_t q = i * nd + d;
      int64_t v = value(k, d);
      while (tail[q] > head[q] && value(ring[tail[q] - 1], d) >= v) --tail[q];
      ring[tail[q]++] = k;
    }
  };
  auto pop = [&](uint32_t i, uint32_t k) {
    for (size_t d = 0; d < nd; ++d) {
      size_t q = i * nd + d;
      if (tail[q] > head[q] && ring[head[q]] == k) ++head[q];
    }
  };
  auto refit = [&](uint32_t i) {
    int64_t copies = nd == 0 ? tasks : INT64_MAX;
    for (size_t d = 0; d < nd; ++d) {
      size_t q = i * nd + d;
      int64_t least = tail[q] > head[q] ? value(ring[head[q]], d) : 0;
      copies = std::min(copies, std::max<int64_t>(least, 0) / per_task[dims[d]]);
    }
    total -= fit[i];
    fit[i] = static_cast<uint32_t>(std::min<int64_t>(copies, tasks));
    total += fit[i];
  };
  for (uint32_t i = 0; i < nodes.size(); ++i) push(i, first[i]);
  bool for_ever = run.count() <= 0;
  size_t in = 0, out = 0;
  TimePoint t = now;
  std::vector<uint32_t> touched;
  for (uint32_t i = 0; i < nodes.size(); ++i) touched.push_back(i);
  for (;;) {
    TimePoint window_end = for_ever ? kNever : later_by(t, run);
    for (; out < begins.size() && begins[out].at <= t; ++out) {
      pop(begins[out].node, begins[out].step - 1);
      touched.push_back(begins[out].node);
    }
    for (; in < begins.size() && (for_ever || begins[in].at < window_end); ++in) {
      const Mark& m = begins[in];
      if (m.step + 1 < first[m.node + 1] && from[m.step + 1] <= t) continue;  // over already
      push(m.node, m.step);
      touched.push_back(m.node);
    }
    for (uint32_t i : touched) refit(i);
    touched.clear();
    if (total >= tasks) break;
    if (most_before) *most_before = std::max(*most_before, total);
    if (out == begins.size()) return std::nullopt;
    t = begins[out].at;
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
