#pragma once

// How a store is opened and how durable its writes are. Shared by
// PartitionStore and NodeStore (and the Database under both).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "core/error.hpp"

namespace rocksdb {
class Env;
}

namespace claimsched::storage {

/// When a submitted batch counts as durable (its on_durable callback fires).
enum class SyncMode : uint8_t {
  /// Every submitted batch is written and fsynced on its own: one fsync per
  /// batch, the slowest and the simplest to reason about.
  always = 0,
  /// Default. Batches queued while the writer was busy are merged into one
  /// RocksDB write and one fsync (group commit); callbacks fire after it.
  batch,
  /// No fsync: callbacks fire once the write reached the OS (survives a
  /// killed process, not a crashed machine or power loss).
  none,
};

std::string_view to_string(SyncMode m);
/// "always" | "batch" | "none"; the error names the bad value.
core::Expected<SyncMode> parse_sync_mode(std::string_view text);

/// Called once per submitted batch, on the store's writer thread, after the
/// batch is durable under the store's SyncMode (Status ok) or failed (the
/// Error names the database and the cause). Must not throw and must not block
/// on the same store (no write() from inside it): post a message and return.
using DurableCallback = std::function<void(core::Status)>;

/// Severity of a RocksDB diagnostic line (rocksdb::InfoLogLevel).
enum class RocksLogLevel : uint8_t { debug = 0, info, warn, error, fatal, header };

/// Receives RocksDB's own diagnostics (what it would write to its LOG file):
/// the level, the store's directory and the line. Called on RocksDB's and the
/// writer's threads; must be thread-safe and must not throw.
using RocksLogSink =
    std::function<void(RocksLogLevel level, std::string_view path, std::string_view line)>;

/// One RocksDB write of the writer thread (a merged burst, or one batch under
/// SyncMode::always), reported after it is durable.
struct CommitInfo {
  /// RocksDB sequence numbers of the first and last change written; both 0
  /// when the write held no change.
  uint64_t first_sequence = 0;
  uint64_t last_sequence = 0;
  /// Submitted batches and records (key changes) in the write.
  size_t batches = 0;
  size_t records = 0;
  size_t bytes = 0;
  bool synced = false;
  /// Time spent in the RocksDB write including the fsync.
  std::chrono::nanoseconds write_time{0};
};

struct StoreOptions {
  SyncMode sync = SyncMode::batch;
  /// Create the database when the directory holds none.
  bool create_if_missing = true;
  /// Open without write access (RocksDB's OpenForReadOnly): for inspection
  /// tools and tests. submit() then fails every batch with wrong_state.
  bool read_only = false;
  /// The primary keeps write-ahead logs this long / up to this size after
  /// they are obsolete, so a replica that falls behind can still catch up
  /// through the change log instead of a checkpoint (dependencies.md). Both
  /// 0: logs are deleted as soon as RocksDB no longer needs them.
  uint64_t wal_ttl_seconds = 3600;
  uint64_t wal_size_limit_mb = 1024;
  /// A burst merges queued batches up to this many bytes (at least one batch).
  size_t max_burst_bytes = size_t{16} << 20;
  /// SyncMode::batch only: batches are written to the log as they come, but
  /// the log is fsynced at most once per this interval (a commit delay), for
  /// every batch written since. A callback still fires only after its
  /// batch's fsync, and a crash of the process loses nothing written (the
  /// kernel has it); only a crash of the machine may lose up to an interval
  /// of unacknowledged batches, as before their fsync. Unset: the store's
  /// default (the node store's kNodeStoreSyncInterval, none for the others).
  /// At most 1 s.
  std::optional<std::chrono::microseconds> sync_interval;
  /// RocksDB memtable size per column family.
  size_t write_buffer_size = size_t{64} << 20;
  /// Filesystem to use; null means the default (the real disk). Tests inject
  /// a fault-injecting one (RocksDB's Env, as in its own fault tests). Not
  /// owned: it must outlive the store.
  rocksdb::Env* env = nullptr;
  /// RocksDB's diagnostics go here instead of a LOG file in the database
  /// directory: Debian's RocksDB 7.8 keeps its assertions, and its file
  /// logger aborts the process on the first line after a failed write to a
  /// full disk. Null: lines at `log_level` and above go to stderr. The
  /// actor layer should forward them to spdlog.
  RocksLogSink log;
  RocksLogLevel log_level = RocksLogLevel::warn;
  /// Called on the writer thread after every durable write, before that
  /// write's callbacks: replication-lag and fsync metrics. Must not throw.
  std::function<void(const CommitInfo&)> on_commit;

  core::Status validate() const;
};

/// Counters of a store's writer thread since open.
struct WriterStats {
  /// RocksDB writes issued (merged bursts, or single batches under always).
  uint64_t writes = 0;
  uint64_t syncs = 0;
  uint64_t batches = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  /// Writes that failed (every batch in them got the error).
  uint64_t failed_writes = 0;
  /// Largest number of batches merged into one write.
  uint64_t max_batches_per_write = 0;
  /// Total time in RocksDB writes (including fsync).
  std::chrono::nanoseconds write_time{0};
  /// Batches queued and not yet written, now.
  uint64_t queued_batches = 0;
};

}  // namespace claimsched::storage
