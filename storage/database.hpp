#pragma once

// One RocksDB database with named column families, an identity record, and a
// group-commit writer thread: what PartitionStore and NodeStore are built on,
// and what the change log reads and the replica applier writes.
//
// Contract:
// - open() creates the database or opens an existing one. Creation is atomic:
//   the database is made whole (every column family, the identity record
//   synced) under `<dir>.creating` and renamed into place, so after a crash at
//   any instant `<dir>` holds no database or a complete one (a leftover
//   `.creating` directory is removed by the next open). An existing database
//   must have exactly the layout's column families and an identity equal to
//   the one asked for; otherwise open fails with an Error naming the
//   directory, what it holds and what was expected. Nothing is ever written
//   into a database that failed these checks.
// - Every RocksDB status is converted to core::Error where it surfaces; the
//   message names the directory (and, for records, the column family and the
//   key). A corrupt record is Errc::corrupt, everything else io_error.
// - Writes go through one writer thread (submit/write); see the threading
//   notes on submit(). Reads (scan/get) may run on any thread concurrently
//   with writes; they see a consistent point-in-time view per call.

#include <rocksdb/write_batch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_histogram.hpp"
#include "core/error.hpp"
#include "messages/record_codec.hpp"
#include "storage/options.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Status;
}  // namespace rocksdb

namespace claimsched::storage {

/// Converts a RocksDB status into our Error: Corruption -> Errc::corrupt,
/// anything else -> Errc::io_error; the message is "<action> <path>: <status>"
/// (a full disk reads "... IO error: No space left on device ...").
core::Error from_rocksdb(const rocksdb::Status& s, std::string_view action, std::string_view path);

/// One write batch holding the changes of `reps` (WriteBatch::Data() images)
/// in order, with the sum of their counts: the bodies concatenated behind one
/// header. The image is RocksDB's WAL record format, stable across versions.
rocksdb::WriteBatch concatenate_batches(std::span<const std::string_view> reps);

/// The count and sequence a WriteBatch::Data() image's header holds; false if
/// it is shorter than a header.
bool batch_header(std::string_view rep, uint64_t& sequence, uint32_t& count);

/// Group-commit metrics of a store's writer: per RocksDB write (a merged
/// burst, or one batch under SyncMode::always), how long it took including
/// its fsync, and how many records (key changes) it held. Updated by the
/// writer thread without a lock; read by metrics scrapes on any thread.
struct CommitMetrics {
  CommitMetrics();
  /// Recorded in nanoseconds, exposed in seconds.
  core::AtomicHistogram seconds;
  core::AtomicHistogram records;
};

class Database {
 public:
  /// The column families of one kind of store (besides RocksDB's "default",
  /// which stays empty). Must include keys::cf::kMeta.
  struct Layout {
    messages::StoreKind kind = messages::StoreKind::partition;
    std::vector<std::string_view> column_families;
    /// Keep the memtable unsorted (RocksDB's vector memtable: an insert is an
    /// append, sorting waits for a flush or a read): for stores written at
    /// random keys and read only at start (the node store, where skip-list
    /// inserts were a third of its writer's time; the partition stores).
    /// A point read copies and sorts the memtable: not for stores read while
    /// they are written. Performance only.
    bool unsorted_memtable = false;
  };

  /// Opens or creates the database in `path` (see the contract above).
  static core::Expected<std::unique_ptr<Database>> open(const std::string& path,
                                                        const Layout& layout,
                                                        const messages::StoreIdentity& identity,
                                                        const StoreOptions& options);

  /// Writes everything still queued (callbacks fire), stops the writer and
  /// closes the database.
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // -- writes ------------------------------------------------------------------

  /// Queues `batch`; `on_durable` fires exactly once, on the writer thread,
  /// when the batch is durable under sync_mode() or failed. Batches are
  /// written, and their callbacks fire, in submission order (for any two
  /// submits ordered by the caller). Never blocks on I/O: the queue is not
  /// bounded, so callers keep their own window of batches in flight.
  /// After close() or on a read-only store the callback fires at once on the
  /// calling thread with Errc::wrong_state. An empty batch is a barrier: its
  /// callback fires once everything submitted before it is durable.
  void submit(rocksdb::WriteBatch batch, DurableCallback on_durable);
  /// submit() and wait. Must not be called from a DurableCallback.
  core::Status write(rocksdb::WriteBatch batch);

  /// Drains the queue and stops the writer; later submits fail. Idempotent.
  void close_writer();

  /// The first failed write, if any. After one, the store is fail-stop:
  /// every later batch fails at once (io_error, naming this failure), because
  /// RocksDB 7.8 cannot resume writing after a failed log write and the
  /// failed batch's outcome is unknown (it may reappear after a reopen).
  /// Reopening the store (restarting the process) once the cause is fixed
  /// recovers every acknowledged write. The owner of a partition should step
  /// down when this is set.
  std::optional<core::Error> write_failure() const;

  // -- reads -------------------------------------------------------------------

  /// A forward iterator over one column family's key range (a point-in-time
  /// view). Check status() once valid() is false: a read error ends the range
  /// early and must not be mistaken for its end.
  class Cursor {
   public:
    Cursor(Cursor&&) noexcept;
    Cursor& operator=(Cursor&&) noexcept;
    ~Cursor();
    bool valid() const;
    std::string_view key() const;
    std::string_view value() const;
    void next();
    /// Ok, or the read error naming the directory, column family and the last
    /// key read.
    core::Status status() const;

   private:
    friend class Database;
    Cursor() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };
  /// A cursor over lower <= key < upper (empty upper = no bound).
  Cursor cursor(size_t cf, std::string_view lower, std::string_view upper) const;

  using RecordFn = std::function<core::Status(std::string_view key, std::string_view value)>;
  /// Calls `f` for every record of column family `cf` with lower <= key <
  /// upper (empty upper = no bound), in key order. Stops at the first error,
  /// `f`'s own or RocksDB's (named with the directory, the column family and
  /// the last key read).
  core::Status scan(size_t cf, std::string_view lower, std::string_view upper,
                    const RecordFn& f) const;
  /// The value at `key`, or nullopt.
  core::Expected<std::optional<std::string>> get(size_t cf, std::string_view key) const;

  /// The Error for a record that does not decode: "corrupt record in <path>
  /// (column family '<cf>', key <describe>): <cause>".
  core::Error record_error(size_t cf, std::string_view key, const core::Error& cause) const;
  core::Error record_error(size_t cf, std::string_view key, std::string_view cause) const;

  // -- introspection -----------------------------------------------------------

  const std::string& path() const { return path_; }
  const messages::StoreIdentity& identity() const { return identity_; }
  SyncMode sync_mode() const { return options_.sync; }
  bool read_only() const { return options_.read_only; }
  /// RocksDB's latest sequence number: every change written so far is <= it.
  uint64_t latest_sequence() const;
  WriterStats writer_stats() const;
  /// Every successful write of this store's writer since open.
  const CommitMetrics& commit_metrics() const { return *commit_metrics_; }

  size_t column_family_count() const { return handles_.size(); }
  /// Index of a column family of the layout by name (the indices the typed
  /// stores use); nullopt if not part of it.
  std::optional<size_t> cf_index(std::string_view name) const;
  const std::string& cf_name(size_t cf) const { return names_[cf]; }
  /// Index of the column family with RocksDB id `id` (write batches name
  /// column families by id), or nullopt.
  std::optional<size_t> cf_index_by_id(uint32_t id) const;
  rocksdb::ColumnFamilyHandle* handle(size_t cf) const { return handles_[cf]; }
  rocksdb::DB* rocksdb() const { return db_.get(); }

  /// Writes the memtables to table files (tests, benchmarks, before a copy).
  core::Status flush();
  /// An openable copy of the database in `dir` (must not exist; same
  /// filesystem = hard links). Returns the latest sequence number it holds.
  core::Expected<uint64_t> checkpoint(const std::string& dir) const;

 private:
  class Writer;
  Database() = default;
  core::Status check_identity(const messages::StoreIdentity& expected);

  std::string path_;
  StoreOptions options_;
  messages::StoreIdentity identity_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<std::string> names_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  /// The "default" column family's handle (not part of the layout).
  rocksdb::ColumnFamilyHandle* default_handle_ = nullptr;
  size_t meta_ = 0;
  std::unique_ptr<CommitMetrics> commit_metrics_ = std::make_unique<CommitMetrics>();
  std::unique_ptr<Writer> writer_;
};

}  // namespace claimsched::storage
