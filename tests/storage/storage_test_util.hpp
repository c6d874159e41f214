#pragma once

// Helpers for the storage tests: a temporary directory that cleans up, a
// fault-injecting filesystem (RocksDB's FileSystem, as in its own
// db/fault_injection_test.cc) that counts write-ahead-log bytes and syncs and
// can fail writes like a full or read-only disk, and record builders.

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "messages/record_codec.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::storage::testing {

/// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/claimsched-storage-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(std::string_view sub) const { return path_ + "/" + std::string{sub}; }

 private:
  std::string path_;
};

/// What the fault filesystem does to writes.
enum class Fault { none, no_space, read_only };

/// Counts bytes appended to and synced in write-ahead-log files (*.log), and
/// fails writes on demand. Thread-safe.
class FaultFs : public rocksdb::FileSystemWrapper {
 public:
  FaultFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "ClaimschedFaultFs"; }

  void set_fault(Fault f) { fault_ = f; }

  /// WAL bytes appended but not yet synced, summed over all WAL files.
  uint64_t unsynced_wal_bytes() const {
    std::lock_guard<std::mutex> guard{mutex_};
    uint64_t n = 0;
    for (const auto& [name, bytes] : unsynced_) n += bytes;
    return n;
  }
  uint64_t wal_syncs() const { return wal_syncs_; }
  uint64_t wal_appends() const { return wal_appends_; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    if (auto s = injected(); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    auto s = target()->NewWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    r->reset(new File(std::move(file), this, f));
    return s;
  }

  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    if (auto s = injected(); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    auto s = target()->ReopenWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    r->reset(new File(std::move(file), this, f));
    return s;
  }

 private:
  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile>&& t, FaultFs* fs, std::string name)
        : FSWritableFileOwnerWrapper(std::move(t)),
          fs_(fs),
          name_(std::move(name)),
          wal_(name_.ends_with(".log")) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->injected(); !s.ok()) return s;
      auto s = FSWritableFileOwnerWrapper::Append(data, o, dbg);
      if (s.ok() && wal_) fs_->appended(name_, data.size());
      return s;
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& v,
                             rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->injected(); !s.ok()) return s;
      auto s = FSWritableFileOwnerWrapper::Append(data, o, v, dbg);
      if (s.ok() && wal_) fs_->appended(name_, data.size());
      return s;
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->injected(); !s.ok()) return s;
      auto s = FSWritableFileOwnerWrapper::Sync(o, dbg);
      if (s.ok() && wal_) fs_->synced(name_);
      return s;
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->injected(); !s.ok()) return s;
      auto s = FSWritableFileOwnerWrapper::Fsync(o, dbg);
      if (s.ok() && wal_) fs_->synced(name_);
      return s;
    }

   private:
    FaultFs* fs_;
    std::string name_;
    bool wal_;
  };

  rocksdb::IOStatus injected() const {
    switch (fault_.load()) {
      case Fault::none:
        return rocksdb::IOStatus::OK();
      case Fault::no_space:
        return rocksdb::IOStatus::NoSpace("injected: No space left on device");
      case Fault::read_only:
        return rocksdb::IOStatus::IOError("injected: Read-only file system");
    }
    return rocksdb::IOStatus::OK();
  }
  void appended(const std::string& name, size_t n) {
    std::lock_guard<std::mutex> guard{mutex_};
    unsynced_[name] += n;
    ++wal_appends_;
  }
  void synced(const std::string& name) {
    std::lock_guard<std::mutex> guard{mutex_};
    unsynced_[name] = 0;
    ++wal_syncs_;
  }

  std::atomic<Fault> fault_{Fault::none};
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> unsynced_;
  std::atomic<uint64_t> wal_syncs_{0};
  std::atomic<uint64_t> wal_appends_{0};
};

/// A FaultFs and the Env to put into StoreOptions::env.
struct FaultEnv {
  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
};

// -- builders -----------------------------------------------------------------

inline core::JobSpec job_spec(uint64_t id, uint32_t count = 4) {
  core::JobSpec s;
  s.id = core::JobId{id};
  s.name = "job-" + std::to_string(id);
  s.user = "alice";
  s.job_class = "batch";
  s.pool = "default";
  s.count = count;
  s.per_task = core::Resources::cpu_memory(500, int64_t{1} << 30);
  s.submit_time = core::TimePoint{std::chrono::milliseconds(id)};
  return s;
}

inline StoredJob stored_job(uint64_t id, uint32_t count = 4) {
  StoredJob j;
  j.spec = job_spec(id, count);
  j.accepted_at = core::TimePoint{std::chrono::milliseconds(id + 1)};
  return j;
}

inline StoredTask stored_task(uint32_t node, core::TaskState state = core::TaskState::running,
                              uint64_t claim = 7) {
  StoredTask t;
  t.state = state;
  t.node = core::NodeId{node};
  t.claim_id = core::ClaimId{claim};
  t.epoch = 3;
  t.attempts = 1;
  t.updated_at = core::TimePoint{std::chrono::seconds(5)};
  return t;
}

inline core::NodeSpec node_spec(uint32_t id) {
  core::NodeSpec s;
  s.id = core::NodeId{id};
  s.name = "node-" + std::to_string(id);
  s.pool = "default";
  s.capacity = core::Resources::cpu_memory(32000, int64_t{64} << 30);
  s.labels = {"ssd"};
  return s;
}

inline StoredNode stored_node(uint32_t id) {
  StoredNode n;
  n.spec = node_spec(id);
  n.registered_at = core::TimePoint{std::chrono::seconds(1)};
  return n;
}

inline PartitionIdentity partition_id(uint32_t p = 1, std::string cluster = "c1") {
  return PartitionIdentity{std::move(cluster), core::PartitionId{p}};
}

/// Fills `store` with `jobs` jobs of `tasks_per_job` placed tasks and `nodes`
/// nodes, in batches; returns the number of records written.
inline size_t fill(PartitionStore& store, uint64_t first_job, uint64_t jobs, uint32_t tasks_per_job,
                   uint32_t nodes = 0) {
  size_t records = 0;
  for (uint32_t n = 1; n <= nodes; ++n) {
    auto b = store.batch();
    b.put_node(stored_node(n));
    records += b.records();
    EXPECT_TRUE(store.write(std::move(b)));
  }
  for (uint64_t j = first_job; j < first_job + jobs; ++j) {
    auto b = store.batch();
    b.put_job(stored_job(j, tasks_per_job));
    for (uint32_t t = 0; t < tasks_per_job; ++t)
      b.put_task(core::JobId{j}, t, stored_task(1 + (t % 10), core::TaskState::running, j * 100 + t));
    records += b.records();
    EXPECT_TRUE(store.write(std::move(b)));
  }
  return records;
}

#define ASSERT_OK(expr)                                                  \
  do {                                                                   \
    auto&& st_ = (expr);                                                 \
    ASSERT_TRUE(st_) << st_.error().to_string();                         \
  } while (false)

#define EXPECT_OK(expr)                                                  \
  do {                                                                   \
    auto&& st_ = (expr);                                                 \
    EXPECT_TRUE(st_) << st_.error().to_string();                         \
  } while (false)

}  // namespace claimsched::storage::testing
