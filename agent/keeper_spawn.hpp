#pragma once

// Starting a task's keeper without copying the agent: a vfork and an exec
// of the claimsched-keeper program (keeper_main.cpp).
// A fork() of the agent copies its page tables and then faults its pages in
// again, in proportion to its size: 1.4-10 ms of the agent's CPU per task
// measured on these machines, against well under a millisecond for the
// spawn of a small static program.

#include <sys/types.h>

#include <string>

#include "agent/keeper.hpp"
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

}  // namespace claimsched::agent
