// The node-side claim state machine (core::NodeLedger): what one claim,
// confirm, release or expiry costs the node actor that serialises them.
//
// Every ledger is "realistic": a node of the synthetic default shape
// (cpu=32, memory=128Gi) holding 100 confirmed allocations (10 jobs x 10
// tasks) and two live claims of another partition, because the ledger's
// lookups (duplicate-task check, confirm, release) scan what the node holds.
//
// Operations that change the ledger irreversibly (accept, confirm, release,
// expiry) run in batches: the batch's state is prepared with the timer paused,
// then each iteration performs one operation. The pause costs a few hundred
// nanoseconds once per batch, i.e. a few ns per reported operation.
// See bench/README.md.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "core/node_ledger.hpp"
#include "core/random.hpp"

namespace {

namespace cs = claimsched::core;
using namespace std::chrono_literals;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;
const cs::PartitionId kPartition{1};
const cs::PartitionId kOtherPartition{2};
constexpr cs::Epoch kEpoch = 1;
const cs::NodeId kNode{7};
/// Resident allocations on every benchmarked node.
constexpr uint32_t kResidentAllocations = 100;
constexpr uint32_t kResidentTasksPerJob = 10;
/// Job ids the benchmarks claim for start here (residents use 1..10, 900..901).
constexpr uint64_t kFirstBenchJob = 1'000'000;
/// Operations per prepared batch (see the file comment).
constexpr size_t kBatch = 32;

cs::Resources node_capacity() { return cs::Resources::cpu_memory(32'000, 128 * kGi); }
/// 100 of these use 10 cpu and 25Gi, leaving room for 64 more (a 64-task claim).
cs::Resources small_task() { return cs::Resources::cpu_memory(100, 256 * kMi); }

cs::ClaimRequest make_claim(uint64_t claim_id, uint64_t job, uint32_t tasks,
                            const cs::Resources& per_task, cs::PartitionId partition = kPartition) {
  cs::ClaimRequest r;
  r.claim_id = cs::ClaimId{claim_id};
  r.partition = partition;
  r.epoch = kEpoch;
  r.node = kNode;
  r.job = cs::JobId{job};
  r.per_task = per_task;
  r.tasks.resize(tasks);
  std::iota(r.tasks.begin(), r.tasks.end(), cs::TaskIndex{0});
  return r;
}

cs::ConfirmRequest confirm_of(const cs::ClaimRequest& c) {
  return cs::ConfirmRequest{c.claim_id, c.partition, c.epoch, c.node};
}

/// Releases the allocations a confirmed claim produced.
cs::ReleaseRequest release_tasks_of(const cs::ClaimRequest& c) {
  cs::ReleaseRequest r;
  r.partition = c.partition;
  r.epoch = c.epoch;
  r.node = c.node;
  r.job = c.job;
  r.tasks = c.tasks;
  return r;
}

/// Cancels a live claim (a gang that could not be completed).
cs::ReleaseRequest release_claim_of(const cs::ClaimRequest& c) {
  cs::ReleaseRequest r;
  r.partition = c.partition;
  r.epoch = c.epoch;
  r.node = c.node;
  r.claim_id = c.claim_id;
  r.job = c.job;
  return r;
}

void must(bool ok, benchmark::State& state, const char* what) {
  if (!ok) state.SkipWithError(what);
}

/// The node every benchmark starts from: 100 allocations confirmed at t=0 and
/// two live claims of another partition made at `foreign_claims_at`.
cs::NodeLedger resident_ledger(cs::TimePoint foreign_claims_at = cs::TimePoint{0}) {
  cs::NodeLedger ledger(kNode, node_capacity());
  uint64_t claim_id = 1;
  for (uint64_t job = 1; job <= kResidentAllocations / kResidentTasksPerJob; ++job) {
    auto c = make_claim(claim_id++, job, kResidentTasksPerJob, small_task());
    if (ledger.claim(c, cs::TimePoint{0}).outcome != cs::ClaimOutcome::accepted) std::abort();
    if (ledger.confirm(confirm_of(c), cs::TimePoint{0}).outcome != cs::ConfirmOutcome::confirmed)
      std::abort();
  }
  for (uint64_t job = 900; job < 902; ++job) {
    auto c = make_claim(claim_id++, job, 2, small_task(), kOtherPartition);
    if (ledger.claim(c, foreign_claims_at).outcome != cs::ClaimOutcome::accepted) std::abort();
  }
  return ledger;
}

const cs::NodeLedger& base_ledger() {
  static const cs::NodeLedger ledger = resident_ledger();
  return ledger;
}

/// Runs `op(i)` once per iteration, calling `prepare()` with the timer paused
/// before every `batch` operations.
template <class Prepare, class Op>
void batched(benchmark::State& state, size_t batch, Prepare&& prepare, Op&& op) {
  size_t i = batch;
  for (auto _ : state) {
    if (i == batch) {
      state.PauseTiming();
      prepare();
      state.ResumeTiming();
      i = 0;
    }
    op(i++);
  }
}

// -- single operations ----------------------------------------------------------

/// A one-task claim that fits: epoch fence, duplicate checks over the 100+
/// held tasks, fit check, record, snapshot. The node holds 2..33 live claims.
void BM_ClaimAccept(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  std::vector<cs::ClaimRequest> claims;
  uint64_t next = kFirstBenchJob;
  bool ok = true;
  batched(
      state, kBatch,
      [&] {
        ledger = base_ledger();
        claims.clear();
        for (size_t k = 0; k < kBatch; ++k, ++next) claims.push_back(make_claim(next, next, 1, small_task()));
      },
      [&](size_t i) {
        auto reply = ledger.claim(claims[i], now);
        ok &= reply.outcome == cs::ClaimOutcome::accepted;
        benchmark::DoNotOptimize(reply);
      });
  must(ok, state, "a claim was not accepted");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClaimAccept);

/// A claim that does not fit what is free: rejected with the node's snapshot.
/// Changes nothing, so no batching is needed.
void BM_ClaimRejectInsufficient(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  // 30 cpu: fits the node's capacity (passes the overflow guard) but not what is free.
  auto claim = make_claim(kFirstBenchJob, kFirstBenchJob, 1, cs::Resources::cpu_memory(30'000, kGi));
  bool ok = true;
  for (auto _ : state) {
    auto reply = ledger.claim(claim, now);
    ok &= reply.outcome == cs::ClaimOutcome::insufficient;
    benchmark::DoNotOptimize(reply);
  }
  must(ok, state, "the claim was not rejected as insufficient");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClaimRejectInsufficient);

/// Strict CAS: the expected generation is stale, rejected with the snapshot.
void BM_ClaimRejectConflict(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  auto claim = make_claim(kFirstBenchJob, kFirstBenchJob, 1, small_task());
  claim.expected_generation = ledger.generation() - 1;
  bool ok = true;
  for (auto _ : state) {
    auto reply = ledger.claim(claim, now);
    ok &= reply.outcome == cs::ClaimOutcome::conflict;
    benchmark::DoNotOptimize(reply);
  }
  must(ok, state, "the claim was not rejected as a conflict");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClaimRejectConflict);

/// Confirms a live one-task claim into an allocation.
void BM_Confirm(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  std::vector<cs::ConfirmRequest> confirms;
  uint64_t next = kFirstBenchJob;
  bool ok = true;
  batched(
      state, kBatch,
      [&] {
        ledger = base_ledger();
        confirms.clear();
        for (size_t k = 0; k < kBatch; ++k, ++next) {
          auto c = make_claim(next, next, 1, small_task());
          ok &= ledger.claim(c, now).outcome == cs::ClaimOutcome::accepted;
          confirms.push_back(confirm_of(c));
        }
      },
      [&](size_t i) {
        auto reply = ledger.confirm(confirms[i], now);
        ok &= reply.outcome == cs::ConfirmOutcome::confirmed;
        benchmark::DoNotOptimize(reply);
      });
  must(ok, state, "a confirm failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Confirm);

/// Releases one allocation (a finished or preempted task), in random order
/// among the batch's 32 extra allocations.
void BM_ReleaseAllocation(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  std::vector<cs::ReleaseRequest> releases;
  uint64_t next = kFirstBenchJob;
  cs::Rng rng(42);
  bool ok = true;
  batched(
      state, kBatch,
      [&] {
        ledger = base_ledger();
        releases.clear();
        for (size_t k = 0; k < kBatch; ++k, ++next) {
          auto c = make_claim(next, next, 1, small_task());
          ok &= ledger.claim(c, now).outcome == cs::ClaimOutcome::accepted;
          ok &= ledger.confirm(confirm_of(c), now).outcome == cs::ConfirmOutcome::confirmed;
          releases.push_back(release_tasks_of(c));
        }
        for (size_t k = releases.size(); k > 1; --k) std::swap(releases[k - 1], releases[rng.below(k)]);
      },
      [&](size_t i) {
        auto reply = ledger.release(releases[i], now);
        ok &= reply.released == 1;
        benchmark::DoNotOptimize(reply);
      });
  must(ok, state, "a release freed nothing");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReleaseAllocation);

/// Cancels one live claim (gang abort), in random order among 32.
void BM_ReleaseClaim(benchmark::State& state) {
  const auto now = cs::TimePoint{1s};
  cs::NodeLedger ledger = base_ledger();
  std::vector<cs::ReleaseRequest> releases;
  uint64_t next = kFirstBenchJob;
  cs::Rng rng(43);
  bool ok = true;
  batched(
      state, kBatch,
      [&] {
        ledger = base_ledger();
        releases.clear();
        for (size_t k = 0; k < kBatch; ++k, ++next) {
          auto c = make_claim(next, next, 1, small_task());
          ok &= ledger.claim(c, now).outcome == cs::ClaimOutcome::accepted;
          releases.push_back(release_claim_of(c));
        }
        for (size_t k = releases.size(); k > 1; --k) std::swap(releases[k - 1], releases[rng.below(k)]);
      },
      [&](size_t i) {
        auto reply = ledger.release(releases[i], now);
        ok &= reply.released == 1;
        benchmark::DoNotOptimize(reply);
      });
  must(ok, state, "a claim release freed nothing");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReleaseClaim);

/// advance() when `range(0)` unconfirmed claims (one task each) reached their
/// ttl: expires them, emits one event each, scans the 100 allocations. Each
/// iteration advances a different prepared ledger. items = expired claims.
void BM_AdvanceExpiry(benchmark::State& state) {
  const auto expiring = static_cast<size_t>(state.range(0));
  const cs::LedgerConfig config;
  // The foreign claims are younger: only the benchmark's claims expire.
  const cs::NodeLedger base = resident_ledger(cs::TimePoint{5s});
  const auto at = cs::TimePoint{0};
  const auto later = at + config.claim_ttl + 1s;
  constexpr size_t kLedgers = 16;
  std::vector<cs::NodeLedger> ledgers;
  std::vector<cs::NodeEvent> events;
  events.reserve(64);
  uint64_t next = kFirstBenchJob;
  bool ok = true;
  batched(
      state, kLedgers,
      [&] {
        ledgers.assign(kLedgers, base);
        for (auto& l : ledgers)
          for (size_t k = 0; k < expiring; ++k, ++next)
            ok &= l.claim(make_claim(next, next, 1, small_task()), at).outcome ==
                  cs::ClaimOutcome::accepted;
      },
      [&](size_t i) {
        events.clear();
        bool changed = ledgers[i].advance(later, events);
        ok &= changed && events.size() == expiring;
        benchmark::DoNotOptimize(events.data());
      });
  must(ok, state, "advance() did not expire the claims");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(expiring));
}
BENCHMARK(BM_AdvanceExpiry)->Arg(1)->Arg(8)->Arg(32);

/// advance() on a tick where nothing is due (the common case): the deadline
/// heap's head is in the future.
void BM_AdvanceNothingDue(benchmark::State& state) {
  cs::NodeLedger ledger = base_ledger();
  std::vector<cs::NodeEvent> events;
  const auto now = cs::TimePoint{1s};
  bool changed = false;
  for (auto _ : state) {
    changed |= ledger.advance(now, events);
    benchmark::DoNotOptimize(events.data());
  }
  must(!changed, state, "advance() changed the ledger");
}
BENCHMARK(BM_AdvanceNothingDue);

// -- cycles ------------------------------------------------------------------------

/// claim(n tasks) + confirm + release(n tasks) on the resident node: the
/// node's whole share of placing and finishing n tasks in one batched claim.
/// The ledger returns to its resident state after each cycle; virtual time
/// moves 1ms per cycle and advance() runs every 1024 cycles (inside the
/// timing) to retire the claims' expiry deadlines, as the node actor's timer
/// would. items = tasks.
void BM_ClaimConfirmReleaseCycle(benchmark::State& state) {
  const auto tasks = static_cast<uint32_t>(state.range(0));
  // Virtual time runs far in a long run: the foreign claims must outlive it.
  cs::NodeLedger ledger = resident_ledger(cs::TimePoint{std::chrono::hours(100'000)});
  struct Cycle {
    cs::ClaimRequest claim;
    cs::ConfirmRequest confirm;
    cs::ReleaseRequest release;
  };
  // Distinct claim and job ids, reused round-robin (each is gone from the
  // ledger when its cycle ends).
  std::vector<Cycle> cycles;
  for (uint64_t k = 0; k < 64; ++k) {
    auto c = make_claim(kFirstBenchJob + k, kFirstBenchJob + k, tasks, small_task());
    cycles.push_back({c, confirm_of(c), release_tasks_of(c)});
  }
  std::vector<cs::NodeEvent> events;
  auto now = cs::TimePoint{1s};
  size_t i = 0;
  bool ok = true;
  for (auto _ : state) {
    const Cycle& c = cycles[i++ % cycles.size()];
    now += 1ms;
    auto accepted = ledger.claim(c.claim, now);
    auto confirmed = ledger.confirm(c.confirm, now);
    auto released = ledger.release(c.release, now);
    ok &= accepted.outcome == cs::ClaimOutcome::accepted &&
          confirmed.outcome == cs::ConfirmOutcome::confirmed && released.released == tasks;
    benchmark::DoNotOptimize(released);
    if ((i & 1023) == 0) {
      events.clear();
      ledger.advance(now, events);
    }
  }
  ok &= ledger.allocations().size() == kResidentAllocations;
  must(ok, state, "a cycle did not complete");
  state.SetItemsProcessed(state.iterations() * tasks);
  state.counters["tasks_per_claim"] = tasks;
}
BENCHMARK(BM_ClaimConfirmReleaseCycle)->Arg(1)->Arg(8)->Arg(64);

}  // namespace
