// Placement (filters then scorers) and the cluster view it reads.

#include "core/placement.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "core/random.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::NodeBuilder;
using testing::res;

NodeSnapshot fresh_snapshot(const NodeSpec& spec, const Resources& used = {},
                            NodeState state = NodeState::up, uint32_t starting = 0) {
  NodeSnapshot s;
  s.node = spec.id;
  s.state = state;
  s.capacity = spec.capacity;
  s.free = spec.capacity - used;
  s.starting = starting;
  return s;
}

class PlacementTest : public ::testing::Test {
 protected:
  // Adds a node of pool "default"; `used` is what is taken on it already.
  NodeIndex node(const NodeSpec& spec, std::string_view used = "", NodeState state = NodeState::up,
                 uint32_t starting = 0) {
    return view.add_node(spec, pool, fresh_snapshot(spec, testing::res(used), state, starting));
  }
  NodeIndex node(uint32_t id, std::string_view capacity, std::string_view used = "") {
    return node(NodeBuilder(id).capacity(capacity).build(), used);
  }

  PlacementResult place_tasks(std::string_view per_task, uint32_t wanted,
                              const PlacementPolicy& policy = {}, size_t rotation = 0,
                              const std::vector<std::string>* constraints = nullptr) {
    PlacementRequest r;
    r.per_task = res(per_task);
    r.tasks_wanted = wanted;
    r.pool = pool;
    r.rotation = rotation;
    r.constraints = constraints;
    return place(view, r, policy);
  }

  static PlacementPolicy policy(std::vector<WeightedScorer> scorers, uint32_t candidates) {
    PlacementPolicy p;
    p.scorers = std::move(scorers);
    p.candidates = candidates;
    return p;
  }

  ClusterView view;
  uint32_t pool = view.add_pool("default");
};

// --- fill-first, spread, rotation -------------------------------------------

TEST_F(PlacementTest, FillFirstPacksTheFirstNodeThatFits) {
  node(1, "cpu=4");
  node(2, "cpu=4");
  node(3, "cpu=4");
  auto r = place_tasks("cpu=1", 3);
  ASSERT_EQ(r.verdict, PlacementVerdict::fit) << r.reason;
  EXPECT_EQ(r.node, 0u);
  EXPECT_EQ(r.tasks, 3u);  // one claim, three tasks
  EXPECT_TRUE(r.reason.empty());
  // The scheduler records the claim as in flight; the rest of the node goes next.
  view.add_in_flight(0, res("cpu=3"), 3);
  r = place_tasks("cpu=1", 3);
  EXPECT_EQ(r.node, 0u);
  EXPECT_EQ(r.tasks, 1u);
  view.add_in_flight(0, res("cpu=1"), 1);
  r = place_tasks("cpu=1", 3);
  EXPECT_EQ(r.node, 1u);
  EXPECT_EQ(r.tasks, 3u);
}

TEST_F(PlacementTest, FillFirstSkipsNodesWithoutRoom) {
  node(1, "cpu=4", "cpu=3");
  node(2, "cpu=4,memory=1Gi", "cpu=1");
  node(3, "cpu=4,memory=4Gi");
  auto r = place_tasks("cpu=2", 5);
  EXPECT_EQ(r.node, 1u);
  EXPECT_EQ(r.tasks, 1u);
  r = place_tasks("cpu=1,memory=2Gi", 5);
  EXPECT_EQ(r.node, 2u);
  EXPECT_EQ(r.tasks, 2u);  // memory-bound
}

TEST_F(PlacementTest, MaxTasksPerClaimCapsTheBatch) {
  node(1, "cpu=64");
  PlacementRequest r;
  r.per_task = res("cpu=1");
  r.tasks_wanted = 100;
  r.max_tasks_per_claim = 16;
  r.pool = pool;
  auto result = place(view, r, {});
  EXPECT_EQ(result.tasks, 16u);
}

TEST_F(PlacementTest, SpreadPicksTheEmptiestNode) {
  node(1, "cpu=8", "cpu=7");
  node(2, "cpu=8", "cpu=2");
  node(3, "cpu=8", "cpu=4");
  auto spread = policy({{ScorerKind::spread, 1.0}}, 1);
  auto r = place_tasks("cpu=1", 2, spread);
  ASSERT_EQ(r.verdict, PlacementVerdict::fit);
  EXPECT_EQ(r.node, 1u);
  EXPECT_EQ(r.tasks, 2u);
  view.add_in_flight(1, res("cpu=3"), 3);  // now 3 free there, 4 on node 3
  EXPECT_EQ(place_tasks("cpu=1", 1, spread).node, 2u);
}

TEST_F(PlacementTest, SpreadLooksAtTheRequestsDominantDimension) {
  node(1, "cpu=8,memory=8Gi", "cpu=1,memory=6Gi");  // much cpu, little memory free
  node(2, "cpu=8,memory=8Gi", "cpu=6,memory=1Gi");  // little cpu, much memory free
  auto spread = policy({{ScorerKind::spread, 1.0}}, 1);
  EXPECT_EQ(place_tasks("cpu=1,memory=100Mi", 1, spread).node, 0u);
  EXPECT_EQ(place_tasks("cpu=100m,memory=1Gi", 1, spread).node, 1u);
}

TEST_F(PlacementTest, SpreadBreaksTiesOnTheLowerNode) {
  node(1, "cpu=4", "cpu=1");
  node(2, "cpu=4");
  node(3, "cpu=4");
  EXPECT_EQ(place_tasks("cpu=1", 1, policy({{ScorerKind::spread, 1.0}}, 1)).node, 1u);
}

TEST_F(PlacementTest, RotationMovesTheFillFirstStartingPoint) {
  for (uint32_t i = 1; i <= 4; ++i) node(i, "cpu=4");
  EXPECT_EQ(place_tasks("cpu=1", 1, {}, 0).node, 0u);
  EXPECT_EQ(place_tasks("cpu=1", 1, {}, 2).node, 2u);
  EXPECT_EQ(place_tasks("cpu=1", 1, {}, 7).node, 3u);  // modulo the pool size
  view.add_in_flight(3, res("cpu=4"), 4);
  EXPECT_EQ(place_tasks("cpu=1", 1, {}, 3).node, 0u);  // wraps around
}

// --- filters ---------------------------------------------------------------

TEST_F(PlacementTest, LabelConstraintsFilterNodes) {
  node(NodeBuilder(1).capacity("cpu=4").build());
  node(NodeBuilder(2).capacity("cpu=4").label("ssd").build());
  node(NodeBuilder(3).capacity("cpu=4").label("ssd").label("os=linux").build());
  node(NodeBuilder(4).capacity("cpu=4").label("gpu=2").label("os=windows").build());
  auto where = [&](std::vector<std::string> constraints) {
    auto r = place_tasks("cpu=1", 1, {}, 0, &constraints);
    return r.verdict == PlacementVerdict::fit ? static_cast<int>(r.node) : -1;
  };
  EXPECT_EQ(where({"ssd"}), 1);
  EXPECT_EQ(where({"os=linux"}), 2);
  EXPECT_EQ(where({"os"}), 2);  // a bare key matches any value
  EXPECT_EQ(where({"os=windows"}), 3);
  EXPECT_EQ(where({"!ssd"}), 0);
  EXPECT_EQ(where({"gpu"}), 3);
  EXPECT_EQ(where({"!gpu", "os"}), 2);
  EXPECT_EQ(where({"ssd", "!os"}), 1);
  EXPECT_EQ(where({"ssd", "os=windows"}), -1);

  // No node will ever match: waiting does not help.
  std::vector<std::string> mac{"os=mac"};
  auto r = place_tasks("cpu=1", 1, {}, 0, &mac);
  EXPECT_EQ(r.verdict, PlacementVerdict::unresolvable);
  EXPECT_NE(r.reason.find("matches the constraints os=mac"), std::string::npos) << r.reason;
  // Matching nodes exist but are full: wait.
  view.add_in_flight(1, res("cpu=4"), 4);
  view.add_in_flight(2, res("cpu=4"), 4);
  std::vector<std::string> ssd{"ssd"};
  r = place_tasks("cpu=1", 1, {}, 0, &ssd);
  EXPECT_EQ(r.verdict, PlacementVerdict::unschedulable);
  EXPECT_NE(r.reason.find("cpu=1 free do not match the constraints ssd"), std::string::npos)
      << r.reason;
  // Matching nodes exist but none of them is big enough.
  r = place_tasks("cpu=5", 1, {}, 0, &ssd);
  EXPECT_EQ(r.verdict, PlacementVerdict::unresolvable);
  EXPECT_NE(r.reason.find("is big enough"), std::string::npos) << r.reason;
}

TEST_F(PlacementTest, ConstraintsComposeWithSpread) {
  node(NodeBuilder(1).capacity("cpu=8").label("ssd").build(), "cpu=6");
  node(NodeBuilder(2).capacity("cpu=8").build());
  node(NodeBuilder(3).capacity("cpu=8").label("ssd").build(), "cpu=4");
  std::vector<std::string> ssd{"ssd"};
  auto r = place_tasks("cpu=1", 1, policy({{ScorerKind::spread, 1.0}}, 1), 0, &ssd);
  EXPECT_EQ(r.node, 2u);  // the emptiest ssd node, not the emptiest node
}

TEST_F(PlacementTest, StartingLimitCapsTasksPerNode) {
  // Nova's IO-ops filter: at most 3 tasks starting at once; one is starting.
  node(NodeBuilder(1).capacity("cpu=16").max_starting(3).build(), "", NodeState::up, 1);
  node(NodeBuilder(2).capacity("cpu=16").build());
  auto r = place_tasks("cpu=1", 10);
  EXPECT_EQ(r.node, 0u);
  EXPECT_EQ(r.tasks, 2u);
  EXPECT_EQ(tasks_that_fit(view.node(0), res("cpu=1"), 10), 2u);
  // Tasks this scheduler has in flight count as starting too.
  view.add_in_flight(0, res("cpu=2"), 2);
  EXPECT_EQ(tasks_that_fit(view.node(0), res("cpu=1"), 10), 0u);
  r = place_tasks("cpu=1", 10);
  EXPECT_EQ(r.node, 1u);
  EXPECT_EQ(r.tasks, 10u);
  view.add_in_flight(1, res("cpu=16"), 16);
  r = place_tasks("cpu=1", 10);
  EXPECT_EQ(r.verdict, PlacementVerdict::unschedulable);
  EXPECT_NE(r.reason.find("starting limit"), std::string::npos) << r.reason;
  view.remove_in_flight(1, res("cpu=16"), 16);
  // When the node reports its tasks running, it takes claims again.
  view.remove_in_flight(0, res("cpu=2"), 2);
  NodeSnapshot s = fresh_snapshot(NodeBuilder(1).capacity("cpu=16").build(), res("cpu=3"));
  s.generation = 1;
  ASSERT_TRUE(view.apply_snapshot(0, s));
  EXPECT_EQ(place_tasks("cpu=1", 10).tasks, 3u);
}

// --- verdicts --------------------------------------------------------------

// What claimsched_partition_nodes{state} reports: kept as nodes come, drain,
// go down and come back (including a snapshot older than the view's, which
// changes nothing), never by walking the nodes.
TEST_F(PlacementTest, TheViewCountsItsNodesByState) {
  auto by_state = [&] { return view.nodes_by_state(); };
  using Counts = std::array<uint32_t, 3>;
  NodeIndex a = node(1, "cpu=4,memory=4Gi");
  node(2, "cpu=4,memory=4Gi");
  node(NodeBuilder(3).capacity("cpu=4,memory=4Gi").build(), "", NodeState::draining);
  EXPECT_EQ(by_state(), (Counts{2, 1, 0}));
  NodeSnapshot s = fresh_snapshot(NodeBuilder(1).capacity("cpu=4,memory=4Gi").build(), {}, NodeState::down);
  s.generation = 5;
  ASSERT_TRUE(view.apply_snapshot(a, s));
  EXPECT_EQ(by_state(), (Counts{1, 1, 1}));
  s.generation = 4;  // stale: refused, and not counted
  s.state = NodeState::up;
  EXPECT_FALSE(view.apply_snapshot(a, s));
  EXPECT_EQ(by_state(), (Counts{1, 1, 1}));
  s.generation = 6;
  ASSERT_TRUE(view.apply_snapshot(a, s));
  EXPECT_EQ(by_state(), (Counts{2, 1, 0}));
  // A node registering again (its agent restarted) is the same node.
  node(2, "cpu=4,memory=4Gi");
  EXPECT_EQ(by_state(), (Counts{2, 1, 0}));
}

TEST_F(PlacementTest, EmptyPoolIsUnresolvable) {
  auto r = place_tasks("cpu=1", 1);
  EXPECT_EQ(r.verdict, PlacementVerdict::unresolvable);
  EXPECT_NE(r.reason.find("pool 'default' has no nodes"), std::string::npos) << r.reason;
}

TEST_F(PlacementTest, TaskBiggerThanEveryNodeIsUnresolvable) {
  node(1, "cpu=4,memory=8Gi");
  node(2, "cpu=8,memory=2Gi");
  auto r = place_tasks("cpu=6,memory=4Gi", 1);  // each dimension fits some node, never both
  EXPECT_EQ(r.verdict, PlacementVerdict::unresolvable);
  EXPECT_NE(r.reason.find("no node in pool 'default' is big enough"), std::string::npos)
      << r.reason;
  EXPECT_NE(r.reason.find("cpu=6,memory=4Gi"), std::string::npos) << r.reason;
  r = place_tasks("gpu=1", 1);
  EXPECT_EQ(r.verdict, PlacementVerdict::unresolvable);
}

TEST_F(PlacementTest, FullPoolIsUnschedulableWithTheMostFreeInTheReason) {
  node(1, "cpu=4", "cpu=3");
  node(2, "cpu=4", "cpu=4");
  auto r = place_tasks("cpu=2", 1);
  EXPECT_EQ(r.verdict, PlacementVerdict::unschedulable);
  EXPECT_NE(r.reason.find("free now"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("cpu=1"), std::string::npos) << r.reason;  // the most free
}

TEST_F(PlacementTest, NodesThatAreNotUpAreUnschedulableNotUnresolvable) {
  node(NodeBuilder(1).capacity("cpu=4").build(), "", NodeState::draining);
  node(NodeBuilder(2).capacity("cpu=4").build(), "", NodeState::down);
  auto r = place_tasks("cpu=1", 1);
  EXPECT_EQ(r.verdict, PlacementVerdict::unschedulable);
  EXPECT_NE(r.reason.find("none usable"), std::string::npos) << r.reason;
  NodeSnapshot up = fresh_snapshot(NodeBuilder(1).capacity("cpu=4").build());
  up.generation = 1;
  ASSERT_TRUE(view.apply_snapshot(0, up));
  EXPECT_EQ(place_tasks("cpu=1", 1).verdict, PlacementVerdict::fit);
}

// --- scorer composition ----------------------------------------------------

class ScorerTest : public PlacementTest {
 protected:
  void SetUp() override {
    node(1, "cpu=8", "");       // 8 free
    node(2, "cpu=8", "cpu=7");  // 1 free
    node(3, "cpu=8", "cpu=6");  // 2 free
    node(4, "cpu=8", "cpu=5");  // 3 free
  }
};

TEST_F(ScorerTest, OneCandidateTakesTheFirstInScanOrder) {
  EXPECT_EQ(place_tasks("cpu=1", 1, policy({{ScorerKind::fill_first, 1.0}}, 1)).node, 0u);
}

TEST_F(ScorerTest, MoreCandidatesLetTheScorerChoose) {
  // The fullest after placement among the first three in scan order.
  EXPECT_EQ(place_tasks("cpu=1", 1, policy({{ScorerKind::fill_first, 1.0}}, 3)).node, 1u);
  // Node 2 is full now and node 4 would be the fullest after placement, but
  // with two candidates only the first two feasible nodes (1 and 3) are scored.
  view.add_in_flight(1, res("cpu=1"), 1);
  view.add_in_flight(3, res("cpu=2"), 2);
  EXPECT_EQ(place_tasks("cpu=1", 1, policy({{ScorerKind::fill_first, 1.0}}, 2)).node, 2u);
  EXPECT_EQ(place_tasks("cpu=1", 1, policy({{ScorerKind::fill_first, 1.0}}, 3)).node, 3u);
}

TEST_F(ScorerTest, WeightedScorersCompose) {
  // fill_first*1 + spread*2 = 2 - fullness: the emptiest wins.
  auto mostly_spread = policy({{ScorerKind::fill_first, 1.0}, {ScorerKind::spread, 2.0}}, 4);
  EXPECT_EQ(place_tasks("cpu=1", 1, mostly_spread).node, 0u);
  // fill_first*3 + spread*1 = 1 + 2 * fullness: the fullest wins.
  auto mostly_fill = policy({{ScorerKind::fill_first, 3.0}, {ScorerKind::spread, 1.0}}, 4);
  EXPECT_EQ(place_tasks("cpu=1", 1, mostly_fill).node, 1u);
  // Spread first decides the scan order (emptiest first); fill-first then
  // prefers the fullest of the two emptiest.
  auto spread_order = policy({{ScorerKind::spread, 1.0}, {ScorerKind::fill_first, 3.0}}, 2);
  EXPECT_EQ(place_tasks("cpu=1", 1, spread_order).node, 3u);
}

TEST_F(ScorerTest, ScoresUseTheTasksThatWouldBePlaced) {
  // Asking for 3 tasks: node 1 takes 3 (3/8 used after), node 2 takes 1 (8/8),
  // node 3 takes 2 (8/8), node 4 takes 3 (8/8). Fill-first over four: the first full one.
  auto r = place_tasks("cpu=1", 3, policy({{ScorerKind::fill_first, 1.0}}, 4));
  EXPECT_EQ(r.node, 1u);
  EXPECT_EQ(r.tasks, 1u);
}

TEST(ScorerParse, NamesRoundTrip) {
  EXPECT_EQ(*parse_scorer("fill_first"), ScorerKind::fill_first);
  EXPECT_EQ(*parse_scorer("fill-first"), ScorerKind::fill_first);
  EXPECT_EQ(*parse_scorer(to_string(ScorerKind::spread)), ScorerKind::spread);
  auto bad = parse_scorer("random");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'random'"), std::string::npos);
}

// --- the cluster view ------------------------------------------------------

TEST_F(PlacementTest, ViewIgnoresStaleSnapshotsAndTracksInFlight) {
  NodeSpec spec = NodeBuilder(1).capacity("cpu=4").build();
  NodeIndex n = node(spec);
  EXPECT_EQ(view.find_node(NodeId{1}), std::optional<NodeIndex>(n));
  EXPECT_EQ(view.find_node(NodeId{2}), std::nullopt);
  NodeSnapshot s5 = fresh_snapshot(spec, res("cpu=1"));
  s5.generation = 5;
  EXPECT_TRUE(view.apply_snapshot(n, s5));
  NodeSnapshot s4 = fresh_snapshot(spec, res("cpu=3"));
  s4.generation = 4;
  EXPECT_FALSE(view.apply_snapshot(n, s4));
  EXPECT_EQ(view.node(n).reported_free, res("cpu=3"));
  EXPECT_EQ(view.node(n).generation, 5u);
  view.add_in_flight(n, res("cpu=2"), 2);
  EXPECT_EQ(view.node(n).available(), res("cpu=1"));
  EXPECT_EQ(view.pool(pool).index.available(view.node(n).slot), res("cpu=1"));
  view.remove_in_flight(n, res("cpu=2"), 2);
  EXPECT_EQ(view.node(n).available(), res("cpu=3"));
  EXPECT_EQ(view.pool(pool).total_capacity, res("cpu=4"));
  EXPECT_EQ(view.pool(pool).max_capacity, res("cpu=4"));
}

TEST_F(PlacementTest, ViewSeparatesPools) {
  uint32_t other = view.add_pool("gpu");
  EXPECT_EQ(view.add_pool("gpu"), other);  // idempotent by name
  EXPECT_EQ(view.find_pool("gpu"), std::optional<uint32_t>(other));
  EXPECT_EQ(view.find_pool("nope"), std::nullopt);
  node(1, "cpu=4");
  NodeSpec g = NodeBuilder(2).pool("gpu").capacity("cpu=4,gpu=1").build();
  view.add_node(g, other, fresh_snapshot(g));
  EXPECT_EQ(place_tasks("gpu=1", 1).verdict, PlacementVerdict::unresolvable);
  PlacementRequest r;
  r.per_task = res("gpu=1");
  r.pool = other;
  auto result = place(view, r, {});
  ASSERT_EQ(result.verdict, PlacementVerdict::fit);
  EXPECT_EQ(view.node(result.node).id, NodeId{2});
}

// --- against brute force ---------------------------------------------------

TEST(PlacementVsBruteForce, FirstFitAndEmptiestMatchAScan) {
  const std::vector<std::string> label_pool{"ssd", "os=linux", "os=windows", "gpu=1"};
  const std::vector<std::vector<std::string>> constraint_sets{
      {}, {"ssd"}, {"!ssd"}, {"os=linux"}, {"os", "!gpu"}};
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    ClusterView view;
    uint32_t pool = view.add_pool("p");
    uint32_t n = 1 + static_cast<uint32_t>(rng.below(40));
    for (uint32_t i = 0; i < n; ++i) {
      NodeBuilder b(i + 1);
      b.pool("p").capacity("cpu=8,memory=8Gi");
      for (const auto& l : label_pool)
        if (rng.chance(0.4)) b.label(l);
      if (rng.chance(0.3)) b.max_starting(1 + static_cast<uint32_t>(rng.below(3)));
      NodeSpec spec = b.build();
      NodeSnapshot s =
          fresh_snapshot(spec,
                         Resources::cpu_memory(static_cast<int64_t>(rng.below(9)) * 1000,
                                               static_cast<int64_t>(rng.below(9)) << 30),
                         rng.chance(0.85) ? NodeState::up : NodeState::draining,
                         static_cast<uint32_t>(rng.below(3)));
      view.add_node(spec, pool, s);
    }
    for (int q = 0; q < 200; ++q) {
      PlacementRequest r;
      r.per_task = Resources::cpu_memory(static_cast<int64_t>(1 + rng.below(4)) * 500,
                                         static_cast<int64_t>(rng.below(3)) << 30);
      r.tasks_wanted = 1 + static_cast<uint32_t>(rng.below(6));
      r.pool = pool;
      r.rotation = rng.below(100);
      const auto& constraints = constraint_sets[rng.below(constraint_sets.size())];
      r.constraints = constraints.empty() ? nullptr : &constraints;
      auto feasible = [&](NodeIndex i) {
        const NodeView& v = view.node(i);
        return v.state == NodeState::up && label_selectors_match(constraints, v.labels) &&
               tasks_that_fit(v, r.per_task, r.tasks_wanted) > 0;
      };
      // Fill-first: the first feasible node from the rotation point on.
      std::optional<NodeIndex> first;
      for (uint32_t k = 0; k < n && !first; ++k) {
        NodeIndex i = static_cast<NodeIndex>((r.rotation + k) % n);
        if (feasible(i)) first = i;
      }
      auto got = place(view, r, {});
      SCOPED_TRACE("seed " + std::to_string(seed) + " query " + std::to_string(q));
      ASSERT_EQ(got.verdict == PlacementVerdict::fit, first.has_value()) << got.reason;
      if (first) {
        EXPECT_EQ(got.node, *first);
        EXPECT_EQ(got.tasks, tasks_that_fit(view.node(*first), r.per_task, r.tasks_wanted));
      }
      // Spread: the most available in the dominant dimension, ties to the lower node.
      DimensionId d = r.per_task.dominant_dimension(view.pool(pool).total_capacity);
      std::optional<NodeIndex> emptiest;
      for (NodeIndex i = 0; i < n; ++i)
        if (feasible(i) &&
            (!emptiest || view.node(i).available()[d] > view.node(*emptiest).available()[d]))
          emptiest = i;
      PlacementPolicy spread;
      spread.scorers = {{ScorerKind::spread, 1.0}};
      got = place(view, r, spread);
      ASSERT_EQ(got.verdict == PlacementVerdict::fit, emptiest.has_value()) << got.reason;
      if (emptiest) {
        EXPECT_EQ(got.node, *emptiest);
      }
    }
  }
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

using testing::NodeBuilder;
using testing::res;

NodeSnapshot snapshot_of(const NodeSpec& spec, std::string_view used = "") {
  NodeSnapshot s;
  s.node = spec.id;
  s.capacity = spec.capacity;
  s.free = spec.capacity - res(used);
  return s;
}

// The questions the policy asks the engine instead of keeping rules of its own.
TEST(PlacementEngine, TasksFitInTheRoomGivenAndTheStartingLimit) {
  ClusterView view;
  uint32_t p = view.add_pool("default");
  auto spec = NodeBuilder(1).capacity("cpu=8").max_starting(3).build();
  NodeIndex n = view.add_node(spec, p, snapshot_of(spec, "cpu=8"));
  EXPECT_EQ(tasks_that_fit(view.node(n), res("cpu=1"), 10), 0u) << "full now";
  EXPECT_EQ(tasks_fitting(view.node(n), res("cpu=1"), res("cpu=5"), 10), 3u)
      << "victims would free 5 cpu; the starting limit allows 3";
  EXPECT_EQ(tasks_fitting(view.node(n), res("cpu=2"), res("cpu=5"), 10), 2u);
  EXPECT_EQ(tasks_fitting(view.node(n), res("cpu=1"), Resources::of({{dim::cpu, -1000}}), 10), 0u);
}

TEST(PlacementEngine, AReservationGetsAWholeFreeMachineOfItsSize) {
  ClusterView view;
  uint32_t p = view.add_pool("default");
  auto small = NodeBuilder(1).capacity("cpu=8,memory=30Gi").build();
  auto busy = NodeBuilder(2).capacity("cpu=8,memory=44Gi").build();
  auto right = NodeBuilder(3).capacity("cpu=8,memory=44Gi").build();
  view.add_node(small, p, snapshot_of(small));
  view.add_node(busy, p, snapshot_of(busy, "cpu=1"));
  view.add_node(right, p, snapshot_of(right));
  int64_t quantum = int64_t{15} << 30;
  // 28Gi is 2 quanta: 30Gi (2) and 44Gi (2) match, a bigger machine would not.
  EXPECT_TRUE(reserve_matches(res("memory=28Gi"), res("memory=30Gi"), quantum));
  EXPECT_TRUE(reserve_matches(res("memory=28Gi"), res("memory=44Gi"), quantum));
  EXPECT_FALSE(reserve_matches(res("memory=28Gi"), res("memory=60Gi"), quantum));
  EXPECT_FALSE(reserve_matches(res("memory=28Gi"), res("memory=30Gi"), 0)) << "exact without a quantum";
  EXPECT_FALSE(reserve_matches(res("cpu=16,memory=28Gi"), res("cpu=8,memory=30Gi"), quantum));
  EXPECT_EQ(find_free_machine(view, p, res("memory=28Gi"), quantum, nullptr), NodeIndex{0});
  EXPECT_EQ(find_free_machine(view, p, res("memory=44Gi"), 0, nullptr), NodeIndex{2})
      << "node 2 matches too but runs something";
  view.add_in_flight(2, res("cpu=1"), 1);
  EXPECT_FALSE(find_free_machine(view, p, res("memory=44Gi"), 0, nullptr)) << "a claim is on its way there";
}

TEST(PlacementEngine, MinimalVictimsTakeInOrderThenDropWhatIsNotNeeded) {
  // No room; need 4. Candidates in preference order: 1, 1, 4 cpu. Taking in
  // order stops at the 4 (1+1+4 >= 4); then the two small ones are not needed.
  std::vector<Resources> candidates{res("cpu=1"), res("cpu=1"), res("cpu=4")};
  auto all = [](size_t) { return true; };
  auto v = minimal_victims(Resources{}, res("cpu=4"), candidates, all);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<size_t>{2}));
  EXPECT_EQ(*minimal_victims(res("cpu=1"), res("cpu=3"), candidates, all), (std::vector<size_t>{0, 1}))
      << "1 free + 1 + 1: both needed";
  // A candidate that frees nothing short is skipped; one the policy refuses too.
  std::vector<Resources> mixed{res("memory=4Gi"), res("cpu=2"), res("cpu=2")};
  std::vector<size_t> asked;
  auto refuse_second = [&](size_t i) {
    asked.push_back(i);
    return i != 1;
  };
  EXPECT_FALSE(minimal_victims(res("cpu=1"), res("cpu=4"), mixed, refuse_second));
  EXPECT_EQ(asked, (std::vector<size_t>{1, 2})) << "the memory-only one frees no cpu: never asked";
  EXPECT_EQ(minimal_victims(res("cpu=4"), res("cpu=4"), mixed, all)->size(), 0u) << "room already";
}

TEST(PlacementEngine, DefragmentationTakesTheHoleWithFewestVictimsThenLeastCost) {
  std::vector<Hole> holes{{0, {1, 2}, 5}, {1, {3}, 9}, {2, {4}, 3}, {3, {5}, 3}};
  auto h = best_hole(holes);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->node, 2u) << "one victim, the cheaper, the first of equals";
  EXPECT_FALSE(best_hole({}));
}

TEST(PlacementEngine, PreemptibleWorkSquatsInSubpoolsWhenItsPoolIsFull) {
  ClusterView view;
  uint32_t root = view.add_pool("root");
  uint32_t gpu = view.add_pool("gpu", root);
  auto a = NodeBuilder(1).pool("root").capacity("cpu=4").build();
  auto b = NodeBuilder(2).pool("gpu").capacity("cpu=4").build();
  view.add_node(a, root, snapshot_of(a, "cpu=4"));
  view.add_node(b, gpu, snapshot_of(b));
  EXPECT_EQ(view.pool(root).descendants, (std::vector<uint32_t>{gpu}));
  PlacementRequest r;
  r.per_task = res("cpu=1");
  r.tasks_wanted = 2;
  r.pool = root;
  EXPECT_EQ(place(view, r, {}).verdict, PlacementVerdict::unschedulable) << "non-preemptible work stays home";
  r.subpools = true;
  auto got = place(view, r, {});
  ASSERT_EQ(got.verdict, PlacementVerdict::fit);
  EXPECT_EQ(got.node, 1u);
  EXPECT_EQ(got.tasks, 2u);
  EXPECT_EQ(view.pool(gpu).total_available, res("cpu=4"));
  EXPECT_EQ(view.pool(root).total_available, Resources{});
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

// Overlapping schedulers: each fills its own stretch of the pool upward, then
// the rest downward from the node before its stretch, so it meets its
// neighbours only where their stretches are full.
TEST(PlacementStretch, OwnStretchUpThenTheRestDown) {
  ClusterView view;
  uint32_t p = view.add_pool("default");
  for (uint32_t id = 1; id <= 12; ++id) {
    auto spec = testing::NodeBuilder(id).capacity("cpu=1").build();
    NodeSnapshot s;
    s.node = spec.id;
    s.capacity = spec.capacity;
    s.free = spec.capacity;
    view.add_node(spec, p, s);
  }
  PlacementRequest r;
  r.per_task = testing::res("cpu=1");
  r.pool = p;
  r.rotation = 4;
  r.span = 4;
  std::vector<NodeIndex> order;
  for (int i = 0; i < 12; ++i) {
    auto got = place(view, r, {});
    ASSERT_EQ(got.verdict, PlacementVerdict::fit);
    order.push_back(got.node);
    view.add_in_flight(got.node, r.per_task, 1);
  }
  EXPECT_EQ(order, (std::vector<NodeIndex>{4, 5, 6, 7, 3, 2, 1, 0, 11, 10, 9, 8}));
  EXPECT_EQ(place(view, r, {}).verdict, PlacementVerdict::unschedulable);
  // A stretch past the end wraps around.
  r.rotation = 10;
  r.span = 4;
  view.remove_in_flight(0, r.per_task, 1);
  view.remove_in_flight(11, r.per_task, 1);
  view.remove_in_flight(5, r.per_task, 1);
  EXPECT_EQ(place(view, r, {}).node, 11u);
  view.add_in_flight(11, r.per_task, 1);
  EXPECT_EQ(place(view, r, {}).node, 0u) << "wrapped stretch: 10, 11, 0, 1";
  view.add_in_flight(0, r.per_task, 1);
  EXPECT_EQ(place(view, r, {}).node, 5u) << "then down from 9";
}

}  // namespace
}  // namespace claimsched::core
