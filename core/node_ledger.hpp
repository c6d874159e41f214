#pragma once

// The node-side claim state machine (DESIGN.md, "The claim protocol"). One
// ledger per node; the node actor is its only caller, so every operation is
// serialised. Invariants, checked by tests under random interleavings:
// allocated + claimed <= capacity; a task is held at most once; a claim from a
// fenced epoch is never accepted; an unconfirmed claim is gone after its ttl.
//
// Generations: every operation that changes the ledger increments the
// generation exactly once, so a subscriber that sees every reply and delta of
// this node sees consecutive generations.

#include <optional>
#include <vector>

#include "core/protocol.hpp"

namespace claimsched::core {

struct LedgerConfig {
  /// An unconfirmed claim is dropped this long after it was accepted.
  Duration claim_ttl = std::chrono::seconds(10);
  /// Synthetic tasks: how long a confirmed task is "starting" before it runs.
  Duration start_delay{0};
  /// How many task ends the node remembers for a scheduler that missed them
  /// (a gap in its stream, or its own restart): that many tasks may end on
  /// the node while its scheduler is away without being run again. An agent
  /// keeps many; a sim node few (memory per node).
  uint32_t recent_finished = 64;
};

class NodeLedger {
 public:
  NodeLedger(NodeId id, Resources capacity, LedgerConfig config = {});

  /// DESIGN.md's three steps: epoch fence, optional strict CAS, fit check.
  /// Every reject carries the snapshot after the check.
  ClaimReply claim(const ClaimRequest& request, TimePoint now);
  ConfirmReply confirm(const ConfirmRequest& request, TimePoint now);
  ReleaseReply release(const ReleaseRequest& request, TimePoint now);

  /// A task on this node reached a final state (the process exited, it was
  /// killed), for the reason `end`. With `claim`, only the run that claim
  /// allocated ends (a process killed on a release may exit after the task
  /// was allocated here again). Returns false if the task (that run of it)
  /// is not allocated here.
  bool finish_task(TaskRef task, TaskState final_state, int32_t exit_code, std::vector<NodeEvent>& events,
                   const TaskEnd& end = {}, std::optional<ClaimId> claim = std::nullopt);

  /// Fires every deadline at or before `now`: expires claims, starts and
  /// finishes synthetic tasks. Appends what happened to `events`. Returns true
  /// if the ledger changed (the generation moved by exactly one).
  bool advance(TimePoint now, std::vector<NodeEvent>& events);
  /// The earliest deadline advance() would act on, or kNever.
  TimePoint next_deadline() const;

  /// up/draining/down. Returns true if the state changed (one generation).
  bool set_state(NodeState state);
  /// Changes capacity (a resized machine). May leave the node over capacity;
  /// that is the preemption policy's to resolve, never hidden here.
  void set_capacity(const Resources& capacity);
  /// Forces the generation forward (after a restart the node continues from
  /// the highest generation it persisted, so subscribers never see it go back).
  void restore_generation(Generation g) { generation_ = std::max(generation_, g); }

  NodeSnapshot snapshot() const;
  NodeId id() const { return id_; }
  Generation generation() const { return generation_; }
  NodeState state() const { return state_; }
  const Resources& capacity() const { return capacity_; }
  /// capacity - allocated - claimed (negative after a capacity cut).
  const Resources& free() const { return free_; }
  /// What the allocations / the live claims hold: sums, computed (for checks
  /// and reports; the protocol needs only free()).
  Resources allocated() const;
  Resources claimed() const;
  const std::vector<LiveClaim>& claims() const { return claims_; }
  const std::vector<Allocation>& allocations() const { return allocations_; }
  /// Highest epoch seen per partition.
  const std::vector<std::pair<PartitionId, Epoch>>& epochs() const { return epochs_; }
  /// Highest epoch seen for `partition` (0 if none).
  Epoch highest_epoch(PartitionId partition) const;
  const LedgerConfig& config() const { return config_; }
  /// The last config.recent_finished task_finished events, oldest first: a full
  /// snapshot carries them, so a subscriber that missed deltas still learns
  /// how its tasks ended.
  std::vector<NodeEvent> recent_finished() const;
  /// The task_finished events remembered since the last call, each with its
  /// sequence number (the count of events remembered before it, for ever) and
  /// its slot in the ring (sequence mod config.recent_finished): what a
  /// durable node writes, so that a restarted agent still reports the ends
  /// its tasks reached (slots bound what is stored to the ring's size).
  struct FinishedRecord {
    uint64_t sequence = 0;
    uint32_t slot = 0;
    NodeEvent event;
  };
  std::vector<FinishedRecord> take_unsaved_finished();

  /// Restores an allocation recorded before a restart (durability). The caller
  /// guarantees it fits; returns false if the task is already held.
  bool restore_allocation(const Allocation& allocation);
  bool restore_claim(const LiveClaim& claim);
  void restore_epoch(PartitionId partition, Epoch epoch);
  /// Restores a remembered task_finished event (its sequence as
  /// take_unsaved_finished gave it); call in ascending sequence order.
  void restore_finished(uint64_t sequence, const NodeEvent& event);

 private:
  enum class EpochCheck { ok, stale };
  EpochCheck observe_epoch(PartitionId partition, Epoch epoch);
  bool holds(TaskRef task) const;
  std::vector<Allocation>::iterator find_allocation(TaskRef task);
  void push_deadline(TimePoint at);
  /// Removes claim `index`, returning it, and gives back what it held.
  LiveClaim drop_claim(size_t index);

  NodeId id_;
  NodeState state_ = NodeState::up;
  Generation generation_ = 0;
  Resources capacity_;
  /// One running sum, not allocated and claimed apiece: a sim hosts 10k-100k
  /// ledgers, and every claim checks only what is free.
  Resources free_;
  uint32_t starting_ = 0;
  LedgerConfig config_;
  std::vector<std::pair<PartitionId, Epoch>> epochs_;
  std::vector<LiveClaim> claims_;
  std::vector<Allocation> allocations_;
  /// Min-heap of pending deadlines; entries may be stale (lazy deletion).
  std::vector<TimePoint> deadlines_;
  /// A ring of the last task_finished events (allocated on the first one):
  /// the one of sequence s is at s mod config.recent_finished; a slot a
  /// restore left empty holds job 0 (no job has that id).
  std::vector<NodeEvent> recent_finished_;
  /// Events remembered for ever, and how many of the newest are unsaved.
  uint64_t finished_seen_ = 0;
  uint32_t finished_unsaved_ = 0;
  void remember_finished(const NodeEvent& ev);
};

}  // namespace claimsched::core
