#pragma once

// Database's group-commit writer thread (internal to storage/: database.cpp
// owns one per writable store). See Database::submit for the contract.

#include <rocksdb/write_batch.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "storage/database.hpp"

namespace rocksdb {
class DB;
}

namespace claimsched::storage {

/// Group commit: submitters append their batches' changes to the open burst;
/// one thread takes a whole burst (up to max_burst_bytes), writes it as one
/// RocksDB write (or, under SyncMode::always, one synced write per batch) and
/// then fires the callbacks in submission order. While it waits for the disk,
/// new batches pile up and form the next burst: the busier the store, the
/// larger the bursts, with no timer.
///
/// A submit copies its batch's changes into the burst's buffer (one memcpy
/// under the lock) rather than queueing the batch: the writer then writes the
/// buffer as it is, with no merge copy, no batch freed on its thread, and
/// buffers reused from burst to burst. A submitter wakes the writer only if it
/// sleeps, after unlocking (a writer woken under the lock blocked on it at
/// once), and only the first submitter after it went to sleep does.
class Database::Writer {
 public:
  Writer(rocksdb::DB* db, std::string path, const StoreOptions& options, CommitMetrics& metrics);
  ~Writer() { stop(); }

  void submit(const rocksdb::WriteBatch& batch, DurableCallback cb);
  void stop();
  WriterStats stats() const;
  std::optional<core::Error> failure() const;

 private:
  /// Batches queued together, in submission order: their changes
  /// concatenated behind one WriteBatch header, and per batch its callback
  /// and where its changes end in `rep` (SyncMode::always writes each alone).
  struct Burst {
    std::string rep;
    uint32_t records = 0;
    std::vector<DurableCallback> callbacks;
    std::vector<std::pair<size_t, uint32_t>> parts;  // (end offset in rep, records)
    void clear();
  };

  void run();
  void write_now_sync_later(Burst& burst);
  bool write(Burst& burst, bool fire = true);
  bool write_one(Burst& burst, size_t part);
  core::Status write_rep(std::string& rep, uint32_t records, size_t batches, bool sync);
  core::Status check_not_failed() const;

  rocksdb::DB* db_;
  std::string path_;
  StoreOptions options_;
  CommitMetrics& metrics_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  /// Bursts queued, oldest first; the last one takes new batches while it
  /// stays under max_burst_bytes. `spare_` holds emptied ones for reuse.
  std::deque<Burst> queue_;
  std::vector<Burst> spare_;
  uint64_t queued_ = 0;
  bool waiting_ = false;
  bool stopping_ = false;
  /// SyncMode::batch's commit delay (0: none), when the log was last
  /// synced, and the callbacks of what was written since (the writer
  /// thread's own).
  std::chrono::microseconds interval_{0};
  std::chrono::steady_clock::time_point last_sync_{};
  std::vector<DurableCallback> unsynced_;
  std::optional<core::Error> failed_;
  WriterStats stats_;
  std::mutex join_mutex_;
  std::thread thread_;
};

}  // namespace claimsched::storage
