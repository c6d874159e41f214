#pragma once

// One partition's scheduler as a pure state machine: the scheduler actor feeds
// it jobs, replies and node deltas, and sends what it puts in the Outbox.
// (DESIGN.md, "Scheduling" and "The claim protocol".)
//
// Pending work is one record per job with a count (fresh tasks are a counter,
// requeued tasks a short list), ordered by class priority then submit time.
// A bounded window of claims is in flight; each claim carries several tasks of
// one job for one node. A reject corrects the view from the node's snapshot
// and the tasks are placed again; after max_claim_attempts rejects they go back
// to the queue with the reason and wait for capacity to change.

#include <array>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/histogram.hpp"
#include "core/placement.hpp"
#include "core/protocol.hpp"

namespace claimsched::core {

struct ClassConfig {
  std::string name;
  /// Higher runs first.
  int32_t priority = 0;
  uint32_t weight = 1;
  PlacementPolicy placement;
};

struct SchedulerConfig {
  PartitionId partition{0};
  Epoch epoch = 1;
  /// Distinguishes the claim ids of schedulers that share nodes.
  uint32_t scheduler_index = 0;
  /// Leaf pools this scheduler places on.
  std::vector<std::string> pools;
  /// Scheduling classes; a job naming no class gets `default_class`.
  std::vector<ClassConfig> classes{ClassConfig{"batch", 0, 1, {}}};
  std::string default_class = "batch";
  uint32_t max_claims_in_flight = 512;
  uint32_t max_tasks_per_claim = 64;
  uint32_t max_claim_attempts = 3;
  /// A claim or confirm unanswered this long is given up (claim) or resent (confirm).
  Duration reply_timeout = std::chrono::seconds(5);
  /// Strict CAS on the node generation instead of the fit check.
  bool strict_cas = false;
  /// Fill-first scans start here (see PlacementRequest::rotation).
  size_t rotation = 0;
  /// Jobs waiting for capacity are looked at again at most this often.
  Duration unpark_interval = std::chrono::milliseconds(5);
  /// After its tasks exhaust max_claim_attempts a job waits this long before
  /// it is placed again, doubling each time up to max_backoff: parallel
  /// schedulers racing for the same last bits of room then take turns
  /// instead of rejecting each other in a loop.
  Duration initial_backoff = std::chrono::milliseconds(10);
  Duration max_backoff = std::chrono::seconds(1);

  Status validate() const;
};

/// What the scheduler wants sent. The actor drains it after every call.
struct Outbox {
  std::vector<ClaimRequest> claims;
  std::vector<ConfirmRequest> confirms;
  std::vector<ReleaseRequest> releases;
  /// Nodes whose generation sequence had a gap: ask for a full snapshot.
  std::vector<NodeId> snapshot_requests;
  /// Jobs that reached a final state since the last drain.
  std::vector<JobId> finished_jobs;

  bool empty() const {
    return claims.empty() && confirms.empty() && releases.empty() && snapshot_requests.empty() &&
           finished_jobs.empty();
  }
  void clear() {
    claims.clear();
    confirms.clear();
    releases.clear();
    snapshot_requests.clear();
    finished_jobs.clear();
  }
};

struct SchedulerStats {
  uint64_t jobs_submitted = 0;
  uint64_t tasks_submitted = 0;
  uint64_t claims_sent = 0;
  uint64_t claims_accepted = 0;
  /// Rejected claims by reason.
  uint64_t rejected_conflict = 0;
  uint64_t rejected_insufficient = 0;
  uint64_t rejected_other = 0;
  uint64_t rejected_stale_epoch = 0;
  uint64_t confirms_sent = 0;
  uint64_t confirms_failed = 0;
  /// Tasks confirmed on a node.
  uint64_t placements = 0;
  uint64_t tasks_finished = 0;
  uint64_t tasks_requeued = 0;
  uint64_t claim_timeouts = 0;
  uint64_t late_replies = 0;
  uint64_t generation_gaps = 0;
  uint64_t gangs_aborted = 0;
  /// Times a job's tasks exhausted their claim attempts and it backed off.
  uint64_t backoffs = 0;
  /// Submit to confirmed, per task, in nanoseconds.
  Histogram placement_latency;

  uint64_t rejected() const {
    return rejected_conflict + rejected_insufficient + rejected_other + rejected_stale_epoch;
  }
  void merge(const SchedulerStats& o);
};

/// Per-task bookkeeping, allocated when a job's first task is placed.
struct TaskRecord {
  /// Node index + 1; 0 while unplaced.
  uint32_t node_plus_one = 0;
  TaskState state = TaskState::pending;
  uint8_t attempts = 0;
};

struct JobRecord {
  JobSpec spec;
  uint32_t pool = 0;
  uint32_t class_index = 0;
  int32_t priority = 0;
  /// Tasks [next_fresh, count) were never placed.
  TaskIndex next_fresh = 0;
  /// Tasks that were placed or tried and came back to the queue.
  std::vector<TaskIndex> requeued;
  std::vector<TaskRecord> tasks;
  std::array<uint32_t, 9> by_state{};
  /// Why its last claims were rejected, in words (see Scheduler::explain).
  std::string reason;
  bool queued = false;
  bool parked = false;
  /// Consecutive times its tasks exhausted their claim attempts; the job then
  /// backs off (doubling) before it is placed again. Reset by a placement.
  uint8_t backoff_level = 0;

  uint32_t pending() const {
    return spec.count - next_fresh + static_cast<uint32_t>(requeued.size());
  }
  uint32_t count_in(TaskState s) const { return by_state[static_cast<size_t>(s)]; }
  bool finished() const;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config);

  const SchedulerConfig& config() const { return config_; }

  /// A node of one of our pools registered (or re-registered) with its snapshot.
  Status add_node(const NodeSpec& spec, const NodeSnapshot& snapshot);

  /// Accepts a job into the queue. Errors name the offending field.
  Status submit(JobSpec job, TimePoint now);

  /// Placement begins: time a job queued before this is not counted as
  /// placement latency (a sim holds its schedulers while it queues a load).
  void start(TimePoint now) { started_at_ = now; }

  /// Fills the window of claims in flight from the queue.
  void schedule(TimePoint now, Outbox& out);

  void on_claim_reply(const ClaimReply& reply, TimePoint now, Outbox& out);
  void on_confirm_reply(const ConfirmReply& reply, TimePoint now, Outbox& out);
  void on_release_reply(const ReleaseReply& reply, TimePoint now, Outbox& out);
  void on_node_delta(const NodeDelta& delta, TimePoint now, Outbox& out);
  /// Periodic: gives up on unanswered claims, resends unanswered confirms.
  void on_tick(TimePoint now, Outbox& out);

  const SchedulerStats& stats() const { return stats_; }
  const ClusterView& view() const { return view_; }
  const JobRecord* job(JobId id) const;
  size_t queued_jobs() const { return queue_.size(); }
  size_t parked_jobs() const { return parked_.size(); }
  size_t backing_off_jobs() const { return backoff_.size(); }
  size_t claims_in_flight() const { return in_flight_.size(); }
  uint64_t pending_tasks() const { return pending_tasks_; }
  uint64_t running_tasks() const { return running_tasks_; }
  /// True once a node told us a newer owner has the partition.
  bool fenced() const { return fenced_; }
  /// Why a job is pending, in words (computed now, from the current view).
  std::string explain(JobId id) const;
  /// Calls f for every job, in id order.
  void for_each_job(const std::function<void(const JobRecord&)>& f) const;
  /// Checks that every job's task counts add up and every task is in exactly
  /// one state; returns the first problem found.
  Status check_accounting() const;

 private:
  struct InFlightClaim {
    ClaimRequest request;
    NodeIndex node = 0;
    TimePoint sent_at{0};
    bool accepted = false;
    bool confirming = false;
    /// Gang members wait for the whole gang after their confirm succeeded.
    bool confirmed = false;
    /// 0 unless the claim is part of a gang.
    uint64_t gang = 0;
  };
  /// A gang's claims: all accepted -> confirm all; all confirmed -> running.
  /// Any failure -> release what was granted and requeue the whole gang.
  struct Gang {
    JobId job;
    uint32_t outstanding = 0;
    bool confirming = false;
    bool failed = false;
    std::string why;
    std::vector<ClaimId> claims;
  };
  struct QueueKey {
    int32_t neg_priority;
    TimePoint submit_time;
    JobId job;
    friend auto operator<=>(const QueueKey&, const QueueKey&) = default;
  };

  QueueKey key_of(const JobRecord& j) const {
    return QueueKey{-j.priority, j.spec.submit_time, j.spec.id};
  }
  void enqueue(JobRecord& j);
  void dequeue(JobRecord& j);
  void park(JobRecord& j);
  PlacementRequest request_for(const JobRecord& j, bool explain) const;
  void unpark_all(TimePoint now);
  bool place_some(JobRecord& j, TimePoint now, Outbox& out);
  bool place_gang(JobRecord& j, TimePoint now, Outbox& out);
  ClaimRequest make_claim(JobRecord& j, NodeIndex n, std::vector<TaskIndex> tasks);
  void send_claim(ClaimRequest request, NodeIndex n, uint64_t gang, TimePoint now, Outbox& out);
  std::vector<TaskIndex> take_pending(JobRecord& j, uint32_t n);
  void set_task_state(JobRecord& j, TaskIndex t, TaskState s);
  void return_to_queue(JobRecord& j, const std::vector<TaskIndex>& tasks, bool count_attempt,
                       const std::string& why, TimePoint now);
  void observe_generation(NodeIndex n, const NodeSnapshot& s, bool is_change, Outbox& out);
  void gang_reply(uint64_t gang_id, TimePoint now, Outbox& out);
  void confirm_claim(InFlightClaim& c, TimePoint now, Outbox& out);
  void mark_running(JobRecord& j, const InFlightClaim& c, TimePoint now);
  void on_fenced();
  void maybe_finished(JobRecord& j, Outbox& out);

  SchedulerConfig config_;
  ClusterView view_;
  std::vector<uint32_t> pool_ids_;  // config pool name order -> view pool index
  std::unordered_map<JobId, JobRecord> jobs_;
  std::set<QueueKey> queue_;
  std::vector<JobId> parked_;
  /// Jobs backing off after rejected claims, by when they may be placed again.
  std::set<std::pair<TimePoint, JobId>> backoff_;
  bool capacity_grew_ = false;
  TimePoint last_unpark_ = TimePoint::min();
  std::unordered_map<ClaimId, InFlightClaim> in_flight_;
  std::unordered_map<uint64_t, Gang> gangs_;
  uint64_t next_claim_ = 1;
  uint64_t next_gang_ = 1;
  uint64_t pending_tasks_ = 0;
  uint64_t running_tasks_ = 0;
  bool fenced_ = false;
  TimePoint started_at_ = TimePoint::min();
  SchedulerStats stats_;
};

}  // namespace claimsched::core
