#pragma once

// The agent's TaskExecutor: every task a process, through the
// ProcessSupervisor (agent/process_supervisor.hpp). Output goes to
// <output_dir>/<job>/<task>.out and .err (appended: a retried task's runs
// follow each other); a task without a working directory runs in
// <output_dir>/<job>.
//
// Starts are asynchronous: start() queues the launch and returns, a launcher
// thread forks and execs (about 2 ms per process on a small VM). The node
// actor keeps answering claims meanwhile, instead of waiting out every
// fork of a burst; a start that fails comes back as a failed TaskEnded.

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "actors/task_executor.hpp"
#include "agent/process_supervisor.hpp"

namespace claimsched::actors {

class ProcessExecutor : public TaskExecutor {
 public:
  explicit ProcessExecutor(std::string output_dir);
  ~ProcessExecutor() override;

  core::Status start(const caf::actor& node, const core::NodeSpec& spec,
                     const core::Allocation& allocation) override;
  bool kill(core::TaskRef task, const std::string& reason) override;
  core::Expected<core::LogChunk> read_output(const core::LogRequest& request) const override;

  /// Where a task's standard output goes.
  std::string stdout_path(core::TaskRef task) const;
  std::string stderr_path(core::TaskRef task) const;

 private:
  struct Running {
    caf::actor node;
    core::TaskRef task;
  };
  struct Queued {
    caf::actor node;
    core::TaskRef task;
    agent::LaunchSpec launch;
  };
  void launch_loop();
  void launch(Queued q);
  void exited(uint64_t handle, agent::TaskExit how);
  /// Sends the task's end to its node; `end` overrides what `how` implies.
  void report(const Running& r, agent::TaskExit how, std::optional<core::TaskEnd> end = std::nullopt);

  std::string output_dir_;
  std::mutex mutex_;
  std::map<uint64_t, Running> by_handle_;
  std::map<core::TaskRef, uint64_t> by_task_;
  /// Exits reported before start() registered their process.
  std::map<uint64_t, agent::TaskExit> early_;
  /// Starts not launched yet (a kill takes them out); guarded by mutex_.
  std::deque<Queued> queued_;
  /// The start the launcher is in the middle of, and the reason to kill it
  /// once it runs if a kill came meanwhile.
  std::optional<core::TaskRef> launching_;
  std::optional<std::string> kill_when_launched_;
  std::condition_variable queue_changed_;
  bool stopping_ = false;
  std::thread launcher_;
  /// Last: its destructor reports what it kills through exited(), which
  /// needs the maps above.
  std::unique_ptr<agent::ProcessSupervisor> supervisor_;
};

}  // namespace claimsched::actors
