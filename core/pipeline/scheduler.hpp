#pragma once

// One partition's scheduler as a pure state machine: the scheduler actor feeds
// it jobs, replies and node deltas, and sends what it puts in the Outbox. It is
// a pipeline of stages, each owning its state (core/README.md draws it):
//
//   admission -> queue -> policy -> placement -> claim window -> task table
//                                                     ^
//                  reconciliation (node reports) -----+      job views (clients)
//
// This class wires them: it turns what one stage decides into the next
// stage's input, and records what must be durable (Journal) or sent (Outbox).

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "core/class_config.hpp"
#include "core/cluster_view.hpp"
#include "core/explain.hpp"
#include "core/locks/operations.hpp"
#include "core/pipeline/backfill.hpp"
#include "core/pipeline/claim_window.hpp"
#include "core/pipeline/job_queue.hpp"
#include "core/pipeline/job_views.hpp"
#include "core/pipeline/reconciler.hpp"
#include "core/pipeline/reservations.hpp"
#include "core/pipeline/stats.hpp"
#include "core/pipeline/task_table.hpp"
#include "core/placement.hpp"
#include "core/pool_use.hpp"
#include "core/protocol.hpp"
#include "core/status.hpp"

namespace claimsched::core {

struct SchedulerConfig {
  PartitionId partition{0};
  Epoch epoch = 1;
  /// Pools this scheduler places on.
  std::vector<std::string> pools;
  /// (pool, parent) for pools of `pools` below another: preemptible work may
  /// use the pools below its own when its own is full (DUCC squatters).
  /// Empty: every pool stands alone.
  std::vector<std::pair<std::string, std::string>> pool_parents;
  /// Scheduling classes; a job naming no class gets `default_class`.
  std::vector<ClassConfig> classes{ClassConfig::named("batch")};
  std::string default_class = "batch";
  uint32_t max_claims_in_flight = 512;
  uint32_t max_tasks_per_claim = 64;
  /// A task whose claims were rejected (or unanswered) this many times in a
  /// row makes its job back off.
  uint32_t max_claim_attempts = 3;
  /// A claim or confirm unanswered this long is given up (claim) or resent (confirm).
  Duration reply_timeout = std::chrono::seconds(5);
  /// Strict CAS on the node generation instead of the fit check.
  bool strict_cas = false;
  /// Fill-first scans start here and cover this stretch first (see
  /// PlacementRequest::rotation and span).
  size_t rotation = 0;
  size_t rotation_span = SIZE_MAX;
  /// Jobs waiting for capacity are looked at again at most this often.
  Duration unpark_interval = std::chrono::milliseconds(5);
  /// After its tasks exhaust max_claim_attempts a job waits this long before
  /// it is placed again, doubling each time up to max_backoff: parallel
  /// schedulers racing for the same last bits of room then take turns
  /// instead of rejecting each other in a loop.
  Duration initial_backoff = std::chrono::milliseconds(10);
  Duration max_backoff = std::chrono::seconds(5);
  /// YTsaurus resource_limits per pool: the work of a pool and of the pools
  /// below it holds at most this (sorted by pool).
  std::vector<std::pair<std::string, Limits>> pool_limits;
  /// DUCC's share quantum for memory: a reservation matches machines by it
  /// (0: exactly).
  int64_t quantum = 0;
  /// DUCC allotments: what one user may hold in non-preemptible classes, over
  /// all of them (global, with per-user overrides sorted by user); each
  /// class may cap it further (ClassConfig::allotment).
  Limits global_allotment;
  std::vector<std::pair<std::string, Limits>> user_allotments;
  /// Backfilling: at most this many future starts per pass (conservative
  /// gives one to every waiting job; each costs a walk over the room held
  /// by the running tasks and the starts before it). The jobs beyond wait
  /// without one until they move up, as with Slurm's bf_max_job_test.
  uint32_t max_future_starts = 100;
  /// Record what must be durable in the journal (see Scheduler::take_journal).
  bool journal = false;
  /// After a restart, tasks the store says run on a node that has not
  /// reported again by then are declared lost and placed again.
  Duration recovery_grace = std::chrono::seconds(30);
  /// Keep each node's name, for the words that name it (a pool removal
  /// refused because the node is up); without, nodes are named by id. The
  /// sim turns it off: about 50 bytes per node of its budget, and it removes
  /// no pools.
  bool keep_node_names = true;

  Status validate() const;
  const ClassConfig* find_class(std::string_view name) const;
  /// What `user` may hold over all non-preemptible classes.
  const Limits& allotment_of(std::string_view user) const;
};

/// An operation the core carried out itself (remove_pool), and how it went.
struct OperationEnd {
  JobId id;
  Operation op;
  /// OK, or why it was refused (e.g. the pool is in use).
  Status outcome;
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
  /// Jobs whose first task started running since the last drain (with
  /// finished_jobs: what a watcher of job events hears, e.g. the campaigns).
  std::vector<JobId> started_jobs;
  /// Operator operations that hold their locks: carry them out, then call
  /// Scheduler::finish_operation.
  std::vector<std::pair<JobId, Operation>> operations;
  /// Operations the core carried out since the last drain: answer whoever
  /// waits for them (a success once the journal of the same step is durable).
  std::vector<OperationEnd> operations_ended;

  bool empty() const {
    return claims.empty() && confirms.empty() && releases.empty() && snapshot_requests.empty() &&
           finished_jobs.empty() && started_jobs.empty() && operations.empty() && operations_ended.empty();
  }
  void clear() {
    claims.clear();
    confirms.clear();
    releases.clear();
    snapshot_requests.clear();
    finished_jobs.clear();
    started_jobs.clear();
    operations.clear();
    operations_ended.clear();
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
  /// Pools the partition no longer serves (`claimsched pool remove`).
  std::vector<std::string> pools_removed;

  bool empty() const {
    return jobs_accepted.empty() && task_changes.empty() && nodes_registered.empty() && jobs_cancelled.empty() &&
           pools_removed.empty();
  }
  void clear() {
    jobs_accepted.clear();
    task_changes.clear();
    nodes_registered.clear();
    jobs_cancelled.clear();
    pools_removed.clear();
  }
};

/// A task as the partition store remembers it, for Scheduler::restore_job.
struct RestoredTask {
  RestoredTask() = default;
  RestoredTask(TaskIndex i, TaskState s, NodeId n, int32_t code, TaskEnd e = {})
      : index(i), state(s), node(n), exit_code(code), end(e) {}

  TaskIndex index = 0;
  TaskState state = TaskState::pending;
  /// The node it was placed on (claimed or running); zero, the store's
  /// encoding, when none (restore_job turns it into an optional).
  NodeId node;
  int32_t exit_code = 0;
  /// Final states: why the run ended.
  TaskEnd end;
};

/// The work waiting in one pool and class of a partition (the metrics'
/// queue depth and oldest pending age).
struct QueueDepth {
  std::string pool;
  std::string job_class;
  /// Jobs with tasks waiting, and those tasks.
  uint64_t jobs = 0;
  uint64_t tasks = 0;
  /// How long the oldest of those jobs has waited since it was submitted.
  Duration oldest_wait{0};
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config);

  const SchedulerConfig& config() const { return config_; }

  // --- admission ---------------------------------------------------------
  /// A node of one of our pools registered (or re-registered) with its snapshot.
  Status add_node(const NodeSpec& spec, const NodeSnapshot& snapshot);
  /// Accepts a job into the queue. Errors name the offending field.
  Status submit(JobSpec job, TimePoint now);
  /// Rebuilds a job from the partition store after a restart. Final tasks stay
  /// final; tasks recorded on a node count as running until that node reports
  /// (reconcile_node) or recovery_grace passes; the rest are pending.
  Status restore_job(JobSpec job, std::vector<RestoredTask> tasks, TimePoint now, bool cancelled = false);

  /// Restore: when a running task started and whether it passed
  /// initialization (the store keeps neither; a policy snapshot does).
  void restore_started(TaskRef task, TimePoint started, bool initialized);

  // --- reconciliation ----------------------------------------------------
  /// Compares a node's full report with the records, on every
  /// (re)registration (Reconciler states the rule). `restarted`: the report
  /// is the first from a new incarnation of a node this scheduler knew (its
  /// agent restarted within the grace): every task believed running there
  /// that the node does not hold is lost too. Not for a node that only
  /// re-subscribes: its report may predate placements made since, which it
  /// would wrongly declare lost.
  void reconcile_node(const NodeReport& report, TimePoint now, Outbox& out, bool restarted = false);
  /// A node stopped answering (its heartbeats stopped for the grace period):
  /// it takes no more claims, and what ran there is lost and goes back to the
  /// queue (within the job's max_lost_retries). When the node comes back it
  /// registers again and reconcile_node decides what it still runs.
  void node_down(NodeId node, TimePoint now, Outbox& out);

  // --- policy --------------------------------------------------------------
  /// Orders `job` within its priority: a higher rank first, until the job
  /// holds `fair_tasks` tasks (0: no limit); then it goes behind every job
  /// that is still below its share.
  void set_fair_share(JobId job, int64_t rank, uint32_t fair_tasks);
  /// DUCC's caps: `job` may hold at most `cap` tasks (claimed or running)
  /// until told otherwise (nullopt: no cap); `why` says which rule.
  void set_cap(JobId job, std::optional<uint32_t> cap, const std::string& why);
  /// Sets room aside for a job (see Reservations): claimed once every victim
  /// in hold.waiting_for is freed. Errors: unknown job or node, too few
  /// pending tasks, the job holds room already.
  Status hold(Hold hold);
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

  // --- operator operations -----------------------------------------------------
  /// An operator's action on a node (drain, undrain) or a pool (remove): it
  /// waits in the lock queue behind the jobs that hold its locks (locks_of).
  /// A node's then goes out in the Outbox (operations) for the actor to carry
  /// out; a pool's removal the core carries out itself (Outbox::
  /// operations_ended). Returns its id and what it does now, in words.
  /// Errors: a node or pool this partition does not know, a pool removed
  /// already, and a removal that could go at once and was refused (the pool
  /// is in use, check_pool_unused).
  Expected<std::pair<JobId, std::string>> submit_operation(Operation op, TimePoint now);
  /// The actor carried it out (or gave up): its locks go to whoever waits.
  void finish_operation(JobId id);
  /// Pools removed by `claimsched pool remove`, now or before a restart: no
  /// job is accepted into them, no node registers in them.
  const std::set<std::string, std::less<>>& removed_pools() const { return removed_pools_; }
  bool pool_removed(std::string_view pool) const { return removed_pools_.contains(pool); }
  /// Restore: `pool` was removed before (from the partition store). A pool
  /// this partition's config does not list is ignored.
  void restore_removed_pool(const std::string& pool);

  // --- the pipeline's passes -------------------------------------------------
  /// Placement begins: time a job queued before this is not counted as
  /// placement latency (a sim holds its schedulers while it queues a load).
  void start(TimePoint now) { started_at_ = now; }
  /// Fills the window of claims in flight from the queue.
  void schedule(TimePoint now, Outbox& out);
  void on_claim_reply(const ClaimReply& reply, TimePoint now, Outbox& out);
  void on_confirm_reply(const ConfirmReply& reply, TimePoint now, Outbox& out);
  void on_release_reply(const ReleaseReply& reply, TimePoint now, Outbox& out);
  void on_node_delta(const NodeDelta& delta, TimePoint now, Outbox& out);
  /// Periodic: gives up on unanswered claims, resends unanswered confirms
  /// and releases, ends recovery's grace.
  void on_tick(TimePoint now, Outbox& out);
  /// When schedule() has work that waits only for time to pass (a job's
  /// backoff ends, or waiting jobs may be looked at again after capacity
  /// grew), or kNever. The actor wakes itself then.
  TimePoint next_wakeup() const;
  /// What must be durable before the confirms and acknowledgements of the
  /// same step are sent; empty unless config().journal.
  Journal take_journal() { return std::exchange(journal_, Journal{}); }

  // --- what others read --------------------------------------------------------
  const SchedulerStats& stats() const { return stats_; }
  /// How many placement searches ran for jobs in line: with many waiting jobs
  /// of one shape, a pass after room grew searches once per shape, not per job.
  uint64_t placement_searches() const { return placement_searches_; }
  const ClusterView& view() const { return view_; }
  /// The node's name (its id in digits where names are not kept).
  std::string node_name(NodeIndex n) const {
    return n < node_names_.size() && !node_names_[n].empty() ? node_names_[n] : std::to_string(view_.node(n).id.value);
  }
  const TaskTable& tasks() const { return table_; }
  const JobQueue& queue() const { return queue_; }
  const ClaimWindow& window() const { return window_; }
  const Reservations& reservations() const { return reservations_; }
  /// Backfilling: the future starts the last pass booked, in the order made.
  const std::vector<FutureStart>& future_starts() const { return future_starts_; }
  /// Backfilling: job's future start, if it holds one.
  const FutureStart* future_start(JobId job) const;
  /// The classes' lock queues and the partition's locks (Ganeti's job queue).
  const LockQueue& lock_queue() const { return gate_; }
  /// What a job holds (claimed or running) as allotments count it: a
  /// reservation its whole machine (memory in quanta).
  Resources held_resources(const JobRecord& j) const;
  const JobRecord* job(JobId id) const { return table_.find(id); }
  const JobNotes* notes(JobId id) const { return views_.notes(id); }
  size_t queued_jobs() const { return queue_.queued(); }
  /// Per pool and class the work that waits (every pool with every class
  /// that may run there, zeros included): a walk of the unfinished jobs.
  std::vector<QueueDepth> queue_depths(TimePoint now) const;
  size_t parked_jobs() const { return queue_.waiting(); }
  size_t backing_off_jobs() const { return queue_.backing_off(); }
  size_t claims_in_flight() const { return window_.size(); }
  uint64_t pending_tasks() const { return table_.pending_tasks(); }
  uint64_t running_tasks() const { return table_.running_tasks(); }
  /// Tasks restored on a node that has not reported since the restart.
  uint64_t unverified_tasks() const { return reconciler_.unverified(); }
  /// True once a node told us a newer owner has the partition.
  bool fenced() const { return fenced_; }
  /// Why a job is pending, in words (from its recorded verdict and the view now).
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
  void for_each_job(const std::function<void(const JobRecord&)>& f) const { table_.for_each_in_id_order(f); }
  void for_each_unfinished_job(const std::function<void(const JobRecord&)>& f) const {
    table_.for_each_unfinished_in_id_order(f);
  }
  /// Checks that every job's task counts add up and every task is in exactly
  /// one state; returns the first problem found.
  Status check_accounting() const { return table_.check_accounting(); }

 private:
  // placement (scheduler.cpp)
  PlacementRequest request_for(const JobRecord& j, bool explain) const;
  /// Places one batch of j (with `squat`, also in its pool's subpools);
  /// false if nothing was placed.
  bool place_batch(JobRecord& j, bool squat, TimePoint now, Outbox& out);
  void place_whole(JobRecord& j, TimePoint now, Outbox& out);
  void place_machine(JobRecord& j, TimePoint now, Outbox& out);
  void claim_ready_holds(TimePoint now, Outbox& out);
  void drop_hold(JobId job);
  /// Why the allotments refuse `need` more for j now, or nothing.
  std::optional<std::string> refuse_by_allotment(const JobRecord& j, const Resources& need) const;
  /// How many more tasks DUCC's caps let j hold (the initialization cap, and
  /// what the policy last said), or nothing.
  std::optional<uint32_t> cap_room(const JobRecord& j) const;
  /// A capped job whose cap rose goes back in line.
  void uncap(JobRecord& j);
  /// The most tasks of j placed in one go (up to its fair share).
  uint32_t batch_limit(const JobRecord& j) const;
  /// How many more tasks of j the resource_limits of its pool and the pools
  /// above allow; `why` names the pool when none.
  uint32_t limits_room(const JobRecord& j, std::string* why) const;
  /// Places j's next batch (or all of it) as its class's policy says; true
  /// if it found no room and may squat in its pool's subpools.
  bool place_next(JobRecord& j, TimePoint now, Outbox& out);
  // backfilling (backfill_pass.cpp)
  /// The pass begins: the future starts of the jobs already waiting, in
  /// queue order.
  void backfill_begin(TimePoint now);
  /// The pass ends: withheld room goes back; jobs kept from starting are
  /// looked at again if a future start went or moved away.
  void backfill_end(TimePoint now);
  /// place_next (or, with `squat`, a squatter's batch) under the future
  /// starts that bind j; then words for what happened (backfilled, kept
  /// from starting) and, if j waits, a future start of its own.
  bool place_backfilling(JobRecord& j, bool squat, TimePoint now, Outbox& out);
  /// Gives j a future start if its class backfills and it may have one.
  void book(JobRecord& j, TimePoint now);
  bool may_book(const JobRecord& j) const;
  /// The room one running task of j holds (a reservation: its machine).
  Resources task_room(const JobRecord& j) const;
  /// The ends of every task holding room now (profile_).
  void build_profile(TimePoint now);
  /// Withholds in the view, on the nodes of the `binding` future starts, the
  /// room now that a job running until `until` may not take: what its run
  /// would need of the room those starts hold (BackfillProfile::least_room).
  void withhold_for(const std::vector<const FutureStart*>& binding, TimePoint now, TimePoint until);
  /// Sets the room withheld per node to `target` (nodes not named: none).
  void set_withheld(const std::map<NodeIndex, Resources>& target);
  void drop_start(size_t k);
  /// Could j be placed now if no future start held room back?
  bool fits_unbound(const JobRecord& j) const;
  /// Cheaply: is there room enough in all of j's pools for what j needs at
  /// once, withheld room included? (False: it cannot be placed now.)
  bool might_fit(const JobRecord& j) const;
  std::string start_words(const FutureStart& fs) const;

  // the lock queue (scheduler.cpp)
  /// j declares locks, or its class limits running jobs or orders them.
  bool uses_lock_queue(const JobRecord& j) const;
  /// j goes in line: in its class's lock queue, or straight to placement.
  void enter_queue(JobRecord& j, TimePoint now);
  /// Starts jobs of the lock queues that have a free running slot.
  void start_gated(TimePoint now);
  /// j holds its locks: placement may go on.
  void run_gated(JobRecord& j);
  /// A job or an operation of the lock queue holds its locks now.
  void on_granted(JobId id);
  // operator operations (operations.cpp)
  /// What uses pool p now (check_pool_unused decides).
  PoolUse pool_use(uint32_t p) const;
  /// Carries out the pool removals that hold their locks: each is done or
  /// refused, and ends (ended_operations_).
  void run_ready_removals();
  /// j lost every task it had placed (preempted or evicted): it gives back
  /// its running slot and its locks, and goes back in line.
  void requeue_in_lock_queue(JobRecord& j, TimePoint now);
  std::optional<LockExplanation> lock_explanation(const JobRecord& j) const;
  /// `fragmented`, when given, is what an earlier job of j's shape found in this pass.
  void wait_for_room(JobRecord& j, PlacementVerdict verdict, const bool* fragmented = nullptr);
  /// No node has room for one task of j: is the room there in all?
  bool fragmented_now(const JobRecord& j, PlacementVerdict verdict) const;
  /// The group j waits with: jobs whose placement finds room or not alike
  /// (same class, pool, task resources and constraints, placed one batch at a
  /// time, no subpools); 0 for a job that waits alone.
  uint32_t shape_of(const JobRecord& j);
  void wait(JobRecord& j, WaitCause cause, std::string why);
  ClaimRequest make_claim(const JobRecord& j, NodeIndex n, std::vector<TaskIndex> tasks,
                          const Resources& per_task);
  void send_claim(ClaimRequest request, NodeIndex n, std::optional<GangId> gang, TimePoint now, Outbox& out);
  int64_t effective_rank(const JobRecord& j) const;
  void rerank(JobRecord& j);
  // claims (claims.cpp)
  void confirm_claim(Claim& c, TimePoint now, Outbox& out);
  void mark_running(JobRecord& j, const Claim& c, TimePoint now, Outbox& out);
  void claim_failed(ClaimId id, const std::string& why, bool count_attempt, TimePoint now, Outbox& out);
  void gang_step(GangId gang, TimePoint now, Outbox& out);
  void abort_gang(GangId gang, TimePoint now, Outbox& out);
  void give_up_claim(ClaimId id, TimePoint now, Outbox& out);
  /// Tasks back to the queue (or cancelled, for a cancelled job); with
  /// count_attempt each uses one of its claim attempts, and a task out of
  /// attempts makes the job back off with `why`.
  void return_to_queue(JobRecord& j, const std::vector<TaskIndex>& tasks, bool count_attempt,
                       const std::string& why, TimePoint now);
  void observe_generation(NodeIndex n, const NodeSnapshot& s, bool is_change, Outbox& out);
  void on_fenced() { fenced_ = true; }
  // tasks ending (nodes.cpp)
  void process_events(const NodeDelta& delta, TimePoint now, Outbox& out);
  /// A task left its node (ended, or its node was lost): by the job's retry
  /// limits it runs again or ends in the event's final state.
  void end_task(JobRecord& j, const NodeEvent& ev, TimePoint now, Outbox& out);
  void record_final(JobRecord& j, const NodeEvent& ev);
  /// A task lost with node `n` succeeded there after all (its node came
  /// back and said so): it ends so, and the run placed since is stopped (a
  /// claimed one when its confirm comes back).
  void keep_first_run(JobRecord& j, const NodeEvent& ev, std::optional<NodeIndex> n, TimePoint now, Outbox& out);
  /// A released task's process ended after all (task_exited): record how.
  void record_exit(const NodeEvent& ev);
  void maybe_finished(JobRecord& j, TimePoint now, Outbox& out);
  void apply(const ReconcileDecision& d, NodeIndex n, NodeId node, TimePoint now, Outbox& out);
  void declare_lost(JobRecord& j, const std::vector<TaskIndex>& tasks, TimePoint now);
  void journal_tasks(JobId job, const std::vector<TaskIndex>& tasks, TaskState state, NodeId node, ClaimId claim,
                     int32_t exit_code = 0, const TaskEnd& end = {});
  /// Why a job of this shape can never run in pool `pool` as it is, or empty
  /// (admission: refused at the door rather than left waiting forever).
  std::string never_fits_now(const JobRecord& j) const;

  SchedulerConfig config_;
  // The stages' state.
  /// What each pool's nodes can ever hold of a task shape, computed once
  /// per shape until a node registers (admission reads it on every submit).
  struct ShapeKey {
    uint32_t pool;
    Resources per_task;
    std::vector<std::string> constraints;
    bool operator<(const ShapeKey& o) const {
      if (pool != o.pool) return pool < o.pool;
      for (size_t d = 0; d < kMaxDimensions; ++d) {
        auto a = per_task[static_cast<DimensionId>(d)], b = o.per_task[static_cast<DimensionId>(d)];
        if (a != b) return a < b;
      }
      return constraints < o.constraints;
    }
  };
  mutable std::map<ShapeKey, PlacementCounts> shape_counts_;
  /// The queue's shape groups (shape_of), numbered from 1; bounded (later
  /// shapes wait alone).
  std::map<std::pair<uint32_t, ShapeKey>, uint32_t> group_shapes_;
  /// Per shape: the last pass (pass_) in which its placement found no room,
  /// and what it found. Room only shrinks within a pass, so later jobs of the
  /// shape in the same pass wait without a search.
  /// `told_*`: what the notes of its waiting jobs say (wait_for_room keeps
  /// them alike: the jobs not looked at would have found the same).
  struct NoRoom {
    uint64_t pass = 0;
    PlacementVerdict verdict = PlacementVerdict::unschedulable;
    bool fragmented = false;
    PlacementVerdict told_verdict = PlacementVerdict::unschedulable;
    bool told_fragmented = false;
  };
  std::vector<NoRoom> no_room_;
  uint64_t pass_ = 0;
  uint64_t placement_searches_ = 0;
  ClusterView view_;         // placement
  TaskTable table_;          // task table
  JobQueue queue_;           // queue
  ClaimWindow window_;       // claim window
  Reconciler reconciler_;    // reconciliation
  JobViews views_;           // job views
  Reservations reservations_;  // placement (room held for the policy)
  LockQueue gate_;           // queue: running slots and locks per class
  /// Backfilling (queue): some class backfills. Fixed at construction; off,
  /// a pass costs this one branch.
  bool backfill_ = false;
  /// The future starts of the last pass, in the order made (explain reads
  /// them between passes); the ones the pass before made, and its time.
  std::vector<FutureStart> future_starts_;
  std::vector<FutureStart> previous_starts_;
  TimePoint previous_pass_{0};
  /// What the last pass's beginning booked, job by job in queue order, what
  /// it was computed from (a hash of the room now and when it frees) and
  /// when: backfill_begin keeps what still holds.
  struct Booked {
    JobId job;
    uint32_t pending = 0;
    std::optional<FutureStart> start;
  };
  std::vector<Booked> booked_;
  uint64_t booked_print_ = 0;
  TimePoint booked_at_ = TimePoint::min();
  /// When the room held now frees (built on first use in a pass).
  BackfillProfile profile_;
  bool profile_built_ = false;
  /// The searches of the last pass, in the order made, each the next pass's
  /// same search's answer while nothing can move it (earliest_again).
  std::vector<StartSearch> searches_;
  size_t searched_ = 0;
  /// During a pass: the room withheld in the view now, per node.
  std::map<NodeIndex, Resources> withheld_;
  /// During a pass: jobs that held a future start (they start early, or
  /// place more than it, only where no other start's room is involved).
  std::set<JobId> had_start_;
  /// During a pass: each node's least room over time under the starts
  /// least_key_ names (withhold_for), with the room it was computed from.
  std::vector<JobId> least_key_;
  std::map<NodeIndex, std::pair<Resources, BackfillProfile::LeastRoom>> least_;
  /// During a pass: the nodes of a start in words, once asked for.
  std::unordered_map<JobId, std::string> start_nodes_;
  /// While a job whose future start is due is placed: that start (its
  /// parts are the plan).
  const FutureStart* due_ = nullptr;
  /// Operations queued or under way, and those that hold their locks and
  /// wait to go out in the next Outbox.
  std::map<JobId, Operation> operations_;
  std::vector<JobId> operations_ready_;
  uint64_t next_operation_ = kFirstOperationId;
  /// Operations the core carried out, for the next Outbox.
  std::vector<OperationEnd> ended_operations_;
  std::set<std::string, std::less<>> removed_pools_;
  /// Node names by the view's index: an operator's refusal names nodes.
  std::vector<std::string> node_names_;
  /// The last time the pipeline was told (ages in the lock queue are as of then).
  TimePoint last_now_{0};
  /// What the policy said about a job: its rank in the queue, its fair share
  /// in tasks, its cap (policy).
  struct PolicyMark {
    int64_t rank = 0;
    uint32_t fair_tasks = 0;
    std::optional<uint32_t> cap;
  };
  std::unordered_map<JobId, PolicyMark> marks_;
  /// Reservations not finished, by user: the machines they hold count
  /// against that user's allotments (fixed_share jobs: TaskTable::allotted_held).
  std::map<std::string, std::set<JobId>, std::less<>> reserve_jobs_;
  /// Reservations: the machine each holds (claimed or running).
  std::unordered_map<JobId, Resources> machines_;
  /// resource_limits by the view's pool index (none: unlimited).
  std::vector<std::optional<Limits>> limits_;
  bool fenced_ = false;
  TimePoint started_at_ = TimePoint::min();
  Journal journal_;
  SchedulerStats stats_;
};

}  // namespace claimsched::core
