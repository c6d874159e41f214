#pragma once

// The claim protocol's messages as plain values (DESIGN.md, "The claim
// protocol"). messages/ maps them to Protobuf for the wire and the disk; the
// node-side state machine (node_ledger.hpp) and the scheduler (scheduler.hpp)
// speak only these.

#include <optional>
#include <string_view>
#include <vector>

#include "core/ids.hpp"
#include "core/job.hpp"
#include "core/node.hpp"
#include "core/resources.hpp"
#include "core/task_end.hpp"

namespace claimsched::core {

/// A reservation request for several tasks of one job on one node.
struct ClaimRequest {
  ClaimId claim_id;
  PartitionId partition;
  Epoch epoch = 0;
  NodeId node;
  /// Strict CAS: accept only if the node is still at this generation.
  std::optional<Generation> expected_generation;
  JobId job;
  Resources per_task;
  std::vector<TaskIndex> tasks;
  /// Synthetic tasks: how long each runs once confirmed (zero = until released).
  Duration simulated_runtime{0};
  /// Real tasks: what the node runs for each (none for synthetic jobs).
  LaunchRef launch;

  Resources total() const { return per_task.times(static_cast<int64_t>(tasks.size())); }
  friend bool operator==(const ClaimRequest&, const ClaimRequest&) = default;
};

enum class ClaimOutcome : uint8_t {
  accepted = 0,
  /// The claim's epoch is below the highest the node saw for the partition.
  stale_epoch,
  /// Strict CAS: the node's generation differs from the expected one.
  conflict,
  /// The tasks do not fit in what is free.
  insufficient,
  /// The node is draining or down.
  not_schedulable,
  /// Malformed claim (no tasks, a task already on this node, wrong node).
  invalid,
};

std::string_view to_string(ClaimOutcome o);

struct ClaimReply {
  ClaimId claim_id;
  ClaimOutcome outcome = ClaimOutcome::accepted;
  /// The node after handling the claim: the scheduler corrects its view from
  /// it without another round trip.
  NodeSnapshot snapshot;

  friend bool operator==(const ClaimReply&, const ClaimReply&) = default;
};

/// Turns a claim into allocations, after the scheduler recorded the placement.
struct ConfirmRequest {
  ClaimId claim_id;
  PartitionId partition;
  Epoch epoch = 0;
  NodeId node;

  friend bool operator==(const ConfirmRequest&, const ConfirmRequest&) = default;
};

enum class ConfirmOutcome : uint8_t {
  confirmed = 0,
  /// The claim expired or was released before the confirm arrived.
  unknown_claim,
  stale_epoch,
};

std::string_view to_string(ConfirmOutcome o);

struct ConfirmReply {
  ClaimId claim_id;
  ConfirmOutcome outcome = ConfirmOutcome::confirmed;
  NodeSnapshot snapshot;

  friend bool operator==(const ConfirmReply&, const ConfirmReply&) = default;
};

/// Frees a live claim (a gang that could not be completed), or allocations.
struct ReleaseRequest {
  PartitionId partition;
  Epoch epoch = 0;
  NodeId node;
  /// A claim to cancel; zero means none.
  ClaimId claim_id;
  JobId job;
  std::vector<TaskIndex> tasks;
  /// The final state recorded for released allocations (preempted, cancelled, ...).
  TaskState reason = TaskState::cancelled;

  friend bool operator==(const ReleaseRequest&, const ReleaseRequest&) = default;
};

struct ReleaseReply {
  ClaimId claim_id;
  /// Tasks freed (allocations) or released with the claim.
  uint32_t released = 0;
  bool stale_epoch = false;
  NodeSnapshot snapshot;

  friend bool operator==(const ReleaseReply&, const ReleaseReply&) = default;
};

/// Something that happened on a node that its subscribers must know beyond the
/// new free resources.
struct NodeEvent {
  enum class Kind : uint8_t {
    /// A live claim reached its ttl unconfirmed and was dropped.
    claim_expired = 0,
    /// A task reached a final state on the node (exit, kill, release).
    task_finished,
    /// A confirmed task started running.
    task_started,
    /// The process of a task the scheduler had already released (cancelled,
    /// preempted) ended: `end` says how, for the record. Frees nothing.
    task_exited,
  };
  Kind kind = Kind::task_finished;
  PartitionId partition;
  ClaimId claim_id;
  TaskRef task;
  TaskState final_state = TaskState::succeeded;
  /// What a shell would show: the status, 128 + a signal, -1 if it never ran.
  int32_t exit_code = 0;
  /// Why it ended, typed (reason none from nodes that predate it).
  TaskEnd end;

  friend bool operator==(const NodeEvent&, const NodeEvent&) = default;
};

std::string_view to_string(NodeEvent::Kind k);

/// A claim that was accepted and not yet confirmed or released.
struct LiveClaim {
  ClaimId id;
  PartitionId partition;
  TimePoint expires{0};
  JobId job;
  Resources per_task;
  std::vector<TaskIndex> tasks;
  Duration simulated_runtime{0};
  LaunchRef launch;

  Resources total() const { return per_task.times(static_cast<int64_t>(tasks.size())); }
  friend bool operator==(const LiveClaim&, const LiveClaim&) = default;
};

/// A confirmed task on the node.
struct Allocation {
  TaskRef task;
  PartitionId partition;
  bool running = false;
  Resources resources;
  TimePoint confirmed_at{0};
  /// Synthetic tasks: when the task succeeds on its own; kNever otherwise.
  TimePoint finishes_at = kNever;
  ClaimId claim_id;
  /// Real tasks: what runs (kept for the node actor; not stored on disk: a
  /// task does not outlive its agent).
  LaunchRef launch;
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

/// Everything a node holds: for invariant checks, reconciliation after a
/// restart, and status views.
struct NodeReport {
  NodeSpec spec;
  NodeSnapshot snapshot;
  std::vector<std::pair<PartitionId, Epoch>> epochs;
  std::vector<LiveClaim> claims;
  std::vector<Allocation> allocations;
  /// The node's recently finished tasks (task_finished events, oldest
  /// first): a scheduler that restarted learns how its tasks ended while it
  /// was away instead of declaring them lost and running them again.
  std::vector<NodeEvent> finished;

  friend bool operator==(const NodeReport&, const NodeReport&) = default;
};

/// A change of one node, tagged with its generation. A subscriber that sees a
/// generation other than the next one it expects asks for a full snapshot.
struct NodeDelta {
  NodeSnapshot snapshot;
  std::vector<NodeEvent> events;
  /// An answer to a snapshot request (after a gap), not a change. Then
  /// `events` holds the node's recent task_finished events (the ones a gap
  /// may have swallowed) and `allocations` everything allocated on it.
  bool full = false;
  std::vector<Allocation> allocations;

  friend bool operator==(const NodeDelta&, const NodeDelta&) = default;
};

}  // namespace claimsched::core
