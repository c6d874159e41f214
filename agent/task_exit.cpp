#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "agent/process_supervisor.hpp"

// How a task ended, in the supervisor's terms and as core::TaskEnd, and the
// environment that tells a task who it is: what process_supervisor.hpp
// declares besides the supervisor itself.

namespace claimsched::agent {

namespace {

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

}  // namespace

// ---- TaskExit -----------------------------------------------------------------

TaskExit TaskExit::start_failure(const core::Error& error) {
  return TaskExit{How::failed_to_start, -1, 0, error.message.empty() ? error.to_string() : error.message};
}

core::TaskEnd TaskExit::end() const {
  core::TaskEnd e;
  switch (how) {
    case How::exited:
      e = core::TaskEnd::exited(exit_code);
      break;
    case How::killed_by_signal:
      e = core::TaskEnd::signaled(signal);
      break;
    case How::timed_out:
      e = core::TaskEnd::observed(core::EndReason::max_run_time, exit_code, signal);
      break;
    case How::failed_to_start:
      e = core::TaskEnd::spawn_failed(core::SpawnStage::system, 0);
      break;
    case How::killed_on_request:
      e = core::TaskEnd::observed(core::EndReason::cancelled, exit_code, signal);
      break;
    case How::oom_killed:
      e = core::TaskEnd::observed(core::EndReason::oom_killed, exit_code, signal);
      break;
  }
  e.peak_memory_bytes = peak_memory_bytes;
  return e;
}

std::string_view to_string(TaskExit::How how) {
  switch (how) {
    case TaskExit::How::exited:
      return "exited";
    case TaskExit::How::killed_by_signal:
      return "killed by signal";
    case TaskExit::How::timed_out:
      return "timed out";
    case TaskExit::How::failed_to_start:
      return "failed to start";
    case TaskExit::How::killed_on_request:
      return "killed on request";
    case TaskExit::How::oom_killed:
      return "killed for exceeding its memory limit";
  }
  return "unknown";
}

TaskExit exit_from_status(int status) {
  TaskExit e;
  if (WIFEXITED(status)) {
    e.how = TaskExit::How::exited;
    e.exit_code = WEXITSTATUS(status);
    e.detail = "exited with status " + std::to_string(e.exit_code);
  } else if (WIFSIGNALED(status)) {
    e.how = TaskExit::How::killed_by_signal;
    e.signal = WTERMSIG(status);
    e.detail = "killed by signal " + std::to_string(e.signal) + " (" + signal_name(e.signal) + ")";
    if (WCOREDUMP(status)) e.detail += ", core dumped";
  } else {
    e.how = TaskExit::How::killed_by_signal;
    e.detail = "ended with wait status " + std::to_string(status);
  }
  return e;
}

std::vector<std::pair<std::string, std::string>> task_environment(core::JobId job, core::TaskIndex index,
                                                                  std::string_view node_name,
                                                                  const core::Resources& resources) {
  std::vector<std::pair<std::string, std::string>> env{
      {"CLAIMSCHED_JOB_ID", std::to_string(job.value)},
      {"CLAIMSCHED_TASK_INDEX", std::to_string(index)},
      {"CLAIMSCHED_NODE", std::string(node_name)},
      {"CLAIMSCHED_RESOURCES", resources.to_string()},
      {"CLAIMSCHED_CPU_MILLICORES", std::to_string(resources[core::dim::cpu])},
      {"CLAIMSCHED_MEMORY_BYTES", std::to_string(resources[core::dim::memory])},
  };
  if (resources[core::dim::gpu] > 0) env.emplace_back("CLAIMSCHED_GPU", std::to_string(resources[core::dim::gpu]));
  return env;
}

}  // namespace claimsched::agent
