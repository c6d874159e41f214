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
// prune, not the whole pool.

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
  /// Fill-first starts scanning here (parallel schedulers that share nodes use
  /// different points so they do not all fill the same node first).
  size_t rotation = 0;
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

/// How many tasks of `per_task` node n can take now (capacity, starting limit).
uint32_t tasks_that_fit(const NodeView& node, const Resources& per_task, uint32_t limit);

}  // namespace claimsched::core
