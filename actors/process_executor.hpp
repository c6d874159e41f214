#pragma once

// The agent's TaskExecutor: every task a process, through the
// ProcessSupervisor (agent/process_supervisor.hpp). Output goes to
// <output_dir>/<job>/<task>.out and .err (appended: a retried task's runs
// follow each other); a task without a working directory runs in
// <output_dir>/<job>, which its keeper makes (LaunchSpec::make_workdir).
//
// Starts are asynchronous: start() hands the launch to the supervisor's
// thread (ProcessSupervisor::start_async, which starts a burst together) and
// returns. The node actor keeps answering claims meanwhile, instead of
// waiting out every start of a burst; a start that fails comes back as a
// failed TaskEnded. Ends are gathered per round of the supervisor's loop and
// reach each node as one message (TasksEnded) per round.
//
// Tasks can outlive the agent (a drain): detach_all() leaves every running
// task to its keeper (agent/keeper.hpp) and lists them in
// <output_dir>/detached (job, index, keeper pid and start time, deadline);
// the next agent reads that list (load_detached), each node actor adopts
// the tasks its restored ledger still holds (adopt), and the rest are killed
// (drop_unadopted). The list stays current while adopted tasks run, so an
// agent that crashes after adopting does not leave them to run unwatched.

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

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
  /// A start handed to the supervisor, until its result comes.
  struct Starting {
    Running run;
    /// When start() queued it (the start latency counts from here).
    std::chrono::steady_clock::time_point queued_at;
    /// The supervisor is starting it (wanted() said yes): a kill now stops
    /// it once it runs, with this reason.
    bool launching = false;
    std::optional<std::string> kill_reason;
  };
  /// The supervisor's question before it starts `seq` (AsyncStart::wanted).
  bool wanted(uint64_t seq);
  /// The supervisor's answer for `seq` (AsyncStart::done).
  void start_done(uint64_t seq, core::Expected<uint64_t, agent::StartError> handle);
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
  /// Gathers the task's end for its node (flush_ends sends it); `end`
  /// overrides what `how` implies.
  void report(const Running& r, agent::TaskExit how, std::optional<core::TaskEnd> end = std::nullopt);
  /// Sends each node the ends gathered for it: one message per node.
  void flush_ends();

  std::string output_dir_;
  ExecutorMetrics metrics_;
  std::mutex mutex_;
  std::map<uint64_t, Running> by_handle_;
  std::map<core::TaskRef, uint64_t> by_task_;
  /// Exits reported before start() registered their process.
  std::map<uint64_t, agent::TaskExit> early_;
  /// Starts handed to the supervisor and not answered yet, by a number of
  /// their own (a task killed before its start may start again meanwhile).
  std::map<uint64_t, Starting> starting_;
  uint64_t next_start_ = 0;
  /// Left running by an earlier agent, not adopted yet.
  std::map<core::TaskRef, agent::DetachedTask> candidates_;
  /// Adopted from an earlier agent and still running (for write_detached).
  std::map<core::TaskRef, agent::DetachedTask> adopted_;
  /// Notified when a start is answered (detach_all waits for them).
  std::condition_variable queue_changed_;
  bool stopping_ = false;
  /// Ends not sent yet, per node (report, flush_ends).
  std::mutex ends_mutex_;
  std::vector<std::pair<caf::actor, std::vector<TaskEnded>>> ends_;
  /// Last: its destructor reports what it kills through exited(), which
  /// needs the maps above.
  std::unique_ptr<agent::ProcessSupervisor> supervisor_;
};

}  // namespace claimsched::actors
