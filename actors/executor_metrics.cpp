#include "actors/executor_metrics.hpp"

#include <string>
#include <vector>

namespace claimsched::actors {

void ExecutorMetrics::started(std::chrono::nanoseconds launch) {
  started_.fetch_add(1, std::memory_order_relaxed);
  launch_ns_sum_.fetch_add(static_cast<uint64_t>(launch.count()), std::memory_order_relaxed);
  double seconds = std::chrono::duration<double>(launch).count();
  for (size_t i = 0; i < kLaunchBounds.size(); ++i)
    if (seconds <= kLaunchBounds[i]) launch_at_most_[i].fetch_add(1, std::memory_order_relaxed);
}

void ExecutorMetrics::ended(const agent::TaskExit& how) {
  Outcome o = failed;
  switch (how.how) {
    case agent::TaskExit::How::exited:
      o = how.exit_code == 0 ? succeeded : failed;
      break;
    case agent::TaskExit::How::killed_by_signal:
      o = killed_by_signal;
      break;
    case agent::TaskExit::How::timed_out:
      o = timed_out;
      break;
    case agent::TaskExit::How::failed_to_start:
      o = failed_to_start;
      break;
    case agent::TaskExit::How::killed_on_request:
      o = killed_on_request;
      break;
    case agent::TaskExit::How::oom_killed:
      o = oom_killed;
      break;
  }
  ended_[o].fetch_add(1, std::memory_order_relaxed);
}

void ExecutorMetrics::render(core::MetricsText& m, size_t running) const {
  m.counter("claimsched_agent_task_starts_total", "tasks this agent started (their process runs)", {},
            started_.load(std::memory_order_relaxed));
  static const char* const kNames[kOutcomes] = {
      "succeeded", "failed", "killed_by_signal", "timed_out", "failed_to_start", "killed_on_request", "oom_killed"};
  for (size_t o = 0; o < kOutcomes; ++o)
    m.counter("claimsched_agent_task_exits_total",
              "task ends on this agent by outcome (exit 0, another exit code, a signal, max_run_time, a failed "
              "start, killed when released or at a stop, killed over its memory limit)",
              {{"outcome", kNames[o]}}, ended_[o].load(std::memory_order_relaxed));
  m.gauge("claimsched_agent_tasks_running", "tasks running or waiting to start on this agent", {},
          static_cast<double>(running));
  std::vector<uint64_t> at_most;
  for (const auto& b : launch_at_most_) at_most.push_back(b.load(std::memory_order_relaxed));
  uint64_t count = started_.load(std::memory_order_relaxed);
  // The counters are read one by one: keep the buckets within the count.
  for (auto& b : at_most) b = std::min(b, count);
  m.histogram("claimsched_agent_task_start_seconds", "from a confirmed task's arrival to its process running", {},
              std::vector<double>(kLaunchBounds.begin(), kLaunchBounds.end()), at_most,
              static_cast<double>(launch_ns_sum_.load(std::memory_order_relaxed)) / 1e9, count);
}

}  // namespace claimsched::actors
