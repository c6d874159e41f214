#pragma once

// The job model. A job is `count` identical tasks kept as one record (Borg's
// equivalence classes): a million pending tasks cost one record per job, not a
// million objects.

#include <string>
#include <string_view>
#include <vector>

#include "core/ids.hpp"
#include "core/resources.hpp"

namespace claimsched::core {

/// Lifecycle of one task. pending -> claimed -> running -> a final state.
enum class TaskState : uint8_t {
  pending = 0,
  claimed,
  running,
  succeeded,
  /// Exited non-zero or was killed at its maximum run time.
  failed,
  /// Removed by the scheduler to make room for other work (policy).
  preempted,
  /// Removed because its node went away or was drained (not policy).
  evicted,
  /// Its node stopped answering while it ran; the outcome is unknown.
  lost,
  /// The user cancelled the job.
  cancelled,
};

std::string_view to_string(TaskState s);
inline bool is_final(TaskState s) { return s >= TaskState::succeeded; }

struct JobSpec {
  JobId id;
  std::string name;
  std::string user;
  std::string job_class;
  std::string pool;
  uint32_t count = 1;
  Resources per_task;
  /// Label selectors every node of the job must satisfy (see node.hpp).
  std::vector<std::string> constraints;
  /// All tasks or none: claimed together, confirmed together.
  bool gang = false;
  bool preemptible = true;
  /// Killed when running longer than this; zero means no limit.
  Duration max_run_time{0};
  /// Synthetic tasks only: how long a task "runs" before it succeeds; zero
  /// means until released.
  Duration simulated_runtime{0};
  /// When the submitter created the job; latency is measured from here.
  TimePoint submit_time{0};

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

/// Largest count accepted for one job; larger bags of tasks belong in a
/// campaign.
inline constexpr uint32_t kMaxTasksPerJob = 10'000'000;

/// Checks what can be checked without the cluster's configuration; the error
/// names the offending field.
Status validate(const JobSpec& job);

}  // namespace claimsched::core
