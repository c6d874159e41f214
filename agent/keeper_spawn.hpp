#pragma once

// Starting a task's keeper without copying the agent: a fork of the
// claimsched-keeper zygote (KeeperZygote, below; keeper.hpp says why), or a
// vfork and an exec of the program (keeper_main.cpp).
// A fork() of the agent copies its page tables and then faults its pages in
// again, in proportion to its size: 1.4-10 ms of the agent's CPU per task
// measured on these machines, against well under a millisecond for the
// spawn of a small static program.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "agent/keeper.hpp"
#include "agent/launch.hpp"
#include "core/error.hpp"

namespace claimsched::agent {

/// The keeper program to spawn: `configured` if not empty (an error if it is
/// not an executable file), else `claimsched-keeper` beside this process's
/// executable if there is one there, else empty (tasks start by fork).
core::Expected<std::string> find_keeper_binary(const std::string& configured);

/// Spawns `keeper_binary` for the task `args` describes, with its
/// descriptors, environment and arguments as keeper_main.cpp expects; the
/// calling thread's signal mask (every signal blocked on the supervisor's
/// thread) goes with it. Returns the keeper's pid (> 0), or minus the errno
/// of the failed spawn. Call it with every signal blocked (the supervisor's
/// thread): the vfork child runs on this thread's stack until its exec.
pid_t spawn_keeper(const std::string& keeper_binary, const keeper::Args& args);

/// One running `claimsched-keeper --zygote` (keeper.hpp, "The zygote"):
/// keepers forked from it, each a child of this process, instead of an exec
/// of the program per task. Use it from one thread, the supervisor's, with
/// every signal blocked (the zygote and its keepers keep that mask).
class KeeperZygote {
 public:
  /// Spawns the zygote. It dies with the calling thread (PR_SET_PDEATHSIG)
  /// and when the socket closes.
  static core::Expected<std::unique_ptr<KeeperZygote>> start(const std::string& keeper_binary);
  /// Closes the socket and reaps the zygote (it ends at once). The keepers
  /// it made are this process's children and run on.
  ~KeeperZygote();
  KeeperZygote(const KeeperZygote&) = delete;
  KeeperZygote& operator=(const KeeperZygote&) = delete;

  /// As spawn_keeper: the keeper's pid (> 0), or minus the errno of its
  /// failed fork, or -ETIMEDOUT / -ECONNRESET when the zygote took the
  /// request but gave no answer within `timeout` (then broken(): it may have
  /// forked a keeper, so the start fails rather than risk a second one).
  /// nullopt: the zygote did not take it (a request too long for it, or the
  /// zygote is gone: then broken()); spawn_keeper it instead. No request
  /// goes to a broken zygote.
  std::optional<pid_t> spawn(const std::string& keeper_binary, const keeper::Args& args,
                             std::chrono::milliseconds timeout);
  /// spawn in two halves, so that several requests are in flight (the
  /// zygote answers them in order): request sends one and returns whether
  /// the zygote took it (false: spawn_keeper it instead; it never blocks: a
  /// full socket does not take it either); answer waits for the answer to
  /// the oldest request not answered yet, as spawn's (nullopt: not taken
  /// after all, exec it instead; a broken zygote answers -ECONNRESET).
  bool request(const std::string& keeper_binary, const keeper::Args& args);
  std::optional<pid_t> answer(std::chrono::milliseconds timeout);
  bool broken() const { return broken_; }
  pid_t pid() const { return pid_; }

 private:
  KeeperZygote() = default;
  pid_t pid_ = 0;
  launch::UniqueFd socket_;
  bool broken_ = false;
  /// Requests taken and not answered yet.
  int unanswered_ = 0;
};

}  // namespace claimsched::agent
