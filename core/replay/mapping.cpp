#include "core/replay/mapping.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "core/text.hpp"

namespace claimsched::core::replay {

namespace {

constexpr std::string_view kWhitespace = " \t\r\n";

std::string_view trim(std::string_view s) { return core::trim(s, kWhitespace); }

constexpr std::array<std::string_view, 5> kFields = {"user", "group", "queue", "partition", "executable"};

Error rule_error(std::string_view rule, const std::string& what) {
  return make_error(Errc::parse_error, "map rule '" + std::string(rule) + "': " + what);
}

/// The job's value of a rule's field (one of kFields, checked when the rule was parsed).
const std::string& value_of(const TraceJob& job, std::string_view field) {
  if (field == "user") return job.user;
  if (field == "group") return job.group;
  if (field == "queue") return job.queue;
  if (field == "partition") return job.partition;
  return job.executable;
}

bool matches(const MapRule& rule, const TraceJob& job) {
  return rule.value == "*" || rule.value == value_of(job, rule.field);
}

}  // namespace

Expected<MapRule> parse_map_rule(std::string_view text) {
  std::string_view rule = trim(text);
  // The last ':' separates: a trace's value (CSV text) may hold one, a class or pool name does not.
  size_t colon = rule.rfind(':');
  if (colon == std::string_view::npos)
    return rule_error(rule, "missing ':' between FIELD=VALUE and TARGET=NAME (e.g. queue=1:class=prod)");
  std::string_view match = rule.substr(0, colon);
  std::string_view targets = rule.substr(colon + 1);

  MapRule out;
  size_t equals = match.find('=');
  if (equals == std::string_view::npos)
    return rule_error(rule, "expected FIELD=VALUE before ':', got '" + std::string(match) + "'");
  out.field = std::string(trim(match.substr(0, equals)));
  out.value = std::string(trim(match.substr(equals + 1)));
  if (std::find(kFields.begin(), kFields.end(), out.field) == kFields.end())
    return rule_error(rule, "unknown field '" + out.field + "' (expected user, group, queue, partition or executable)");
  if (out.value.empty()) return rule_error(rule, "no value for " + out.field + " (use '*' to match any)");

  if (trim(targets).empty()) return rule_error(rule, "no target after ':' (class=NAME or pool=NAME)");
  size_t pos = 0;
  while (pos <= targets.size()) {
    size_t comma = std::min(targets.find(',', pos), targets.size());
    std::string_view item = trim(targets.substr(pos, comma - pos));
    pos = comma + 1;
    size_t item_equals = item.find('=');
    if (item_equals == std::string_view::npos)
      return rule_error(rule, "expected TARGET=NAME after ':', got '" + std::string(item) + "'");
    std::string_view target = trim(item.substr(0, item_equals));
    std::string_view name = trim(item.substr(item_equals + 1));
    std::string* slot = target == "class" ? &out.job_class : target == "pool" ? &out.pool : nullptr;
    if (!slot) return rule_error(rule, "unknown target '" + std::string(target) + "' (expected class or pool)");
    if (name.empty()) return rule_error(rule, "empty name for " + std::string(target));
    if (!slot->empty()) return rule_error(rule, std::string(target) + " is set twice");
    *slot = std::string(name);
  }
  return out;
}

JobTarget map_job(const std::vector<MapRule>& rules, const TraceJob& job) {
  std::optional<std::string> job_class;
  std::optional<std::string> pool;
  for (const auto& rule : rules) {
    if (job_class && pool) break;
    if (!matches(rule, job)) continue;
    if (!job_class && !rule.job_class.empty()) job_class = rule.job_class;
    if (!pool && !rule.pool.empty()) pool = rule.pool;
  }
  return JobTarget{job_class.value_or(job.job_class), pool.value_or(job.pool)};
}

}  // namespace claimsched::core::replay
