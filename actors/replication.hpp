#pragma once

// The replica stream (DESIGN.md, "Persistence and streams"): a change feed
// next to a partition's primary store pushes RocksDB's own write batches, in
// sequence order, to replica actors that apply them to their own store (same
// sequence numbers as the primary). A replica with nothing, or one whose
// changes are gone from the primary's write-ahead log, bootstraps from a
// checkpoint and follows from there. Both actors do blocking RocksDB I/O and
// are spawned detached.

#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "actors/actors.hpp"
#include "storage/change_log.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::actors {

/// Hands a store's commit notifications (StoreOptions::on_commit, called on
/// the writer thread) to an actor that exists only after the store opened.
class CommitRelay {
 public:
  /// Installs itself as `options.on_commit`.
  static std::shared_ptr<CommitRelay> attach(storage::StoreOptions& options);
  void forward_to(change_feed_actor feed);

 private:
  void committed(const storage::CommitInfo& info);
  std::mutex mutex_;
  change_feed_actor feed_;
};

struct change_feed_state {
  explicit change_feed_state(caf::local_actor*) {}

  struct Follower {
    replica_actor replica;
    std::optional<storage::ChangeLog> log;
    uint32_t in_flight = 0;
  };
  std::shared_ptr<storage::PartitionStore> primary;
  std::vector<Follower> followers;
  /// Recent commits: (last sequence, wall-clock ns), oldest first.
  std::deque<std::pair<uint64_t, int64_t>> commits;
  uint32_t window = 4;
  std::string log_name;

  static inline const char* name = "change-feed";
};

change_feed_actor::behavior_type change_feed(
    change_feed_actor::stateful_pointer<change_feed_state> self,
    std::shared_ptr<storage::PartitionStore> primary);

struct ReplicaConfig {
  /// The replica's own directory (it holds a copy of the primary's store).
  std::string dir;
  storage::PartitionIdentity identity;
  storage::StoreOptions options;
  change_feed_actor feed;
};

struct replica_state {
  explicit replica_state(caf::local_actor*) {}

  ReplicaConfig config;
  std::unique_ptr<storage::PartitionStore> store;
  std::optional<storage::ReplicaApplier> applier;
  ReplicaStatus status;
  std::string log_name;

  static inline const char* name = "replica";
};

replica_actor::behavior_type replica(replica_actor::stateful_pointer<replica_state> self,
                                     ReplicaConfig config);

}  // namespace claimsched::actors
