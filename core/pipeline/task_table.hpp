#pragma once

// The task table: every job of the partition and the state of each of its
// tasks (DESIGN.md: pending -> claimed -> running -> a final state). It owns
// the job records and the task counters; the other stages change task states
// only through it, so the counters always add up (check_accounting).
//
// Pending work is one record per job with a count: tasks [next_fresh, count)
// were never placed (a counter, not a list), tasks that came back to the
// queue are a short stack. Per-task records are allocated on the job's first
// placement, so a million queued tasks cost one record per job.

#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/error.hpp"
#include "core/job.hpp"
#include "core/pipeline/pending_depths.hpp"
#include "core/task_end.hpp"

namespace claimsched::core {

struct TaskRecord {
  /// The node it runs on, or ran on last once final (`status` says where a
  /// finished task ran); none while pending or claimed (the claim knows its
  /// node).
  std::optional<NodeIndex> node;
  TaskState state = TaskState::pending;
  /// Claims of it rejected or timed out since it last ran (ClaimWindow's retry budget).
  uint8_t attempts = 0;
  /// Its placement is in the journal: a return to the queue must be too.
  bool journaled = false;
  /// Its node reported it started (DUCC: it passed initialization; a victim
  /// still initializing wastes less work than one that has been running).
  bool initialized = false;
  /// Times it failed / its node was lost (retries are bounded by the job).
  uint16_t failures = 0;
  uint16_t losses = 0;
  /// The exit code of its last run (0 until it ran).
  int32_t exit_code = 0;
  /// How its last run ended (reason none until one did).
  TaskEnd end;
  /// When its current placement was confirmed (allocations are ordered by it).
  TimePoint started{0};
};

/// Where a job is in the queue stage (JobQueue writes it; everyone may read it).
enum class QueueState : uint8_t {
  /// Nothing pending, or taken out (cancelled, a gang being replaced).
  idle = 0,
  /// In line for placement.
  queued,
  /// Placement found no room; looked at again when capacity grows.
  waiting_for_capacity,
  /// Its tasks exhausted their claim attempts; placed again when the backoff ends.
  backing_off,
  /// In its class's lock queue: in line for a running slot, or holding one
  /// and waiting on a lock (LockQueue). Placed once it holds its locks.
  gated,
};

std::string_view to_string(QueueState s);

struct JobRecord {
  JobSpec spec;
  /// What every task runs (none for synthetic jobs).
  LaunchRef launch;
  /// The view's index of its pool, its class (SchedulerConfig::classes) and
  /// that class's priority.
  uint32_t pool = 0;
  uint32_t class_index = 0;
  int32_t priority = 0;
  /// Tasks [next_fresh, count) were never placed.
  TaskIndex next_fresh = 0;
  /// Tasks that were placed or tried and came back, lowest index on top.
  std::vector<TaskIndex> requeued;
  /// Per task, allocated on the first placement (empty: all pending).
  std::vector<TaskRecord> tasks;
  TaskCounts by_state{};
  /// fixed_share: its claimed and running tasks count against its user's
  /// allotments (the table keeps the sums; a reservation counts its machine,
  /// which the scheduler knows).
  bool allotted = false;
  /// The user cancelled it: nothing of it is placed or confirmed any more.
  bool cancelled = false;
  /// Some task of it started on its node (DUCC's "passed initialization").
  bool initialized = false;
  /// What its tasks showed so far (DUCC's prediction reads it): how long a
  /// task took from its confirm to its start, and from its confirm to its
  /// success, summed, with how many were measured.
  struct Observed {
    uint32_t starts = 0;
    uint32_t successes = 0;
    Duration start_time{0};
    Duration run_time{0};
  } observed;
  /// When its first task was confirmed on a node and when its last ended
  /// (the scheduler's clock; kNever until then).
  TimePoint first_running = kNever;
  TimePoint finished_at = kNever;

  // The queue stage's part of the record (see JobQueue): written only there.
  struct QueueSlot {
    QueueState state = QueueState::idle;
    /// Consecutive backoffs; reset when a task of the job is placed.
    uint8_t backoff_level = 0;
    /// The group it waits for capacity with (jobs of one shape; 0: alone).
    uint32_t shape = 0;
    /// The rank its queue key was computed with.
    int64_t rank = 0;
    /// backing_off: when it may be placed again.
    TimePoint until{0};
  } queue;

  uint32_t pending() const {
    return spec.count - next_fresh + static_cast<uint32_t>(requeued.size());
  }
  uint32_t count_in(TaskState s) const { return by_state[static_cast<size_t>(s)]; }
  /// Claimed or running.
  uint32_t held() const { return count_in(TaskState::claimed) + count_in(TaskState::running); }
  bool finished() const;
  const TaskRecord* task(TaskIndex t) const {
    return t < tasks.size() ? &tasks[t] : nullptr;
  }
  bool in_state(TaskIndex t, TaskState s) const {
    const TaskRecord* r = task(t);
    return r ? r->state == s : s == TaskState::pending && t < spec.count;
  }
};

class TaskTable {
  /// Whether a job still has tasks pending (PendingDepths drops stale entries by it).
  struct Waiting {
    const TaskTable* table;
    bool operator()(JobId id) const {
      const JobRecord* j = table->find(id);
      return j && j->count_in(TaskState::pending) > 0;
    }
  };
  Waiting waiting() const { return Waiting{this}; }

 public:
  /// Adds a job whose tasks are all pending. Errors: the id exists.
  Expected<JobRecord*> add(JobRecord job);
  JobRecord* find(JobId id);
  const JobRecord* find(JobId id) const;
  /// The job, which must exist.
  JobRecord& at(JobId id) { return jobs_.at(id); }
  const JobRecord& at(JobId id) const { return jobs_.at(id); }
  size_t size() const { return jobs_.size(); }

  /// Moves task t of j to state s, keeping the counters.
  void set_state(JobRecord& j, TaskIndex t, TaskState s);
  /// Takes up to n pending tasks (requeued first, then fresh), now claimed.
  std::vector<TaskIndex> take_pending(JobRecord& j, uint32_t n);
  /// Puts tasks back to pending (unplaced); returns those whose placement
  /// was journaled (that return must be journaled too).
  std::vector<TaskIndex> requeue(JobRecord& j, const std::vector<TaskIndex>& tasks);
  /// Ends every pending task of j in `state` (cancel); returns them.
  std::vector<TaskIndex> end_pending(JobRecord& j, TaskState state);
  /// Ends pending task t of j (one that was placed before) in `state`.
  void end_requeued(JobRecord& j, TaskIndex t, TaskState state);
  /// Restore: pending tasks below next_fresh are given, the rest stay fresh.
  void set_restored_pending(JobRecord& j, TaskIndex next_fresh, std::vector<TaskIndex> requeued);

  /// Tasks running on node n, by job then index (a scan of every job: for
  /// rare events such as a node lost).
  std::vector<TaskRef> running_on(NodeIndex n) const;

  uint64_t pending_tasks() const { return pending_tasks_; }
  /// Jobs and tasks pending in (pool, class index), kept as tasks change state.
  PendingDepths::Row pending_in(uint32_t pool, uint32_t cls) const { return depths_.row(pool, cls); }
  /// The earliest submit time of a job with tasks pending there (kNever: none).
  TimePoint oldest_pending_in(uint32_t pool, uint32_t cls) const { return depths_.oldest(pool, cls, waiting()); }
  /// Pools with a pending row, and the class indexes with one in pool p.
  uint32_t pending_pools() const { return depths_.pools(); }
  uint32_t pending_classes(uint32_t pool) const { return depths_.classes(pool); }
  uint64_t running_tasks() const { return running_tasks_; }
  /// What the jobs of pool p hold (claimed or running tasks; pool
  /// resource_limits count it).
  Resources held_in_pool(uint32_t p) const { return p < held_by_pool_.size() ? held_by_pool_[p] : Resources{}; }

  /// What one user's allotted jobs hold (claimed or running), in all and by class index.
  struct UserHold {
    Resources total;
    std::vector<Resources> by_class;
  };
  /// Null: the user's allotted jobs never held anything.
  const UserHold* allotted_held(const std::string& user) const {
    auto it = allotted_by_user_.find(user);
    return it == allotted_by_user_.end() ? nullptr : &it->second;
  }

  /// Keep the set of jobs that hold tasks (claimed or running), for
  /// backfilling's profile of when room frees; off by default (it costs a
  /// set update whenever a job starts or stops holding).
  void track_holders(bool on) { track_holders_ = on; }
  /// Jobs with claimed or running tasks (empty unless track_holders).
  const std::set<JobId>& holders() const { return holders_; }

  /// Calls f for every job, in id order.
  void for_each_in_id_order(const std::function<void(const JobRecord&)>& f) const;
  /// Calls f for every job not finished, in id order: the policy's snapshot
  /// reads only those, each cycle, while finished jobs pile up for status.
  void for_each_unfinished_in_id_order(const std::function<void(const JobRecord&)>& f) const;
  /// Every job's counts add up, and every task is in exactly one state.
  Status check_accounting() const;

 private:
  std::unordered_map<JobId, JobRecord> jobs_;
  std::vector<Resources> held_by_pool_;
  std::unordered_map<std::string, UserHold> allotted_by_user_;
  uint64_t pending_tasks_ = 0;
  uint64_t running_tasks_ = 0;
  PendingDepths depths_;
  bool track_holders_ = false;
  std::set<JobId> holders_;
  /// Unfinished jobs by id, plus finished ones not yet dropped: a job is
  /// dropped when a walk finds it finished and the finished make up half the
  /// list, so keeping it costs nothing on the task-state path. (A walk
  /// compacting an index is still a const walk of the jobs.) Pointers: jobs
  /// are never erased, and an unordered_map keeps its elements in place.
  mutable std::vector<const JobRecord*> unfinished_;
  void list_unfinished(const JobRecord& j);
};

}  // namespace claimsched::core
