#pragma once

// How a trace's users, groups, queues and partitions become claimsched's
// classes and pools: rules such as `queue=1:class=prod` or
// `partition=2:pool=gpu,class=batch` (`--map`, or `[replay] map` in the
// configuration). The first rule matching a job sets each target it names;
// `*` matches any value, including unknown (empty) ones.

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/replay/trace.hpp"

namespace claimsched::core::replay {

struct MapRule {
  /// user | group | queue | partition | executable
  std::string field;
  /// The trace's value, or "*".
  std::string value;
  /// Empty: this rule does not set it.
  std::string job_class;
  std::string pool;
};

/// Parses `FIELD=VALUE:TARGET=NAME[,TARGET=NAME]`; the error names what is wrong.
Expected<MapRule> parse_map_rule(std::string_view text);

struct JobTarget {
  std::string job_class;
  std::string pool;
};

/// The class and pool `job` goes to: each from the first rule that matches
/// and sets it, else what the trace itself named (CSV `class`/`pool`), else
/// empty (the configuration's default class and its pool).
JobTarget map_job(const std::vector<MapRule>& rules, const TraceJob& job);

}  // namespace claimsched::core::replay
