#include "core/replay/trace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "core/text.hpp"

namespace claimsched::core::replay {

namespace {

constexpr std::string_view kWhitespace = " \t\r\f\v";

std::string_view trim(std::string_view s) { return core::trim(s, kWhitespace); }

/// Editors on Windows start UTF-8 files with a byte order mark; it would
/// otherwise become part of the first column's name.
std::string_view strip_byte_order_mark(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  return text;
}

/// The text line by line, numbered from 1 (a trailing '\r' stays: trim drops it).
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(strip_byte_order_mark(text)) {}

  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t newline = text_.find('\n', pos_);
    size_t end = newline == std::string_view::npos ? text_.size() : newline;
    line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++number_;
    return true;
  }
  uint64_t number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  uint64_t number_ = 0;
};

/// Why one data line is not a job: a skip_reason and the words after "line N: ".
struct LineFault {
  std::string_view reason;
  std::string detail;
};

/// Collects jobs and skipped lines; in strict mode the first skip is the error.
class TraceCollector {
 public:
  explicit TraceCollector(const TraceOptions& options) : options_(options) {}

  /// The ordinal the next data line has (the job number when the trace gives none).
  uint64_t next_ordinal() const { return trace_.data_lines + 1; }
  TraceHeader& header() { return trace_.header; }

  void add(TraceJob job) {
    ++trace_.data_lines;
    trace_.jobs.push_back(std::move(job));
  }

  /// Counts the line as skipped, or returns the error that ends a strict parse.
  std::optional<Error> skip(uint64_t line, LineFault fault) {
    ++trace_.data_lines;
    std::string message = "line " + std::to_string(line) + ": " + fault.detail;
    if (options_.strict) return make_error(Errc::parse_error, std::move(message));
    ++trace_.skipped[std::string(fault.reason)];
    if (trace_.problems.size() < kMaxProblemsKept)
      trace_.problems.push_back(TraceProblem{line, std::string(fault.reason), std::move(message)});
    return std::nullopt;
  }

  Trace finish() && {
    std::stable_sort(trace_.jobs.begin(), trace_.jobs.end(),
                     [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
    return std::move(trace_);
  }

 private:
  const TraceOptions& options_;
  Trace trace_;
};

// --- numbers ----------------------------------------------------------------

std::optional<double> parse_real(std::string_view token) {
  double value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

enum class NumberFault { not_a_number, fraction, out_of_range };

Expected<int64_t, NumberFault> parse_whole(std::string_view token) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  bool whole_token = end == token.data() + token.size();
  if (ec == std::errc() && whole_token) return value;
  if (ec == std::errc::result_out_of_range && whole_token) return NumberFault::out_of_range;
  // Some converters write whole numbers as "60.0"; "60.5" is not one.
  auto real = parse_real(token);
  if (!real) return NumberFault::not_a_number;
  if (std::trunc(*real) != *real) return NumberFault::fraction;
  // Beyond 2^53 a double no longer holds every integer: the digits are not what was meant.
  constexpr double kExactLimit = 9007199254740992.0;
  if (std::fabs(*real) > kExactLimit) return NumberFault::out_of_range;
  return static_cast<int64_t>(*real);
}

std::string describe(NumberFault fault, std::string_view token) {
  std::string quoted = "'" + std::string(token) + "'";
  switch (fault) {
    case NumberFault::not_a_number:
      return quoted + " is not a number";
    case NumberFault::fraction:
      return quoted + " is not a whole number";
    case NumberFault::out_of_range:
      return quoted + " is out of range";
  }
  return quoted;
}

/// "is unknown (-1)" or "is negative (-5)".
std::string describe_negative(int64_t value) {
  return value == -1 ? "is unknown (-1)" : "is negative (" + std::to_string(value) + ")";
}

bool fits_int32(int64_t value) {
  return value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
}

// --- SWF --------------------------------------------------------------------

namespace swf {

// The 18 fields in the order of the SWF definition (job_number is field 1).
// clang-format off
enum Field : size_t {
  job_number, submit, wait, run_time, allocated_processors, average_cpu_time, used_memory,
  requested_processors, requested_time, requested_memory, status, user, group, executable, queue,
  partition, preceding_job, think_time, count
};

constexpr std::array<std::string_view, count> kFieldNames = {
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user", "group", "executable", "queue", "partition",
    "preceding job", "think time"};
// clang-format on

/// "field 4 (run time)": the numbering of the SWF definition.
std::string label(Field f) {
  return "field " + std::to_string(static_cast<size_t>(f) + 1) + " (" + std::string(kFieldNames[f]) + ")";
}

/// `; MaxNodes: 100` -> {MaxNodes, 100}; continuation lines and `;` alone give nothing.
std::optional<std::pair<std::string, std::string>> header_field(std::string_view comment) {
  comment.remove_prefix(1);  // the ';'
  comment = trim(comment);
  size_t key_end = 0;
  while (key_end < comment.size()) {
    char c = comment[key_end];
    bool key_char = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!key_char) break;
    ++key_end;
  }
  if (key_end == 0 || key_end >= comment.size() || comment[key_end] != ':') return std::nullopt;
  std::string_view value = comment.substr(key_end + 1);
  // "http://..." on a continuation line is not a key.
  if (!value.empty() && kWhitespace.find(value.front()) == std::string_view::npos) return std::nullopt;
  return std::pair{std::string(comment.substr(0, key_end)), std::string(trim(value))};
}

void record_header_field(TraceHeader& header, std::pair<std::string, std::string> field) {
  const auto& [key, value] = field;
  auto number = parse_whole(value);
  // A header value that is not a count stays in `fields` only: the replay asks
  // for the machine's size instead of guessing it.
  if (number) {
    bool count = *number > 0 && *number <= std::numeric_limits<uint32_t>::max();
    if (key == "MaxNodes" && count) header.max_nodes = static_cast<uint32_t>(*number);
    if (key == "MaxProcs" && count) header.max_procs = static_cast<uint32_t>(*number);
    if (key == "UnixStartTime") header.unix_start_time = *number;
  }
  header.fields.push_back(std::move(field));
}

Expected<TraceJob, LineFault> parse_line(std::string_view line, uint64_t line_number, uint64_t ordinal) {
  std::array<std::string_view, count> tokens;
  size_t found = 0;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(kWhitespace, pos)) != std::string_view::npos) {
    size_t end = std::min(line.find_first_of(kWhitespace, pos), line.size());
    if (found < count) tokens[found] = line.substr(pos, end - pos);
    ++found;
    pos = end;
  }
  if (found != count) return LineFault{skip_reason::fields, "expected 18 fields, found " + std::to_string(found)};

  std::array<int64_t, count> values{};
  double average_cpu_s = -1;
  for (size_t i = 0; i < count; ++i) {
    auto field = static_cast<Field>(i);
    if (field == average_cpu_time) {
      auto real = parse_real(tokens[i]);
      if (!real)
        return LineFault{skip_reason::number, label(field) + ": " + describe(NumberFault::not_a_number, tokens[i])};
      average_cpu_s = *real;
      continue;
    }
    auto number = parse_whole(tokens[i]);
    if (!number) return LineFault{skip_reason::number, label(field) + ": " + describe(number.error(), tokens[i])};
    values[i] = *number;
  }

  if (values[submit] < 0)
    return LineFault{skip_reason::submit, label(submit) + " " + describe_negative(values[submit])};
  if (values[run_time] < 0)
    return LineFault{skip_reason::run_time, label(run_time) + " " + describe_negative(values[run_time])};
  Field processors_field = values[allocated_processors] > 0 ? allocated_processors : requested_processors;
  int64_t processors = values[processors_field];
  if (processors <= 0)
    return LineFault{skip_reason::processors, "neither " + label(allocated_processors) + " nor " +
                                                  label(requested_processors) + " is positive (" +
                                                  std::to_string(values[allocated_processors]) + ", " +
                                                  std::to_string(values[requested_processors]) + ")"};
  if (processors > std::numeric_limits<uint32_t>::max())
    return LineFault{skip_reason::processors,
                     label(processors_field) + " is too large (" + std::to_string(processors) + ")"};
  if (!fits_int32(values[status]))
    return LineFault{skip_reason::number, label(status) + ": " + describe(NumberFault::out_of_range, tokens[status])};

  TraceJob job;
  job.number = values[job_number] >= 0 ? static_cast<uint64_t>(values[job_number]) : ordinal;
  job.line = line_number;
  job.submit_s = values[submit];
  if (values[wait] >= 0) job.wait_s = values[wait];
  job.run_s = values[run_time];
  job.tasks = static_cast<uint32_t>(processors);
  job.per_task.set(dim::cpu, 1000);  // one processor: millicores
  Field memory_field = values[requested_memory] > 0 ? requested_memory : used_memory;
  if (int64_t memory_kb = values[memory_field]; memory_kb > 0) {
    if (memory_kb > std::numeric_limits<int64_t>::max() / 1024)
      return LineFault{skip_reason::number,
                       label(memory_field) + ": " + describe(NumberFault::out_of_range, tokens[memory_field])};
    job.per_task.set(dim::memory, memory_kb * 1024);
  }
  if (values[requested_time] > 0) job.requested_time_s = values[requested_time];
  job.status = static_cast<int32_t>(values[status]);
  auto text = [&](Field f) { return values[f] == -1 ? std::string() : std::to_string(values[f]); };
  job.user = text(user);
  job.group = text(group);
  job.executable = text(executable);
  job.queue = text(queue);
  job.partition = text(partition);
  job.average_cpu_s = average_cpu_s;
  job.used_memory_kb = values[used_memory];
  job.preceding_job = values[preceding_job];
  job.think_time_s = values[think_time];
  return job;
}

}  // namespace swf

// --- CSV --------------------------------------------------------------------

namespace csv {

// clang-format off
enum Column : size_t {
  id, submit, duration, tasks, cpu, mem, gpu, limit, wait, status, user, group, executable, queue,
  partition, job_class, pool, count
};
// clang-format on

constexpr std::array<std::string_view, count> kColumnNames = {
    "id",     "submit", "duration", "tasks",      "cpu",   "mem",       "gpu",   "limit", "wait",
    "status", "user",   "group",    "executable", "queue", "partition", "class", "pool"};

std::string label(Column c) { return "column '" + std::string(kColumnNames[c]) + "'"; }

std::string known_columns() {
  std::string out;
  for (auto name : kColumnNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

/// Splits one line at its commas; a double-quoted field keeps its commas and
/// reads `""` as a quote.
Expected<std::vector<std::string>, LineFault> split(std::string_view line) {
  std::vector<std::string> cells;
  size_t pos = 0;
  while (true) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    std::string cell;
    if (pos < line.size() && line[pos] == '"') {
      bool closed = false;
      for (++pos; pos < line.size();) {
        char c = line[pos++];
        if (c != '"') {
          cell += c;
        } else if (pos < line.size() && line[pos] == '"') {
          cell += '"';
          ++pos;
        } else {
          closed = true;
          break;
        }
      }
      if (!closed)
        return LineFault{skip_reason::fields, "field " + std::to_string(cells.size() + 1) + ": a quote is not closed"};
      while (pos < line.size() && kWhitespace.find(line[pos]) != std::string_view::npos) ++pos;
      if (pos < line.size() && line[pos] != ',')
        return LineFault{skip_reason::fields,
                         "field " + std::to_string(cells.size() + 1) + ": text after its closing quote"};
    } else {
      size_t end = std::min(line.find(',', pos), line.size());
      cell = std::string(trim(line.substr(pos, end - pos)));
      pos = end;
    }
    cells.push_back(std::move(cell));
    if (pos >= line.size()) return cells;
    ++pos;  // the comma
  }
}

/// Which column each field of a data line fills.
Expected<std::vector<Column>> read_header(std::string_view line, uint64_t line_number) {
  auto where = "line " + std::to_string(line_number) + ": ";
  auto cells = split(line);
  if (!cells) return make_error(Errc::parse_error, where + "header: " + cells.error().detail);
  std::vector<Column> columns;
  std::array<bool, count> seen{};
  for (size_t i = 0; i < cells->size(); ++i) {
    const std::string& name = (*cells)[i];
    if (name.empty())
      return make_error(Errc::parse_error, where + "column " + std::to_string(i + 1) + " of the header has no name");
    auto known = std::find(kColumnNames.begin(), kColumnNames.end(), name);
    if (known == kColumnNames.end())
      return make_error(Errc::parse_error, where + "unknown column '" + name + "' (known: " + known_columns() + ")");
    auto column = static_cast<Column>(known - kColumnNames.begin());
    if (seen[column]) return make_error(Errc::parse_error, where + "column '" + name + "' appears twice");
    seen[column] = true;
    columns.push_back(column);
  }
  for (Column required : {submit, duration})
    if (!seen[required])
      return make_error(Errc::parse_error,
                        where + "the header has no '" + std::string(kColumnNames[required]) + "' column");
  return columns;
}

Expected<TraceJob, LineFault> parse_line(std::string_view line, uint64_t line_number, uint64_t ordinal,
                                         const std::vector<Column>& columns) {
  auto cells = split(line);
  if (!cells) return cells.error();
  if (cells->size() != columns.size())
    return LineFault{skip_reason::fields,
                     "expected " + std::to_string(columns.size()) + " fields, found " + std::to_string(cells->size())};
  // Read in a fixed order, whatever the columns' order: a line wrong in two
  // ways always gives the same reason.
  std::array<std::string_view, count> cell{};
  for (size_t i = 0; i < columns.size(); ++i) cell[columns[i]] = (*cells)[i];

  std::optional<LineFault> fault;
  auto whole = [&](Column c) -> std::optional<int64_t> {
    auto number = parse_whole(cell[c]);
    if (number) return *number;
    fault = LineFault{skip_reason::number, label(c) + ": " + describe(number.error(), cell[c])};
    return std::nullopt;
  };

  TraceJob job;
  job.line = line_number;
  job.number = ordinal;
  if (!cell[id].empty()) {
    auto number = whole(id);
    if (!number) return *fault;
    if (*number >= 0) job.number = static_cast<uint64_t>(*number);
  }
  for (auto [column, reason] : {std::pair{submit, skip_reason::submit}, std::pair{duration, skip_reason::run_time}}) {
    if (cell[column].empty()) return LineFault{reason, label(column) + " is empty"};
    auto seconds = whole(column);
    if (!seconds) return *fault;
    if (*seconds < 0) return LineFault{reason, label(column) + " " + describe_negative(*seconds)};
    (column == submit ? job.submit_s : job.run_s) = *seconds;
  }
  if (!cell[tasks].empty()) {
    auto number = whole(tasks);
    if (!number) return *fault;
    if (*number <= 0 || *number > std::numeric_limits<uint32_t>::max())
      return LineFault{skip_reason::tasks,
                       label(tasks) + " must be from 1 to 4294967295, not " + std::to_string(*number)};
    job.tasks = static_cast<uint32_t>(*number);
  }
  job.per_task.set(dim::cpu, 1000);
  for (auto [column, dimension] : {std::pair{cpu, dim::cpu}, std::pair{mem, dim::memory}, std::pair{gpu, dim::gpu}}) {
    if (cell[column].empty()) continue;
    auto quantity = parse_quantity(dimension, cell[column]);
    if (!quantity) return LineFault{skip_reason::resources, label(column) + ": " + quantity.error().message};
    job.per_task.set(dimension, *quantity);
  }
  if (!cell[limit].empty()) {
    auto seconds = whole(limit);
    if (!seconds) return *fault;
    if (*seconds > 0) job.requested_time_s = *seconds;
  }
  if (!cell[wait].empty()) {
    auto seconds = whole(wait);
    if (!seconds) return *fault;
    if (*seconds >= 0) job.wait_s = *seconds;
  }
  if (!cell[status].empty()) {
    auto number = whole(status);
    if (!number) return *fault;
    if (!fits_int32(*number))
      return LineFault{skip_reason::number, label(status) + ": " + describe(NumberFault::out_of_range, cell[status])};
    job.status = static_cast<int32_t>(*number);
  }
  job.user = cell[user];
  job.group = cell[group];
  job.executable = cell[executable];
  job.queue = cell[queue];
  job.partition = cell[partition];
  job.job_class = cell[job_class];
  job.pool = cell[pool];
  return job;
}

/// The first non-blank line has a `submit` column: that is a CSV header.
bool starts_with_header(std::string_view text) {
  Lines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == ';') return false;
    auto cells = split(line);
    return cells && std::find(cells->begin(), cells->end(), "submit") != cells->end();
  }
  return false;
}

}  // namespace csv

}  // namespace

Expected<Trace> parse_swf(std::string_view text, const TraceOptions& options) {
  TraceCollector collector(options);
  Lines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == ';') {
      if (auto field = swf::header_field(line)) swf::record_header_field(collector.header(), std::move(*field));
      continue;
    }
    auto job = swf::parse_line(line, lines.number(), collector.next_ordinal());
    if (job) {
      collector.add(std::move(job).value());
    } else if (auto error = collector.skip(lines.number(), job.error())) {
      return *error;
    }
  }
  return std::move(collector).finish();
}

Expected<Trace> parse_csv(std::string_view text, const TraceOptions& options) {
  TraceCollector collector(options);
  Lines lines(text);
  std::string_view line;
  std::optional<std::vector<csv::Column>> columns;
  while (lines.next(line)) {
    line = trim(line);
    if (line.empty()) continue;
    if (!columns) {
      auto header = csv::read_header(line, lines.number());
      if (!header) return header.error();
      columns = std::move(header).value();
      continue;
    }
    auto job = csv::parse_line(line, lines.number(), collector.next_ordinal(), *columns);
    if (job) {
      collector.add(std::move(job).value());
    } else if (auto error = collector.skip(lines.number(), job.error())) {
      return *error;
    }
  }
  if (!columns) return make_error(Errc::parse_error, "the CSV has no header line (submit, duration, ...)");
  return std::move(collector).finish();
}

Expected<Trace> parse_trace(std::string_view text, const TraceOptions& options) {
  if (csv::starts_with_header(text)) return parse_csv(text, options);
  return parse_swf(text, options);
}

}  // namespace claimsched::core::replay
