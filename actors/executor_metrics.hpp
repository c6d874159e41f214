#pragma once

// What an agent's process executor counts for its /metrics: task starts,
// their launch latency (the start's queueing until the task ran), and task
// ends by outcome. Atomics only: the supervisor's thread counts without a
// lock, a scrape reads whenever it comes.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "agent/process_supervisor.hpp"
#include "core/metrics_text.hpp"

namespace claimsched::actors {

class ExecutorMetrics {
 public:
  void started(std::chrono::nanoseconds launch);
  void ended(const agent::TaskExit& how);
  /// Appends the agent's families; `running` is the tasks running or
  /// waiting to start now.
  void render(core::MetricsText& m, size_t running) const;

 private:
  static constexpr std::array<double, 9> kLaunchBounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1, 10};
  /// Ends by outcome: exited 0, exited otherwise, then the other ways.
  enum Outcome : size_t {
    succeeded,
    failed,
    killed_by_signal,
    timed_out,
    failed_to_start,
    killed_on_request,
    oom_killed,
    kOutcomes
  };

  std::atomic<uint64_t> started_{0};
  std::array<std::atomic<uint64_t>, kLaunchBounds.size()> launch_at_most_{};
  std::atomic<uint64_t> launch_ns_sum_{0};
  std::array<std::atomic<uint64_t>, kOutcomes> ended_{};
};

}  // namespace claimsched::actors
