#include "apps/client_text.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "core/duration.hpp"

namespace claimsched::apps {

std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string local_time(core::TimePoint wall) {
  if (wall == core::kNever || wall.count() <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(std::chrono::duration_cast<std::chrono::seconds>(wall).count());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

core::Expected<core::TimePoint> parse_since(const std::string& text, core::TimePoint wall_now) {
  if (auto ago = core::parse_duration(text)) return wall_now - *ago;
  std::tm tm{};
  tm.tm_isdst = -1;
  for (const char* format : {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
    std::tm parsed{};
    parsed.tm_isdst = -1;
    const char* end = strptime(text.c_str(), format, &parsed);
    if (end != nullptr && *end == '\0') {
      tm = parsed;
      std::time_t t = std::mktime(&tm);
      if (t == -1) break;
      return std::chrono::duration_cast<core::TimePoint>(std::chrono::seconds(t));
    }
  }
  return core::make_error(core::Errc::parse_error, "--since: '" + text +
                                                       "' is neither a duration ago (30m, 2h, 7d) nor a local time "
                                                       "(2025-01-02, 2025-01-02 12:00)");
}

core::Expected<core::TimePoint> parse_iso_utc(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return core::make_error(core::Errc::parse_error, "not an ISO 8601 time: '" + text + "'");
  int millis = 0;
  if (*end == '.') {
    char* after = nullptr;
    millis = static_cast<int>(std::strtol(end + 1, &after, 10));
    end = after;
  }
  if (end == nullptr || (*end != 'Z' && *end != '\0'))
    return core::make_error(core::Errc::parse_error, "not a UTC time: '" + text + "'");
  return std::chrono::duration_cast<core::TimePoint>(std::chrono::seconds(timegm(&tm)) +
                                                     std::chrono::milliseconds(millis));
}

std::string task_counts(const core::JobView& v) {
  std::string out;
  for (size_t s = 0; s < v.by_state.size(); ++s) {
    if (v.by_state[s] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(v.by_state[s]) + " " + std::string(core::to_string(static_cast<core::TaskState>(s)));
  }
  return out.empty() ? "no tasks" : out;
}

std::string node_label(const core::TaskView& t) {
  if (!t.node_name.empty()) return t.node_name;
  return t.node.value == 0 ? std::string("-") : "node " + std::to_string(t.node.value);
}

namespace {

std::string end_text(const core::TaskView& t) {
  std::string text = core::describe(t.end);
  if (t.end.reason == core::EndReason::preempted && t.preempted_by.value != 0)
    text += " (for job " + std::to_string(t.preempted_by.value) + ")";
  return text;
}

}  // namespace

std::string task_line(const core::TaskView& t) {
  std::string line = "task " + std::to_string(t.index) + ": " + std::string(core::to_string(t.state));
  if (t.node.value != 0) line += " on " + node_label(t);
  std::string end = end_text(t);
  if (!end.empty()) line += core::is_final(t.state) ? ": " + end : " (last run: " + end + ")";
  if (t.end.peak_memory_bytes > 0) line += ", peak memory " + core::format_memory(t.end.peak_memory_bytes);
  if (t.end.output_missing) line += ", without its declared output";
  if (t.failures > 0) line += ", failed " + std::to_string(t.failures) + " time(s) before";
  if (t.losses > 0) line += ", lost " + std::to_string(t.losses) + " time(s)";
  return line;
}

std::vector<std::string> failure_lines(const core::JobView& v, size_t limit) {
  // By state and end text, in first-task order.
  std::vector<std::pair<std::string, std::vector<const core::TaskView*>>> groups;
  for (const auto& t : v.tasks) {
    if (!core::is_final(t.state) || t.state == core::TaskState::succeeded) continue;
    std::string key = std::string(core::to_string(t.state)) + ": " + end_text(t);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = std::prev(groups.end());
    }
    it->second.push_back(&t);
  }
  std::vector<std::string> out;
  for (const auto& [key, tasks] : groups) {
    if (out.size() == limit) {
      out.push_back("... and more (see --tasks)");
      break;
    }
    std::string which;
    for (size_t i = 0; i < tasks.size() && i < 5; ++i)
      which += (i ? ", " : "") + std::to_string(tasks[i]->index) + " on " + node_label(*tasks[i]);
    if (tasks.size() > 5) which += ", ...";
    out.push_back(std::to_string(tasks.size()) + " " + key + " (task" + (tasks.size() > 1 ? "s " : " ") + which +
                  ")");
  }
  return out;
}

}  // namespace claimsched::apps
