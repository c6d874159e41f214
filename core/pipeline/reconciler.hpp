#pragma once

// Reconciliation: what the scheduler's records say against what a node
// reports, on every (re)registration, after a generation gap, and after a
// restart. The documented rule: the scheduler's durable records decide where a
// task runs.
//   - an allocation of ours the records place on this node is adopted;
//   - one they do not back (unknown job, task pending, final or elsewhere) is
//     released, and so is a live claim of ours that is not in flight;
//   - a task the records place on the node that the node does not hold is
//     lost and placed again — unless the node reports it finished (it ended
//     while this scheduler was away): then it ends as the node saw it end.
// After a restart, tasks the store places on a node are "unverified" until
// that node reports; those of nodes that stay away for recovery_grace are lost.
// A task lost with a node that comes back saying the task succeeded there
// meanwhile (under its keeper) succeeded: that run stands, and the run placed
// since is stopped; other ends of a lost run change nothing (the new run is
// its retry). The reconciler owns both sets; it decides, the scheduler applies.

#include <map>
#include <vector>

#include "core/pipeline/claim_window.hpp"
#include "core/pipeline/task_table.hpp"

namespace claimsched::core {

struct ReconcileDecision {
  /// Tasks running on the node per the records that the node holds too and
  /// whose node the records did not know yet (restored): adopt them there.
  std::vector<TaskRef> adopt;
  /// Allocations the records do not back, per job (job order).
  std::map<JobId, std::vector<TaskIndex>> release_allocations;
  /// Live claims of ours that are not in flight.
  std::vector<std::pair<JobId, ClaimId>> release_claims;
  /// Tasks the records place on the node that it does not hold, per job.
  std::map<JobId, std::vector<TaskIndex>> lost;
};

class Reconciler {
 public:
  /// A task restored from the store onto `node`: unverified until the node
  /// reports (or recovery_grace passes).
  void expect(NodeId node, TaskRef task, TimePoint now);
  uint64_t unverified() const;

  /// Tasks restored onto this node, or running on it (`n`) as we know it,
  /// that it reports finished and does not hold again: the events that end
  /// them, oldest run's end last. A node that restarted under a running
  /// scheduler reports the tasks its agent took down this way. Reads only the
  /// reported ends, never every running task: every node registers after a
  /// takeover.
  std::vector<const NodeEvent*> finished_while_away(const NodeReport& report, std::optional<NodeIndex> n,
                                                    PartitionId partition,
                                                   const TaskTable& table) const;

  /// The rule above over a node's allocations (and its live claims, when
  /// given); with check_running, every task believed running there is
  /// expected too, not only those restored. Forgets the node's unverified set.
  ReconcileDecision reconcile(NodeIndex n, NodeId node, const std::vector<Allocation>& allocations,
                              const std::vector<LiveClaim>* claims, bool check_running, PartitionId partition,
                              const TaskTable& table, const ClaimWindow& window);

  /// `task` was running on `node` when the node was declared down, and goes
  /// back to the queue: if the node comes back saying it succeeded meanwhile,
  /// that run stands (succeeded_while_lost).
  void lost_with(NodeId node, TaskRef task);
  /// The ends `report` gives of tasks lost with its node that succeeded there
  /// meanwhile and are not final yet (one per task, not of a gang's: a gang
  /// runs again whole). Forgets the node's lost tasks.
  std::vector<const NodeEvent*> succeeded_while_lost(const NodeReport& report, PartitionId partition,
                                                     const TaskTable& table);

  /// The node is gone: its unverified tasks, per job.
  std::map<JobId, std::vector<TaskIndex>> forget(NodeId node);
  /// recovery_grace passed since the restore: every unverified task, per job.
  std::map<JobId, std::vector<TaskIndex>> expire(TimePoint now, Duration grace);

 private:
  /// Restored tasks awaiting their node's report, by node.
  std::map<NodeId, std::vector<TaskRef>> unverified_;
  TimePoint restored_at_ = TimePoint::min();
  /// Tasks lost with a node, by node: the newest kLostKept of each (a node
  /// reports no more ends than that: LedgerConfig::recent_finished).
  static constexpr size_t kLostKept = 4096;
  std::map<NodeId, std::vector<TaskRef>> lost_with_;
};

}  // namespace claimsched::core
