#pragma once

// Starting tasks' keepers, several at a time: the ProcessSupervisor's start
// (process_supervisor.hpp), on its thread. Internal to agent/.
//
// A batch of starts costs the supervisor's thread one wait for the keepers'
// maker and one for the tasks' execs, not two per task: every keeper is
// asked of the zygote first (its requests in flight together, answered in
// order), then the execs of all of them are awaited together. Each start
// still ends exactly as it would alone: the same errors, the same limits
// (exec_timeout each), and a start whose keeper may have been forked but did
// not answer fails rather than risk a second keeper.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/cgroup.hpp"
#include "agent/keeper_spawn.hpp"
#include "agent/launch.hpp"
#include "agent/process_supervisor.hpp"

namespace claimsched::agent::launch {

/// A task whose keeper started it (the task exec'd): what the supervisor
/// watches from then on.
struct Started {
  pid_t pid = 0;
  /// -1: pidfd_open failed; the supervisor polls for the exit.
  UniqueFd pidfd;
  /// Write end of the keeper's control pipe.
  UniqueFd control;
  /// Its own cgroup; empty: none.
  std::string cgroup;
  std::chrono::steady_clock::time_point started;
  /// From the keeper program (zygote or exec), not a fork of this process.
  bool spawned = false;
};

/// A poll(2) timeout in milliseconds for `d` from now: 0 once it passed,
/// rounded up so a wait never wakes just before its deadline.
int poll_timeout_ms(std::chrono::steady_clock::duration d);

class Starter {
 public:
  /// `cgroups`: the tree tasks run in, if any (kept by the caller);
  /// `remove_cgroup` removes a task cgroup of a start that failed.
  Starter(const SupervisorOptions& options, std::string keeper_binary, const std::optional<cgroup::Tree>* cgroups,
          std::function<void(const std::string&)> remove_cgroup);
  ~Starter();

  /// Starts every one of `batch`, each as ProcessSupervisor::start would;
  /// the results are in the batch's order. Its descriptors are closed
  /// (those of `batch` too). Call it on the supervisor's thread only.
  std::vector<core::Expected<Started, StartError>> start(const std::vector<Prepared*>& batch);

  /// Ends the zygote (on the thread whose end would kill it).
  void stop_zygote() { zygote_.reset(); }
  /// The keeper program; empty: keepers are forks of this process.
  const std::string& keeper_binary() const { return keeper_binary_; }

 private:
  struct InFlight;
  std::optional<StartError> prepare_pipes(InFlight& s);
  /// Starts `s`'s keeper without the zygote: an exec, or a fork of this process.
  void spawn_directly(InFlight& s);
  /// Whether the zygote (started now if need be) is there to ask.
  bool zygote_ready();
  /// Waits for the execs of the keepers' tasks (or their failures).
  void await_execs(std::vector<InFlight>& starts);

  SupervisorOptions options_;
  std::string keeper_binary_;
  const std::optional<cgroup::Tree>* cgroups_;
  std::function<void(const std::string&)> remove_cgroup_;
  uint64_t cgroup_seq_ = 0;
  /// This process (each keeper checks it is still its parent).
  pid_t self_;
  std::unique_ptr<KeeperZygote> zygote_;
  bool zygote_failed_ = false;
};

}  // namespace claimsched::agent::launch
