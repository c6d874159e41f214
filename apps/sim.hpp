#pragma once

// `claimsched sim`: the embedded default. One process, N node actors, K
// scheduler partitions, a synthetic load; ends with a summary and an
// invariant check (exit code 1 if an invariant fails).

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::apps {

struct SimOptions {
  uint32_t nodes = 10'000;
  uint32_t partitions = 4;
  uint64_t tasks = 1'000'000;
  uint32_t tasks_per_job = 10;
  double utilization = 0.9;
  uint64_t seed = 1;
  bool json = false;
  /// Tasks finish after a runtime, so the run places `waves` cluster-fulls.
  bool churn = false;
  uint32_t waves = 4;
  core::Duration task_runtime = std::chrono::milliseconds(500);
  /// All schedulers place on all nodes (no partitioning): measures races.
  bool overlap = false;
  /// With overlap: all schedulers fill from the same first node instead of
  /// evenly spaced ones (the worst case for races).
  bool same_start = false;
  /// "fit" (optimistic fit check) or "strict" (generation CAS).
  std::string cas = "fit";
  std::string scorer = "fill_first";
  bool heterogeneous = false;
  uint32_t max_starting = 0;
  double gang_fraction = 0.0;
  uint32_t window = 512;
  uint32_t max_tasks_per_claim = 64;
  uint32_t threads = 0;  // 0: one per core
  uint32_t max_throughput = 100;
  core::Duration claim_ttl = std::chrono::seconds(10);
  /// Give up (and fail) after this long; zero = never.
  core::Duration timeout = std::chrono::minutes(10);
  bool quiet = false;
  /// Keep state in RocksDB under this directory (empty: in memory only).
  std::string data_dir;
  /// Continue the run in data_dir (its parameters come from data_dir/sim.json).
  bool resume = false;
  /// Durability with data_dir: always | batch | none.
  std::string sync = "batch";
  /// With data_dir: each scheduler's store writes in flight (0: the
  /// scheduler's default) and the node store's commit delay (--sync batch).
  uint32_t writes_in_flight = 0;
  core::Duration node_sync_interval = std::chrono::milliseconds(10);  // storage::kNodeStoreSyncInterval
  /// With data_dir: a standby replica per partition follows its primary's
  /// change log (in data_dir/replica-K); at the end it must equal the primary.
  bool replicas = false;
  /// Start the replicas this long after placement began (they bootstrap from
  /// a checkpoint, then follow).
  core::Duration replica_delay{0};
  /// The policy on (see apps/sim_policy.hpp): classes of every policy, users
  /// with allotments, the fair-share cycle every policy_interval.
  bool policy = false;
  /// "" (the synthetic load) or "starvation" (see apps/starvation.hpp).
  std::string scenario;
  /// The starvation scenario's fair_share_starvation_timeout; its policy
  /// cycle, and --policy's.
  core::Duration starvation_timeout = std::chrono::seconds(2);
  core::Duration policy_interval = std::chrono::milliseconds(250);
  /// Serve GET /metrics on this "HOST:PORT" while the run lasts (empty: off).
  std::string http;
  /// With http: keep serving this long after the report, so a scraper sees
  /// the final counters (the schedulers hold meanwhile).
  core::Duration http_linger{0};

  core::Status validate() const;
};

/// Runs the simulation; returns the process exit code.
int run_sim(const SimOptions& options);

}  // namespace claimsched::apps
