#pragma once

// How a node actor runs real tasks. The agent plugs in an executor that
// starts processes (agent/process_supervisor); sims have none. An executor
// reports every task it started exactly once, as a TaskEnded message to the
// node actor that started it.

#include <optional>
#include <string>

#include "actors/actors.hpp"

namespace claimsched::actors {

class TaskExecutor {
 public:
  virtual ~TaskExecutor() = default;
  /// Starts the task of `allocation` on the node described by `spec`; its end
  /// comes back to `node` as a TaskEnded. An error means it did not start
  /// (and no TaskEnded follows); an executor may also start asynchronously
  /// and report a failed start as a TaskEnded (failed).
  virtual core::Status start(const caf::actor& node, const core::NodeSpec& spec,
                             const core::Allocation& allocation) = 0;
  /// Stops the task (it was released: cancelled, preempted, evicted); its
  /// TaskEnded still follows, unless the task had not started yet (then it
  /// never starts and nothing follows: the node freed it already). Returns
  /// whether a TaskEnded follows.
  virtual bool kill(core::TaskRef task, const std::string& reason) = 0;
  /// Takes over the task of `allocation`, left running by an earlier agent
  /// of this node: its end comes to `node` as a TaskEnded. False if nothing
  /// of it runs.
  virtual bool adopt(const caf::actor& node, const core::Allocation& allocation) = 0;
  /// How the run of `allocation` ended, if it ended while no agent of this
  /// node heard it (the agent was killed between the end and its report);
  /// none: not known to have ended.
  virtual std::optional<TaskEnded> recorded_end(const core::Allocation& allocation) const {
    (void)allocation;
    return std::nullopt;
  }
  /// Reads part of a task's output (what `request` asks; `running` and
  /// `node` are the caller's to fill). Errors: no output kept for it.
  virtual core::Expected<core::LogChunk> read_output(const core::LogRequest& request) const = 0;
};

}  // namespace claimsched::actors

