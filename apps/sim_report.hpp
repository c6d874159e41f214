#pragma once

// What `claimsched sim` found, and how it is printed (text or --json).

#include <cstdint>
#include <string>
#include <vector>

#include "apps/sim.hpp"
#include "core/scheduler.hpp"
#include "storage/options.hpp"

namespace claimsched::apps {

struct SimReport {
  uint64_t jobs = 0;
  uint64_t tasks = 0;
  uint64_t jobs_rejected = 0;
  uint64_t jobs_already_present = 0;
  core::SchedulerStats stats;
  /// Tasks still pending when the run ended.
  uint64_t unplaced = 0;
  double elapsed_s = 0;
  /// CPU time of the whole process (every thread) while it placed: from the
  /// start until the run was seen done (polled every 20 ms). Less at the mercy
  /// of other load on the machine than elapsed_s.
  double placement_cpu_s = 0;
  double utilization_cpu = 0;
  double utilization_memory = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t bytes_per_node = 0;
  uint64_t bytes_per_node_actor = 0;
  double bytes_per_pending_task = 0;
  bool durable = false;
  bool resumed = false;
  double recovery_ms = 0;
  double recovery_load_ms = 0;
  uint64_t recovered_jobs = 0;
  uint64_t recovered_task_records = 0;
  uint64_t store_writes = 0;
  /// Durable runs: what the stores' writer threads did over the whole run
  /// (the partition stores summed; the process's node store), for where the
  /// time of a durable run goes.
  storage::WriterStats partition_writers;
  storage::WriterStats node_writer;
  bool replicated = false;
  core::Histogram replica_lag_ms;
  uint64_t replica_max_sequence_lag = 0;
  uint64_t replica_bootstraps = 0;
  /// Jobs some run on this data directory acknowledged that no scheduler
  /// holds now (must be 0).
  uint64_t lost_acked_jobs = 0;
  /// Tasks allocated on two nodes at once, plus jobs held by two partitions
  /// (must be 0).
  uint64_t double_allocations = 0;
  /// --policy: what the policy's invariant check saw.
  bool policy = false;
  /// Policy cycles run, over all partitions.
  uint64_t policy_cycles = 0;
  uint64_t non_preemptible_tasks = 0;
  uint64_t reserved_machines = 0;
  /// Jobs (and their pending tasks, part of `unplaced`) that wait because
  /// their user's allotment refuses them, as it should.
  uint64_t jobs_refused_by_allotment = 0;
  uint64_t unplaced_refused_by_allotment = 0;
  std::vector<std::string> failures;

  uint64_t placements() const { return stats.placements; }
  uint64_t conflicts() const { return stats.rejected_conflict + stats.rejected_insufficient; }
  double placements_per_sec() const {
    return elapsed_s > 0 ? static_cast<double>(placements()) / elapsed_s : 0.0;
  }
  bool invariants_ok() const { return failures.empty(); }
};

/// One JSON object with (at least) the keys README.md lists.
std::string to_json(const SimOptions& options, const SimReport& report);
/// The human summary.
std::string to_text(const SimOptions& options, const SimReport& report);
/// 1234567 -> "1,234,567".
std::string thousands(uint64_t v);

}  // namespace claimsched::apps
