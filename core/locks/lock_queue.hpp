#pragma once

// The lock-aware queue in front of placement (Ganeti's job queue): per queue
// (a class) a running limit — jobs running or waiting on a lock — and an
// order, fifo or predictive. Jobs of a queue wait here until the queue has a
// free running slot; then the best one starts: it takes its locks from the
// partition's LockManager and either holds them all (placement may go on) or
// waits on a lock, keeping its slot, as in Ganeti.
//
// fifo: submit time, then id. predictive: the seed's weight (static
// predictive value against the locks running jobs hold, aged), then submit
// time, then id. A job older than aging_k ticks has weight 0, so only older
// jobs can pass it. Priority comes first, as in the seed: jobs of one queue
// share their class's priority.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/locks/lock_manager.hpp"

namespace claimsched::core {

enum class QueueOrder : uint8_t { fifo = 0, predictive };
std::string_view to_string(QueueOrder order);
std::optional<QueueOrder> parse_queue_order(std::string_view text);

struct LockQueueSettings {
  QueueOrder order = QueueOrder::fifo;
  /// Jobs running or waiting on a lock at once; 0: no limit.
  uint32_t running_limit = 0;
  /// The seed's base_value (default 1), in tenths.
  LockWeight base_value = kTenths;
  /// Age is counted in these ticks (the seed's example: 30 s).
  Duration aging_tick = std::chrono::seconds(30);
  /// The seed's K: after this many ticks a job's weight is 0. The seed gives
  /// no default. 240 ticks of 30 s is 2 hours: K * tick must exceed the waits
  /// of a loaded queue, or nearly every job that starts is already K ticks old
  /// and the order is fifo again (bench/lock_queue.sh: K = 10 gains 1.07x
  /// jobs/s on its contention workload, K = 150..240 1.34-1.37x).
  uint32_t aging_k = 240;

  /// Jobs that declare no lock still pass through a queue with a running
  /// limit or a predictive order (they take a slot and are ordered).
  bool gates_every_job() const { return running_limit > 0 || order == QueueOrder::predictive; }
  Status validate() const;
};

class LockQueue {
 public:
  /// Settings per queue index (the scheduler's class index).
  explicit LockQueue(std::vector<LockQueueSettings> queues = {});
  const LockQueueSettings& settings(uint32_t queue) const { return queues_.at(queue).settings; }
  size_t queue_count() const { return queues_.size(); }

  /// A job in line for a running slot. `queued_at` starts its age.
  void add(JobId job, uint32_t queue, TimePoint submitted, TimePoint queued_at, LockDeclaration declared);
  /// A job that ran before a restart: it holds its slot and its locks.
  void adopt(JobId job, uint32_t queue, const LockDeclaration& declared);

  struct Started {
    JobId job;
    /// Set when it waits on a lock (a transition into waiting).
    std::optional<LockBlock> block;
  };
  /// Resolves unknown locks into the ones a job really takes when it starts
  /// (the bench knows them; the scheduler does not, and leaves them unknown).
  using Resolver = std::function<LockDeclaration(JobId, const LockDeclaration&)>;
  /// Starts jobs while their queue has a free slot, best first.
  std::vector<Started> start_ready(TimePoint now, const Resolver& resolve = {});
  /// The job ended (finished, cancelled, preempted back to pending) or left
  /// the line: its slot and locks are free. Returns the jobs that now hold
  /// all their locks, in the order they started.
  std::vector<JobId> finish(JobId job);

  bool is_pending(JobId job) const { return pending_.contains(job); }
  bool is_started(JobId job) const { return started_.contains(job); }
  /// Started and holding every lock.
  bool is_running(JobId job) const { return is_started(job) && !locks_.blocked_on(job); }
  std::optional<LockBlock> blocked_on(JobId job) const { return locks_.blocked_on(job); }

  /// Where a pending job stands: its value against the locks held now, its
  /// age and its weight.
  struct Standing {
    PredictiveValue value;
    int64_t age_ticks = 0;
    double weight = 0;
    QueueOrder order = QueueOrder::fifo;
    uint32_t running = 0;
    uint32_t running_limit = 0;
  };
  std::optional<Standing> standing(JobId job, TimePoint now) const;
  /// The largest age, in ticks, of a pending job that a younger job of its
  /// queue passed over, over every start so far (aging bounds it below K).
  int64_t oldest_passed_over_ticks() const { return oldest_passed_over_ticks_; }

  /// Jobs of `queue` running or waiting on a lock.
  uint32_t running_in(uint32_t queue) const { return queues_.at(queue).started; }
  size_t pending() const { return pending_.size(); }
  size_t started() const { return started_.size(); }
  uint64_t waiting_transitions() const { return waiting_transitions_; }
  const LockManager& locks() const { return locks_; }

 private:
  struct Pending {
    uint32_t queue = 0;
    TimePoint submitted{0};
    TimePoint queued_at{0};
    LockDeclaration declared;
  };
  struct Queue {
    LockQueueSettings settings;
    /// Pending jobs in fifo order.
    std::set<std::pair<TimePoint, JobId>> line;
    uint32_t started = 0;
  };
  /// The best pending job of q now, or nothing.
  std::optional<JobId> best(const Queue& q, TimePoint now, const std::vector<HeldLocks>& held) const;

  std::vector<Queue> queues_;
  std::map<JobId, Pending> pending_;
  /// Started jobs and their queue.
  std::map<JobId, uint32_t> started_;
  LockManager locks_;
  uint64_t waiting_transitions_ = 0;
  int64_t oldest_passed_over_ticks_ = 0;
};

}  // namespace claimsched::core
