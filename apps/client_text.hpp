#pragma once

// How the client writes for people: tables whose columns fit their widest
// cell, wall-clock times in local time, durations a person reads at a glance,
// jobs and tasks in words. Pure functions (no CAF, no network), tested in
// tests/config/client_text_test.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include "core/duration.hpp"
#include "core/ids.hpp"
#include "core/status.hpp"

namespace claimsched::apps {

/// Rows of cells; the first row is the header. Every column is as wide as its
/// widest cell; the last column is not padded.
std::string render_table(const std::vector<std::vector<std::string>>& rows);

/// A wall-clock time (ns since the Unix epoch) in local time,
/// "2025-01-02 12:00:03"; "-" for kNever and 0.
std::string local_time(core::TimePoint wall);
using core::human_duration;
/// Parses --since: a duration ago ("1h", "30m") or a local date and time
/// ("2025-01-02", "2025-01-02 12:00", "2025-01-02T12:00:03"). Returns the
/// wall-clock time (ns since the Unix epoch).
core::Expected<core::TimePoint> parse_since(const std::string& text, core::TimePoint wall_now);

/// Reads the server's ISO 8601 UTC times ("2025-01-02T03:04:05.123Z").
core::Expected<core::TimePoint> parse_iso_utc(const std::string& text);

/// "3 succeeded, 1 failed" (states with tasks, in TaskState order).
std::string task_counts(const core::JobView& v);
/// The node a task ran on, by name when known: "local-2", else "node 123".
std::string node_label(const core::TaskView& t);
/// One line per task: "task 3: failed on local-2: exited with code 1 (2 failure(s))".
std::string task_line(const core::TaskView& t);
/// Failed or otherwise not succeeded tasks grouped by how they ended:
/// "1 failed: exited with code 3 (task 2 on local-1)", at most `limit` groups.
std::vector<std::string> failure_lines(const core::JobView& v, size_t limit);

}  // namespace claimsched::apps
