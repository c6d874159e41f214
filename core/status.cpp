#include "core/status.hpp"

#include <algorithm>

namespace claimsched::core {

std::string_view to_string(JobState s) {
  switch (s) {
    case JobState::pending:
      return "pending";
    case JobState::running:
      return "running";
    case JobState::succeeded:
      return "succeeded";
    case JobState::failed:
      return "failed";
    case JobState::cancelled:
      return "cancelled";
    case JobState::waiting:
      return "waiting";
  }
  return "unknown";
}

JobState job_state(const TaskCounts& by_state, uint32_t count, bool cancelled) {
  auto n = [&](TaskState s) { return by_state[static_cast<size_t>(s)]; };
  if (cancelled) return JobState::cancelled;
  uint32_t ended = 0;
  for (size_t s = static_cast<size_t>(TaskState::succeeded); s < by_state.size(); ++s) ended += by_state[s];
  if (ended == count) return n(TaskState::succeeded) == count ? JobState::succeeded : JobState::failed;
  if (n(TaskState::running) + n(TaskState::claimed) > 0) return JobState::running;
  return ended > 0 ? JobState::running : JobState::pending;
}

Expected<JobState> parse_job_state(std::string_view s) {
  for (auto st : {JobState::pending, JobState::running, JobState::succeeded, JobState::failed, JobState::cancelled,
                  JobState::waiting})
    if (to_string(st) == s) return st;
  return make_error(Errc::parse_error, "unknown job state '" + std::string(s) +
                                           "' (pending, waiting, running, succeeded, failed, cancelled)");
}

bool matches(const JobFilter& f, const JobView& job) {
  if (!f.user.empty() && job.spec.user != f.user) return false;
  if (!f.pool.empty() && job.spec.pool != f.pool) return false;
  if (f.older_than.value != 0 && job.spec.id.value >= f.older_than.value) return false;
  if (!f.states.empty() && std::find(f.states.begin(), f.states.end(), job.state) == f.states.end()) return false;
  return f.since.count() == 0 || job.spec.submit_time >= f.since;
}

}  // namespace claimsched::core
