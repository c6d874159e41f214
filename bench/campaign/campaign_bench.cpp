// bench/campaign: one bag of tasks over four pools of different speeds and
// sizes, in virtual time, driven by the campaign core (core/campaign/):
// for each of the seed's ratio algorithms with and without finalize, and
// for plain `submit --repeat` (every task pushed at once into the largest
// pool) as the baseline. 1% of the nodes are 10x slower (stragglers); one
// pool is a sink where every task "succeeds" in 50 ms.
//
// The pools stand for their schedulers: a pool starts its queued tasks on
// free slots at once, first come first served, on the next node with a free
// slot (round robin). Every node is a real NodeLedger (core/node_ledger.hpp):
// each copy is an ordinary one-task job, claimed and confirmed on its node,
// finished there, or released when cancelled; a refused claim aborts the
// run. The campaign learns of starts and ends as they happen and plans a
// round every --round seconds (CiGri's cycle).
//
// Per configuration one JSON line: config, makespan_s, tail_s (95% -> 100%
// done), max_waiting (most of the campaign's tasks waiting in one pool at
// once), sink_tasks (copies sent to the sink pool), wasted_cpu_s (slot
// seconds of copies cancelled because another copy won). Then one line:
// tail_ratio (the best configuration's tail without finalize / with it),
// makespan_ratio (submit --repeat / the best configuration), and
// sink_share_before_abandon (the largest share of the campaign any
// configuration sent to the sink).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "core/campaign/campaign_scheduler.hpp"
#include "core/campaign/metascheduler.hpp"
#include "core/node_ledger.hpp"
#include "core/random.hpp"

using namespace claimsched::core;
using namespace claimsched::core::campaign;

namespace {

struct Options {
  uint32_t tasks = 20000;
  double round_s = 10;
  uint32_t max_waiting = kDefaultMaxWaiting;
  uint64_t seed = 42;
  bool json = false;
};

struct PoolDef {
  std::string name;
  uint32_t nodes = 0;
  uint32_t slots_per_node = 0;
  /// Run time multiplier (below 1: faster machines).
  double slowness = 1;
  bool sink = false;
};

/// The user's own pools first (affinity), then the ones it may borrow.
const std::vector<PoolDef> kPools = {
    {"alpha", 100, 2, 1.0, false},
    {"beta", 60, 2, 0.7, false},
    {"gamma", 40, 1, 1.4, false},
    {"sink", 20, 2, 1.0, true},
};
const char* const kBaselinePool = "alpha";
constexpr double kStragglerSlowdown = 10;
constexpr double kSinkRunTimeS = 0.05;
constexpr double kMinRunTimeS = 30;
constexpr double kMaxRunTimeS = 90;

Duration seconds_d(double s) { return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }
double to_s(Duration d) { return std::chrono::duration<double>(d).count(); }

/// One task slot: a core.
const Resources kSlot = Resources::of({{dim::cpu, 1000}});
const PartitionId kPartition{1};
constexpr Epoch kEpoch = 1;

struct Node {
  NodeLedger ledger;
  bool straggler = false;

  bool has_free_slot() const { return kSlot.fits_in(ledger.free()); }
};

struct SimPool {
  PoolDef def;
  std::vector<Node> nodes;
  uint32_t free = 0;
  uint32_t size = 0;
  std::deque<CopyId> queue;
  size_t cursor = 0;
};

struct Result {
  std::string config;
  double makespan_s = 0;
  double tail_s = 0;
  uint32_t max_waiting = 0;
  uint32_t sink_tasks = 0;
  double wasted_cpu_s = 0;
  double sink_abandoned_at_s = -1;
};

struct End {
  TimePoint at;
  CopyId copy;
  bool operator>(const End& o) const { return at != o.at ? at > o.at : copy > o.copy; }
};

class Simulation {
 public:
  Simulation(const Options& options, CampaignSpec spec, bool baseline)
      : options_(options), scheduler_(std::move(spec)), baseline_(baseline) {
    uint32_t node_number = 0;
    for (const PoolDef& def : kPools) {
      SimPool pool{def, {}, 0, 0, {}, 0};
      for (uint32_t n = 0; n < def.nodes; ++n) {
        // 1% of the real nodes, spread over the pools: every hundredth.
        bool straggler = !def.sink && node_number % 100 == 50;
        ++node_number;
        pool.nodes.push_back(Node{NodeLedger(NodeId{node_number}, kSlot.times(def.slots_per_node)), straggler});
      }
      pool.free = pool.size = def.nodes * def.slots_per_node;
      pools_.emplace(def.name, std::move(pool));
    }
  }

  Result run(const std::string& config) {
    Result r{config};
    TimePoint now{0};
    TimePoint next_round{0};
    const TimePoint limit = std::chrono::hours(24 * 30);
    while (!scheduler_.tasks().complete() && now < limit) {
      if (!ends_.empty() && ends_.top().at < next_round) {
        End e = ends_.top();
        ends_.pop();
        now = e.at;
        finish(e.copy, now);
        continue;
      }
      now = next_round;
      round(now, r);
      next_round = baseline_ ? kNever : next_round + seconds_d(options_.round_s);
      if (baseline_ && ends_.empty()) break;
    }
    std::vector<double> done_at;
    for (TaskIndex i = 0; i < scheduler_.tasks().task_count(); ++i) {
      if (auto w = scheduler_.tasks().winner(i)) done_at.push_back(to_s(*scheduler_.tasks().copy(*w).ended));
    }
    if (done_at.size() != scheduler_.tasks().task_count()) {
      std::fprintf(stderr, "%s: only %zu of %u tasks done\n", config.c_str(), done_at.size(),
                   scheduler_.tasks().task_count());
      std::exit(1);
    }
    std::sort(done_at.begin(), done_at.end());
    r.makespan_s = done_at.back();
    size_t p95 = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(done_at.size()))) - 1;
    r.tail_s = done_at.back() - done_at[p95];
    for (const TaskCopy& c : scheduler_.tasks().copies()) {
      if (pools_.at(c.pool).def.sink) ++r.sink_tasks;
      if (c.state == CopyState::cancelled_by_replica && c.started) r.wasted_cpu_s += to_s(*c.ended - *c.started);
    }
    return r;
  }

 private:
  void round(TimePoint now, Result& r) {
    std::vector<PoolOffer> offers;
    if (baseline_) {
      // submit --repeat N: the whole bag into one pool's queue at once.
      offers.push_back({kBaselinePool, scheduler_.tasks().task_count(), pools_.at(kBaselinePool).size});
    } else {
      const CampaignSpec& spec = scheduler_.spec();
      std::set<std::string> names;
      for (const auto& [name, pool] : pools_) names.insert(name);
      auto launches = metaschedule({QueuedCampaign{CampaignId{1}, spec.type, spec.priority, 0, spec.pools,
                                                   spec.other_pools}},
                                   names);
      for (const Launch& launch : launches) {
        for (const auto& name : launch.pools) offers.push_back({name, pools_.at(name).free, pools_.at(name).size});
      }
    }
    RoundPlan plan = scheduler_.round(now, offers);
    for (const auto& [pool, reason] : plan.abandoned) {
      if (r.sink_abandoned_at_s < 0) r.sink_abandoned_at_s = to_s(now);
      std::fprintf(stderr, "%s: abandoned %s at %.0f s: %s\n", r.config.c_str(), pool.c_str(), to_s(now),
                   reason.c_str());
    }
    for (CopyId c : plan.cancel) cancel(c, now);
    for (CopyId c : plan.dispatched) pools_.at(scheduler_.tasks().copy(c).pool).queue.push_back(c);
    for (auto& [name, pool] : pools_) fill(pool, now);
    for (const auto& [name, pool] : pools_) r.max_waiting = std::max(r.max_waiting, scheduler_.tasks().waiting(name));
  }

  /// The pool's scheduler: queued copies onto free slots, in order.
  void fill(SimPool& pool, TimePoint now) {
    while (pool.free > 0 && !pool.queue.empty()) {
      CopyId c = pool.queue.front();
      pool.queue.pop_front();
      if (scheduler_.tasks().copy(c).state != CopyState::waiting) continue;  // withdrawn or cancelled
      while (!pool.nodes[pool.cursor].has_free_slot()) pool.cursor = (pool.cursor + 1) % pool.nodes.size();
      Node& node = pool.nodes[pool.cursor];
      claim_and_confirm(node, c, now);
      --pool.free;
      node_of_[c] = pool.cursor;
      pool.cursor = (pool.cursor + 1) % pool.nodes.size();
      scheduler_.started(c, now);
      ends_.push(End{now + seconds_d(run_time(pool, node, scheduler_.tasks().copy(c).index)), c});
    }
  }

  double run_time(const SimPool& pool, const Node& node, TaskIndex index) const {
    if (pool.def.sink) return kSinkRunTimeS;
    double unit = static_cast<double>(mix64(options_.seed ^ (uint64_t{index} << 20)) >> 11) * 0x1.0p-53;
    double base = kMinRunTimeS + unit * (kMaxRunTimeS - kMinRunTimeS);
    return base * pool.def.slowness * (node.straggler ? kStragglerSlowdown : 1.0);
  }

  /// Each copy is its own one-task job (id: copy + 1), as a dispatched
  /// campaign task is an ordinary job.
  static JobId job_of(CopyId c) { return JobId{c + 1}; }

  void claim_and_confirm(Node& node, CopyId c, TimePoint now) {
    ClaimRequest claim{ClaimId{++last_claim_}, kPartition, kEpoch, node.ledger.id(), std::nullopt, job_of(c), kSlot,
                       {0},                    Duration{0}, {}};
    ClaimReply reply = node.ledger.claim(claim, now);
    ConfirmRequest confirm{claim.claim_id, kPartition, kEpoch, node.ledger.id()};
    ConfirmReply confirmed = node.ledger.confirm(confirm, now);
    if (reply.outcome != ClaimOutcome::accepted || confirmed.outcome != ConfirmOutcome::confirmed) {
      std::fprintf(stderr, "node %u refused a claim it had room for\n", node.ledger.id().value);
      std::exit(1);
    }
  }

  /// Frees the copy's slot on its node: the task finished there, or was
  /// released (cancelled).
  void release_slot(CopyId c, TimePoint now, bool finished) {
    SimPool& pool = pools_.at(scheduler_.tasks().copy(c).pool);
    NodeLedger& ledger = pool.nodes[node_of_.at(c)].ledger;
    bool freed = false;
    if (finished) {
      std::vector<NodeEvent> events;
      freed = ledger.finish_task(TaskRef{job_of(c), 0}, TaskState::succeeded, 0, events);
    } else {
      ReleaseRequest release{kPartition, kEpoch, ledger.id(), ClaimId{0}, job_of(c), {0}, TaskState::cancelled};
      freed = ledger.release(release, now).released == 1;
    }
    if (!freed) {
      std::fprintf(stderr, "node %u did not hold copy %llu\n", ledger.id().value, static_cast<unsigned long long>(c));
      std::exit(1);
    }
    ++pool.free;
    node_of_.erase(c);
  }

  void finish(CopyId c, TimePoint now) {
    if (scheduler_.tasks().copy(c).state != CopyState::running) return;  // cancelled meanwhile
    release_slot(c, now, true);
    SuccessOutcome out = scheduler_.succeeded(c, now);
    for (CopyId loser : out.cancel) cancel(loser, now);
    fill(pools_.at(scheduler_.tasks().copy(c).pool), now);
  }

  void cancel(CopyId c, TimePoint now) {
    if (!scheduler_.tasks().copy(c).live()) return;
    bool running = scheduler_.tasks().copy(c).state == CopyState::running;
    if (running) release_slot(c, now, false);
    scheduler_.cancelled(c, now);
    if (running) fill(pools_.at(scheduler_.tasks().copy(c).pool), now);
  }

  Options options_;
  CampaignScheduler scheduler_;
  bool baseline_;
  std::map<std::string, SimPool> pools_;
  std::map<CopyId, size_t> node_of_;
  uint64_t last_claim_ = 0;
  std::priority_queue<End, std::vector<End>, std::greater<>> ends_;
};

CampaignSpec bench_spec(const Options& options, RatioAlgorithm algorithm, bool finalize) {
  CampaignSpec spec;
  spec.name = "sweep";
  spec.command = {"/bin/sweep", "{param}"};
  for (uint32_t i = 0; i < options.tasks; ++i) spec.parameters.push_back(std::to_string(i));
  spec.pools = {"alpha", "beta"};
  spec.other_pools = {"gamma", "sink"};
  spec.algorithm = algorithm;
  spec.max_waiting = options.max_waiting;
  spec.finalize_replicas = finalize ? kDefaultFinalizeReplicas : 0;
  return spec;
}

void print(const Result& r, bool json) {
  if (json) {
    std::printf(
        "{\"config\":\"%s\",\"makespan_s\":%.1f,\"tail_s\":%.1f,\"max_waiting\":%u,\"sink_tasks\":%u,"
        "\"wasted_cpu_s\":%.1f}\n",
        r.config.c_str(), r.makespan_s, r.tail_s, r.max_waiting, r.sink_tasks, r.wasted_cpu_s);
  }
  std::fprintf(stderr, "%-34s makespan %8.1f s  tail %7.1f s  max_waiting %6u  sink_tasks %5u  wasted %8.1f cpu-s\n",
               r.config.c_str(), r.makespan_s, r.tail_s, r.max_waiting, r.sink_tasks, r.wasted_cpu_s);
}

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--json") {
      o.json = true;
    } else if (a == "--tasks" || a == "--round" || a == "--max-waiting" || a == "--seed") {
      const char* v = value();
      if (!v) return false;
      if (a == "--tasks") o.tasks = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
      if (a == "--round") o.round_s = std::strtod(v, nullptr);
      if (a == "--max-waiting") o.max_waiting = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
      if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    } else {
      return false;
    }
  }
  return o.tasks > 0 && o.round_s > 0 && o.max_waiting > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_args(argc, argv, options)) {
    std::fprintf(stderr, "usage: campaign_bench [--json] [--tasks N] [--round S] [--max-waiting N] [--seed N]\n");
    return 2;
  }
  // The baseline's algorithm does not matter: it has a single round.
  Result baseline =
      Simulation(options, bench_spec(options, RatioAlgorithm::slow_start, false), true).run("submit_repeat");
  print(baseline, options.json);
  std::vector<std::pair<Result, Result>> campaigns;  // with finalize, without
  for (auto algorithm :
       {RatioAlgorithm::slow_start, RatioAlgorithm::two_way_adaptive, RatioAlgorithm::adaptive_down_exp_up}) {
    std::string name(to_string(algorithm));
    Result with = Simulation(options, bench_spec(options, algorithm, true), false).run(name);
    Result without = Simulation(options, bench_spec(options, algorithm, false), false).run(name + "_no_finalize");
    print(with, options.json);
    print(without, options.json);
    campaigns.emplace_back(with, without);
  }
  auto best = std::min_element(campaigns.begin(), campaigns.end(), [](const auto& a, const auto& b) {
    return a.first.makespan_s < b.first.makespan_s;
  });
  double sink_share = 0;
  for (const auto& [with, without] : campaigns) {
    uint32_t most = std::max(with.sink_tasks, without.sink_tasks);
    sink_share = std::max(sink_share, most / static_cast<double>(options.tasks));
  }
  double tail_ratio = best->second.tail_s / std::max(best->first.tail_s, 1e-9);
  double makespan_ratio = baseline.makespan_s / best->first.makespan_s;
  if (options.json) {
    std::printf("{\"tail_ratio\":%.2f,\"makespan_ratio\":%.2f,\"sink_share_before_abandon\":%.4f}\n", tail_ratio,
                makespan_ratio, sink_share);
  }
  std::fprintf(stderr,
               "best: %s; tail without/with finalize %.2fx; makespan submit_repeat/best %.2fx; sink share %.2f%%\n",
               best->first.config.c_str(), tail_ratio, makespan_ratio, 100 * sink_share);
  return 0;
}
