#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "actors/actors.hpp"
#include "core/scheduler.hpp"
#include "storage/partition_log.hpp"

namespace claimsched::actors {

struct SchedulerActorConfig {
  core::SchedulerConfig scheduler;
  /// A scheduler rebuilt from its store (storage::recover_partition); when
  /// set, `scheduler` is ignored.
  std::shared_ptr<core::Scheduler> restored;
  /// Where the partition's journal goes; null keeps everything in memory.
  /// With a log a job is acknowledged, and a placement confirmed, only once
  /// its record is durable.
  std::shared_ptr<storage::PartitionLog> log;
  /// Also wait until standbys hold the record (replicated_atom from the
  /// partition's change feed, which applies the [ha] ack mode): RPO 0.
  bool await_replication = false;
  /// Store writes in flight at most; the journal accumulates meanwhile, so
  /// each write carries everything since the last (group commit).
  uint32_t max_writes_in_flight = 2;
  /// How often reply timeouts are checked.
  core::Duration tick_interval = std::chrono::milliseconds(100);
  /// Start placing at once (servers) or wait for start_atom (sims).
  bool start_immediately = true;
  /// How long a subscription request to a node may take before it is asked
  /// again (Duration::max(): no limit, for nodes in the same process). Six
  /// attempts fit in the default recovery_grace.
  core::Duration subscribe_timeout = std::chrono::seconds(5);
  /// Fair share and preemption (core/policy); none: priority and submit
  /// order only, nothing is ever preempted.
  std::optional<core::policy::PolicyConfig> policy;
  /// HA: the member that owns this partition; it carries out the
  /// partition's moves. Null (a single server, a sim): moves are refused.
  member_actor member;

  /// Checks what the actor would otherwise trip over; names the field.
  core::Status validate() const;
};

/// What waits for one store write to be durable (and, with
/// await_replication, replicated).
struct PendingWrite {
  std::vector<core::ConfirmRequest> confirms;
  std::vector<std::pair<core::JobId, caf::typed_response_promise<core::JobId>>> acks;
  /// Submits of several copies of a job (repeat_atom): their ids, answered together.
  std::vector<std::pair<std::vector<core::JobId>, caf::typed_response_promise<std::vector<core::JobId>>>> batch_acks;
  /// Operations whose change is in this write (a pool removed): their answers.
  std::vector<std::pair<caf::typed_response_promise<std::string>, std::string>> replies;
  /// The write's last sequence number, once durable.
  uint64_t sequence = 0;
  bool empty() const { return confirms.empty() && acks.empty() && batch_acks.empty() && replies.empty(); }
};

struct scheduler_state {
  explicit scheduler_state(caf::local_actor*) {}

  std::shared_ptr<core::Scheduler> core;
  /// Node handles by the view's dense node index.
  std::vector<node_actor> nodes;
  /// The newest handle registered per node actor whose subscription still
  /// waits: a subscription through an older one stops asking (see subscribe
  /// in scheduler_actor.cpp).
  std::map<caf::actor_addr, node_actor> newest_node_handle;
  core::Outbox outbox;
  std::shared_ptr<storage::PartitionLog> log;
  /// The write being assembled (journals since the last submit) and what
  /// waits for it.
  std::vector<core::Journal> journals;
  PendingWrite assembling;
  /// Writes submitted and not yet durable, oldest first.
  std::deque<PendingWrite> writing;
  /// Durable writes waiting for a standby, oldest first.
  std::deque<PendingWrite> replicating;
  bool await_replication = false;
  /// Standbys hold every change up to this sequence (from the change feed).
  uint64_t replicated_sequence = 0;
  uint64_t durable_sequence = 0;
  /// The offset from the actor's clock to the wall clock as last measured
  /// (see to_wall in scheduler_actor.cpp); nullopt until first asked.
  std::optional<core::Duration> wall_offset;
  uint32_t max_writes_in_flight = 2;
  uint64_t writes_submitted = 0;
  uint64_t writes_completed = 0;
  /// Set when the store failed: the partition stops (fail-stop, see storage/).
  std::string store_error;
  bool started = false;
  bool tick_armed = false;
  /// A burst's messages left their pass to a wake_atom behind them.
  bool pass_owed = false;
  /// When the pending wake_atom fires (kNever: none pending).
  core::TimePoint wake_at = core::kNever;
  core::Duration tick_interval{0};
  core::Duration subscribe_timeout{0};
  uint64_t jobs_finished = 0;
  core::TimePoint last_placement{0};
  uint64_t placements_seen = 0;
  std::string log_name;
  std::unique_ptr<core::policy::PolicyDriver> policy;
  uint64_t policy_cycles = 0;
  /// Operators waiting for an operation to end (pool remove --wait).
  std::map<core::JobId, caf::typed_response_promise<std::string>> operation_waiters;
  /// Carries out partition moves (SchedulerActorConfig::member).
  member_actor member;
  /// Told of placed and ended jobs after every pass (watch_atom).
  std::vector<caf::actor> watchers;

  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         SchedulerActorConfig config);

/// Validates `config` and spawns the scheduler (the error names the field).
core::Expected<scheduler_actor> spawn_scheduler(caf::actor_system& sys, SchedulerActorConfig config);

}  // namespace claimsched::actors
