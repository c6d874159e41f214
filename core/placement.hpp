#pragma once

// Where one batch of a job's tasks goes: filters say which nodes may take it,
// scorers say which of those is best (DESIGN.md, "Scheduling", step 3).
//
// Stages, in this order:
//   1. the capacity index yields nodes that are up, fit the request and are
//      below their starting limit (Nova's IO-ops filter), in the primary
//      scorer's order (fill-first: node order from a rotation point; spread:
//      most available first). Cheap pruning first, so later stages see few nodes.
//   2. label selectors (the job's constraints) filter each candidate.
//   3. up to `candidates` feasible nodes are scored by the weighted scorers;
//      the best wins, ties to the lower node index.
// A decision therefore visits O(candidates * log n) nodes when the index can
// prune, not the whole pool. Preemptible work that finds no room in its own
// pool goes on to its subpools, in order (DUCC "squatters").
//
// This is the one placement engine: the scheduler's queue places with
// place(); the policy (core/policy) asks the same predicates where a task
// would fit once victims are gone (tasks_fitting with more room), whether a
// whole machine is free for a reservation (machine_free_for), which victims
// make room (minimal_victims) and which hole defragmentation opens
// (best_hole) — it never keeps rules of its own.

#include <optional>
#include <string>
#include <vector>

#include "core/cluster_view.hpp"

namespace claimsched::core {

enum class ScorerKind : uint8_t {
  /// Prefer the node that is fullest after placement (pack; keep big holes).
  fill_first = 0,
  /// Prefer the node that is emptiest after placement (balance).
  spread,
};

std::string_view to_string(ScorerKind k);
Expected<ScorerKind> parse_scorer(std::string_view s);

struct WeightedScorer {
  ScorerKind kind = ScorerKind::fill_first;
  double weight = 1.0;
};

struct PlacementPolicy {
  /// The first scorer also decides the order in which candidates are found.
  std::vector<WeightedScorer> scorers{{ScorerKind::fill_first, 1.0}};
  /// How many feasible nodes to score before deciding (1 = take the first).
  uint32_t candidates = 1;
};

struct PlacementRequest {
  Resources per_task;
  /// Tasks still to place for this job.
  uint32_t tasks_wanted = 1;
  /// Upper bound on tasks in one claim.
  uint32_t max_tasks_per_claim = 64;
  const std::vector<std::string>* constraints = nullptr;
  uint32_t pool = 0;
  /// May also use the pool's subpools when its own pool has no room
  /// (preemptible work; DUCC forbids it to non-preemptible work).
  bool subpools = false;
  /// Fill-first starts scanning here (parallel schedulers that share nodes use
  /// different points so they do not all fill the same node first) ...
  size_t rotation = 0;
  /// ... and scans its own stretch [rotation, rotation + span) upward first,
  /// then the rest of the pool downward from the node before `rotation`:
  /// schedulers whose stretches follow each other then meet only where a
  /// neighbour's stretch is full, not at the node it is filling (continuing
  /// upward would land a full scheduler on its neighbour's current node).
  size_t span = SIZE_MAX;
  /// On failure, find the exact verdict and reason by looking at every node
  /// of the pool (O(n)). Schedulers turn this off on their hot path and ask
  /// for the explanation only when someone wants to read it: then a failure
  /// costs what the index lookup cost, and the verdict is unresolvable only
  /// when no node could hold the task in even one dimension.
  bool explain = true;
};

enum class PlacementVerdict : uint8_t {
  /// A node was chosen.
  fit = 0,
  /// Nothing fits now; may fit when capacity frees up.
  unschedulable,
  /// Can never fit in this pool as it is (no node is big enough, or the pool is empty).
  unresolvable,
};

struct PlacementResult {
  PlacementVerdict verdict = PlacementVerdict::unschedulable;
  NodeIndex node = 0;
  /// How many tasks go to `node` in one claim.
  uint32_t tasks = 0;
  /// Why not, in words, when verdict != fit.
  std::string reason;
};

/// Chooses a node for up to request.tasks_wanted tasks. Pure: reads the view.
PlacementResult place(const ClusterView& view, const PlacementRequest& request,
                      const PlacementPolicy& policy);

/// The filter every placement applies to a node: up, and its labels match.
bool node_accepts(const NodeView& node, const std::vector<std::string>* constraints);

/// How many tasks of `per_task` node n can take in `room` (at most `limit`),
/// given its starting limit (Nova's IO-ops filter). With room = what is
/// available now this is what place() uses; the policy passes more room (what
/// victims would free).
uint32_t tasks_fitting(const NodeView& node, const Resources& per_task, const Resources& room, uint32_t limit);
/// tasks_fitting in what is available now.
uint32_t tasks_that_fit(const NodeView& node, const Resources& per_task, uint32_t limit);

/// DUCC RESERVE: the machine's memory matches the request within one quantum
/// (the request's quanta, rounded up, equal the machine's, rounded down), and
/// every other dimension asked for fits. Without a quantum the match is exact.
bool reserve_matches(const Resources& request, const Resources& machine, int64_t quantum);
/// A reservation may have node n now: it accepts work, matches, and nothing
/// is allocated or claimed on it (as far as this view knows).
bool machine_free_for(const NodeView& node, const Resources& request, int64_t quantum,
                      const std::vector<std::string>* constraints);
/// The first machine of `pool` free for the reservation (node order), if any.
std::optional<NodeIndex> find_free_machine(const ClusterView& view, uint32_t pool, const Resources& request,
                                           int64_t quantum, const std::vector<std::string>* constraints);

/// The minimal set of victims whose removal lets `need` fit in `room`:
/// candidates are taken in the caller's order of preference while `need` does
/// not fit, skipping those that free nothing short or that `eligible(i)`
/// refuses (it is called once per candidate considered, in order, and may
/// keep state); then those not needed are dropped, latest taken kept. Returns
/// the chosen indices in the order taken, or nothing if even all eligible
/// candidates do not make room.
template <class Eligible>
std::optional<std::vector<size_t>> minimal_victims(Resources room, const Resources& need,
                                                   const std::vector<Resources>& candidates, Eligible&& eligible) {
  std::vector<size_t> taken;
  auto helps = [&](const Resources& r) {
    for (DimensionId d = 0; d < kMaxDimensions; ++d)
      if (room[d] < need[d] && r[d] > 0) return true;
    return false;
  };
  for (size_t i = 0; i < candidates.size() && !need.fits_in(room); ++i) {
    if (!helps(candidates[i]) || !eligible(i)) continue;
    taken.push_back(i);
    room += candidates[i];
  }
  if (!need.fits_in(room)) return std::nullopt;
  for (size_t k = taken.size(); k-- > 1;) {
    const Resources& r = candidates[taken[k - 1]];
    if (need.fits_in(room - r)) {
      room -= r;
      taken.erase(taken.begin() + static_cast<std::ptrdiff_t>(k - 1));
    }
  }
  return taken;
}

/// A node where removing `victims` (with a total `cost`) opens room.
struct Hole {
  NodeIndex node = 0;
  std::vector<size_t> victims;
  int64_t cost = 0;
};
/// DUCC defragmentation's choice among candidate holes (in node order): the
/// fewest victims, then the least cost, then the first.
std::optional<Hole> best_hole(std::vector<Hole> holes);

}  // namespace claimsched::core
