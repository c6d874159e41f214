#pragma once

// Workload traces for `claimsched replay`: the Standard Workload Format
// (Parallel Workloads Archive, v2.2) and a CSV with a header naming its
// columns. Pure: the caller reads the file (gzip included) and hands over
// its text; times stay in the trace's seconds.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/resources.hpp"

namespace claimsched::core::replay {

/// One job as the trace recorded it.
struct TraceJob {
  /// SWF field 1 (CSV `id`; the data line's ordinal when absent).
  uint64_t number = 0;
  /// The 1-based line it came from (for messages).
  uint64_t line = 0;
  /// Seconds from the trace's start (SWF 2, CSV `submit`).
  int64_t submit_s = 0;
  /// How long it waited under the scheduler that produced the trace (SWF 3);
  /// nullopt when the trace does not say.
  std::optional<int64_t> wait_s;
  /// How long it ran (SWF 4, CSV `duration`).
  int64_t run_s = 0;
  /// Tasks (SWF: allocated processors, field 5, else requested, field 8; CSV `tasks`, default 1).
  uint32_t tasks = 1;
  /// What one task asks for (SWF: cpu=1 and the requested memory per
  /// processor, field 10, else the used memory, field 7, both in KB; CSV
  /// `cpu`, `mem`, `gpu` in the units Resources::parse reads).
  Resources per_task;
  /// The user's time limit (SWF 9, CSV `limit`); the job is killed there.
  std::optional<int64_t> requested_time_s;
  /// SWF 11 (1 completed, 0 failed, 5 cancelled, -1 unknown); CSV `status`.
  int32_t status = -1;
  /// Who and where, as text ("17" for SWF's user 17; empty when unknown):
  /// SWF 12-16, CSV `user`, `group`, `executable`, `queue`, `partition`.
  std::string user;
  std::string group;
  std::string executable;
  std::string queue;
  std::string partition;
  /// CSV only: a class and pool named outright (mapping rules may override).
  std::string job_class;
  std::string pool;
  /// SWF 6, 7, 17, 18 kept as read (-1 unknown).
  double average_cpu_s = -1;
  int64_t used_memory_kb = -1;
  int64_t preceding_job = -1;
  int64_t think_time_s = -1;
};

/// What the SWF header comments say (`; MaxNodes: 100`), where they say it.
struct TraceHeader {
  std::optional<uint32_t> max_nodes;
  std::optional<uint32_t> max_procs;
  std::optional<int64_t> unix_start_time;
  /// Every `; Key: value` comment, in order.
  std::vector<std::pair<std::string, std::string>> fields;
};

/// The reasons a data line is skipped (the keys of Trace::skipped and
/// TraceProblem::reason). Stable: reports and scripts count by them.
namespace skip_reason {
/// SWF: not 18 fields; CSV: not one field per column, or a quote not closed.
inline constexpr std::string_view fields = "fields";
/// A field that is not a number, a whole number where one is needed, or out of range.
inline constexpr std::string_view number = "number";
/// The submit time is unknown (-1), negative or (CSV) empty.
inline constexpr std::string_view submit = "submit";
/// The run time is unknown (-1), negative or (CSV) empty.
inline constexpr std::string_view run_time = "run_time";
/// SWF: neither allocated (5) nor requested (8) processors is positive, or too many.
inline constexpr std::string_view processors = "processors";
/// CSV: `tasks` is not positive, or too many.
inline constexpr std::string_view tasks = "tasks";
/// CSV: `cpu`, `mem` or `gpu` is not a quantity Resources::parse reads.
inline constexpr std::string_view resources = "resources";
}  // namespace skip_reason

/// A line that was not a job, and why.
struct TraceProblem {
  uint64_t line = 0;
  /// A short stable reason, the key of Trace::skipped ("fields",
  /// "number", "run_time", "processors", ...).
  std::string reason;
  /// In words, naming the field: "line 12: field 4 (run time): 'x' is not a number".
  std::string message;
};

struct Trace {
  TraceHeader header;
  /// In submit order (ties: the trace's order).
  std::vector<TraceJob> jobs;
  /// Lines skipped, counted by reason (every skipped line is counted).
  std::map<std::string, uint64_t> skipped;
  /// The first kMaxProblemsKept problems in full, for the report.
  std::vector<TraceProblem> problems;
  /// Data lines read (jobs + skipped).
  uint64_t data_lines = 0;
};

inline constexpr size_t kMaxProblemsKept = 20;

struct TraceOptions {
  /// A malformed line is an error (naming its line) instead of being skipped.
  bool strict = false;
};

/// SWF v2.2: `;` comments (header), 18 whitespace-separated fields per line.
///
/// Blank lines are ignored; a `; Key: value` comment (a key of letters,
/// digits, `_` or `-`, then `:`) anywhere is a header field, other comments
/// (continuation lines) are ignored. Numbers: the average CPU time (6) may
/// be fractional; every other field is a whole number, which may be written
/// with a zero fraction ("60.0") but not with a real one ("60.5": reason
/// `number`). Unknown values: a negative wait (3) and a requested time (9)
/// that is not positive are nullopt; processors and memory count only when
/// positive; a negative job number (1) gives way to the data line's ordinal;
/// a user, group, executable, queue or partition of -1 is empty text (any
/// other value is its decimal text); memory in KB becomes bytes. Skipped
/// lines: see skip_reason. Errors: only with options.strict, the first
/// malformed line, Errc::parse_error, its message that of the TraceProblem
/// ("line N: ...").
Expected<Trace> parse_swf(std::string_view text, const TraceOptions& options = {});
/// CSV: a header line naming the columns (`submit` and `duration` required;
/// `id`, `tasks`, `cpu`, `mem`, `gpu`, `limit`, `wait`, `status`, `user`,
/// `group`, `executable`, `queue`, `partition`, `class`, `pool` optional; an
/// unknown column is an error naming it), then one job per line.
///
/// Fields are separated by commas, with optional whitespace around them; a
/// field may be double-quoted (`"a, b"`, `""` for a quote) but cannot span
/// lines. Blank lines are ignored. An empty field is an absent value: `id`
/// the data line's ordinal (a negative one too), `tasks` 1, `cpu` 1 (one processor, as SWF
/// gives), `mem`/`gpu` none, `limit`/`wait` nullopt, `status` -1, text
/// empty; `submit` and `duration` must be given. Times are whole seconds
/// (the same number rules as SWF); `limit` and `wait` follow SWF's unknowns
/// (a limit that is not positive, a negative wait: nullopt). Header errors
/// (unknown or repeated column, a required one missing, no header) are
/// Errc::parse_error naming the line and column; data lines are skipped or,
/// with options.strict, fatal, as in parse_swf.
Expected<Trace> parse_csv(std::string_view text, const TraceOptions& options = {});
/// By content: SWF unless the first non-empty line is a CSV header with a
/// `submit` column.
Expected<Trace> parse_trace(std::string_view text, const TraceOptions& options = {});

}  // namespace claimsched::core::replay
