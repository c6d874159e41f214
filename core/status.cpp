#include "core/status.hpp"

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

}  // namespace claimsched::core
