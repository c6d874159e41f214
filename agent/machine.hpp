#pragma once

// What the machine an agent runs on offers: its capacity, detected when the
// agent's config does not give one, and its name.

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "core/resources.hpp"

namespace claimsched::agent {

/// cpu: the CPUs this process may run on (sched_getaffinity, so taskset and
/// cpusets count; if that fails, the "processor" entries of
/// `proc_root`/cpuinfo), in millicores. memory: MemTotal of
/// `proc_root`/meminfo, in bytes. gpu: 0 (not detected). Cgroup limits (a
/// container's cpu.max, memory.max) are not applied: give the capacity in the
/// config there. io_error if `proc_root`/meminfo cannot be read, corrupt if
/// it has no MemTotal line.
core::Expected<core::Resources> detect_machine_capacity(const std::filesystem::path& proc_root = "/proc");

/// gethostname(), or "localhost" if that fails.
std::string host_name();

}  // namespace claimsched::agent
