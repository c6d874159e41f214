#pragma once

// Tasks that leave a trace: what they append to a log file shows which ran to
// completion, and how often (exactly once is the promise).

#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {

/// A task that takes `seconds`, then appends its index to `log`: the log
/// shows which tasks completed, and how often.
inline std::string task_that_logs(const std::string& log, double seconds) {
  return "/bin/sh -c 'sleep " + std::to_string(seconds) + "; echo $CLAIMSCHED_TASK_INDEX >> " + log + "'";
}

/// Each index 0..count-1 exactly once in `log`, or what is wrong.
inline std::string check_completed_once(const std::string& log, int count) {
  std::map<int, int> seen;
  std::istringstream in(LocalCluster::read_file(log));
  for (int index; in >> index;) ++seen[index];
  std::string problems;
  for (int i = 0; i < count; ++i)
    if (seen[i] != 1) problems += "task " + std::to_string(i) + " completed " + std::to_string(seen[i]) + " times; ";
  return problems;
}

inline int count_tasks_on(const nlohmann::json& status, const std::string& state) {
  int n = 0;
  for (const auto& t : status.value("tasks", nlohmann::json::array())) n += t.value("state", "") == state;
  return n;
}

}  // namespace claimsched::testing
