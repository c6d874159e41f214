#pragma once

// The agent's TaskExecutor: every task a process, through the
// ProcessSupervisor (agent/process_supervisor.hpp). Output goes to
// <output_dir>/<job>/<task>.out and .err (appended: a retried task's runs
// follow each other); a task without a working directory runs in
// <output_dir>/<job>, which its keeper makes (LaunchSpec::make_workdir).
//
// Starts are asynchronous: start() queues the launch and returns, a launcher
// thread starts the task's keeper and waits for the task's exec. The node
// actor keeps answering claims meanwhile, instead of waiting out every
// fork of a burst; a start that fails comes back as a failed TaskEnded.
//
// Tasks can outlive the agent (a drain): detach_all() leaves every running
// task to its keeper (agent/keeper.hpp) and lists them in
// <output_dir>/detached (job, index, keeper pid and start time, deadline);
// the next agent reads that list (load_detached), each node actor adopts
// the tasks its restored ledger still holds (adopt), and the rest are killed
// (drop_unadopted). The list stays current while adopted tasks run, so an
// agent that crashes after adopting does not leave them to run unwatched.

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "actors/executor_metrics.hpp"
#include "actors/task_executor.hpp"
#include "agent/process_supervisor.hpp"

namespace claimsched::actors {

class ProcessExecutor : public TaskExecutor {
 public:
  /// `supervisor` as given, except that tasks run in cgroups where a
  /// delegated tree is found (SupervisorOptions::cgroups).
  explicit ProcessExecutor(std::string output_dir, agent::SupervisorOptions supervisor = {});
  ~ProcessExecutor() override;

  core::Status start(const caf::actor& node, const core::NodeSpec& spec,
                     const core::Allocation& allocation) override;
  bool kill(core::TaskRef task, const std::string& reason) override;
  core::Expected<core::LogChunk> read_output(const core::LogRequest& request) const override;

  /// Where a task's standard output goes.
  std::string stdout_path(core::TaskRef task) const;
  std::string stderr_path(core::TaskRef task) const;

  /// Leaves every running task to its keeper to outlive this agent, and
  /// writes the list the next agent adopts them from. Starts already queued
  /// are launched first (for up to `launch_wait`), so that every task its
  /// node confirmed runs on; what is still queued then never starts.
  /// Returns how many tasks were left running.
  size_t detach_all(std::chrono::milliseconds launch_wait = std::chrono::seconds(10));
  /// Reads the list an earlier agent left (before any node actor starts).
  void load_detached();
  /// Takes over `task` if an earlier agent left it running: its end comes
  /// to `node` as a TaskEnded. False if there is no such task.
  bool adopt(const caf::actor& node, const core::Allocation& allocation) override;
  std::optional<TaskEnded> recorded_end(const core::Allocation& allocation) const override;
  /// Kills what an earlier agent left and no node adopted (its ledger no
  /// longer holds it); nothing reports their ends.
  void drop_unadopted();
  /// Tasks started (or adopted) and not ended, plus those waiting to start.
  size_t busy();
  /// True if a task of `job` runs (or waits to start) here.
  bool runs_job(core::JobId job);
  /// Starts, start latency and ends, for /metrics.
  const ExecutorMetrics& metrics() const { return metrics_; }

 private:
  struct Running {
    caf::actor node;
    core::TaskRef task;
    core::ClaimId claim;
    /// The output its job declared (absolute), checked when it exits 0;
    /// empty: none.
    std::string expected_output;
  };
  struct Queued {
    caf::actor node;
    core::TaskRef task;
    core::ClaimId claim;
    std::string expected_output;
    agent::LaunchSpec launch;
    /// When start() queued it (the start latency counts from here).
    std::chrono::steady_clock::time_point queued_at;
  };
  void launch_loop();
  void launch(Queued q);
  /// Registers a started (or adopted) process, or reports it if its exit
  /// already came; with `kill_reason`, stops it now.
  void track(uint64_t handle, const Running& r, std::optional<std::string> kill_reason);
  /// Rewrites the list of detached tasks: the adopted ones still running.
  void write_detached();
  std::string detached_path() const { return output_dir_ + "/detached"; }
  /// Where `allocation`'s declared output is (a relative name is under its
  /// working directory, the job's or the default one); empty: none declared.
  std::string expected_output_path(const core::Allocation& allocation) const;
  /// Where the keeper of the run confirmed under `claim` records its exit
  /// (one file per run: an older run's never speaks for a newer one).
  std::string exit_path(core::TaskRef task, core::ClaimId claim) const;
  void exited(uint64_t handle, agent::TaskExit how);
  /// The task's end as its node hears it; `end` overrides what `how` implies.
  static TaskEnded ended(const Running& r, const agent::TaskExit& how, std::optional<core::TaskEnd> end);
  /// Sends the task's end to its node; `end` overrides what `how` implies.
  void report(const Running& r, agent::TaskExit how, std::optional<core::TaskEnd> end = std::nullopt);

  std::string output_dir_;
  ExecutorMetrics metrics_;
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
  /// The launcher holds a start it has not finished tracking (launching_
  /// clears before the process is tracked): detach_all() waits for it.
  bool launcher_busy_ = false;
  /// Left running by an earlier agent, not adopted yet.
  std::map<core::TaskRef, agent::DetachedTask> candidates_;
  /// Adopted from an earlier agent and still running (for write_detached).
  std::map<core::TaskRef, agent::DetachedTask> adopted_;
  std::condition_variable queue_changed_;
  bool stopping_ = false;
  std::thread launcher_;
  /// Last: its destructor reports what it kills through exited(), which
  /// needs the maps above.
  std::unique_ptr<agent::ProcessSupervisor> supervisor_;
};

}  // namespace claimsched::actors
