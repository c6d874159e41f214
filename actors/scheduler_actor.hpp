#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "actors/actors.hpp"
#include "core/scheduler.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::actors {

struct SchedulerActorConfig {
  core::SchedulerConfig scheduler;
  /// A scheduler rebuilt from its store (storage::recover_partition); when
  /// set, `scheduler` is ignored.
  std::shared_ptr<core::Scheduler> restored;
  /// The partition's store; null keeps everything in memory. With a store a
  /// job is acknowledged, and a placement confirmed, only once its record is
  /// durable.
  std::shared_ptr<storage::PartitionStore> store;
  /// Store writes in flight at most; the journal accumulates meanwhile, so
  /// each write carries everything since the last (group commit).
  uint32_t max_writes_in_flight = 2;
  /// How often reply timeouts are checked.
  core::Duration tick_interval = std::chrono::milliseconds(100);
  /// Start placing at once (servers) or wait for start_atom (sims).
  bool start_immediately = true;
  /// How long a subscription request to a node may take (Duration::max():
  /// no limit, for nodes in the same process).
  core::Duration subscribe_timeout = std::chrono::seconds(30);
  /// Fair share and preemption (core/policy); none: priority and submit
  /// order only, nothing is ever preempted.
  std::optional<core::policy::PolicyConfig> policy;
};

/// What waits for one store write to be durable.
struct PendingWrite {
  std::vector<core::ConfirmRequest> confirms;
  std::vector<std::pair<core::JobId, caf::typed_response_promise<core::JobId>>> acks;
  bool empty() const { return confirms.empty() && acks.empty(); }
};

struct scheduler_state {
  explicit scheduler_state(caf::local_actor*) {}

  std::shared_ptr<core::Scheduler> core;
  /// Node handles by the view's dense node index.
  std::vector<node_actor> nodes;
  core::Outbox outbox;
  std::shared_ptr<storage::PartitionStore> store;
  /// The write being assembled and what waits for it.
  std::optional<storage::PartitionStore::Batch> batch;
  PendingWrite assembling;
  /// Writes submitted and not yet durable, oldest first.
  std::deque<PendingWrite> writing;
  uint32_t max_writes_in_flight = 2;
  uint64_t writes_submitted = 0;
  uint64_t writes_completed = 0;
  /// Set when the store failed: the partition stops (fail-stop, see storage/).
  std::string store_error;
  bool started = false;
  bool tick_armed = false;
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

  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         SchedulerActorConfig config);

}  // namespace claimsched::actors
