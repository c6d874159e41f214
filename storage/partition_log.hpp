#pragma once

// What a partition's owner writes before it acknowledges a job or confirms a
// placement: the scheduler's journal (core::Journal), one write at a time,
// durable in submission order. The scheduler actor knows only this interface:
//
//   RocksPartitionLog    over a PartitionStore (production, sims): durable
//                        under the store's sync mode, with RocksDB sequences;
//   MemoryPartitionLog   in memory (deterministic tests): writes stay pending
//                        until the test completes them, one by one.
//
// Every write reports the sequence number of its last change: the replication
// position a standby must have reached before the write counts as replicated
// (DESIGN.md, "Replica stream"; [ha] ack in deploy/CONFIG.md).
//
// Thread safety: submit from one thread (the owning actor); callbacks fire on
// the log's own thread (Rocks) or the test's (Memory). A callback must not
// block on the log: post a message and return.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/scheduler.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::storage {

/// Fires once per write: the sequence number of its last change once it is
/// durable, or why it failed (the log is then fail-stop: see Database).
using WriteCallback = std::function<void(core::Expected<uint64_t>)>;

class PartitionLog {
 public:
  virtual ~PartitionLog() = default;

  /// Queues the journals' records, stamped with the writer's `epoch` and the
  /// wall-clock `wall_now`, as one atomic write. `on_durable` fires exactly
  /// once; writes become durable, and their callbacks fire, in submission
  /// order.
  virtual void submit(std::vector<core::Journal> journals, core::Epoch epoch, core::TimePoint wall_now,
                      WriteCallback on_durable) = 0;

  /// Names the log in messages (its directory, or "memory").
  virtual const std::string& name() const = 0;

  /// The store's group-commit metrics; null for a log without a store.
  virtual const CommitMetrics* commit_metrics() const { return nullptr; }
};

/// The production log: a PartitionStore's group-commit writer.
class RocksPartitionLog final : public PartitionLog {
 public:
  explicit RocksPartitionLog(std::shared_ptr<PartitionStore> store);

  void submit(std::vector<core::Journal> journals, core::Epoch epoch, core::TimePoint wall_now,
              WriteCallback on_durable) override;
  const std::string& name() const override { return store_->path(); }
  const CommitMetrics* commit_metrics() const override { return &store_->database().commit_metrics(); }

  const std::shared_ptr<PartitionStore>& store() const { return store_; }

 private:
  std::shared_ptr<PartitionStore> store_;
};

/// An in-memory log for deterministic tests: it keeps what was written (jobs,
/// task states, nodes) and holds every write until the test completes it, so
/// a test decides when a write becomes durable, or makes it fail.
class MemoryPartitionLog final : public PartitionLog {
 public:
  /// With `complete_at_once`, every write is durable as soon as it is
  /// submitted (its callback runs inside submit).
  explicit MemoryPartitionLog(bool complete_at_once = false) : at_once_(complete_at_once) {}

  void submit(std::vector<core::Journal> journals, core::Epoch epoch, core::TimePoint wall_now,
              WriteCallback on_durable) override;
  const std::string& name() const override { return name_; }

  /// Writes submitted and not yet completed.
  size_t pending() const;
  /// Makes the oldest pending write durable (applies it, fires its callback
  /// with its sequence). False if none was pending.
  bool complete_next();
  /// Fails the oldest pending write and, like a real store, every later one.
  bool fail_next(const std::string& why);

  /// What the completed writes hold.
  struct Task {
    core::TaskState state = core::TaskState::pending;
    core::NodeId node;
    core::Epoch epoch = 0;
  };
  bool has_job(core::JobId id) const;
  bool job_cancelled(core::JobId id) const;
  std::optional<Task> task(core::JobId job, core::TaskIndex index) const;
  size_t nodes() const;
  /// The last sequence number made durable (each record counts one).
  uint64_t latest_sequence() const;

 private:
  struct Write {
    std::vector<core::Journal> journals;
    core::Epoch epoch = 0;
    WriteCallback callback;
  };
  void apply(const Write& w);

  bool at_once_;
  std::string name_ = "memory";
  mutable std::mutex mutex_;
  std::deque<Write> pending_;
  std::optional<std::string> failure_;
  std::map<core::JobId, bool> jobs_;  // id -> cancelled
  std::map<std::pair<core::JobId, core::TaskIndex>, Task> tasks_;
  std::map<core::NodeId, core::NodeSpec> nodes_;
  uint64_t sequence_ = 0;
};

}  // namespace claimsched::storage
