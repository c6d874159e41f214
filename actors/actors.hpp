#pragma once

// Every typed actor interface of claimsched, in one place: reading this file
// tells who talks to whom (STYLE.md, after Tenzir's actors.hpp).
//
// The claim protocol runs on plain one-way messages, not CAF requests: a node
// answers a ClaimRequest with a ClaimReply sent to the claimant. The scheduler
// tracks what it is waiting for and times out on its own clock, so the same
// code is correct whether the node is local or behind a network link (CAF
// answers a request to a dead remote actor only when the request times out).

#include <caf/all.hpp>

#include <array>
#include <optional>

#include "core/atomic_histogram.hpp"
#include "core/protocol.hpp"
#include "core/policy/driver.hpp"
#include "core/scheduler.hpp"
#include "messages/caf_types.hpp"

namespace claimsched::actors {

using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using report_atom = caf::atom_constant<caf::atom("report")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using audit_atom = caf::atom_constant<caf::atom("audit")>;
using durable_atom = caf::atom_constant<caf::atom("durable")>;
using jobs_atom = caf::atom_constant<caf::atom("jobs")>;
using changes_atom = caf::atom_constant<caf::atom("changes")>;
using bootstrap_atom = caf::atom_constant<caf::atom("bootstrap")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using policy_atom = caf::atom_constant<caf::atom("policy")>;
using pools_atom = caf::atom_constant<caf::atom("pools")>;
using explain_atom = caf::atom_constant<caf::atom("explain")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using queue_atom = caf::atom_constant<caf::atom("queue")>;
using nodes_atom = caf::atom_constant<caf::atom("nodes")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using node_down_atom = caf::atom_constant<caf::atom("node_down")>;
using replicated_atom = caf::atom_constant<caf::atom("replicated")>;
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;
using install_atom = caf::atom_constant<caf::atom("install")>;
using members_atom = caf::atom_constant<caf::atom("members")>;
using route_atom = caf::atom_constant<caf::atom("route")>;
using partition_atom = caf::atom_constant<caf::atom("partition")>;
using lease_atom = caf::atom_constant<caf::atom("lease")>;
using history_atom = caf::atom_constant<caf::atom("history")>;
using logs_atom = caf::atom_constant<caf::atom("logs")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using remove_pool_atom = caf::atom_constant<caf::atom("rmpool")>;
using removed_atom = caf::atom_constant<caf::atom("removed")>;
using move_atom = caf::atom_constant<caf::atom("move")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using campaign_atom = caf::atom_constant<caf::atom("campaign")>;
using login_atom = caf::atom_constant<caf::atom("login")>;
using challenge_atom = caf::atom_constant<caf::atom("challenge")>;
using prove_atom = caf::atom_constant<caf::atom("prove")>;
using watch_atom = caf::atom_constant<caf::atom("watch")>;
using unwatch_atom = caf::atom_constant<caf::atom("unwatch")>;
using ended_atom = caf::atom_constant<caf::atom("ended")>;
using repeat_atom = caf::atom_constant<caf::atom("repeat")>;

/// Copies of one job a single submit may ask for (`submit --repeat`, job
/// arrays): one message and one store write for all of them, and a bound on
/// what one message makes a server do.
constexpr uint32_t kMaxJobsPerSubmit = 10'000;

/// A real task's process ended (local only: from the executor to its node
/// actor; see task_executor.hpp).
struct TaskEnded {
  core::TaskRef task;
  /// succeeded, failed (non-zero exit, killed at max_run_time, could not
  /// start) or lost.
  core::TaskState state = core::TaskState::succeeded;
  int32_t exit_code = 0;
  std::string detail;
  /// Why, typed.
  core::TaskEnd end;
  /// The claim its run was confirmed under: a late end of a released run
  /// must not end the task's next run on the same node. Zero: unknown.
  core::ClaimId claim;
};

/// Several real tasks' processes ended (local only: the ends an executor
/// saw at once, for one ledger pass, store write and delta).
struct TasksEnded {
  std::vector<TaskEnded> ended;
};

/// Anyone who follows a node's update stream (schedulers, replicas, views).
using node_listener_actor = caf::typed_actor<
    /// A node changed (or, with `full`, answered a snapshot request).
    caf::reacts_to<core::NodeDelta>>;

/// The claimant side of the claim protocol.
using claim_client_actor = node_listener_actor::extend<
    /// A node's answer to a claim.
    caf::reacts_to<core::ClaimReply>,
    /// A node's answer to a confirm.
    caf::reacts_to<core::ConfirmReply>,
    /// A node's answer to a release.
    caf::reacts_to<core::ReleaseReply>>;

/// One node: the single serialisation point for its resources.
using node_actor = caf::typed_actor<
    /// Reserve tasks; answered with a ClaimReply to the sender.
    caf::reacts_to<core::ClaimRequest>,
    /// Turn a claim into allocations; answered with a ConfirmReply.
    caf::reacts_to<core::ConfirmRequest>,
    /// Free a claim or allocations; answered with a ReleaseReply.
    caf::reacts_to<core::ReleaseRequest>,
    /// Follow this node's deltas from the returned report on.
    caf::replies_to<subscribe_atom, node_listener_actor>::with<core::NodeReport>,
    /// Send a full snapshot (NodeDelta with full = true) to the sender.
    caf::reacts_to<snapshot_atom>,
    /// Everything the node holds (invariant checks, reconciliation).
    caf::replies_to<report_atom>::with<core::NodeReport>,
    /// Part of a task's output, read from the file its agent wrote.
    caf::replies_to<logs_atom, core::LogRequest>::with<core::LogChunk>,
    /// Take no new claims (its agent is stopping); answers the snapshot after.
    caf::replies_to<drain_atom>::with<core::NodeSnapshot>,
    /// An operator's drain (true: no new claims) or undrain (false), sent by
    /// its scheduler once the operation holds the node's lock; answers the
    /// snapshot after.
    caf::replies_to<drain_atom, bool>::with<core::NodeSnapshot>,
    /// Internal timer: fire due deadlines (claim expiry, synthetic task ends).
    caf::reacts_to<tick_atom>,
    /// A real task's process ended (from the node's executor; local only).
    caf::reacts_to<TaskEnded>,
    /// Several ended at once (from the node's executor; local only).
    caf::reacts_to<TasksEnded>>;

/// What a scheduler reports about itself. Local only: status crosses the
/// network as JSON through the gateway, not as this struct.
struct SchedulerStatus {
  core::PartitionId partition;
  core::SchedulerStats stats;
  uint64_t nodes = 0;
  uint64_t queued_jobs = 0;
  uint64_t parked_jobs = 0;
  uint64_t backing_off_jobs = 0;
  uint64_t claims_in_flight = 0;
  uint64_t pending_tasks = 0;
  uint64_t running_tasks = 0;
  uint64_t jobs_finished = 0;
  /// Tasks restored on nodes that have not reported since a restart.
  uint64_t unverified_tasks = 0;
  uint64_t store_writes = 0;
  uint64_t policy_cycles = 0;
  /// Why the partition's store failed (the partition stopped), or empty.
  std::string store_error;
  bool fenced = false;
  bool started = false;
  /// The owner's epoch (fencing token).
  core::Epoch epoch = 0;
  /// The last write durable in the partition's store, and the position its
  /// standbys hold (0 without replication).
  uint64_t durable_sequence = 0;
  uint64_t replicated_sequence = 0;
  /// Durable writes whose acknowledgements and confirms wait for a standby.
  uint64_t writes_awaiting_replication = 0;
  /// Empty if every job's task counts add up (checked only for audit_atom:
  /// it walks every job).
  std::string accounting_error;
  /// When the last task was confirmed (scheduler clock).
  core::TimePoint last_placement{0};
};

/// What a scrape of /metrics reads from a partition: its status, the work
/// waiting per pool and class, and (policy on) each pool's shares as the
/// last cycle computed them.
struct PartitionMetrics {
  SchedulerStatus status;
  std::vector<core::QueueDepth> queues;
  struct PoolShares {
    std::string pool;
    double fair_share = 0;
    double demand = 0;
    double usage = 0;
  };
  std::vector<PoolShares> pools;
  /// The partition's nodes by core::NodeState (up, draining, down), as its scheduler sees them.
  std::array<uint64_t, 3> nodes_by_state{};
  /// The partition store's group commits (absent without a store): seconds
  /// per write including its fsync, and records per write.
  std::optional<core::HistogramCounts> commit_seconds;
  std::optional<core::HistogramCounts> commit_records;
};

/// One partition's scheduler.
using scheduler_actor = claim_client_actor::extend<
    /// Accept a job; answers its id once queued, or an error naming the field.
    caf::replies_to<core::JobSpec>::with<core::JobId>,
    /// Accept one copy of the job under each id (at most kMaxJobsPerSubmit),
    /// all or none; answers the ids once their records are durable. An id
    /// already held with the same spec is a retry, answered, never doubled.
    caf::replies_to<repeat_atom, core::JobSpec, std::vector<core::JobId>>::with<std::vector<core::JobId>>,
    /// Subscribe to this node and place on it.
    caf::reacts_to<register_atom, node_actor>,
    /// Begin placing (a sim holds schedulers until its load is queued).
    caf::reacts_to<start_atom>,
    /// Stop placing new work; what is in flight completes (before a check).
    caf::reacts_to<hold_atom>,
    /// Internal timer: work that waited for time to pass (see next_wakeup).
    caf::reacts_to<wake_atom>,
    /// Internal timer: a fair-share and preemption cycle.
    caf::reacts_to<policy_atom>,
    /// Demand, fair share, usage and statuses per pool, class, user and job:
    /// a JSON document (messages/json_views.hpp; no policy: an empty tree).
    caf::replies_to<pools_atom>::with<std::string>,
    /// Why a job is pending or was preempted: a JSON document
    /// (messages/json_views.hpp).
    caf::replies_to<explain_atom, core::JobId>::with<std::string>,
    /// One job as a client sees it, with its tasks. Views carry wall-clock
    /// times (ns since the Unix epoch).
    caf::replies_to<status_atom, core::JobId>::with<core::JobView>,
    /// Every job that has not ended, without tasks.
    caf::replies_to<queue_atom>::with<std::vector<core::JobView>>,
    /// Of these jobs, the ones this partition holds that reached a final
    /// state, with their tasks (what a waiting client is answered).
    caf::replies_to<ended_atom, std::vector<core::JobId>>::with<std::vector<core::JobView>>,
    /// Jobs that pass the filter, ended ones too, newest first, without tasks.
    caf::replies_to<history_atom, core::JobFilter>::with<std::vector<core::JobView>>,
    /// The partition's nodes as its view has them.
    caf::replies_to<nodes_atom>::with<std::vector<core::NodeStatus>>,
    /// Cancel a job; answers its view after the cancel.
    caf::replies_to<cancel_atom, core::JobId>::with<core::JobView>,
    /// An operator drains (true) or undrains (false) a node of this
    /// partition: the operation waits in the lock queue behind the jobs
    /// holding the node's lock (core::locks_of), then goes to the node.
    /// Answers at once with what it does now, in words.
    caf::replies_to<drain_atom, core::NodeId, std::string, bool>::with<std::string>,
    /// An operator removes a pool of this partition: the operation waits in
    /// the lock queue behind the jobs holding a group lock on the pool, then
    /// the pool is removed (durably) or refused while in use. Answers at once
    /// with what it does now, in words; with `wait` (true) once it is done,
    /// or with the refusal.
    caf::replies_to<remove_pool_atom, std::string, bool>::with<std::string>,
    /// The pools this partition removed (a gateway learns them here: a
    /// removal may have gone through another member).
    caf::replies_to<removed_atom>::with<std::vector<std::string>>,
    /// An operator moves this partition to the HA member of this name: the
    /// operation waits in the lock queue behind the jobs holding one of its
    /// pools alone, then the owning member pins the partition to it (see
    /// member_actor). As remove_pool_atom: with `wait`, answers once done.
    caf::replies_to<move_atom, std::string, bool>::with<std::string>,
    /// A node stopped heartbeating: what ran there is lost.
    caf::reacts_to<node_down_atom, core::NodeId>,
    /// Tell this actor of job events from now on: after every pass, the ids
    /// of the jobs whose tasks were placed or that reached a final state, and
    /// the views of the latter, as (watch_atom, std::vector<core::JobId>,
    /// std::vector<core::JobView>) (the campaigns follow their jobs this way
    /// instead of polling each one; a gateway answers its waits). Once per
    /// actor.
    caf::reacts_to<watch_atom, caf::actor>,
    /// Local only: no more job events for this actor.
    caf::reacts_to<unwatch_atom, caf::actor>,
    /// Internal timer: reply timeouts.
    caf::reacts_to<tick_atom>,
    /// Internal: a store write is durable (empty string) or failed (why);
    /// the number is the write's last sequence.
    caf::reacts_to<durable_atom, uint64_t, std::string>,
    /// Standbys hold every change up to this sequence (from the change feed).
    caf::reacts_to<replicated_atom, uint64_t>,
    /// The ids of every job the partition holds, in order.
    caf::replies_to<jobs_atom>::with<std::vector<core::JobId>>,
    /// Counters and queue sizes (cheap: polled while running).
    caf::replies_to<status_atom>::with<SchedulerStatus>,
    /// The same plus what /metrics shows per pool and class (a walk of the
    /// unfinished jobs: for scrapes, not for polling).
    caf::replies_to<metrics_atom>::with<PartitionMetrics>,
    /// The same plus the accounting check over every job (at the end of a run).
    caf::replies_to<audit_atom>::with<SchedulerStatus>>;

/// Routes jobs to the partition that owns their pool.
using router_actor = caf::typed_actor<
    /// Forwards to the owning scheduler; an unknown pool is an error.
    caf::replies_to<core::JobSpec>::with<core::JobId>>;

/// A standby copy of one partition's store (DESIGN.md, "Replica stream").
struct ReplicaStatus {
  /// The last primary sequence number applied here.
  uint64_t applied = 0;
  /// The epoch the applied changes were written in (the store's meta).
  core::Epoch epoch = 0;
  /// The primary's latest sequence number as last heard.
  uint64_t primary_latest = 0;
  uint64_t batches_applied = 0;
  uint64_t bootstraps = 0;
  /// A checkpoint is being received (nothing is applied meanwhile).
  bool bootstrapping = false;
  /// Primary commit to replica apply, per shipped burst, in milliseconds.
  core::Histogram lag_ms;
  uint64_t max_sequence_lag = 0;
  /// Why the replica stopped following, or empty.
  std::string error;
};

using replica_actor = caf::typed_actor<
    /// The primary's next change batches, its latest sequence number, and the
    /// wall-clock time (ns) the last of them was committed there.
    caf::reacts_to<changes_atom, std::vector<messages::ChangeBatch>, uint64_t, int64_t>,
    /// A checkpoint of the primary at this sequence follows in chunks:
    /// discard what is held and receive it.
    caf::reacts_to<bootstrap_atom, uint64_t>,
    /// The next bytes of one of the checkpoint's files (appended).
    caf::reacts_to<chunk_atom, std::string, std::string>,
    /// Every file of the checkpoint at this sequence has arrived: install it
    /// and follow from there.
    caf::reacts_to<install_atom, uint64_t>,
    caf::replies_to<status_atom>::with<ReplicaStatus>>;

/// Serves one primary's change log to its replicas: pushes batches as the
/// primary commits them, with a credit window per replica.
using change_feed_actor = caf::typed_actor<
    /// Follow from this sequence (0: the replica holds nothing) of a store
    /// last written in this epoch; the name is the follower's (status views).
    caf::reacts_to<subscribe_atom, replica_actor, uint64_t, uint64_t, std::string>,
    /// The replica made everything up to this sequence durable (returns
    /// credit).
    caf::reacts_to<ack_atom, uint64_t>,
    /// Internal: the primary's writer made sequences up to this durable at
    /// this wall-clock time (ns).
    caf::reacts_to<committed_atom, uint64_t, int64_t>,
    /// Per follower: its acknowledged sequence, as JSON (status views).
    caf::replies_to<status_atom>::with<std::string>>;

/// The server's campaigns (issue 16; actors/campaign_actor.hpp): a thin
/// actor over core/campaign that turns each task into an ordinary job sent
/// through the gateway, and follows those jobs to their end.
using campaign_actor = caf::typed_actor<
    /// A client's campaign request (submit, status, list, cancel, explain;
    /// core/campaign/report.hpp); answers the campaign(s) it is about, or an
    /// error naming what is wrong (a refused submit names the field).
    caf::replies_to<campaign_atom, core::campaign::CampaignRequest>::with<core::campaign::CampaignReply>,
    /// Internal timer: one metascheduler round, then follow the jobs.
    caf::reacts_to<tick_atom>,
    /// From a scheduler (see its watch_atom): these jobs were placed or
    /// ended (with the views of those that ended); those that are campaign
    /// copies are looked at now.
    caf::reacts_to<watch_atom, std::vector<core::JobId>, std::vector<core::JobView>>>;

/// The cluster's front door, published on a TCP port: agents register their
/// nodes and heartbeat; clients submit and ask; HA members fetch each other's
/// owned partitions. Every message from the network is validated before it
/// is used.
using gateway_actor = caf::typed_actor<
    /// An agent's node joins (or comes back): answers the heartbeat interval
    /// in milliseconds.
    caf::replies_to<register_atom, core::NodeSpec, node_actor>::with<uint64_t>,
    /// With TLS (actors/peer_proof.hpp): a nonce for an agent's proof, and
    /// this server's certificate CN.
    caf::replies_to<challenge_atom>::with<std::string, std::string>,
    /// With TLS: an agent's proof that it holds an agent certificate (PEM,
    /// the message signed, the signature); answers the certificate's CN.
    /// Registering a node then needs one that named it.
    caf::replies_to<prove_atom, std::string, std::string, std::string>::with<std::string>,
    /// An agent's node is alive.
    caf::reacts_to<heartbeat_atom, core::NodeId>,
    /// An agent stops on purpose and leaves its node's tasks running for its
    /// next start: the node is not down (its tasks not lost) until the
    /// agent restart grace has passed.
    caf::reacts_to<leave_atom, core::NodeId>,
    /// Submit a job (its id is assigned here when zero; the same id again is
    /// the same job: a retry is answered, never doubled).
    caf::replies_to<core::JobSpec>::with<core::JobId>,
    /// Submit this many copies of a job (1 to kMaxJobsPerSubmit; its id must
    /// be zero): the ids assigned, in order, all or none.
    caf::replies_to<repeat_atom, core::JobSpec, uint32_t>::with<std::vector<core::JobId>>,
    /// One job with its tasks (their nodes named).
    caf::replies_to<status_atom, core::JobId>::with<core::JobView>,
    /// Every job that has not ended.
    caf::replies_to<queue_atom>::with<std::vector<core::JobView>>,
    /// Waits until at least one of these jobs has ended, or this many
    /// milliseconds have passed (at most kMaxJobWait): the views of those
    /// that ended by then (none at the timeout), with their tasks. Woken by
    /// the schedulers' job events, so a waiting client costs nothing
    /// between them (actors/gateway_waits.hpp).
    caf::replies_to<ended_atom, std::vector<core::JobId>, uint32_t>::with<std::vector<core::JobView>>,
    /// Jobs that pass the filter, ended ones too, newest first (every partition).
    caf::replies_to<history_atom, core::JobFilter>::with<std::vector<core::JobView>>,
    /// Every node with what the gateway knows of it (names, heartbeats).
    caf::replies_to<nodes_atom>::with<std::vector<core::NodeStatus>>,
    /// Cancel a job; answers its view after the cancel.
    caf::replies_to<cancel_atom, core::JobId>::with<core::JobView>,
    /// Drain (true) or undrain (false) the node of this name through its
    /// partition's lock queue (see the scheduler's drain_atom).
    caf::replies_to<drain_atom, std::string, bool>::with<std::string>,
    /// Remove the pool of this name (wait: true to answer once done) through
    /// its partition's lock queue (see the scheduler's remove_pool_atom).
    caf::replies_to<remove_pool_atom, std::string, bool>::with<std::string>,
    /// Move partition `id` to the member of this name (HA; wait: true to
    /// answer once done) through its lock queue (see the scheduler's
    /// move_atom).
    caf::replies_to<move_atom, uint32_t, std::string, bool>::with<std::string>,
    /// One JSON document per partition (see the scheduler's pools_atom).
    caf::replies_to<pools_atom>::with<std::vector<std::string>>,
    /// A JSON document (see the scheduler's explain_atom).
    caf::replies_to<explain_atom, core::JobId>::with<std::string>,
    /// Part of a task's output, from the agent of the node it ran on last.
    caf::replies_to<logs_atom, core::LogRequest>::with<core::LogChunk>,
    /// Members, partition owners, epochs, standbys and their lag (JSON).
    caf::replies_to<members_atom>::with<std::string>,
    /// Local only (the HTTP endpoint): the Prometheus text of this server's
    /// partitions and nodes (gateway_metrics.hpp).
    caf::replies_to<metrics_atom>::with<std::string>,
    /// Local only (the HTTP API's `since`): a number that moves whenever a
    /// job's record does; 0 if unknown (gateway_metrics.hpp).
    caf::replies_to<changes_atom>::with<uint64_t>,
    /// A partition this member owns: its scheduler, change feed and epoch (HA
    /// peers forward jobs to the one and follow the other); Errc::unavailable
    /// if it is not owned here.
    caf::replies_to<partition_atom, uint32_t>::with<scheduler_actor, change_feed_actor, uint64_t>,
    /// Local only (the member coordinator): the partition's owner now - its
    /// scheduler and feed (null: nobody), epoch, and whether it runs here.
    caf::reacts_to<route_atom, uint32_t, scheduler_actor, change_feed_actor, uint64_t, bool>,
    /// A campaign request (see campaign_actor), passed on to this server's
    /// campaigns; Errc::unavailable where none runs.
    caf::replies_to<campaign_atom, core::campaign::CampaignRequest>::with<core::campaign::CampaignReply>,
    /// Local only (the server, or the HA member coordinator): the campaign
    /// actor requests go to, in this process or (HA) the one of the member
    /// that runs the campaigns; null: none for now.
    caf::reacts_to<campaign_atom, campaign_actor>,
    /// HA peers: the campaign actor running in this process (the member
    /// coordinator of a member that does not run the campaigns forwards
    /// requests to it); Errc::unavailable if none runs here.
    caf::replies_to<campaign_atom>::with<campaign_actor>,
    /// Local only: pass on the job events of every partition (each owner's
    /// scheduler, also owners that take over later) to this actor (see the
    /// scheduler's watch_atom).
    caf::reacts_to<watch_atom, caf::actor>,
    /// Local only: no more job events for this actor, from any partition.
    caf::reacts_to<unwatch_atom, caf::actor>,
    /// From a local scheduler (see its watch_atom): these jobs started or
    /// ended, with the views of those that ended; the waits that name one of
    /// those are answered with them.
    caf::reacts_to<watch_atom, std::vector<core::JobId>, std::vector<core::JobView>>,
    /// Internal timer: the wait of this key has waited long enough.
    caf::reacts_to<ended_atom, uint64_t>,
    /// A client presents its token: answers the gateway_actor (as a plain
    /// handle) it sends its requests to from then on, and the user it acts
    /// as. With [auth] that is a session bound to the token's user
    /// (actors/auth_door.hpp); without, the gateway itself and no user (the
    /// token is not checked).
    caf::replies_to<login_atom, std::string>::with<caf::actor, std::string>,
    /// With TLS: a nonce for a client's login by its certificate, and this
    /// server's certificate CN (actors/peer_proof.hpp). Without [auth], the
    /// gateway answers no nonce: it checks no login.
    caf::replies_to<challenge_atom, login_atom>::with<std::string, std::string>,
    /// A client logs in by its certificate (its PEM, the login message
    /// signed, the signature): answers as the token's login does, the user
    /// being the certificate's CN.
    caf::replies_to<login_atom, std::string, std::string, std::string>::with<caf::actor, std::string>,
    /// Internal timer: nodes silent for the grace period are marked down.
    caf::reacts_to<tick_atom>>;

/// An HA member's coordinator (actors/member.hpp): it keeps this member in
/// etcd, elects partition owners, and builds or follows each partition.
using member_actor = caf::typed_actor<
    /// The members view as JSON (see gateway_actor's members_atom).
    caf::replies_to<members_atom>::with<std::string>,
    /// Join the cluster: this member's gateway and the address others reach
    /// it at.
    caf::reacts_to<start_atom, gateway_actor, std::string>,
    /// Internal timer: read etcd and act on what changed.
    caf::reacts_to<tick_atom>,
    /// From the scheduler of an owned partition whose move holds its locks:
    /// pin it to the member of this name (etcd, on that member's lease), so
    /// that the next rebalance hands it over. Answers once the pin is written.
    caf::replies_to<move_atom, uint32_t, std::string>::with<std::string>,
    /// From the lease keeper's thread: 0 healthy, 1 at risk, 2 lost; why;
    /// the lease it keeps (a stopped keeper's last word is ignored).
    caf::reacts_to<lease_atom, uint8_t, std::string, uint64_t>>;

/// Outcome of a synthetic load run. Local only.
struct LoadResult {
  uint64_t submitted = 0;
  uint64_t accepted = 0;
  uint64_t tasks_accepted = 0;
  /// Jobs a partition already held (a resumed run submits its load again).
  uint64_t already_present = 0;
  uint64_t tasks_already_present = 0;
  uint64_t rejected = 0;
  std::string first_error;
};

/// Submits a synthetic load through a router with a bounded window.
using load_generator_actor = caf::typed_actor<
    /// Submit everything; answers when every job was acknowledged.
    caf::replies_to<start_atom>::with<LoadResult>>;

}  // namespace claimsched::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::SchedulerStatus)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::PartitionMetrics)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::TaskEnded)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::TasksEnded)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::LoadResult)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(claimsched::actors::ReplicaStatus)
