#pragma once

// Reading a task's output from the node that ran it (`claimsched logs`): the
// client asks the gateway, the gateway finds the task's node and asks its
// agent, the agent reads the file it wrote. Plain values; messages/ carries
// them between processes.

#include <cstdint>
#include <string>

#include "core/ids.hpp"

namespace claimsched::core {

/// Largest chunk one request returns: a follow asks again for the rest.
inline constexpr uint32_t kMaxLogChunk = 1 << 20;

struct LogRequest {
  TaskRef task;
  /// Standard error instead of standard output.
  bool stderr_stream = false;
  /// Read from this byte on (ignored when tail_lines is set).
  uint64_t offset = 0;
  /// Nonzero: read the file's last this-many lines instead (bounded by max_bytes).
  uint32_t tail_lines = 0;
  /// At most this many bytes (0 or above kMaxLogChunk: kMaxLogChunk).
  uint32_t max_bytes = kMaxLogChunk;

  friend bool operator==(const LogRequest&, const LogRequest&) = default;
};

struct LogChunk {
  /// Bytes [offset, offset + data.size()) of the file.
  std::string data;
  uint64_t offset = 0;
  /// The file's size when it was read.
  uint64_t size = 0;
  /// The task still runs there: more may come.
  bool running = false;
  /// The node that holds the file (its name).
  std::string node;

  friend bool operator==(const LogChunk&, const LogChunk&) = default;
};

}  // namespace claimsched::core
