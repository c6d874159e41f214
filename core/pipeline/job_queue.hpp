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
// then id.
//
// Jobs of the same shape (JobRecord::queue.shape, set by the scheduler: same
// pool, class, task resources and constraints, placed one batch at a time) wait
// together in a group. When capacity grows the group is put back in line as a
// whole, cheaply: its jobs are looked at from the group in key order, merged
// with the queued jobs, without moving between sets; and once the placement
// finds no room for one of them (no_room()) the rest of the group, which could
// not fit either, waits again at once. A pass with many waiting jobs of one
// shape then costs one look, not one per job (the "thundering herd").
// Jobs without a shape (0: gangs, reservations, backfilling, squatters) wait
// one by one as before. Seams for later stages: a lock-aware predictive order (Ganeti)
// changes `rank`; backfilling (backfill.hpp) books future starts for waiting
// jobs in this order and keeps later jobs from delaying them.

#include <set>
#include <unordered_map>
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
  /// j waits for capacity for a reason of its own (an allotment, a limit; or
  /// no room, for a job without a shape).
  void wait_for_capacity(JobRecord& j);
  /// The placement found no room for j's shape: j waits for capacity, and so
  /// does the rest of its shape's group if it was put back in line.
  void no_room(JobRecord& j);
  /// Sets the shape j waits with (0: none). Only while j is not waiting.
  void set_shape(JobRecord& j, uint32_t shape) {
    if (j.queue.state != QueueState::waiting_for_capacity) j.queue.shape = shape;
  }
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
  /// The next job to look at, if any: the first queued job, or the next job of
  /// a group put back in line (it stays waiting_for_capacity meanwhile).
  std::optional<JobId> front() const {
    const Key* q = queued_.empty() ? nullptr : &*queued_.begin();
    const Key* h = heads_.empty() ? nullptr : &heads_.begin()->first;
    if (!q && !h) return std::nullopt;
    return (!h || (q && *q < *h)) ? q->job : h->job;
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
  /// Calls f(job) for every job waiting for capacity, in the queue's order
  /// within the jobs without a shape and within each shape's group (not
  /// across them).
  template <class F>
  void for_each_waiting(F&& f) const {
    for (const auto& key : waiting_) f(key.job);
    for (const auto& [shape, g] : groups_)
      for (const auto& key : g.jobs) f(key.job);
  }

  /// Calls f(job) for every waiting job of `shape`'s group.
  template <class F>
  void for_each_in_group(uint32_t shape, F&& f) const {
    if (auto g = groups_.find(shape); g != groups_.end())
      for (const auto& key : g->second.jobs) f(key.job);
  }

  size_t queued() const { return queued_.size(); }
  size_t waiting() const { return waiting_.size() + grouped_; }

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
  /// The waiting jobs of one shape. While it is back in line (`head` is not
  /// jobs.end()), its jobs from `head` on count as in line, and heads_ holds
  /// the key at `head`.
  struct Group {
    std::set<Key> jobs;
    std::set<Key>::iterator head;
    bool in_line = false;
  };
  void unpark_all(TimePoint now, TaskTable& table);
  void unpark_ahead_of_queue(TaskTable& table);
  /// Moves g's place in line to `head` (jobs.end(): it waits again).
  void set_head(uint32_t shape, Group& g, std::set<Key>::iterator head);
  void erase_grouped(JobRecord& j);
  std::set<Key>::iterator insert_grouped(JobRecord& j);

  QueueConfig config_;
  std::set<Key> queued_;
  std::set<Key> waiting_;  // jobs without a shape
  std::unordered_map<uint32_t, Group> groups_;
  std::set<std::pair<Key, uint32_t>> heads_;  // each group in line: its next job
  size_t grouped_ = 0;

  std::set<std::pair<TimePoint, JobId>> backing_off_;
  bool capacity_grew_ = false;
  TimePoint last_unpark_ = TimePoint::min();
};

}  // namespace claimsched::core
