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
#include <map>
#include <utility>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/explain.hpp"
#include "core/histogram.hpp"
#include "core/placement.hpp"
#include "core/protocol.hpp"
#include "core/status.hpp"

namespace claimsched::core {

struct ClassConfig {
  std::string name;
  /// Higher runs first.
  int32_t priority = 0;
  uint32_t weight = 1;
  PlacementPolicy placement;
};

/// Claim ids are the owner's epoch followed by a counter of this many bits.
inline constexpr int kClaimCounterBits = 40;
inline constexpr Epoch kMaxEpoch = Epoch{1} << (64 - kClaimCounterBits);

struct SchedulerConfig {
  PartitionId partition{0};
  Epoch epoch = 1;
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
  /// Record what must be durable in the journal (see Scheduler::take_journal).
  bool journal = false;
  /// After a restart, tasks the store says run on a node that has not
  /// reported again by then are declared lost and placed again.
  Duration recovery_grace = std::chrono::seconds(30);

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

/// Changes the scheduler made that must be durable before what depends on
/// them is sent: a job is acknowledged, and a placement confirmed, only after
/// the batch holding its entry is durable. The actor writes them to the
/// partition store (without a store it drops them).
struct Journal {
  /// New task states: placed (claimed on a node, about to be confirmed), back
  /// to pending, or final.
  struct TaskChange {
    JobId job;
    std::vector<TaskIndex> tasks;
    TaskState state = TaskState::pending;
    NodeId node;
    ClaimId claim_id;
    int32_t exit_code = 0;
    /// Final states: why the run ended.
    TaskEnd end;
  };
  std::vector<JobSpec> jobs_accepted;
  std::vector<TaskChange> task_changes;
  std::vector<NodeSpec> nodes_registered;
  /// Jobs the user cancelled (their record is kept, marked cancelled).
  std::vector<JobSpec> jobs_cancelled;

  bool empty() const {
    return jobs_accepted.empty() && task_changes.empty() && nodes_registered.empty() &&
           jobs_cancelled.empty();
  }
  void clear() {
    jobs_accepted.clear();
    task_changes.clear();
    nodes_registered.clear();
    jobs_cancelled.clear();
  }
};

/// A task as the partition store remembers it, for Scheduler::restore_job.
struct RestoredTask {
  RestoredTask() = default;
  RestoredTask(TaskIndex i, TaskState s, NodeId n, int32_t code, TaskEnd e = {})
      : index(i), state(s), node(n), exit_code(code), end(e) {}

  TaskIndex index = 0;
  TaskState state = TaskState::pending;
  /// The node it was placed on (claimed or running), else zero.
  NodeId node;
  int32_t exit_code = 0;
  /// Final states: why the run ended.
  TaskEnd end;
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
  /// Tasks run again after they failed, or after their node was lost.
  uint64_t tasks_retried = 0;
  uint64_t tasks_requeued = 0;
  uint64_t claim_timeouts = 0;
  uint64_t late_replies = 0;
  uint64_t generation_gaps = 0;
  uint64_t gangs_aborted = 0;
  /// Allocations taken away by policy / because of their node.
  uint64_t preemptions = 0;
  uint64_t evictions = 0;
  /// Times a job's tasks exhausted their claim attempts and it backed off.
  uint64_t backoffs = 0;
  /// Recovery: tasks the store placed on a node that no longer holds them.
  uint64_t tasks_lost = 0;
  /// Recovery: allocations or claims on nodes that the scheduler's records
  /// do not back, released.
  uint64_t reconcile_releases = 0;
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
  /// Its placement is in the journal: a return to the queue must be too.
  bool journaled = false;
  /// When its current placement was confirmed (allocations are ordered by it).
  TimePoint started{0};
  /// Times it failed / its node was lost (retries are bounded by the job).
  uint16_t failures = 0;
  uint16_t losses = 0;
  /// The exit code of its last run (0 until it ran).
  int32_t exit_code = 0;
  /// How its last run ended (reason none until one did).
  TaskEnd end;
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
  /// Within its priority, a higher boost is placed first (the fair-share
  /// policy boosts jobs below their fair share: see set_fair_share).
  int32_t boost = 0;
  /// The job's fair share in tasks (0: unknown). Once it holds that many
  /// (claimed or running) it goes behind the jobs still below theirs, at
  /// once, not only at the policy's next cycle.
  uint32_t fair_tasks = 0;
  /// The boost its queue position was computed with.
  int32_t queued_boost = 0;
  /// Allocations of this job taken away: by policy (preempted) or because
  /// their node went away or was drained (evicted); see Scheduler::preempt.
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  /// The last removal, in words (what, why, for whom).
  std::string last_removal;
  /// Tasks whose last run was preempted for another job: that job.
  std::map<TaskIndex, JobId> preempted_by;
  /// What every task runs (none for synthetic jobs).
  LaunchRef launch;
  /// The user cancelled it: nothing of it is placed or confirmed any more.
  bool cancelled = false;
  /// When its first task was confirmed on a node, and when its last ended
  /// (the scheduler's clock; kNever until then).
  TimePoint first_running = kNever;
  TimePoint finished_at = kNever;
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

  /// Rebuilds a job from the partition store after a restart. Final tasks stay
  /// final; tasks recorded on a node count as running until that node reports
  /// (reconcile_node) or recovery_grace passes; the rest are pending.
  Status restore_job(JobSpec job, std::vector<RestoredTask> tasks, TimePoint now,
                     bool cancelled = false);

  /// Compares a node's full report with what the scheduler believes, on every
  /// (re)registration. The documented rule: the scheduler's durable records
  /// decide where a task runs. An allocation of ours the records place on this
  /// node is adopted; one they do not (unknown job, task pending, final or on
  /// another node) is released; a live claim of ours that is not in flight is
  /// released; a task the records place here that the node does not hold is
  /// lost and placed again, unless the node reports it finished (it ended
  /// while this scheduler was away): then it ends as the node saw it end.
  void reconcile_node(const NodeReport& report, TimePoint now, Outbox& out);

  /// Orders `job` within its priority: a higher boost first, until the job
  /// holds `fair_tasks` tasks (0: no limit); then it goes behind every job
  /// that is still below its share.
  void set_fair_share(JobId job, int32_t boost, uint32_t fair_tasks);

  /// Takes a running task away (policy preemption, or eviction), with the
  /// reason in words: its allocation is released on its node with `kind`
  /// (TaskState::preempted or TaskState::evicted) as the end state, and the
  /// task goes back to the queue to run again. When the node has freed it,
  /// `for_job` (the preemptor) is looked at before anything else that waits,
  /// so the room goes to it. Errors: unknown or not running.
  Status preempt(TaskRef task, TaskState kind, const std::string& why, TimePoint now, Outbox& out,
                 std::optional<JobId> for_job = std::nullopt);

  /// Cancels a job: pending tasks end as cancelled, running ones are released
  /// on their nodes (the agent kills them) and end as cancelled. Errors:
  /// unknown job, or a job that already ended.
  Status cancel(JobId job, TimePoint now, Outbox& out);

  /// A node stopped answering (its heartbeats stopped for the grace period):
  /// it takes no more claims, and what ran there is lost and goes back to the
  /// queue (within the job's max_lost_retries). When the node comes back it
  /// registers again and reconcile_node decides what it still runs.
  void node_down(NodeId node, TimePoint now, Outbox& out);

  /// What must be durable before the confirms and acknowledgements of the
  /// same step are sent; empty unless config().journal.
  Journal take_journal() { return std::exchange(journal_, Journal{}); }

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
  /// When schedule() has work that waits only for time to pass (a job's
  /// backoff ends, or waiting jobs may be looked at again after capacity
  /// grew), or kNever. The actor wakes itself then.
  TimePoint next_wakeup() const;

  const SchedulerStats& stats() const { return stats_; }
  const ClusterView& view() const { return view_; }
  const JobRecord* job(JobId id) const;
  size_t queued_jobs() const { return queue_.size(); }
  size_t parked_jobs() const { return parked_.size(); }
  size_t backing_off_jobs() const { return backoff_.size(); }
  size_t claims_in_flight() const { return in_flight_.size(); }
  uint64_t pending_tasks() const { return pending_tasks_; }
  /// Tasks restored on a node that has not reported since the restart.
  uint64_t unverified_tasks() const;
  uint64_t running_tasks() const { return running_tasks_; }
  /// True once a node told us a newer owner has the partition.
  bool fenced() const { return fenced_; }
  /// Why a job is pending, in words (computed now, from the current view).
  std::string explain(JobId id) const;
  /// The same as data: verdict, words and placement counts.
  Expected<Explanation> explanation(JobId id) const;
  /// What a client sees of a job (with its tasks, or without for listings).
  Expected<JobView> job_view(JobId id, bool with_tasks) const;
  /// Calls f(job, tasks, node) for every claim in flight (placements under
  /// way), in claim id order.
  void for_each_claim_in_flight(
      const std::function<void(JobId, const std::vector<TaskIndex>&, NodeId)>& f) const;
  /// Calls f(task, node, resources) for every preempted or evicted task whose
  /// node has not freed it yet.
  void for_each_releasing(const std::function<void(TaskRef, NodeId, const Resources&)>& f) const;
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
    int32_t neg_boost;
    TimePoint submit_time;
    JobId job;
    friend auto operator<=>(const QueueKey&, const QueueKey&) = default;
  };

  QueueKey key_of(const JobRecord& j) const {
    return QueueKey{-j.priority, -j.queued_boost, j.spec.submit_time, j.spec.id};
  }
  void enqueue(JobRecord& j);
  void dequeue(JobRecord& j);
  void park(JobRecord& j);
  PlacementRequest request_for(const JobRecord& j, bool explain) const;
  void unpark_all(TimePoint now);
  void unpark(JobRecord& j);
  void unpark_ahead_of_queue();
  int32_t effective_boost(const JobRecord& j) const;
  /// Moves the job within the queue (or the waiting set) if its effective
  /// boost changed.
  void rekey(JobRecord& j);
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
  void maybe_finished(JobRecord& j, TimePoint now, Outbox& out);
  void record_final(JobRecord& j, const NodeEvent& ev);
  /// A task left its node (ended, or its node was lost): by the job's retry
  /// limits it runs again or ends in `final_state`.
  void end_task(JobRecord& j, const NodeEvent& ev, TimePoint now, Outbox& out);
  void process_events(const NodeDelta& delta, TimePoint now, Outbox& out);
  /// reconcile_node's first step: restored tasks of this node that it
  /// reports finished (and does not hold again) end with the node's verdict.
  void end_tasks_finished_while_away(const NodeReport& report, TimePoint now, Outbox& out);
  /// reconcile_node's rule over a node's allocations (and live claims, if
  /// given); with check_running, every task believed running there is
  /// expected too, not only those restored from the store.
  void reconcile(NodeId node, const std::vector<Allocation>& allocations,
                 const std::vector<LiveClaim>* claims, bool check_running, TimePoint now,
                 Outbox& out);
  /// Checks a job against the configuration and builds its record (all pending).
  Expected<JobRecord> admit(JobSpec job) const;
  void journal_tasks(JobId job, const std::vector<TaskIndex>& tasks, TaskState state, NodeId node,
                     ClaimId claim, int32_t exit_code = 0, const TaskEnd& end = {});
  /// A released task's process ended after all (task_exited): record how.
  void record_exit(const NodeEvent& ev);
  void release_on(NodeId node, JobId job, std::vector<TaskIndex> tasks, Outbox& out);
  void declare_lost(JobRecord& j, const std::vector<TaskIndex>& tasks, TimePoint now);

  SchedulerConfig config_;
  ClusterView view_;
  std::vector<uint32_t> pool_ids_;  // config pool name order -> view pool index
  std::unordered_map<JobId, JobRecord> jobs_;
  std::set<QueueKey> queue_;
  /// Jobs waiting for capacity, in queue order.
  std::set<QueueKey> parked_;
  /// Jobs backing off after rejected claims, by when they may be placed again.
  std::set<std::pair<TimePoint, JobId>> backoff_;
  bool capacity_grew_ = false;
  TimePoint last_unpark_ = TimePoint::min();
  std::unordered_map<ClaimId, InFlightClaim> in_flight_;
  std::unordered_map<uint64_t, Gang> gangs_;
  /// Releases of preempted or evicted tasks, until their node answers.
  struct Releasing {
    ReleaseRequest request;
    TimePoint sent_at{0};
    std::optional<JobId> for_job;
  };
  std::map<ClaimId, Releasing> releasing_;
  uint64_t next_claim_ = 1;
  uint64_t next_gang_ = 1;
  uint64_t pending_tasks_ = 0;
  uint64_t running_tasks_ = 0;
  bool fenced_ = false;
  TimePoint started_at_ = TimePoint::min();
  Journal journal_;
  /// Restored tasks awaiting their node's report, by node.
  std::map<NodeId, std::vector<TaskRef>> unverified_;
  TimePoint recovered_at_ = TimePoint::min();
  SchedulerStats stats_;
};

}  // namespace claimsched::core
