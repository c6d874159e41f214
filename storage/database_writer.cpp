#include "storage/database_writer.hpp"

#include <rocksdb/db.h>

#include <algorithm>

#include "storage/crash_point.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Status;

namespace {

/// rocksdb::WriteBatch's header: 8-byte sequence, 4-byte little-endian count.
constexpr size_t kRepHeader = 12;

/// A burst's buffer is kept for the next one up to this size (a burst of a
/// large write is not held for ever).
constexpr size_t kKeptBurstBytes = size_t{1} << 20;

/// Spare bursts kept for reuse (one being filled, one being written, one
/// queued behind them is the steady state).
constexpr size_t kSpareBursts = 4;

void set_count(std::string& rep, uint32_t count) {
  for (int i = 0; i < 4; ++i) rep[8 + i] = static_cast<char>((count >> (8 * i)) & 0xFF);
}

/// 50 µs (a write with nothing to sync) to 2.5 s (a disk in trouble), in ns.
std::vector<uint64_t> commit_second_bounds() {
  return {50'000,     100'000,    250'000,     500'000,     1'000'000,   2'500'000,     5'000'000,    10'000'000,
          25'000'000, 50'000'000, 100'000'000, 250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000};
}

}  // namespace

CommitMetrics::CommitMetrics()
    : seconds(commit_second_bounds(), 1e-9),
      records({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}, 1.0) {}

void Database::Writer::Burst::clear() {
  if (rep.capacity() > kKeptBurstBytes) std::string{}.swap(rep);
  rep.clear();
  records = 0;
  callbacks.clear();
  parts.clear();
}

Database::Writer::Writer(rocksdb::DB* db, std::string path, const StoreOptions& options, CommitMetrics& metrics)
    : db_(db), path_(std::move(path)), options_(options), metrics_(metrics) {
  if (options_.sync == SyncMode::batch && options_.sync_interval) interval_ = *options_.sync_interval;
  thread_ = std::thread([this] { run(); });
}

void Database::Writer::submit(const rocksdb::WriteBatch& batch, DurableCallback cb) {
  const std::string& rep = batch.Data();
  const std::string_view body = rep.size() > kRepHeader ? std::string_view{rep}.substr(kRepHeader) : std::string_view{};
  const uint32_t count = batch.Count();
  bool accepted = false;
  bool wake = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!stopping_) {
      if (queue_.empty() ||
          (!queue_.back().callbacks.empty() && queue_.back().rep.size() + body.size() > options_.max_burst_bytes)) {
        if (spare_.empty()) {
          queue_.emplace_back();
        } else {
          queue_.push_back(std::move(spare_.back()));
          spare_.pop_back();
        }
      }
      Burst& burst = queue_.back();
      if (burst.rep.empty()) burst.rep.assign(kRepHeader, '\0');
      burst.rep.append(body);
      burst.records += count;
      burst.callbacks.push_back(std::move(cb));
      burst.parts.emplace_back(burst.rep.size(), count);
      ++queued_;
      accepted = true;
      // Only the first submitter after the writer went to sleep wakes it.
      wake = waiting_;
      waiting_ = false;
    }
  }
  if (wake) cv_.notify_one();
  if (!accepted) cb(core::make_error(Errc::wrong_state, "store " + path_ + " is closed"));
}

void Database::Writer::stop() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
    cv_.notify_one();
  }
  std::lock_guard<std::mutex> guard{join_mutex_};
  if (thread_.joinable()) thread_.join();
}

WriterStats Database::Writer::stats() const {
  std::lock_guard<std::mutex> guard{mutex_};
  WriterStats s = stats_;
  s.queued_batches = queued_;
  return s;
}

std::optional<Error> Database::Writer::failure() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return failed_;
}

void Database::Writer::run() {
  Burst burst;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock{mutex_};
      if (spare_.size() < kSpareBursts && burst.rep.capacity() > 0) spare_.push_back(std::move(burst));
      burst = Burst{};
      auto ready = [&] { return !queue_.empty() || stopping_; };
      if (!ready()) {
        waiting_ = true;
        if (unsynced_.empty())
          cv_.wait(lock, ready);
        else  // written batches wait for their sync: wake for it at the latest
          cv_.wait_until(lock, last_sync_ + interval_, ready);
        waiting_ = false;
      }
      if (queue_.empty() && unsynced_.empty()) return;  // stopping and drained
      if (!queue_.empty()) {
        burst = std::move(queue_.front());
        queue_.pop_front();
        queued_ -= burst.callbacks.size();
      }
    }
    if (interval_.count() > 0) {
      write_now_sync_later(burst);
    } else if (options_.sync == SyncMode::always) {
      for (size_t i = 0; i < burst.callbacks.size(); ++i) write_one(burst, i);
    } else if (!burst.callbacks.empty()) {
      write(burst);
    }
    burst.clear();
  }
}

void Database::Writer::write_now_sync_later(Burst& burst) {
  if (!burst.callbacks.empty()) {
    bool ok = write(burst, false);
    if (!ok) {
      for (auto& cb : burst.callbacks) cb(check_not_failed());
    } else if (unsynced_.empty()) {
      unsynced_.swap(burst.callbacks);
    } else {
      for (auto& cb : burst.callbacks) unsynced_.push_back(std::move(cb));
    }
  }
  auto now = std::chrono::steady_clock::now();
  bool stopping = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping = stopping_;
  }
  if (unsynced_.empty() || (now < last_sync_ + interval_ && !stopping)) return;
  last_sync_ = now;
  Status st = check_not_failed();
  if (st) {
    if (auto s = db_->SyncWAL(); !s.ok()) {
      st = from_rocksdb(s, "syncing the log of", path_);
      std::lock_guard<std::mutex> guard{mutex_};
      if (!failed_) failed_ = st.error();
    }
  }
  {
    std::lock_guard<std::mutex> guard{mutex_};
    ++stats_.syncs;
  }
  std::vector<DurableCallback> synced;
  synced.swap(unsynced_);
  for (auto& cb : synced) cb(st);
  // Keep the vector's room for the next interval.
  synced.clear();
  if (unsynced_.empty()) unsynced_.swap(synced);
}

bool Database::Writer::write(Burst& burst, bool fire) {
  const bool sync = options_.sync != SyncMode::none && fire;
  if (burst.rep.empty()) burst.rep.assign(kRepHeader, '\0');
  set_count(burst.rep, burst.records);
  Status st = write_rep(burst.rep, burst.records, burst.callbacks.size(), sync);
  if (fire)
    for (auto& cb : burst.callbacks) cb(st);
  return static_cast<bool>(st);
}

/// SyncMode::always: batch `part` of `burst` alone, synced.
bool Database::Writer::write_one(Burst& burst, size_t part) {
  size_t begin = part == 0 ? kRepHeader : burst.parts[part - 1].first;
  auto [end, records] = burst.parts[part];
  std::string rep(kRepHeader, '\0');
  rep.append(burst.rep, begin, end - begin);
  set_count(rep, records);
  Status st = write_rep(rep, records, 1, options_.sync != SyncMode::none);
  burst.callbacks[part](st);
  return static_cast<bool>(st);
}

/// Writes `rep` (a WriteBatch image of `batches` batches and `records` changes)
/// as one RocksDB write, synced if `sync`: ok, or the write's error. `rep`
/// is handed back as it was.
Status Database::Writer::write_rep(std::string& rep, uint32_t records, size_t batches, bool sync) {
  const size_t bytes = rep.size() - kRepHeader;
  auto started = std::chrono::steady_clock::now();
  Status st = check_not_failed();
  if (st) {
    crash::point(crash::kCommitBeforeWrite);
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    rocksdb::WriteBatch batch{std::move(rep)};
    rocksdb::Status s = db_->Write(wo, &batch);
    // Take the buffer back for the next burst: `batch` is dropped right after
    // and nothing reads it again (Data() is its own non-const member).
    rep = std::move(const_cast<std::string&>(batch.Data()));
    if (!s.ok()) {
      st = from_rocksdb(s, "writing to", path_);
      std::lock_guard<std::mutex> guard{mutex_};
      if (!failed_) failed_ = st.error();
    }
  }
  auto took = std::chrono::steady_clock::now() - started;
  CommitInfo info;
  if (st && records > 0) {
    info.last_sequence = db_->GetLatestSequenceNumber();
    info.first_sequence = info.last_sequence - records + 1;
  }
  info.batches = batches;
  info.records = records;
  info.bytes = bytes;
  info.synced = sync;
  info.write_time = std::chrono::duration_cast<std::chrono::nanoseconds>(took);
  {
    std::lock_guard<std::mutex> guard{mutex_};
    ++stats_.writes;
    if (sync) ++stats_.syncs;
    stats_.batches += batches;
    stats_.records += records;
    stats_.bytes += bytes;
    stats_.write_time += info.write_time;
    stats_.max_batches_per_write = std::max<uint64_t>(stats_.max_batches_per_write, batches);
    if (!st) ++stats_.failed_writes;
  }
  if (st) {
    metrics_.seconds.observe(static_cast<uint64_t>(info.write_time.count()));
    metrics_.records.observe(records);
  }
  if (st) crash::point(crash::kCommitWritten);
  if (st && options_.on_commit) options_.on_commit(info);
  return st;
}

/// After a failed write the store takes no more writes: RocksDB 7.8
/// latches a failed write-ahead-log write (its WritableFileWriter keeps the
/// error; DB::Resume() does not clear it, facebook/rocksdb#11643), and the
/// outcome of the failed write is unknown (it may or may not be in the
/// log). Later batches fail at once, naming the first failure; reopening
/// the store (a process restart) recovers every acknowledged write.
Status Database::Writer::check_not_failed() const {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!failed_) return Status::ok();
  return core::make_error(Errc::io_error, "store " + path_ + " takes no more writes after a failed write (" +
                                              failed_->message + "); reopen it once the cause is fixed");
}

}  // namespace claimsched::storage
