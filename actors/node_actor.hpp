#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "actors/actors.hpp"
#include "actors/task_executor.hpp"
#include "core/node_ledger.hpp"

namespace claimsched::storage {
class NodeStore;
}

namespace claimsched::actors {

struct NodeActorConfig {
  core::NodeSpec spec;
  core::LedgerConfig ledger;
  /// The process's node store (shared by all its node actors), or null.
  std::shared_ptr<storage::NodeStore> store;
  /// A ledger rebuilt from the store (restore_ledger) to continue from.
  std::optional<core::NodeLedger> restored;
  /// Runs real tasks (an agent); null: tasks are synthetic.
  std::shared_ptr<TaskExecutor> executor;
  /// Without an executor: a task with a command but no simulated runtime
  /// succeeds as soon as it is confirmed (`agent --simulate`). Off in sims,
  /// whose tasks run until the end unless they have a runtime.
  bool finish_unrun_tasks = false;
};

/// Kept small on purpose: a sim hosts 10k-100k of these (target: 2 KB per
/// node including CAF's own actor).
struct node_state {
  explicit node_state(caf::local_actor*) {}

  core::NodeSpec spec;
  core::NodeLedger ledger{core::NodeId{}, {}};
  std::vector<node_listener_actor> subscribers;
  std::shared_ptr<storage::NodeStore> store;
  std::shared_ptr<TaskExecutor> executor;
  bool finish_unrun_tasks = false;
  /// When the pending tick fires (kNever: none pending).
  core::TimePoint timer_at = core::kNever;
  /// Released tasks whose process was told to stop: when it ends, its
  /// partition's scheduler hears how (a task_exited event), for the record.
  struct Stopping {
    core::PartitionId partition;
    core::ClaimId claim;
  };
  std::map<core::TaskRef, Stopping> stopping;

  static inline const char* name = "node";
};

node_actor::behavior_type node(node_actor::stateful_pointer<node_state> self,
                               NodeActorConfig config);

}  // namespace claimsched::actors
