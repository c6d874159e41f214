#pragma once

// The replica stream (DESIGN.md, "Persistence and streams"): a change feed
// next to a partition's primary store pushes RocksDB's own write batches, in
// sequence order, to replica actors that apply them to their own store (same
// sequence numbers as the primary) and acknowledge what they made durable.
// Replicas may live in other processes on other hosts.
//
// A replica with nothing, one whose changes are gone from the primary's
// write-ahead log, or one that diverged (it holds writes of a deposed owner
// that its successor never had: core::consistent_with_history) is rebuilt:
// the feed makes a checkpoint of the primary and ships its files, in chunks,
// through the same credit window; the replica installs them and follows from
// the checkpoint's sequence.
//
//   replica                               feed
//   subscribe(self, applied+1, epoch)  ->
//                                      <- changes(batches, latest, committed_at)
//   ack(applied)                       ->  (credit; the [ha] ack rule turns the
//                                           acks into replicated_atom for the
//                                           partition's scheduler)
//                                      <- bootstrap(seq), chunk(file, bytes)...,
//                                         install(seq)
//
// Both actors do blocking RocksDB and file I/O and are spawned detached.

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "actors/actors.hpp"
#include "core/ownership.hpp"
#include "storage/change_log.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::actors {

/// When a partition's write counts as safe ([ha] ack): on the owner's disk
/// only, or also on one standby's, or on every standby following it.
enum class AckMode : uint8_t { owner, one, all };
std::string_view to_string(AckMode m);
/// "owner" | "one" | "all"; the error names the bad value.
core::Expected<AckMode> parse_ack_mode(std::string_view text);

/// The position every acknowledged write must have reached, from the
/// followers' acknowledged sequences: none for `owner` (nullopt), the highest
/// for `one`, the lowest for `all` (nullopt without followers).
std::optional<uint64_t> replicated_position(AckMode mode, const std::vector<uint64_t>& acked);

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

struct ChangeFeedConfig {
  std::shared_ptr<storage::PartitionStore> primary;
  /// Told the replicated position (replicated_atom) under `ack`; null: nobody.
  scheduler_actor scheduler;
  AckMode ack = AckMode::one;
  /// Every owner epoch's first sequence (from etcd); empty without HA.
  std::vector<core::EpochStart> history;
  /// Also set to the replicated position (as the scheduler is told) for
  /// readers on other threads (the campaigns); null: not kept.
  std::shared_ptr<std::atomic<uint64_t>> replicated_out;
  /// Where checkpoints for bootstraps are made (same filesystem as the
  /// primary: hard links); removed once shipped.
  std::string checkpoint_dir;
  /// Messages (batches or file chunks) in flight per replica.
  uint32_t window = 4;
  size_t chunk_bytes = size_t{1} << 20;

  core::Status validate() const;
};

struct change_feed_state {
  explicit change_feed_state(caf::local_actor*) {}
  /// Removes the checkpoints still being shipped.
  ~change_feed_state();

  struct Shipping {
    std::string dir;
    uint64_t sequence = 0;
    std::vector<std::string> files;
    size_t file = 0;
    uint64_t offset = 0;
  };
  struct Follower {
    replica_actor replica;
    std::optional<storage::ChangeLog> log;
    std::optional<Shipping> shipping;
    std::string name;
    uint32_t in_flight = 0;
    uint64_t acked = 0;
  };
  ChangeFeedConfig config;
  std::vector<Follower> followers;
  /// Recent commits: (last sequence, wall-clock ns), oldest first.
  std::deque<std::pair<uint64_t, int64_t>> commits;
  uint64_t replicated = 0;
  uint64_t checkpoints = 0;
  std::string log_name;

  static inline const char* name = "change-feed";
};

change_feed_actor::behavior_type change_feed(change_feed_actor::stateful_pointer<change_feed_state> self,
                                             ChangeFeedConfig config);

/// Validates `config` and spawns the feed (detached: it reads RocksDB).
core::Expected<change_feed_actor> spawn_change_feed(caf::actor_system& sys, ChangeFeedConfig config);

struct ReplicaConfig {
  /// Who follows (a member's name): the feed's status names it.
  std::string name;
  /// The replica's own directory (it holds a copy of the primary's store).
  std::string dir;
  storage::PartitionIdentity identity;
  storage::StoreOptions options;
  change_feed_actor feed;

  core::Status validate() const;
};

struct replica_state {
  explicit replica_state(caf::local_actor*) {}

  ReplicaConfig config;
  std::unique_ptr<storage::PartitionStore> store;
  std::optional<storage::ReplicaApplier> applier;
  ReplicaStatus status;
  /// A bootstrap being received: its sequence.
  std::optional<uint64_t> receiving;
  std::string log_name;

  static inline const char* name = "replica";
};

replica_actor::behavior_type replica(replica_actor::stateful_pointer<replica_state> self,
                                     ReplicaConfig config);

/// Validates `config` and spawns the replica (detached: it writes RocksDB).
core::Expected<replica_actor> spawn_replica(caf::actor_system& sys, ReplicaConfig config);

/// What a partition directory holds, read without writing it: the last
/// sequence and the epoch it was written in (zeros if it holds no store).
struct StoreVersion {
  uint64_t sequence = 0;
  core::Epoch epoch = 0;
};
core::Expected<StoreVersion> read_store_version(const std::string& dir, const storage::PartitionIdentity& identity,
                                                storage::StoreOptions options);

}  // namespace claimsched::actors
