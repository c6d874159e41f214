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
#include "core/task_end.hpp"

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
  /// It holds a running slot of its class and waits for a lock another job
  /// holds (Ganeti's WAITING); none of its tasks is placed yet.
  waiting,
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
  /// How its last run ended (reason none: it has not ended yet).
  TaskEnd end;
  /// end.reason preempted: the job it made room for (zero if unknown).
  JobId preempted_by;
  /// The node's name, filled in by the gateway (empty if it does not know).
  std::string node_name;

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
  /// In line in its class's lock queue: its weight (the seed's formula) and
  /// age in aging ticks, as of the scheduler's last pass.
  std::optional<double> queue_weight;
  int64_t queue_age_ticks = 0;
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

namespace claimsched::core {

/// Which jobs a listing (`claimsched jobs`) wants. Empty fields match all.
struct JobFilter {
  std::string user;
  std::string pool;
  /// Any of these states (empty: any state).
  std::vector<JobState> states;
  /// Submitted at or after this wall-clock time (ns since the Unix epoch; 0: any).
  TimePoint since{0};
  /// At most this many, the newest first (0: no limit).
  uint32_t limit = 0;
  /// Only jobs with smaller ids (0: any): the next page after a page whose
  /// last (oldest) job this is.
  JobId older_than{0};

  friend bool operator==(const JobFilter&, const JobFilter&) = default;
};

/// Whether `job` (with wall-clock times, as views leave the scheduler) passes.
bool matches(const JobFilter& filter, const JobView& job);
Expected<JobState> parse_job_state(std::string_view s);

}  // namespace claimsched::core
