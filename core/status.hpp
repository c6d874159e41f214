#pragma once

// What clients see: a job's state, its tasks, why it waits; a node's state.
// Built by the scheduler (Scheduler::job_view) and the gateway; carried to
// `claimsched status|queue|nodes` as Protobuf (messages/claimsched.proto).

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/node.hpp"

namespace claimsched::core {

/// A job as a whole, from its tasks' states.
enum class JobState : uint8_t {
  /// No task placed yet (or all back in the queue).
  pending = 0,
  /// Some task claimed or running.
  running,
  /// Every task succeeded.
  succeeded,
  /// Every task ended and at least one did not succeed.
  failed,
  /// The user cancelled it.
  cancelled,
};

std::string_view to_string(JobState s);

struct TaskView {
  TaskIndex index = 0;
  TaskState state = TaskState::pending;
  /// The node it runs (or last ran) on; zero if never placed.
  NodeId node;
  int32_t exit_code = 0;
  uint32_t failures = 0;
  uint32_t losses = 0;

  friend bool operator==(const TaskView&, const TaskView&) = default;
};

struct JobView {
  JobSpec spec;
  JobState state = JobState::pending;
  /// Tasks per TaskState.
  TaskCounts by_state{};
  /// Why it waits, in words (empty when nothing waits).
  std::string reason;
  /// The last time a task was taken away (preempted, evicted, lost, failed).
  std::string last_removal;
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  /// When its first task ran and when its last ended (the scheduler's clock,
  /// the same as spec.submit_time's when the gateway stamped it); kNever if not yet.
  TimePoint started_at = kNever;
  TimePoint finished_at = kNever;
  /// Per task; empty in queue listings.
  std::vector<TaskView> tasks;

  uint32_t count_in(TaskState s) const { return by_state[static_cast<size_t>(s)]; }
  friend bool operator==(const JobView&, const JobView&) = default;
};

/// The state a job is in, from its tasks' states.
JobState job_state(const TaskCounts& by_state, uint32_t count, bool cancelled);

struct NodeStatus {
  NodeSpec spec;
  NodeSnapshot snapshot;
  /// Heartbeats arrive (false: down, or not yet registered).
  bool alive = false;
  /// Milliseconds since its last heartbeat.
  int64_t silent_ms = 0;
  uint32_t running_tasks = 0;

  friend bool operator==(const NodeStatus&, const NodeStatus&) = default;
};

}  // namespace claimsched::core
