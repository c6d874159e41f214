#pragma once

// One scheduler partition's durable state (DESIGN.md, "Persistence and
// streams"): one RocksDB database per partition, a column family per record
// kind, Protobuf values (messages/records.proto), big-endian keys
// (storage/keys.hpp).
//
// | column family | key            | value                 | written when                   |
// |---------------|----------------|-----------------------|--------------------------------|
// | jobs          | job id         | messages::StoredJob   | accepted, cancelled, finished  |
// | jobs          | first id, count | StoredJob of the first | copies of one spec accepted (one record) |
// | tasks         | job, task idx  | messages::StoredTask  | one task's state changes       |
// | tasks         | job, first idx, version | StoredTask + its indices | a claim's tasks placed (one record) |
// | nodes         | node id        | messages::StoredNode  | registered, state changes      |
// | meta          | "identity"     | StoreIdentity         | created                        |
// | meta          | "epoch"        | counter               | the owner's epoch changes      |
// | meta          | "applied_sequence" | counter           | caller-defined (see Batch)     |
// | meta          | "removed_pool/P" | counter (wall ms)   | pool P removed (pool remove)   |
// | meta          | "task_version" | counter               | with task records (highest version) |
//
// Task records carry a version (the store's counter, higher = newer): a
// claim's tasks are one record, and a later change of one of them is a record
// of its own, so a task may be covered by several; it is in the state of the
// newest. A store written before versions (one record per task, version 0)
// reads as it was; new records are written in the new format. A claim's
// record stays until its job is erased (erase_job), even once all its tasks
// have newer records.
//
// Copies of one spec under consecutive ids (`submit --repeat`, accepted in one
// batch) are one record: the first copy's job record under (first id, count).
// A later record of one copy under its own id (a cancel) overrides the copy's
// share of it; readers (for_each_job, get_job, recover) see each copy as a job
// of its own. An older binary stops at such a record with a corrupt-record
// error naming its key, rather than reading only the first copy.
//
// Typical use by the scheduler actor:
//   auto b = store.batch();
//   b.put_job({spec, JobStatus::active, now});
//   store.submit(std::move(b), [=](core::Status st) { /* post a message */ });
// and on restart: PartitionStore::open(...), then recover(visitor).
//
// Thread safety: submit/write from any thread; reads from any thread; a Batch
// belongs to one thread at a time. The task records of one job come from one
// thread at a time (the partition's owner): their versions follow the order
// their batches were built in. See Database for the error contract.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "messages/record_codec.hpp"
#include "storage/database.hpp"
#include "storage/keys.hpp"

namespace claimsched::storage {

using messages::JobStatus;
using messages::StoredJob;
using messages::StoredNode;
using messages::StoredTask;

/// Whom a partition database belongs to; open() refuses any other.
struct PartitionIdentity {
  std::string cluster_id;
  core::PartitionId partition;
};

/// The partition's `meta` records.
struct PartitionMeta {
  std::string cluster_id;
  core::PartitionId partition;
  /// The last epoch the owner recorded (0 = never).
  core::Epoch epoch = 0;
  /// The last value set with Batch::set_applied_sequence (0 = never).
  uint64_t applied_sequence = 0;
  /// Pools removed with `claimsched pool remove`, by name.
  std::vector<std::string> removed_pools;
  /// The highest task record version written (0 = none, or an older format).
  uint64_t task_version = 0;

  friend bool operator==(const PartitionMeta&, const PartitionMeta&) = default;
};

/// What recover() calls, in this order: meta once, then every node, every
/// job, every task, each in key (= id) order. A callback returning an error
/// stops recovery with that error. Unset callbacks skip that kind.
struct RecoveryVisitor {
  std::function<core::Status(const PartitionMeta&)> meta;
  std::function<core::Status(const StoredNode&)> node;
  std::function<core::Status(const StoredJob&)> job;
  std::function<core::Status(core::JobId, core::TaskIndex, const StoredTask&)> task;
};

/// Record counts by kind (from a full scan).
struct RecordCounts {
  uint64_t jobs = 0;
  uint64_t tasks = 0;
  uint64_t nodes = 0;
};

/// The most copies one record holds; put_job_copies splits larger runs.
inline constexpr uint32_t kMaxJobCopiesPerRecord = 10'000;

class PartitionStore {
 public:
  /// Column family indices in the Database.
  enum Cf : size_t { kJobs = 0, kTasks, kNodes, kMeta };

  /// A group of changes written atomically (one RocksDB WriteBatch). Values
  /// are encoded when added, on the caller's thread. Later changes to the
  /// same key win.
  class Batch {
   public:
    void put_job(const StoredJob& job);
    /// `count` jobs of `first`'s spec under the ids first.spec.id, +1, ...:
    /// one record per kMaxJobCopiesPerRecord (a job record when count is 1).
    void put_job_copies(const StoredJob& first, uint32_t count);
    /// Removes the job and every task record of it (a range delete); with a
    /// copies record starting at `job`, every copy in it.
    void erase_job(core::JobId job);
    void put_task(core::JobId job, core::TaskIndex index, const StoredTask& task);
    /// The same state for several tasks of one job (a claim's tasks): ONE
    /// record (a placement costs one record per claim, not one per task).
    void put_tasks(core::JobId job, std::span<const core::TaskIndex> indices,
                   const StoredTask& task);
    /// Removes a record put_task wrote; tasks written together by put_tasks
    /// go with their job (erase_job).
    void erase_task(core::JobId job, core::TaskIndex index);
    void put_node(const StoredNode& node);
    void erase_node(core::NodeId node);
    void set_epoch(core::Epoch epoch);
    /// A sequence number of the caller's choosing (for example the highest
    /// client request or upstream event consumed), recovered in meta.
    void set_applied_sequence(uint64_t sequence);
    /// The partition no longer serves `pool`; `when` is wall-clock time.
    void remove_pool(std::string_view pool, core::TimePoint when);

    /// Key changes in the batch.
    size_t records() const { return batch_.Count(); }
    bool empty() const { return batch_.Count() == 0; }
    size_t bytes() const { return batch_.GetDataSize(); }

   private:
    friend class PartitionStore;
    Batch(const Database* db, std::atomic<uint64_t>* versions) : db_(db), versions_(versions) {}
    void put(Cf cf, std::string_view key, std::string_view value);
    uint64_t encode_task(const StoredTask& task, std::span<const core::TaskIndex> group);
    const Database* db_;
    std::atomic<uint64_t>* versions_;
    rocksdb::WriteBatch batch_;
    std::string scratch_;
    /// Whether the batch holds versioned task records (then it records the
    /// store's highest version too).
    bool versioned_ = false;
  };

  /// Opens or creates the partition's database in `dir`. Errors: the
  /// directory holds another cluster's or partition's data (naming both),
  /// is not a partition store, is unreadable or unwritable (io_error naming
  /// the path), or its identity record is corrupt.
  static core::Expected<std::unique_ptr<PartitionStore>> open(const std::string& dir,
                                                              const PartitionIdentity& identity,
                                                              const StoreOptions& options = {});

  Batch batch() const { return Batch{db_.get(), &versions_}; }
  /// See Database::submit: `on_durable` fires once, on the writer thread,
  /// after the batch is durable under the sync mode (or failed); batches are
  /// durable, and callbacks fire, in submission order.
  void submit(Batch batch, DurableCallback on_durable);
  /// submit() and wait (tests, tools). Not from inside a DurableCallback.
  core::Status write(Batch batch);

  // -- recovery reads ----------------------------------------------------------
  // Every record read is decoded and checked against its key; the first one
  // that fails stops the read with Errc::corrupt naming the directory, the
  // column family and the key. Nothing is skipped.

  core::Status recover(const RecoveryVisitor& visitor) const;
  core::Expected<PartitionMeta> read_meta() const;
  core::Status for_each_node(const std::function<core::Status(const StoredNode&)>& f) const;
  core::Status for_each_job(const std::function<core::Status(const StoredJob&)>& f) const;
  core::Status for_each_task(
      const std::function<core::Status(core::JobId, core::TaskIndex, const StoredTask&)>& f) const;
  /// The task records of one job, in index order.
  core::Status for_each_task_of(
      core::JobId job,
      const std::function<core::Status(core::TaskIndex, const StoredTask&)>& f) const;
  core::Expected<std::optional<StoredJob>> get_job(core::JobId id) const;
  core::Expected<std::optional<StoredTask>> get_task(core::JobId job, core::TaskIndex index) const;
  core::Expected<std::optional<StoredNode>> get_node(core::NodeId id) const;
  /// Counts every record (decoding each): a full consistency pass.
  core::Expected<RecordCounts> count() const;

  // -- the database ------------------------------------------------------------

  /// For the change log, checkpoints, the replica applier and tests.
  Database& database() { return *db_; }
  const Database& database() const { return *db_; }
  const std::string& path() const { return db_->path(); }
  uint64_t latest_sequence() const { return db_->latest_sequence(); }
  WriterStats writer_stats() const { return db_->writer_stats(); }

  static const Database::Layout& layout();

 private:
  explicit PartitionStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  /// Adds the highest version handed out to a batch that holds task records
  /// (under submit_mutex_: the value only grows in submission order).
  void seal(Batch& batch);
  /// No version handed out is at or below a stored one (a standby that was
  /// written by the replica applier, then recovers).
  void raise_versions(uint64_t stored) const;
  std::unique_ptr<Database> db_;
  /// The last task record version handed out.
  mutable std::atomic<uint64_t> versions_{0};
  std::mutex submit_mutex_;
};

/// Decodes one record of a partition store's column family `cf` and checks it
/// against its key; re-encodes it canonically into `canonical` (for logical
/// comparison). Used by recovery and compare_stores.
core::Status canonical_partition_record(const Database& db, size_t cf, std::string_view key,
                                        std::string_view value, std::string& canonical);

}  // namespace claimsched::storage
