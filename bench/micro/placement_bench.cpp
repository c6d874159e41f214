// One placement decision (core::place over a core::ClusterView) against a
// linear scan of the same nodes, and one Scheduler::schedule() call filling a
// window of 512 claims. See bench/README.md for how to read the output.
//
// Clusters: N nodes of cpu=32,memory=128Gi in one pool; every node carries
// `zone=z<i%4>` and a quarter of them (seeded) `ssd`. "fill F" gives each node
// a random used share with mean F (uniform in [0, 2F] up to 50%, in
// [2F-1, 1] above), memory correlated with cpu, a fifth of it as claims in
// flight and the rest as reported allocations, so the capacity index has real
// structure. At fill 0 every node is empty and identical (a fresh homogeneous
// cluster). A decision asks for 10 tasks of cpu 2|4 and memory 8Gi|16Gi
// (drawn per decision from 64 seeded requests, with random fill-first
// rotation points), the way the scheduler's hot path does: explain off.
// With labels the request also needs `ssd` and `zone=z1` (~6% of nodes).
//
// Variants beyond the random fill: "50q" rounds every node's use to whole
// cpu=2,memory=8Gi units (free values repeat, as with a few task sizes);
// "50p"/"90p" pack the first 50%/90% of the nodes the way fill-first does
// with `claimsched sim`'s synthetic tasks and ask for the sim's job sizes
// from rotation 0 ("/churn": one packed node frees and retakes a task around
// every decision, so the view is never static); "nomatch" asks for a label
// no node has.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/placement.hpp"
#include "core/random.hpp"
#include "core/scheduler.hpp"
#include "core/synthetic.hpp"

namespace {

namespace cs = claimsched::core;
using Clock = std::chrono::steady_clock;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr uint64_t kSeed = 20240601;
constexpr size_t kRequests = 64;  // a power of two (masked index)

const std::vector<std::string> kLabelConstraints{"ssd", "zone=z1"};
/// No node has this label: the index cannot help (the "nomatch" cases).
const std::vector<std::string> kNoMatchConstraints{"os=windows"};

/// How the nodes' free resources are laid out (see the file comment).
enum class Shape {
  /// Random used share per node, continuous values, cpu and memory correlated.
  random,
  /// As random, rounded to whole cpu=2,memory=8Gi units: values repeat.
  quantized,
  /// What fill-first packing leaves: the first F of the nodes packed with
  /// `claimsched sim`'s synthetic tasks until not even the smallest fits,
  /// the rest empty; requests are the sim's jobs, rotation 0.
  packed,
};

struct Cluster {
  cs::ClusterView view;
  uint32_t pool = 0;
  Shape shape = Shape::random;
  /// For Shape::packed: the synthetic jobs' per-task sizes.
  std::vector<cs::Resources> job_sizes;
  /// For Shape::packed: each packed node's last task, kept as a claim in
  /// flight so that it can be given back and taken again (the churn rows),
  /// in a seeded random order.
  std::vector<std::pair<cs::NodeIndex, cs::Resources>> churn;
};

/// Folds x back into [lo, hi] (a clamp would pile nodes up on exactly equal
/// values, and ties at the top are what the spread order is sensitive to:
/// they are measured on purpose at fill 0 and with Shape::quantized, not by
/// accident everywhere).
double reflect(double x, double lo, double hi) {
  if (hi <= lo) return lo;
  if (x < lo) x = 2 * lo - x;
  if (x > hi) x = 2 * hi - x;
  return std::clamp(x, lo, hi);
}

cs::NodeSpec node_spec(uint32_t i, const cs::Resources& capacity, cs::Rng& rng) {
  cs::NodeSpec spec;
  spec.id = cs::NodeId{i + 1};
  spec.name = "node-" + std::to_string(i + 1);
  spec.pool = "default";
  spec.capacity = capacity;
  spec.labels.push_back("zone=z" + std::to_string(i % 4));
  if (rng.chance(0.25)) spec.labels.push_back("ssd");
  return spec;
}

std::unique_ptr<Cluster> build_cluster(uint32_t nodes, int fill_pct, Shape shape) {
  auto c = std::make_unique<Cluster>();
  c->shape = shape;
  c->pool = c->view.add_pool("default");
  cs::Rng rng(kSeed ^ (uint64_t{nodes} << 8) ^ static_cast<uint64_t>(fill_pct) ^
              (static_cast<uint64_t>(shape) << 40));
  const cs::Resources capacity = cs::Resources::cpu_memory(32'000, 128 * kGi);
  const double f = fill_pct / 100.0;

  if (shape == Shape::packed) {
    // The sim's load for this cluster: 100 tasks per node, 90% utilization.
    cs::SyntheticLoadConfig load_cfg;
    load_cfg.tasks = uint64_t{100} * nodes;
    load_cfg.seed = kSeed;
    cs::SyntheticLoad load(load_cfg, capacity.times(nodes));
    for (uint64_t j = 0; j < kRequests; ++j) c->job_sizes.push_back(load.job(j, cs::TimePoint{0}).per_task);
    const cs::Resources smallest = load.base_task();
    const auto packed = static_cast<uint32_t>(f * nodes);
    uint64_t next_job = kRequests;
    for (uint32_t i = 0; i < nodes; ++i) {
      cs::NodeSpec spec = node_spec(i, capacity, rng);
      cs::Resources free = capacity;
      cs::Resources last;
      if (i < packed) {
        // Tasks of the sim's jobs while they fit, then the smallest task
        // while that fits: the hole left is below the smallest task in at
        // least one dimension, and the other dimension may have room.
        for (;;) {
          cs::Resources t = load.job(next_job++, cs::TimePoint{0}).per_task;
          if (t.fits_in(free)) {
            free -= t;
            last = t;
          } else if (smallest.fits_in(free)) {
            free -= smallest;
            last = smallest;
          } else {
            break;
          }
        }
      }
      cs::NodeSnapshot snap;
      snap.node = spec.id;
      snap.generation = 1;
      snap.capacity = capacity;
      snap.free = free + last;
      auto n = c->view.add_node(spec, c->pool, snap);
      if (!last.is_zero()) {
        c->view.add_in_flight(n, last, 1);
        c->churn.emplace_back(n, last);
      }
    }
    for (size_t k = c->churn.size(); k > 1; --k) std::swap(c->churn[k - 1], c->churn[rng.below(k)]);
    (void)c->view.take_grew();
    return c;
  }

  const double lo = std::max(0.0, 2 * f - 1), hi = std::min(1.0, 2 * f);
  for (uint32_t i = 0; i < nodes; ++i) {
    cs::NodeSpec spec = node_spec(i, capacity, rng);
    double u_cpu = lo + (hi - lo) * rng.unit();
    double u_mem = reflect(u_cpu + (rng.unit() - 0.5) * 0.1, lo, hi);
    if (shape == Shape::quantized) {
      u_cpu = std::round(u_cpu * 16) / 16;
      u_mem = std::round(u_mem * 16) / 16;
    }
    cs::Resources used = cs::Resources::cpu_memory(static_cast<int64_t>(32'000 * u_cpu),
                                                   static_cast<int64_t>(128.0 * kGi * u_mem));
    cs::Resources in_flight = cs::Resources::cpu_memory(used[cs::dim::cpu] / 5, used[cs::dim::memory] / 5);
    cs::NodeSnapshot snap;
    snap.node = spec.id;
    snap.generation = 1;
    snap.capacity = capacity;
    snap.free = capacity - (used - in_flight);
    auto n = c->view.add_node(spec, c->pool, snap);
    if (!in_flight.is_zero()) c->view.add_in_flight(n, in_flight, 1 + static_cast<uint32_t>(rng.below(3)));
  }
  (void)c->view.take_grew();
  return c;
}

/// Clusters are cached: the benchmark functions run several times each.
Cluster& cluster(uint32_t nodes, int fill_pct, Shape shape) {
  static std::map<std::tuple<uint32_t, int, Shape>, std::unique_ptr<Cluster>> cache;
  auto& slot = cache[{nodes, fill_pct, shape}];
  if (!slot) slot = build_cluster(nodes, fill_pct, shape);
  return *slot;
}

std::vector<cs::PlacementRequest> requests(const Cluster& c, const std::vector<std::string>* constraints) {
  cs::Rng rng(kSeed + 7);
  std::vector<cs::PlacementRequest> out;
  for (size_t i = 0; i < kRequests; ++i) {
    cs::PlacementRequest r;
    const int64_t cpu = rng.chance(0.5) ? 2'000 : 4'000;
    const int64_t memory = rng.chance(0.5) ? 8 * kGi : 16 * kGi;
    r.per_task = cs::Resources::cpu_memory(cpu, memory);
    r.rotation = static_cast<size_t>(rng.below(c.view.pool(c.pool).nodes.size()));
    if (c.shape == Shape::packed) {
      // One scheduler's fill-first scan starts at its fixed rotation point,
      // which is where packing started.
      r.per_task = c.job_sizes[i];
      r.rotation = 0;
    }
    r.tasks_wanted = 10;
    r.max_tasks_per_claim = 64;
    r.constraints = constraints;
    r.pool = c.pool;
    r.explain = false;
    out.push_back(r);
  }
  return out;
}

cs::PlacementPolicy policy_of(cs::ScorerKind kind) {
  cs::PlacementPolicy p;
  p.scorers = {{kind, 1.0}};
  p.candidates = 1;
  return p;
}

/// The baseline: look at every node of the pool, check state, fit (including
/// the starting limit) and labels, and pick what place() would pick
/// (fill-first: the first feasible node from the rotation point; spread: the
/// most available in the dominant dimension, ties to the lower slot).
/// Returns the chosen node or nullopt.
std::optional<cs::NodeIndex> linear_place(const cs::ClusterView& view, const cs::PlacementRequest& req,
                                          cs::ScorerKind kind) {
  const cs::PoolView& pool = view.pool(req.pool);
  const size_t size = pool.nodes.size();
  const uint32_t limit = std::min(req.tasks_wanted, req.max_tasks_per_claim);
  const cs::DimensionId d = req.per_task.dominant_dimension(pool.total_capacity);
  std::optional<cs::NodeIndex> best;
  int64_t best_key = 0;
  for (size_t slot = 0; slot < size; ++slot) {
    const cs::NodeView& v = view.node(pool.nodes[slot]);
    if (v.state != cs::NodeState::up) continue;
    if (!req.per_task.fits_in(v.available())) continue;
    if (req.constraints && !cs::label_selectors_match(*req.constraints, v.labels)) continue;
    if (cs::tasks_that_fit(v, req.per_task, limit) == 0) continue;
    int64_t key = kind == cs::ScorerKind::fill_first
                      ? -static_cast<int64_t>((slot + size - req.rotation % size) % size)
                      : v.available()[d];
    if (!best || key > best_key) {
      best = pool.nodes[slot];
      best_key = key;
    }
  }
  return best;
}

/// Wall-clock nanoseconds per linear decision, cached per configuration.
double linear_ns(const Cluster& c, const std::vector<cs::PlacementRequest>& reqs, cs::ScorerKind kind,
                 const void* key_constraints) {
  static std::map<std::tuple<const Cluster*, int, const void*>, double> cache;
  auto key = std::make_tuple(&c, static_cast<int>(kind), key_constraints);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  size_t calls = 0;
  auto start = Clock::now();
  auto elapsed = Clock::duration{};
  while (calls < 2 * kRequests || elapsed < std::chrono::milliseconds(30)) {
    benchmark::DoNotOptimize(linear_place(c.view, reqs[calls % reqs.size()], kind));
    ++calls;
    elapsed = Clock::now() - start;
  }
  double ns = std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(calls);
  cache.emplace(key, ns);
  return ns;
}

/// One decision per iteration. Counters: fit_rate (decisions that found a
/// node), disagree (decisions where the baseline picks another node: should
/// be 0), linear_ns (the baseline's time per decision on the same nodes and
/// requests) and vs_linear = linear_ns / this benchmark's time per decision.
///
/// With `churn` (packed clusters only), every decision is preceded by one
/// packed node giving back its last task (its availability grows, as when a
/// task finishes or a claim is rejected) and followed by the node taking it
/// again, so the view is the same on average but never static: anything the
/// index remembers between decisions is put to the test. The two index
/// updates are inside the timing.
void place_benchmark(benchmark::State& state, cs::ScorerKind kind, uint32_t nodes, int fill_pct,
                     Shape shape, const std::vector<std::string>* constraints, bool churn) {
  Cluster& c = cluster(nodes, fill_pct, shape);
  const auto reqs = requests(c, constraints);
  const auto policy = policy_of(kind);
  double disagree = 0;
  for (const auto& r : reqs) {
    auto got = cs::place(c.view, r, policy);
    auto want = linear_place(c.view, r, kind);
    bool same = got.verdict == cs::PlacementVerdict::fit ? want && *want == got.node : !want;
    disagree += same ? 0 : 1;
  }
  const double baseline = linear_ns(c, reqs, kind, constraints);

  if (churn && c.churn.empty()) state.SkipWithError("no packed nodes to churn");
  size_t i = 0, fits = 0;
  auto start = Clock::now();
  if (churn && !c.churn.empty()) {
    for (auto _ : state) {
      const auto& [n, task] = c.churn[i % c.churn.size()];
      c.view.remove_in_flight(n, task, 1);
      auto r = cs::place(c.view, reqs[i++ & (kRequests - 1)], policy);
      c.view.add_in_flight(n, task, 1);
      fits += r.verdict == cs::PlacementVerdict::fit;
      benchmark::DoNotOptimize(r);
    }
  } else {
    for (auto _ : state) {
      auto r = cs::place(c.view, reqs[i++ & (kRequests - 1)], policy);
      fits += r.verdict == cs::PlacementVerdict::fit;
      benchmark::DoNotOptimize(r);
    }
  }
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
              static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  state.counters["fit_rate"] = static_cast<double>(fits) / static_cast<double>(std::max<size_t>(1, i));
  state.counters["disagree"] = disagree;
  state.counters["linear_ns"] = baseline;
  state.counters["vs_linear"] = baseline / ns;
  state.SetItemsProcessed(state.iterations());
}

void linear_benchmark(benchmark::State& state, cs::ScorerKind kind, uint32_t nodes, int fill_pct,
                      Shape shape, const std::vector<std::string>* constraints) {
  const Cluster& c = cluster(nodes, fill_pct, shape);
  const auto reqs = requests(c, constraints);
  size_t i = 0, fits = 0;
  for (auto _ : state) {
    auto r = linear_place(c.view, reqs[i++ & (kRequests - 1)], kind);
    fits += r.has_value();
    benchmark::DoNotOptimize(r);
  }
  state.counters["fit_rate"] = static_cast<double>(fits) / static_cast<double>(std::max<size_t>(1, i));
  state.SetItemsProcessed(state.iterations());
}

// -- Scheduler::schedule() ---------------------------------------------------------

constexpr uint32_t kSchedNodes = 10'000;
constexpr uint64_t kSchedJobs = 10'000;
constexpr uint32_t kSchedTasksPerJob = 10;

/// A scheduler over 10k empty nodes with 10k synthetic jobs (100k tasks sized
/// like `claimsched sim`'s: the load fills 90% of the cluster) queued.
const cs::Scheduler& scheduler_base(cs::ScorerKind kind, bool strict) {
  static std::map<std::pair<int, bool>, std::unique_ptr<cs::Scheduler>> cache;
  auto& slot = cache[{static_cast<int>(kind), strict}];
  if (slot) return *slot;
  cs::SchedulerConfig cfg;
  cfg.pools = {"default"};
  cfg.classes[0].placement = policy_of(kind);
  cfg.strict_cas = strict;
  cfg.max_claims_in_flight = 512;
  cfg.max_tasks_per_claim = 64;
  auto s = std::make_unique<cs::Scheduler>(cfg);
  cs::SyntheticClusterConfig cluster_cfg;
  cluster_cfg.nodes = kSchedNodes;
  cluster_cfg.pools = {"default"};
  cluster_cfg.seed = kSeed;
  cs::Resources total;
  for (const auto& spec : cs::make_nodes(cluster_cfg)) {
    cs::NodeSnapshot snap;
    snap.node = spec.id;
    snap.capacity = spec.capacity;
    snap.free = spec.capacity;
    total += spec.capacity;
    if (!s->add_node(spec, snap)) std::abort();
  }
  cs::SyntheticLoadConfig load_cfg;
  load_cfg.tasks = kSchedJobs * kSchedTasksPerJob;
  load_cfg.tasks_per_job = kSchedTasksPerJob;
  load_cfg.pools = {"default"};
  load_cfg.seed = kSeed;
  cs::SyntheticLoad load(load_cfg, total);
  for (uint64_t j = 0; j < load.job_count(); ++j)
    if (!s->submit(load.job(j, cs::TimePoint{0}), cs::TimePoint{0})) std::abort();
  s->start(cs::TimePoint{0});
  slot = std::move(s);
  return *slot;
}

/// One schedule() call on a fresh copy of the queued scheduler (the copy is
/// made with the timer paused): 512 placement decisions plus the queue,
/// task and in-flight bookkeeping of 512 claims. items = tasks claimed.
void BM_Schedule(benchmark::State& state, cs::ScorerKind kind, bool strict) {
  const cs::Scheduler& base = scheduler_base(kind, strict);
  std::optional<cs::Scheduler> s;
  cs::Outbox out;
  uint64_t claims = 0, tasks = 0;
  auto count = [&] {
    claims += out.claims.size();
    for (const auto& c : out.claims) tasks += c.tasks.size();
    out.clear();
  };
  for (auto _ : state) {
    state.PauseTiming();
    count();
    s.reset();
    s.emplace(base);
    state.ResumeTiming();
    s->schedule(cs::TimePoint{std::chrono::milliseconds(1)}, out);
  }
  count();
  const double iters = static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  state.counters["claims"] = static_cast<double>(claims) / iters;
  state.counters["tasks_per_claim"] = claims == 0 ? 0.0 : static_cast<double>(tasks) / static_cast<double>(claims);
  state.counters["claims_per_s"] = benchmark::Counter(static_cast<double>(claims), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(static_cast<int64_t>(tasks));
  if (claims / static_cast<uint64_t>(iters) != 512) state.SkipWithError("schedule() did not fill the window");
}

// -- registration ------------------------------------------------------------------

const char* name_of(cs::ScorerKind k) { return k == cs::ScorerKind::fill_first ? "fill_first" : "spread"; }

/// Registered in this order so that each configuration's decisions and its
/// baseline are adjacent in the output.
[[maybe_unused]] const bool registered = [] {
  const uint32_t node_counts[] = {1'000, 10'000, 100'000};
  const int fills[] = {0, 50, 90};
  const cs::ScorerKind kinds[] = {cs::ScorerKind::fill_first, cs::ScorerKind::spread};
  for (uint32_t n : node_counts) {
    for (int fill : fills) {
      for (int labels = 0; labels < 2; ++labels) {
        const auto* constraints = labels ? &kLabelConstraints : nullptr;
        auto suffix = "/nodes:" + std::to_string(n) + "/fill:" + std::to_string(fill) +
                      "/labels:" + std::to_string(labels);
        for (auto kind : kinds) {
          benchmark::RegisterBenchmark(("BM_Place/" + std::string(name_of(kind)) + suffix).c_str(),
                                       place_benchmark, kind, n, fill, Shape::random, constraints, false);
          benchmark::RegisterBenchmark(("BM_LinearScan/" + std::string(name_of(kind)) + suffix).c_str(),
                                       linear_benchmark, kind, n, fill, Shape::random, constraints);
        }
      }
    }
    for (auto kind : kinds) {
      // Free values in whole cpu=2,memory=8Gi units, as when a cluster runs
      // tasks of a few sizes: many nodes tie on the top key.
      auto suffix = "/nodes:" + std::to_string(n) + "/fill:50q/labels:0";
      benchmark::RegisterBenchmark(("BM_Place/" + std::string(name_of(kind)) + suffix).c_str(),
                                   place_benchmark, kind, n, 50, Shape::quantized, nullptr, false);
      benchmark::RegisterBenchmark(("BM_LinearScan/" + std::string(name_of(kind)) + suffix).c_str(),
                                   linear_benchmark, kind, n, 50, Shape::quantized, nullptr);
    }
    // What fill-first packing with the sim's tasks leaves behind.
    for (int fill : {50, 90}) {
      for (auto kind : kinds) {
        auto suffix = "/nodes:" + std::to_string(n) + "/fill:" + std::to_string(fill) + "p/labels:0";
        benchmark::RegisterBenchmark(("BM_Place/" + std::string(name_of(kind)) + suffix).c_str(),
                                     place_benchmark, kind, n, fill, Shape::packed, nullptr, false);
        benchmark::RegisterBenchmark(("BM_LinearScan/" + std::string(name_of(kind)) + suffix).c_str(),
                                     linear_benchmark, kind, n, fill, Shape::packed, nullptr);
      }
      // The same, with one packed node's availability growing before every
      // decision (and shrinking back after it).
      auto suffix = "/nodes:" + std::to_string(n) + "/fill:" + std::to_string(fill) + "p/labels:0/churn";
      benchmark::RegisterBenchmark(("BM_Place/fill_first" + suffix).c_str(), place_benchmark,
                                   cs::ScorerKind::fill_first, n, fill, Shape::packed, nullptr, true);
    }
    // The degenerate case: a constraint no node satisfies. The index finds
    // every node that fits and the label filter rejects each one.
    for (auto kind : kinds) {
      auto suffix = "/nodes:" + std::to_string(n) + "/fill:50/labels:nomatch";
      benchmark::RegisterBenchmark(("BM_Place/" + std::string(name_of(kind)) + suffix).c_str(),
                                   place_benchmark, kind, n, 50, Shape::random, &kNoMatchConstraints, false);
      benchmark::RegisterBenchmark(("BM_LinearScan/" + std::string(name_of(kind)) + suffix).c_str(),
                                   linear_benchmark, kind, n, 50, Shape::random, &kNoMatchConstraints);
    }
  }
  for (auto kind : kinds)
    for (bool strict : {false, true})
      benchmark::RegisterBenchmark(("BM_Schedule/" + std::string(name_of(kind)) +
                                    "/nodes:10000/jobs:10000/window:512/cas:" + (strict ? "strict" : "fit"))
                                       .c_str(),
                                   BM_Schedule, kind, strict)
          ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
