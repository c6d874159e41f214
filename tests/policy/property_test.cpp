// Property tests of the fair-share and preemption policy on random snapshots
// from fixed seeds: fair shares never exceed capacity or demand; raising a
// weight never lowers that class's share; no preemption cycle under unchanged
// demand; a plan never over-commits a node; the output does not depend on the
// order of the input; a cycle in reused buffers decides what a fresh one does.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/policy/engine.hpp"
#include "core/random.hpp"
#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

struct GenOptions {
  /// Also fixed_share classes.
  bool non_preemptible = true;
  /// DUCC caps (doubling, initialization cap) on some classes.
  bool ducc_caps = true;
  bool gpus = true;
};

template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[rng.below(v.size())];
}

/// A random but valid snapshot: a small pool tree, classes, users, nodes, and
/// jobs whose running allocations fit their nodes.
Snapshot random_snapshot(uint64_t seed, const GenOptions& o = {}) {
  Rng rng(seed * 7919 + 17);
  SnapshotBuilder s;
  s.now(sec(1000));
  std::vector<std::string> pools{"root"};
  s.pool("root");
  if (rng.chance(0.5)) {
    s.pool("sub", "root");
    pools.push_back("sub");
    if (rng.chance(0.5)) {
      s.pool("leaf", "sub");
      pools.push_back("leaf");
    }
  }
  if (rng.chance(0.3)) {
    s.pool("other");
    pools.push_back("other");
  }
  size_t nclasses = 1 + rng.below(4);
  std::vector<std::string> classes;
  for (size_t c = 0; c < nclasses; ++c) {
    std::string name = "c" + std::to_string(c);
    ClassPolicy policy =
        o.non_preemptible && rng.chance(0.2) ? ClassPolicy::fixed_share : ClassPolicy::fair_share;
    // DUCC: classes of one priority share one policy (non-preemptible ones get their own).
    int32_t priority = policy == ClassPolicy::fixed_share ? 20 : rng.chance(0.3) ? 10 : 0;
    s.cls(name, pick(rng, pools), priority, static_cast<uint32_t>(1 + rng.below(4)), policy);
    if (o.ducc_caps && policy == ClassPolicy::fair_share && rng.chance(0.2))
      s.last_class().expand_by_doubling = true;
    if (o.ducc_caps && policy == ClassPolicy::fair_share && rng.chance(0.2))
      s.last_class().initialization_cap = 2;
    classes.push_back(name);
  }
  uint32_t nnodes = static_cast<uint32_t>(2 + rng.below(7));
  std::vector<Resources> free;
  std::vector<std::string> node_pool;
  for (uint32_t n = 1; n <= nnodes; ++n) {
    std::string cap =
        "cpu=" + std::to_string(4 << rng.below(3)) + ",memory=" + std::to_string(8 << rng.below(3)) + "Gi";
    if (o.gpus && rng.chance(0.2)) cap += ",gpu=2";
    node_pool.push_back(pick(rng, pools));
    s.node(n, node_pool.back(), cap);
    free.push_back(res(cap));
  }
  const Snapshot& snap = s.snapshot();
  auto in_subtree = [&](const std::string& pool, const std::string& ancestor) {
    std::string cur = pool;
    while (!cur.empty()) {
      if (cur == ancestor) return true;
      auto it = std::find_if(snap.pools.begin(), snap.pools.end(),
                             [&](const PoolSpec& p) { return p.name == cur; });
      cur = it->parent;
    }
    return false;
  };
  uint32_t njobs = static_cast<uint32_t>(1 + rng.below(15));
  for (uint32_t j = 1; j <= njobs; ++j) {
    const std::string& cls = pick(rng, classes);
    const ClassSpec& spec = *std::find_if(snap.classes.begin(), snap.classes.end(),
                                          [&](const ClassSpec& c) { return c.name == cls; });
    std::string per_task = std::string("cpu=") + pick(rng, std::vector<std::string>{"500m", "1", "2"}) +
                           ",memory=" + pick(rng, std::vector<std::string>{"1Gi", "2Gi", "4Gi"});
    if (o.gpus && rng.chance(0.1)) per_task += ",gpu=1";
    auto job = s.job(j, "u" + std::to_string(rng.below(6)), cls).per_task(per_task);
    job.pending(static_cast<uint32_t>(rng.below(11)));
    job.submitted(sec(static_cast<int64_t>(rng.below(100))));
    if (rng.chance(0.5)) job.initialized();
    Resources r = res(per_task);
    uint64_t want = rng.below(7);
    for (uint64_t t = 0; t < want; ++t) {
      uint32_t n = static_cast<uint32_t>(rng.below(nnodes));
      bool allowed = spec.policy == ClassPolicy::fair_share ? in_subtree(node_pool[n], spec.pool)
                                                            : node_pool[n] == spec.pool;
      if (!allowed || !r.fits_in(free[n])) continue;
      free[n] -= r;
      job.running(n + 1, sec(static_cast<int64_t>(rng.below(1000))), rng.chance(0.5));
    }
  }
  if (rng.chance(0.5)) s.preemption().enable_aggressive_starvation = true;
  s.preemption().fair_share_starvation_timeout = std::chrono::seconds(rng.below(3) * 10);
  s.preemption().fair_share_aggressive_starvation_timeout = std::chrono::seconds(30 + rng.below(3) * 10);
  return s.build();
}

bool pool_in_subtree(const Snapshot& s, std::string pool, const std::string& ancestor) {
  while (!pool.empty()) {
    if (pool == ancestor) return true;
    for (const auto& p : s.pools)
      if (p.name == pool) {
        pool = p.parent;
        break;
      }
  }
  return false;
}

constexpr uint64_t kSeeds = 300;

TEST(PolicyProperty, FairSharesNeverExceedCapacityOrDemand) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    Snapshot s = random_snapshot(seed);
    auto r = run(s);
    for (const auto& pool : r.pools) {
      // The work bound to a pool's subtree runs only on the subtree's nodes.
      Resources fair;
      for (const auto& j : r.jobs)
        if (pool_in_subtree(s, j.pool, pool.name)) fair += j.fair_share;
      EXPECT_TRUE(fair.fits_in(pool.scope)) << "seed " << seed << " pool " << pool.name << ": fair share "
                                            << fair.to_string() << " exceeds " << pool.scope.to_string();
      EXPECT_LE(pool.fair_share_share, kShareOne) << "seed " << seed;
    }
    for (const auto& j : r.jobs) {
      EXPECT_GE(j.fair_share_share, 0);
      EXPECT_LE(j.fair_tasks, static_cast<double>(std::max(j.cap, j.running)) + 1e-9)
          << "seed " << seed << " job " << j.id.value;
      EXPECT_TRUE(j.fair_share.fits_in(j.demand) || j.fair_share == j.usage)
          << "seed " << seed << " job " << j.id.value << ": fair " << j.fair_share.to_string() << " demand "
          << j.demand.to_string();
    }
  }
}

TEST(PolicyProperty, RaisingAWeightNeverLowersThatClassesShare) {
  size_t checked = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    Snapshot s = random_snapshot(seed, GenOptions{false, false, true});
    Rng rng(seed);
    auto& cls = s.classes[rng.below(s.classes.size())];
    auto class_share = [&](const CycleResult& r) {
      Share sum = 0;
      for (const auto& j : r.jobs)
        if (j.class_name == cls.name) sum += j.fair_share_share;
      return sum;
    };
    Share before = class_share(run(s));
    cls.weight += static_cast<uint32_t>(1 + rng.below(5));
    Share after = class_share(run(s));
    // Shares are rounded down per job: allow one unit per job.
    EXPECT_GE(after + static_cast<Share>(s.jobs.size()), before)
        << "seed " << seed << " class " << cls.name << " weight now " << cls.weight;
    checked += after > before;
  }
  EXPECT_GT(checked, 10u);  // the property was not vacuous
}

// The property: a task preempted to feed job X is never re-admitted by
// preempting X's new task in the next cycle, under unchanged demand (preempted
// tasks go back to pending). 300 random clusters, 20 cycles of 10s each, with
// and without aggressive starvation (its timeout is at least 30s).
TEST(PolicyProperty, NoPreemptionCycleUnderUnchangedDemand) {
  size_t preemptions = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    Snapshot s = random_snapshot(seed, GenOptions{false, false, true});
    PolicyState state;
    std::set<std::pair<uint64_t, uint64_t>> last_cycle;  // (victim job, preemptor job)
    TimePoint last_now{-1};
    for (int cycle = 0; cycle < 20; ++cycle) {
      auto r = run(s, state);
      std::set<std::pair<uint64_t, uint64_t>> fed;
      for (const auto& rm : r.plan.removals) {
        if (!rm.preemptor) continue;
        ++preemptions;
        uint64_t victim = rm.task.job.value, for_job = rm.preemptor->value;
        TimePoint started{-2};
        for (const auto& j : s.jobs)
          for (const auto& a : j.allocations)
            if (j.id == rm.task.job && a.index == rm.task.index) started = a.start;
        EXPECT_FALSE(started == last_now && last_cycle.count({for_job, victim}))
            << "seed " << seed << " cycle " << cycle << ": the task job " << victim
            << " got last cycle by preempting job " << for_job << " is preempted for job " << for_job << "\n"
            << describe(rm);
        fed.insert({victim, for_job});
      }
      last_cycle = std::move(fed);
      last_now = s.now;
      s = apply_plan(s, r, s.now + 10s);
      state = r.next_state;
    }
  }
  EXPECT_GT(preemptions, 300u);  // the property was not vacuous
}

// Without aggressive starvation (YTsaurus's default) it holds for ever, not
// just in the next cycle: once X took from Y, Y never takes from X. Victims
// keep their fair share (the allocation that crosses it is not preemptible),
// so they never starve.
TEST(PolicyProperty, WithoutAggressiveStarvationAVictimNeverTakesBack) {
  size_t preemptions = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    Snapshot s = random_snapshot(seed, GenOptions{false, false, true});
    s.settings.preemption.enable_aggressive_starvation = false;
    PolicyState state;
    std::set<std::pair<uint64_t, uint64_t>> fed;  // (victim job, preemptor job)
    for (int cycle = 0; cycle < 20; ++cycle) {
      auto r = run(s, state);
      for (const auto& rm : r.plan.removals) {
        if (!rm.preemptor) continue;
        ++preemptions;
        uint64_t victim = rm.task.job.value, for_job = rm.preemptor->value;
        EXPECT_EQ(fed.count({for_job, victim}), 0u)
            << "seed " << seed << " cycle " << cycle << ": job " << victim << " lost a task to job "
            << for_job << " after job " << for_job << " had lost one to job " << victim << "\n"
            << describe(rm);
        fed.insert({victim, for_job});
      }
      s = apply_plan(s, r, s.now + 10s);
      state = r.next_state;
    }
  }
  EXPECT_GT(preemptions, 200u);
}

TEST(PolicyProperty, PlansNeverOvercommitANodeOrRepeatThemselves) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    Snapshot s = random_snapshot(seed);
    PolicyState state;
    for (int cycle = 0; cycle < 5; ++cycle) {
      auto r = run(s, state);
      Snapshot next = apply_plan(s, r, s.now + 10s);
      std::map<uint32_t, Resources> used;
      for (const auto& j : next.jobs)
        for (const auto& a : j.allocations) {
          Resources per = j.per_task;
          for (const auto& p : r.plan.placements)
            if (p.job == j.id && p.node == a.node) per = p.per_task;
          used[a.node.value] += per;
        }
      for (const auto& n : next.nodes)
        EXPECT_TRUE(used[n.id.value].fits_in(n.capacity))
            << "seed " << seed << " cycle " << cycle << " node " << n.id.value << " uses "
            << used[n.id.value].to_string() << " of " << n.capacity.to_string();
      s = std::move(next);
      state = r.next_state;
    }
  }
}

TEST(PolicyProperty, OutputDoesNotDependOnInputOrder) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Snapshot s = random_snapshot(seed);
    auto a = run(s);
    Rng rng(seed + 1);
    auto shuffle = [&](auto& v) {
      for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
    };
    shuffle(s.jobs);
    shuffle(s.nodes);
    shuffle(s.pools);
    shuffle(s.classes);
    for (auto& j : s.jobs) shuffle(j.allocations);
    auto b = run(s);
    EXPECT_EQ(render_text(a), render_text(b)) << "seed " << seed;
    EXPECT_EQ(a.next_state, b.next_state) << "seed " << seed;
  }
}

// A stage runs each cycle in the last cycle's buffers and result (their
// storage reused, CycleBuffers): nothing of the last cycle may leak into the
// next. One set of buffers goes through clusters of every size (they grow
// and shrink) and a few cycles of each, the plans carried out; each cycle
// must say what a cycle in fresh buffers says.
TEST(PolicyProperty, ACycleInReusedBuffersDecidesWhatAFreshOneDoes) {
  CycleBuffers buffers;
  CycleResult reused;
  size_t decisions = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    Snapshot s = random_snapshot(seed);
    PolicyState state;
    for (int cycle = 0; cycle < 4; ++cycle) {
      ClusterView view = view_of(s);
      auto fresh = run_cycle(s, view, state);
      ASSERT_TRUE(fresh) << "seed " << seed;
      ASSERT_TRUE(run_cycle(s, view, state, reused, buffers)) << "seed " << seed;
      EXPECT_EQ(render_text(*fresh), render_text(reused)) << "seed " << seed << " cycle " << cycle;
      EXPECT_EQ(fresh->next_state, reused.next_state) << "seed " << seed << " cycle " << cycle;
      ASSERT_EQ(fresh->jobs.size(), reused.jobs.size()) << "seed " << seed;
      for (size_t i = 0; i < fresh->jobs.size(); ++i) {
        const JobRow& a = fresh->jobs[i];
        const JobRow& b = reused.jobs[i];
        EXPECT_EQ(a.id, b.id);
        EXPECT_EQ(a.usage, b.usage) << "seed " << seed << " job " << a.id.value;
        EXPECT_EQ(a.fair_share_share, b.fair_share_share) << "seed " << seed << " job " << a.id.value;
        EXPECT_EQ(a.placed, b.placed) << "seed " << seed << " job " << a.id.value;
        EXPECT_EQ(a.removed, b.removed) << "seed " << seed << " job " << a.id.value;
        EXPECT_EQ(a.allocations.size(), b.allocations.size()) << "seed " << seed << " job " << a.id.value;
        EXPECT_EQ(a.pending_reason, b.pending_reason) << "seed " << seed << " job " << a.id.value;
      }
      decisions += fresh->plan.placements.size() + fresh->plan.removals.size();
      s = apply_plan(s, *fresh, s.now + 10s);
      state = fresh->next_state;
    }
  }
  EXPECT_GT(decisions, 300u);  // the cycles decided things, not only ranked
}

}  // namespace
}  // namespace claimsched::core::policy
