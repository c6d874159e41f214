#pragma once

// The queue stage: which job is looked at next. It owns the order and each
// job's QueueState (JobRecord::queue): queued jobs in key order; jobs that
// found no room, waiting for capacity (in key order, looked at again when a
// node's availability grows, at most every unpark_interval); jobs whose tasks
// exhausted their claim attempts, backing off until a time (exponential,
// capped, then placed again).
//
// The key: class priority (best first), then the policy's rank (higher first:
// jobs further below their fair share; 0 without a policy), then submit time,
// then id. Seams for later stages: a lock-aware predictive order (Ganeti)
// changes `rank`; backfilling (backfill.hpp) books future starts for waiting
// jobs in this order and keeps later jobs from delaying them.

#include <set>
#include <utility>

#include "core/pipeline/task_table.hpp"

namespace claimsched::core {

struct QueueConfig {
  /// Jobs waiting for capacity are looked at again at most this often.
  Duration unpark_interval = std::chrono::milliseconds(5);
  /// The first backoff, doubled on each consecutive one up to max_backoff.
  Duration initial_backoff = std::chrono::milliseconds(10);
  Duration max_backoff = std::chrono::seconds(5);
};

class JobQueue {
 public:
  explicit JobQueue(QueueConfig config = {}) : config_(config) {}
  const QueueConfig& config() const { return config_; }

  /// Puts j in line if it has pending tasks and is idle (no-op otherwise).
  void enqueue(JobRecord& j);
  /// Takes j out of whatever state it is in (it becomes idle).
  void remove(JobRecord& j);
  /// j found no room: it waits for capacity.
  void wait_for_capacity(JobRecord& j);
  /// j's tasks exhausted their claim attempts: it backs off (doubling) and
  /// is placed again afterwards. Returns when.
  TimePoint back_off(JobRecord& j, TimePoint now);
  /// A task of j was placed: its next backoff starts from the first again.
  void reset_backoff(JobRecord& j) { j.queue.backoff_level = 0; }
  /// j's rank changed: it moves within its state's order.
  void rerank(JobRecord& j, int64_t rank);
  /// j is in its class's lock queue: nothing puts it in line until ungate().
  void gate(JobRecord& j);
  /// j holds its running slot and its locks: it goes in line for placement.
  void ungate(JobRecord& j);
  /// A waiting job jumps the rate limit (room was freed for it).
  void wake(JobRecord& j);

  /// Moves jobs whose backoff ended, and (capacity grew) waiting jobs, back in
  /// line. `capacity_grew` is sticky until waiting jobs were looked at.
  void refresh(TimePoint now, bool capacity_grew, TaskTable& table);
  /// Capacity grew (seen by someone else than refresh()).
  void note_growth() { capacity_grew_ = true; }
  /// The next job to look at, if any.
  std::optional<JobId> front() const {
    return queued_.empty() ? std::nullopt : std::optional<JobId>(queued_.begin()->job);
  }
  /// When refresh() has something to do that only time brings, or kNever
  /// (`capacity_grew`: growth seen since the last refresh).
  TimePoint next_wakeup(bool capacity_grew) const;

  /// a comes before b in the queue's order (whatever their states).
  static bool ahead(const JobRecord& a, const JobRecord& b) { return key_of(a) < key_of(b); }
  /// Calls f(job) for every job in line, in the queue's order.
  template <class F>
  void for_each_queued(F&& f) const {
    for (const auto& key : queued_) f(key.job);
  }
  /// Calls f(job) for every job waiting for capacity, in the queue's order.
  template <class F>
  void for_each_waiting(F&& f) const {
    for (const auto& key : waiting_) f(key.job);
  }

  size_t queued() const { return queued_.size(); }
  size_t waiting() const { return waiting_.size(); }
  size_t backing_off() const { return backing_off_.size(); }

 private:
  struct Key {
    int32_t neg_priority;
    int64_t neg_rank;
    TimePoint submit_time;
    JobId job;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  static Key key_of(const JobRecord& j) {
    return Key{-j.priority, -j.queue.rank, j.spec.submit_time, j.spec.id};
  }
  void unpark_all(TimePoint now, TaskTable& table);
  void unpark_ahead_of_queue(TaskTable& table);

  QueueConfig config_;
  std::set<Key> queued_;
  std::set<Key> waiting_;
  std::set<std::pair<TimePoint, JobId>> backing_off_;
  bool capacity_grew_ = false;
  TimePoint last_unpark_ = TimePoint::min();
};

}  // namespace claimsched::core
