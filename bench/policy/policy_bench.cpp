// The fair-share computation at the scale: 10,000 users, 100 classes,
// 100,000 jobs (goal: under 10 ms per cycle), and the phases around it.
//
// The cluster: 10,000 nodes of 64 cpu / 256Gi in a root pool and four
// subpools (2,000 nodes each). Classes 0-19 are bound to the root pool, the
// others to the subpools in turn; classes 0-9 have priority 10, the rest 0;
// weights 1-4. User u is in class u % 100 (100 users per class) and owns 10
// jobs. Tasks take 1-4 cpu and 2-16Gi (half the jobs are cpu-heavy, half
// memory-heavy); each job has 0-19 pending tasks and 2 running ones. Demand is
// about 2.5 times the cluster: every level of the water-filling is capped.
//
//   BM_FairShare        the how-much phase on an indexed model (the figure)
//   BM_BuildModel       indexing the snapshot (names, pools, allocations)
//   BM_Statuses         statuses, starvation timers, allocation classes
//   BM_Cycle            run_cycle: all of the above plus the plan (a first
//                       cycle: it places ~100k tasks on the half-empty cluster)
//   BM_CycleSteady      run_cycle 10s later, the first plan carried out

#include <benchmark/benchmark.h>

#include "core/policy/engine.hpp"
#include "core/policy/policy.hpp"
#include "core/random.hpp"

namespace {

using namespace claimsched::core;
using namespace claimsched::core::policy;

Snapshot make_snapshot(uint32_t users, uint32_t classes, uint32_t jobs_per_user, uint32_t nodes) {
  Snapshot s;
  s.now = std::chrono::seconds(3600);
  s.pools.push_back(PoolSpec{"root", "", {}, {}});
  for (int p = 0; p < 4; ++p) s.pools.push_back(PoolSpec{"sub" + std::to_string(p), "root", {}, {}});
  for (uint32_t c = 0; c < classes; ++c) {
    ClassSpec cls;
    cls.name = "class" + std::to_string(c);
    cls.priority = c < classes / 10 ? 10 : 0;
    cls.weight = 1 + c % 4;
    cls.pool = c < classes / 5 ? "root" : "sub" + std::to_string(c % 4);
    s.classes.push_back(cls);
  }
  Resources cap = *Resources::parse("cpu=64,memory=256Gi");
  for (uint32_t n = 0; n < nodes; ++n) {
    NodeInfo node;
    node.id = NodeId{n + 1};
    node.pool = n < nodes / 5 ? "root" : "sub" + std::to_string((n - nodes / 5) / (nodes / 5));
    node.capacity = cap;
    s.nodes.push_back(node);
  }
  Rng rng(42);
  uint64_t id = 1;
  std::vector<uint32_t> used(nodes, 0);
  for (uint32_t u = 0; u < users; ++u) {
    for (uint32_t k = 0; k < jobs_per_user; ++k) {
      JobInfo j;
      j.id = JobId{id++};
      j.user = "user" + std::to_string(u);
      j.job_class = "class" + std::to_string(u % classes);
      bool cpu_heavy = rng.chance(0.5);
      int64_t cpu = cpu_heavy ? 2 + static_cast<int64_t>(rng.below(3)) : 1;
      int64_t mem_gi = cpu_heavy ? 2 : 8 + static_cast<int64_t>(rng.below(9));
      j.per_task = Resources::cpu_memory(cpu * 1000, mem_gi << 30);
      j.pending = static_cast<uint32_t>(rng.below(20));
      j.initialized = true;
      // Two running tasks on a node of the class's pool (or a subpool).
      const auto& pool = s.classes[u % classes].pool;
      uint32_t lo = pool == "root" ? 0 : nodes / 5 * (1 + static_cast<uint32_t>(pool.back() - '0'));
      uint32_t span = pool == "root" ? nodes : nodes / 5;
      for (TaskIndex t = 0; t < 2; ++t) {
        uint32_t n = lo + static_cast<uint32_t>(rng.below(span));
        if (used[n] + cpu > 64) continue;
        used[n] += static_cast<uint32_t>(cpu);
        j.allocations.push_back(
            AllocationInfo{t, NodeId{n + 1}, std::chrono::seconds(rng.below(3600)), false, true});
      }
      s.jobs.push_back(std::move(j));
    }
  }
  return s;
}

const Snapshot& big() {
  static const Snapshot s = make_snapshot(10'000, 100, 10, 10'000);
  return s;
}

void BM_FairShare(benchmark::State& state) {
  auto model = build_model(big());
  if (!model) {
    state.SkipWithError(model.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    compute_fair_shares(*model);
    benchmark::DoNotOptimize(model->jobs.front().fair);
  }
  state.counters["jobs"] = static_cast<double>(model->jobs.size());
  state.counters["users"] = static_cast<double>(model->users.size());
  state.counters["classes"] = static_cast<double>(model->classes.size());
}
BENCHMARK(BM_FairShare)->Unit(benchmark::kMillisecond);

void BM_BuildModel(benchmark::State& state) {
  for (auto _ : state) {
    auto model = build_model(big());
    benchmark::DoNotOptimize(model->jobs.size());
  }
}
BENCHMARK(BM_BuildModel)->Unit(benchmark::kMillisecond);

void BM_Statuses(benchmark::State& state) {
  auto model = build_model(big());
  compute_fair_shares(*model);
  PolicyState in, out;
  for (auto _ : state) {
    compute_statuses(*model, in, out);
    benchmark::DoNotOptimize(out.job_below_fair_share_since.size());
  }
}
BENCHMARK(BM_Statuses)->Unit(benchmark::kMillisecond);

void BM_Cycle(benchmark::State& state) {
  PolicyState st;
  for (auto _ : state) {
    auto r = run_cycle(big(), st);
    benchmark::DoNotOptimize(r->plan.placements.size());
  }
}
BENCHMARK(BM_Cycle)->Unit(benchmark::kMillisecond)->Iterations(3);

// A cycle in steady state: the first cycle's plan carried out (the cluster is
// full), 10s later, with its timers.
void BM_CycleSteady(benchmark::State& state) {
  auto first = run_cycle(big(), PolicyState{});
  Snapshot next = apply_plan(big(), *first, big().now + std::chrono::seconds(10));
  PolicyState st = first->next_state;
  size_t placed = 0, removed = 0;
  for (auto _ : state) {
    auto r = run_cycle(next, st);
    placed = r->plan.stats.tasks_placed;
    removed = r->plan.removals.size();
    benchmark::DoNotOptimize(placed);
  }
  state.counters["tasks_placed"] = static_cast<double>(placed);
  state.counters["removals"] = static_cast<double>(removed);
}
BENCHMARK(BM_CycleSteady)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
