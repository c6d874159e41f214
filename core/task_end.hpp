#pragma once

// Why a task's run ended, typed: what a user reads in `status`, `explain` and
// their JSON, and what the agent logs. The node knows how a process ended
// (exited, signalled, could not start, exceeded its run time); the scheduler
// knows why it took a task away (cancelled, preempted, evicted, node lost).
// Both record it as a TaskEnd, which travels with the task's final state.
//
// Small on purpose: it rides in every NodeEvent and every task record.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/job.hpp"

namespace claimsched::core {

enum class EndReason : uint8_t {
  /// Not ended, or ended before reasons were recorded.
  none = 0,
  /// The process exited on its own; exit_code is its status.
  exited,
  /// A signal nobody here sent ended it; signal is that signal.
  signaled,
  /// It never ran; stage says what failed and exit_code holds the errno.
  spawn_failed,
  /// It ran longer than the job's max_run_time and was killed; exit_code or
  /// signal is how it ended after the kill.
  max_run_time,
  /// The user cancelled its job; exit_code or signal is how the process
  /// ended after the kill, once the agent reported it.
  cancelled,
  /// The fair-share policy took it away for another job.
  preempted,
  /// Taken away because of its node (drained, shrunk), not by policy.
  evicted,
  /// Its node stopped answering while it ran: the outcome is unknown.
  node_lost,
  /// It used more memory than its job asked for and was killed, by the
  /// kernel in its cgroup (agent/cgroup.hpp) or by its agent
  /// (agent/memory_limit.hpp); signal is how it ended (SIGKILL).
  oom_killed,
  /// Its agent stopped without leaving it running (a crash): the process
  /// died with it.
  agent_stopped,
};

/// What failed when a task could not start.
enum class SpawnStage : uint8_t {
  none = 0,
  /// The job has no command.
  no_command,
  /// The program does not exist (ENOENT, also "not found in PATH").
  no_such_file,
  /// The program exists but may not be executed (EACCES, not executable).
  permission_denied,
  /// The working directory is missing or unusable.
  bad_workdir,
  /// The user to run as does not exist or may not be switched to.
  bad_user,
  /// The output files could not be opened.
  output,
  /// Anything else (fork, exec of a bad binary, resource limits).
  system,
};

struct TaskEnd {
  EndReason reason = EndReason::none;
  SpawnStage stage = SpawnStage::none;
  /// The signal that ended the process, 0 if none.
  uint8_t signal = 0;
  /// exited: its status; a killed task: its status if it exited after the
  /// kill signal, -1 if a signal ended it; spawn_failed: the errno (0 if none).
  int32_t exit_code = 0;
  /// The most memory the run held, in bytes, as its agent measured it
  /// (cgroup memory.peak, or the largest of the process's own peak resident
  /// set and the agent's samples of its process group); 0: not measured.
  uint64_t peak_memory_bytes = 0;
  /// It exited 0 without leaving the output its job declared (absent or
  /// empty), as its agent checked (JobSpec::expected_output).
  bool output_missing = false;

  friend bool operator==(const TaskEnd&, const TaskEnd&) = default;

  static TaskEnd exited(int32_t code) { return {EndReason::exited, SpawnStage::none, 0, code}; }
  static TaskEnd signaled(int sig) { return {EndReason::signaled, SpawnStage::none, as_signal(sig), -1}; }
  static TaskEnd spawn_failed(SpawnStage stage, int error_number) {
    return {EndReason::spawn_failed, stage, 0, error_number};
  }
  /// An end the scheduler decides (cancelled, preempted, evicted, node_lost).
  static TaskEnd decided(EndReason reason) { return {reason, SpawnStage::none, 0, -1}; }
  /// `reason` (max_run_time, cancelled, ...) with how the process ended
  /// after the kill: a signal, or an exit status.
  static TaskEnd observed(EndReason reason, int32_t exit_code, int sig) {
    return {reason, SpawnStage::none, as_signal(sig), sig != 0 ? -1 : exit_code};
  }

 private:
  static uint8_t as_signal(int sig) { return sig > 0 && sig < 256 ? static_cast<uint8_t>(sig) : 0; }
};

/// The end a final state implies when the node said no more (an agent that
/// predates typed ends): `exit_code` as a shell shows it.
TaskEnd inferred_end(TaskState final_state, int32_t exit_code);

std::string_view to_string(EndReason r);
Expected<EndReason> parse_end_reason(std::string_view s);
std::string_view to_string(SpawnStage s);
Expected<SpawnStage> parse_spawn_stage(std::string_view s);
/// "SIGKILL", "SIGTERM", ... ("signal 42" for the rest).
std::string signal_name(int sig);
/// The exit code a shell would show: the status, or 128 + the signal; -1
/// if the task did not run.
int32_t shell_exit_code(const TaskEnd& end);
/// One line for people: "exited with code 3", "killed by signal 9
/// (SIGKILL)", "could not start: no such file or directory", "exceeded its
/// maximum run time; exited with code 143 after SIGTERM", "cancelled", ...
/// (without who preempted it: the caller knows that).
std::string describe(const TaskEnd& end);
/// Bytes for people, in binary units with one decimal: "812 B", "3.5 KiB",
/// "301.2 MiB", "1.5 GiB".
std::string format_memory(uint64_t bytes);

}  // namespace claimsched::core
