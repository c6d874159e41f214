#pragma once

// The composition root of one partition: everything a process runs for a
// partition it owns, built in one place (review-core.md, step 3) and used by
// `claimsched server` (static or as an HA member that wins the partition at
// run time), `claimsched sim` and the starvation scenario alike.
//
//   store      the partition's RocksDB store (or an injected PartitionLog, or
//              nothing: in memory)
//   recovery   the scheduler rebuilt from the store, with an epoch above any
//              stored one made durable before anything is sent (the fence)
//   scheduler  the scheduler actor, its policy, its journal
//   feed       the change feed standbys follow, applying the [ha] ack rule
//
// assemble_partition does blocking I/O (open, recover): call it from a
// detached actor or the main thread. disassemble_partition stops the actors,
// waits for them, and closes the store, so the directory can be opened again
// (as a standby's replica) in the same process.

#include <memory>
#include <string>
#include <vector>

#include "actors/replication.hpp"
#include "actors/scheduler_actor.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::actors {

struct PartitionSetup {
  /// The scheduler actor's settings; its log, restored scheduler and
  /// await_replication are filled in here.
  SchedulerActorConfig actor;
  /// Keep the journal in a RocksDB store in this directory (created if
  /// missing). Empty: no store.
  std::string store_dir;
  storage::PartitionIdentity identity;
  storage::StoreOptions store_options;
  /// Instead of a store (tests): where the journal goes.
  std::shared_ptr<storage::PartitionLog> log;
  /// Rebuild the scheduler from what the store holds (restart, takeover).
  bool recover = false;
  /// Serve standbys: a change feed over the store (needs store_dir).
  bool change_feed = false;
  /// When a write counts as safe (with a change feed).
  AckMode ack = AckMode::owner;
  /// Every owner epoch's first sequence (HA), for the feed's divergence check.
  std::vector<core::EpochStart> history;
  /// Where the feed makes checkpoints (default: <store_dir>.checkpoints).
  std::string checkpoint_dir;

  core::Status validate() const;
};

struct AssembledPartition {
  core::PartitionId id;
  scheduler_actor scheduler;
  /// Null without a change feed.
  change_feed_actor feed;
  /// Null without a store.
  std::shared_ptr<storage::PartitionStore> store;
  std::shared_ptr<CommitRelay> relay;
  /// Where the standbys hold the store up to under the [ha] ack rule (see
  /// ChangeFeedConfig::replicated_out); null without a feed or with ack
  /// "owner" (nothing to wait for).
  std::shared_ptr<std::atomic<uint64_t>> replicated;
  /// The epoch the scheduler runs with, and the sequence of its first write
  /// (the fence; 0 without a store).
  core::Epoch epoch = 0;
  uint64_t first_sequence = 0;
  /// What recovery found (zeros without recovery).
  uint64_t recovered_jobs = 0;
  uint64_t recovered_task_records = 0;
  uint64_t unverified_tasks = 0;
  std::chrono::nanoseconds recovery_time{0};
  /// The jobs the partition holds at start, in id order.
  std::vector<core::JobId> jobs;
  /// Pools its store says were removed (claimsched pool remove).
  std::vector<std::string> removed_pools;
};

/// Store options whose RocksDB diagnostics go to spdlog (errors only: RocksDB
/// warns on every checkpoint about file deletions it pauses and resumes).
storage::StoreOptions logged_store_options(storage::SyncMode sync);

/// Builds the partition (see the file comment). Errors name the store, the
/// record or the setting that failed; nothing is left running on error.
core::Expected<AssembledPartition> assemble_partition(caf::actor_system& sys, PartitionSetup setup);

/// Stops the partition's feed and scheduler, waits until both are gone, and
/// closes its store (once nobody else holds it). Idempotent.
void disassemble_partition(caf::actor_system& sys, AssembledPartition& partition);

}  // namespace claimsched::actors
