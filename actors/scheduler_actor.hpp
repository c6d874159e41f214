#pragma once

#include <vector>

#include "actors/actors.hpp"
#include "core/scheduler.hpp"

namespace claimsched::actors {

struct SchedulerActorConfig {
  core::SchedulerConfig scheduler;
  /// How often reply timeouts are checked.
  core::Duration tick_interval = std::chrono::milliseconds(100);
  /// Start placing at once (servers) or wait for start_atom (sims).
  bool start_immediately = true;
  /// How long a subscription request to a node may take.
  core::Duration subscribe_timeout = std::chrono::seconds(30);
};

struct scheduler_state {
  explicit scheduler_state(caf::local_actor*) {}

  std::unique_ptr<core::Scheduler> core;
  /// Node handles by the view's dense node index.
  std::vector<node_actor> nodes;
  core::Outbox outbox;
  bool started = false;
  bool tick_armed = false;
  core::Duration tick_interval{0};
  core::Duration subscribe_timeout{0};
  uint64_t jobs_finished = 0;
  core::TimePoint last_placement{0};
  uint64_t placements_seen = 0;
  std::string log_name;

  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         SchedulerActorConfig config);

}  // namespace claimsched::actors
