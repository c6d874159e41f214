#include "storage/partition_log.hpp"

#include "storage/journal.hpp"

namespace claimsched::storage {

// -- RocksPartitionLog ------------------------------------------------------------

RocksPartitionLog::RocksPartitionLog(std::shared_ptr<PartitionStore> store) : store_(std::move(store)) {}

void RocksPartitionLog::submit(std::vector<core::Journal> journals, core::Epoch epoch,
                               core::TimePoint wall_now, WriteCallback on_durable) {
  auto batch = store_->batch();
  for (const auto& j : journals) append_journal(j, epoch, wall_now, batch);
  // The writer thread runs one RocksDB write at a time and fires its
  // callbacks before the next: the latest sequence then is this write's last.
  auto* store = store_.get();
  store_->submit(std::move(batch), [store, cb = std::move(on_durable)](core::Status st) {
    if (!st) {
      cb(st.error());
      return;
    }
    cb(store->latest_sequence());
  });
}

// -- MemoryPartitionLog ------------------------------------------------------------

void MemoryPartitionLog::submit(std::vector<core::Journal> journals, core::Epoch epoch, core::TimePoint,
                                WriteCallback on_durable) {
  std::optional<std::string> failed_before;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    failed_before = failure_;
    if (!failed_before) pending_.push_back(Write{std::move(journals), epoch, std::move(on_durable)});
  }
  // Callbacks run outside the lock: one may post a message that runs at once.
  if (failed_before) {
    on_durable(core::make_error(core::Errc::io_error, "memory log failed before: " + *failed_before));
    return;
  }
  if (at_once_) complete_next();
}

size_t MemoryPartitionLog::pending() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return pending_.size();
}

void MemoryPartitionLog::apply(const Write& w) {
  uint64_t records = 0;
  for (const auto& j : w.journals) {
    for (const auto& spec : j.nodes_registered) {
      nodes_[spec.id] = spec;
      ++records;
    }
    for (const auto& spec : j.jobs_accepted) {
      jobs_[spec.id] = false;
      ++records;
    }
    for (const auto& spec : j.jobs_cancelled) {
      jobs_[spec.id] = true;
      ++records;
    }
    records += j.pools_removed.size();
    for (const auto& change : j.task_changes)
      for (auto index : change.tasks) {
        tasks_[{change.job, index}] = Task{change.state, change.node, w.epoch};
        ++records;
      }
  }
  sequence_ += std::max<uint64_t>(records, 1);
}

bool MemoryPartitionLog::complete_next() {
  Write w;
  uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (pending_.empty()) return false;
    w = std::move(pending_.front());
    pending_.pop_front();
    apply(w);
    sequence = sequence_;
  }
  w.callback(sequence);
  return true;
}

bool MemoryPartitionLog::fail_next(const std::string& why) {
  std::deque<Write> failed;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (pending_.empty()) return false;
    failure_ = why;
    failed.swap(pending_);
  }
  for (auto& w : failed) w.callback(core::make_error(core::Errc::io_error, why));
  return true;
}

bool MemoryPartitionLog::has_job(core::JobId id) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return jobs_.contains(id);
}

bool MemoryPartitionLog::job_cancelled(core::JobId id) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = jobs_.find(id);
  return it != jobs_.end() && it->second;
}

std::optional<MemoryPartitionLog::Task> MemoryPartitionLog::task(core::JobId job, core::TaskIndex index) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = tasks_.find({job, index});
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

size_t MemoryPartitionLog::nodes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return nodes_.size();
}

uint64_t MemoryPartitionLog::latest_sequence() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return sequence_;
}

}  // namespace claimsched::storage
