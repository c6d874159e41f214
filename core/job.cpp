#include "core/job.hpp"

#include "core/limits.hpp"
#include "core/locks/operations.hpp"
#include "core/node.hpp"

namespace claimsched::core {

std::string_view to_string(TaskState s) {
  switch (s) {
    case TaskState::pending:
      return "pending";
    case TaskState::claimed:
      return "claimed";
    case TaskState::running:
      return "running";
    case TaskState::succeeded:
      return "succeeded";
    case TaskState::failed:
      return "failed";
    case TaskState::preempted:
      return "preempted";
    case TaskState::evicted:
      return "evicted";
    case TaskState::lost:
      return "lost";
    case TaskState::cancelled:
      return "cancelled";
  }
  return "unknown";
}

Status validate(const JobSpec& job) {
  auto bad = [](std::string field, std::string why) {
    return make_error(Errc::invalid_argument, "job field '" + field + "': " + why);
  };
  if (job.count == 0) return bad("count", "must be at least 1");
  if (job.count > kMaxTasksPerJob)
    return bad("count", std::to_string(job.count) + " is above the limit of " +
                            std::to_string(kMaxTasksPerJob));
  if (job.per_task.any_negative()) return bad("resources", "negative quantity");
  if (job.per_task.is_zero()) return bad("resources", "a task must request some resource");
  for (auto v : job.per_task.values())
    if (v > 0 && static_cast<uint64_t>(v) > (uint64_t{1} << 62) / job.count)
      return bad("resources", "count x resources overflows");
  if (job.pool.empty()) return bad("pool", "must name a pool");
  if (job.user.empty()) return bad("user", "must not be empty");
  if (job.id.value >= kFirstOperationId) return bad("id", "must be below 2^63 (the ids above are operations')");
  if (auto st = validate(job.locks); !st) return bad("locks", st.error().message);
  // The limits every receiver applies (core/limits.hpp): a job accepted here
  // is never one the server's decoder would refuse.
  auto too_many = [&](std::string field, size_t entries, size_t limit, const char* name) {
    return bad(std::move(field), std::to_string(entries) + " entries, above the limit of " +
                                     std::to_string(limit) + " (" + name + ")");
  };
  if (job.constraints.size() > kMaxLabels)
    return too_many("constraints", job.constraints.size(), kMaxLabels, "kMaxLabels");
  if (job.command.size() > kMaxArguments)
    return too_many("command", job.command.size(), kMaxArguments, "kMaxArguments");
  if (job.env.size() > kMaxEnvironment)
    return too_many("env", job.env.size(), kMaxEnvironment, "kMaxEnvironment");
  size_t text = job.name.size() + job.user.size() + job.job_class.size() + job.pool.size() + job.workdir.size() +
                job.expected_output.size();
  for (const auto& c : job.constraints) text += c.size();
  for (const auto& a : job.command) text += a.size();
  for (const auto& [k, v] : job.env) text += k.size() + v.size() + 1;
  if (text > kMaxJobTextBytes)
    return bad("command", "the job's text (command, environment, names) is " + std::to_string(text) +
                              " bytes, above the limit of " + std::to_string(kMaxJobTextBytes) +
                              " (kMaxJobTextBytes)");
  for (const auto& c : job.constraints)
    if (auto st = validate_label_selector(c); !st) return bad("constraints", st.error().message);
  if (job.max_run_time.count() < 0) return bad("max_run_time", "must not be negative");
  if (job.simulated_runtime.count() < 0) return bad("simulated_runtime", "must not be negative");
  if (job.max_run_time > kMaxDuration) return bad("max_run_time", "above the limit of 100 years (kMaxDuration)");
  if (job.simulated_runtime > kMaxDuration)
    return bad("simulated_runtime", "above the limit of 100 years (kMaxDuration)");
  for (const auto& a : job.command)
    if (a.find('\0') != std::string::npos) return bad("command", "an argument contains a NUL byte");
  for (const auto& [k, v] : job.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      return bad("env", "invalid variable name '" + k + "'");
    if (v.find('\0') != std::string::npos) return bad("env", "the value of " + k + " contains a NUL byte");
  }
  if (!job.command.empty() && job.command.front().empty()) return bad("command", "the program name is empty");
  if (job.expected_output.find('\0') != std::string::npos) return bad("expected_output", "contains a NUL byte");
  if (job.max_retries > 1000) return bad("max_retries", "at most 1000");
  if (job.max_lost_retries > 1000) return bad("max_lost_retries", "at most 1000");
  return Status::ok();
}

}  // namespace claimsched::core
