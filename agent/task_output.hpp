#pragma once

// A task's output files on its agent: reading them for `claimsched logs`
// (from an offset, or the last lines), and removing them once they are older
// than the agent's retention.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/task_output.hpp"

namespace claimsched::agent {

/// Reads up to `max_bytes` of `path` from `offset`, or, with `tail_lines`,
/// its last that-many lines (at most `max_bytes` of them). A missing file is
/// an error (unknown_name) saying so; an offset past the end reads nothing.
core::Expected<core::LogChunk> read_output_file(const std::string& path, uint64_t offset, uint32_t tail_lines,
                                                uint32_t max_bytes);

/// Removes the output directories of jobs under `dir` (`<dir>/<job>/`) whose
/// newest file is older than `retention`, except jobs for which `running`
/// says a task still runs here. Returns how many it removed; problems are
/// logged, never thrown.
size_t remove_old_outputs(const std::string& dir, std::chrono::nanoseconds retention,
                          const std::function<bool(core::JobId)>& running);

}  // namespace claimsched::agent
