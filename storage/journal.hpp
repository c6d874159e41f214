#pragma once

// The bridge between the scheduler's journal (core::Journal) and its
// partition store: what a scheduler writes before it acknowledges and
// confirms, and how it is rebuilt after a restart.

#include <chrono>
#include <memory>

#include "core/scheduler.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::storage {

/// Adds `journal`'s records to `batch`. `epoch` is the writer's epoch and
/// `wall_now` the wall-clock time stamped on the records.
void append_journal(const core::Journal& journal, core::Epoch epoch, core::TimePoint wall_now,
                    PartitionStore::Batch& batch);

struct RecoveredPartition {
  std::unique_ptr<core::Scheduler> scheduler;
  /// The epoch the new owner runs with (one above the stored one; durable).
  core::Epoch epoch = 0;
  uint64_t jobs = 0;
  uint64_t task_records = 0;
  /// Tasks the store places on nodes, waiting for those nodes to report.
  uint64_t unverified_tasks = 0;
  /// Pools the store says were removed (the config may still list some).
  std::vector<std::string> removed_pools;
  std::chrono::nanoseconds duration{0};
};

/// Opens the partition's history: reads every record, rebuilds a Scheduler
/// (configured by `config`, journaling on, with an epoch above any stored
/// one) and makes the new epoch durable before returning, so the old owner's
/// claims are fenced before the new one sends any. `now` is the scheduler's
/// clock. A corrupt record is an error naming it; nothing is skipped.
core::Expected<RecoveredPartition> recover_partition(PartitionStore& store,
                                                     core::SchedulerConfig config,
                                                     core::TimePoint now);

}  // namespace claimsched::storage
