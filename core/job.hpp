#pragma once

// The job model. A job is `count` identical tasks kept as one record (Borg's
// equivalence classes): a million pending tasks cost one record per job, not a
// million objects.

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "core/ids.hpp"
#include "core/locks/declaration.hpp"
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
/// How many TaskState values there are.
inline constexpr size_t kTaskStates = static_cast<size_t>(TaskState::cancelled) + 1;
/// Tasks per TaskState.
using TaskCounts = std::array<uint32_t, kTaskStates>;
inline bool is_final(TaskState s) { return s >= TaskState::succeeded; }

/// What a node runs for each task of a job: a command, its environment and
/// working directory, and the limit on how long it may run.
struct TaskLaunch {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  /// Empty: the agent's default directory.
  std::string workdir;
  /// Killed (and failed) when running longer than this; zero: no limit.
  Duration max_run_time{0};
  /// A file (relative to workdir) the task must leave, non-empty, when it
  /// exits 0; its agent checks and says so in the end (TaskEnd::output_missing).
  /// Empty: none declared.
  std::string expected_output;

  friend bool operator==(const TaskLaunch&, const TaskLaunch&) = default;
};

/// A shared, immutable TaskLaunch that compares by value: a job's claims all
/// point at one copy.
class LaunchRef {
 public:
  LaunchRef() = default;
  explicit LaunchRef(TaskLaunch launch) : ptr_(std::make_shared<const TaskLaunch>(std::move(launch))) {}
  explicit operator bool() const { return ptr_ != nullptr; }
  const TaskLaunch& operator*() const { return *ptr_; }
  const TaskLaunch* operator->() const { return ptr_.get(); }
  friend bool operator==(const LaunchRef& a, const LaunchRef& b) {
    if (!a.ptr_ || !b.ptr_) return a.ptr_ == b.ptr_;
    return *a.ptr_ == *b.ptr_;
  }

 private:
  std::shared_ptr<const TaskLaunch> ptr_;
};

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
  /// The command every task runs; empty for synthetic jobs (sim, --simulate).
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  /// A task that fails (exits non-zero, or is killed at max_run_time) runs
  /// again this many times; 0: a failure is final.
  uint32_t max_retries = 0;
  /// A task whose node is lost runs again this many times.
  uint32_t max_lost_retries = 3;
  /// Accept it even if no node of its pool can run it now (for nodes still
  /// to come; `submit --hold`). Without it such a job is refused at submit.
  bool wait_for_nodes = false;
  /// What it locks while it runs (Ganeti's lock declarations); empty: no
  /// locks, it never waits on one.
  LockDeclaration locks;
  /// A file every task must leave, non-empty, when it exits 0 (a campaign's
  /// declared output, rendered per task); relative to workdir. The task still
  /// succeeds without it: its end says the output is missing (TaskEnd), and
  /// the campaign counts that as sink evidence. Empty: none declared.
  std::string expected_output;

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

/// Largest count accepted for one job; larger bags of tasks belong in a
/// campaign.
inline constexpr uint32_t kMaxTasksPerJob = 10'000'000;

/// Checks what can be checked without the cluster's configuration; the error
/// names the offending field.
Status validate(const JobSpec& job);

}  // namespace claimsched::core
