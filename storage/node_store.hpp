#pragma once

// Node-side durability (DESIGN.md, "Persistence and streams"; issue 5 item 2):
// ONE store per process, shared by every node actor the process hosts (one
// agent's node, or all 10k-100k nodes of `claimsched sim`); never one
// database per node.
//
// | column family    | key                     | value                      |
// |------------------|-------------------------|----------------------------|
// | node_headers     | node id                 | messages::StoredNodeHeader |
// | node_claims      | node id, claim id       | LiveClaim (claimsched.proto): older builds' only |
// | node_allocations | node id, claim id       | the claim's allocations: compact form, or StoredAllocations |
// | node_allocations | node id, job, task idx  | Allocation: one without a claim id (and the older format) |
// | meta             | "identity"              | StoreIdentity (cluster, host) |
// | node_finished    | node id, ring slot      | sequence (u64, big-endian), NodeEvent |
//
// node_finished holds the node's recent task ends (NodeLedger's ring of
// task_finished events, one key per slot, so at most the ring's size per
// node): a restarted agent reports the ends its tasks reached before, even
// those no scheduler heard, instead of having them taken for lost and run
// again.
//
// A node actor writes, in ONE batch per ledger operation, the records that
// operation changed (actors/node_persistence.hpp): an accepted claim writes
// nothing (its header only when the claim raised an epoch); a confirm = ONE
// put_allocations for the claim's tasks (+ erase_claim, which adds a record
// only if the store holds claim records: an older build's, or a report's;
// + put_header when it changed). A store of the older format
// (one allocation record per task) is rewritten to one record per claim when
// it is opened for writing, in one atomic batch. The node replies to the
// scheduler WITHOUT waiting for that batch to be durable: after a crash of
// the node's process its last changes may be lost, and the owning
// scheduler's durable records decide (core::Scheduler::reconcile_node).
//
// A claim's allocations are written in a compact form (node_store.cpp,
// storage/README.md) unless one carries a launch or an operator-defined
// resource dimension (then as StoredAllocations); both forms are read.
//
// Time points in LiveClaim::expires and Allocation times are stored as given:
// a restarted process must interpret them against the same origin, so persist
// them relative to a wall-clock origin (e.g. system_clock since the Unix
// epoch), not a process-local steady clock.
//
// Thread safety as PartitionStore: submit/write/load from any thread; a Batch
// belongs to one thread at a time.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "messages/record_codec.hpp"
#include "storage/database.hpp"
#include "storage/keys.hpp"

namespace claimsched::storage {

using messages::StoredNodeHeader;

/// The node store's commit delay (StoreOptions::sync_interval) unless its
/// options name one. Nothing waits for a node store write (a node answers
/// before its changes are written; after a crash the owning scheduler's
/// durable records decide, actors/node_persistence.hpp), so its fsyncs need
/// not follow each batch: at most one per interval, each covering every batch
/// written meanwhile (written at once: a crash of the agent loses none).
/// Every callback still fires after its batch's fsync.
inline constexpr std::chrono::microseconds kNodeStoreSyncInterval{10'000};

/// Whom a node store belongs to: the cluster and the host (agent name, or
/// "sim" for the all-in-one process).
struct NodeStoreIdentity {
  std::string cluster_id;
  std::string host;
};

/// Everything stored for one node, as loaded on start.
struct LoadedNode {
  StoredNodeHeader header;
  /// In claim id order.
  std::vector<core::LiveClaim> claims;
  /// In (job, task index) order.
  std::vector<core::Allocation> allocations;
  /// Recent task ends with their sequence numbers, in slot order.
  std::vector<std::pair<uint64_t, core::NodeEvent>> finished;

  friend bool operator==(const LoadedNode&, const LoadedNode&) = default;
};

class NodeStore {
 public:
  enum Cf : size_t { kHeaders = 0, kClaims, kAllocations, kMeta, kFinished };

  class Batch {
   public:
    /// The node's spec, state, generation and epochs.
    void put_header(const StoredNodeHeader& header);
    void put_claim(core::NodeId node, const core::LiveClaim& claim);
    /// Adds nothing while the store holds no claim record and no batch put
    /// one (accepted claims are not stored: a confirm's erase of the claim
    /// was ~40% of a node store's records for nothing).
    void erase_claim(core::NodeId node, core::ClaimId claim);
    void put_allocation(core::NodeId node, const core::Allocation& allocation);
    /// Every allocation claim `claim` holds on the node, as one record (the
    /// older ones of the claim replaced); none = erase the claim's record.
    void put_allocations(core::NodeId node, core::ClaimId claim, std::span<const core::Allocation> allocations);
    void erase_allocation(core::NodeId node, core::TaskRef task);
    /// A recent task end, in slot `slot` of the node's ring (replacing the
    /// older one there).
    void put_finished(core::NodeId node, uint32_t slot, uint64_t sequence, const core::NodeEvent& event);
    /// Removes everything stored for the node.
    void erase_node(core::NodeId node);
    /// Replaces everything stored for the node by `report` (header from its
    /// spec, snapshot state and generation, and epochs): registration, or a
    /// periodic full snapshot. The recent task ends stay as they are.
    void put_report(const core::NodeReport& report);

    size_t records() const { return batch_.Count(); }
    bool empty() const { return batch_.Count() == 0; }
    size_t bytes() const { return batch_.GetDataSize(); }

   private:
    friend class NodeStore;
    Batch(const Database* db, std::atomic<bool>* claims) : db_(db), claims_(claims) {}
    void put(Cf cf, std::string_view key, std::string_view value);
    void erase_range(Cf cf, core::NodeId node);
    const Database* db_;
    std::atomic<bool>* claims_;
    rocksdb::WriteBatch batch_;
    std::string scratch_;
  };

  /// Opens or creates the process's node store in `dir` (errors as
  /// PartitionStore::open; another host's or cluster's store is refused).
  static core::Expected<std::unique_ptr<NodeStore>> open(const std::string& dir,
                                                         const NodeStoreIdentity& identity,
                                                         const StoreOptions& options = {});

  Batch batch() const { return Batch{db_.get(), &claims_}; }
  void submit(Batch batch, DurableCallback on_durable);
  core::Status write(Batch batch);

  /// Calls `f` for every stored node in id order, with its claims and
  /// allocations. A claim or allocation without a header, a record that does
  /// not decode or does not match its key is Errc::corrupt naming the
  /// directory, column family and key; loading stops there.
  core::Status load(const std::function<core::Status(LoadedNode&&)>& f) const;
  /// One node, or nullopt if nothing is stored for it.
  core::Expected<std::optional<LoadedNode>> load_node(core::NodeId node) const;

  Database& database() { return *db_; }
  const Database& database() const { return *db_; }
  const std::string& path() const { return db_->path(); }
  WriterStats writer_stats() const { return db_->writer_stats(); }

  static const Database::Layout& layout();

 private:
  explicit NodeStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  /// Rewrites the older format's allocation records (one per task) as one
  /// record per claim.
  core::Status upgrade_allocations();
  core::Status load_range(std::string_view lower, std::string_view upper,
                          const std::function<core::Status(LoadedNode&&)>& f) const;
  std::unique_ptr<Database> db_;
  /// Whether node_claims may hold a record: one was there at open (an older
  /// build's), or a batch put one since. Set before the batch is submitted,
  /// by the node's own actor, which builds every batch of that node's keys:
  /// an erase_claim that sees it unset has no record to erase.
  mutable std::atomic<bool> claims_{false};
};

/// As canonical_partition_record, for a node store's column families.
core::Status canonical_node_record(const Database& db, size_t cf, std::string_view key,
                                   std::string_view value, std::string& canonical);

}  // namespace claimsched::storage
