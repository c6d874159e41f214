#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/actors.hpp"
#include "actors/task_executor.hpp"
#include "core/node_ledger.hpp"

namespace claimsched::storage {
class NodeStore;
}

namespace claimsched::actors {

/// What the process hosting node actors gives every one of them: one copy,
/// shared, rather than one per node.
struct NodeHost {
  /// The process's node store, or null.
  std::shared_ptr<storage::NodeStore> store;
  /// Runs real tasks (an agent); null: tasks are synthetic.
  std::shared_ptr<TaskExecutor> executor;
  /// Without an executor: a task with a command but no simulated runtime
  /// succeeds as soon as it is confirmed (`agent --simulate`). Off in sims,
  /// whose tasks run until the end unless they have a runtime.
  bool finish_unrun_tasks = false;
};

struct NodeActorConfig {
  core::NodeSpec spec;
  core::LedgerConfig ledger;
  /// A ledger rebuilt from the store (restore_ledger) to continue from.
  std::optional<core::NodeLedger> restored;
  /// Shared by the process's node actors; null: no store, synthetic tasks.
  std::shared_ptr<const NodeHost> host;
};

/// Kept small on purpose: a sim hosts 10k-100k of these (target: 2 KB per
/// node, CAF's own actor and the scheduler's view of the node included).
struct node_state {
  explicit node_state(caf::local_actor*) {}

  core::NodeLedger ledger{core::NodeId{}, {}};
  /// The node's spec but its id and capacity, which only the ledger keeps
  /// (the current capacity: a resize changes it there).
  std::string node_name;
  std::string pool;
  std::vector<std::string> labels;
  uint32_t max_starting = 0;
  std::vector<node_listener_actor> subscribers;
  /// Never null.
  std::shared_ptr<const NodeHost> host;
  /// When the pending tick fires (kNever: none pending).
  core::TimePoint timer_at = core::kNever;
  /// Released tasks whose process was told to stop: when it ends, its
  /// partition's scheduler hears how (a task_exited event), for the record.
  /// Few at a time, and none without an executor: a vector, because an
  /// empty map costs 48 bytes per node.
  struct Stopping {
    core::TaskRef task;
    core::PartitionId partition;
    core::ClaimId claim;
  };
  std::vector<Stopping> stopping;

  /// The node's spec, with the ledger's capacity.
  core::NodeSpec spec() const;

  static inline const char* name = "node";
};

/// Spawns a node actor. All node actors of a process share one behavior
/// (node_actor.cpp says how and why).
node_actor spawn_node(caf::actor_system& sys, NodeActorConfig config);

}  // namespace claimsched::actors
