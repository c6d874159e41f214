#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/actors.hpp"

namespace claimsched::actors {

struct GatewayConfig {
  /// Pool name -> the scheduler that owns it.
  std::map<std::string, scheduler_actor> pools;
  /// Every scheduler (one per partition).
  std::vector<scheduler_actor> schedulers;
  /// Jobs the partitions already hold (after a restart): id -> its scheduler.
  std::map<core::JobId, scheduler_actor> known_jobs;
  core::Duration heartbeat_interval = std::chrono::seconds(1);
  /// Silent this long: the node is down and its tasks are lost.
  core::Duration node_grace = std::chrono::seconds(10);
  /// Resource names jobs may ask for besides cpu, memory, gpu and disk.
  std::vector<std::string> resources;
  /// A node whose agent stopped on purpose and left its tasks running is
  /// down (its tasks lost) only after this long without coming back.
  core::Duration agent_restart_grace = std::chrono::minutes(10);
};

struct gateway_state {
  explicit gateway_state(caf::local_actor*) {}

  struct Node {
    std::string name;
    std::string pool;
    scheduler_actor scheduler;
    node_actor handle;
    core::TimePoint last_heartbeat{0};
    bool down = false;
    /// Its connection is up (false after a down_msg).
    bool connected = false;
    /// Its agent stopped on purpose and left its tasks running.
    bool away = false;
  };
  GatewayConfig config;
  std::map<core::NodeId, Node> nodes;
  std::map<core::JobId, scheduler_actor> jobs;
  uint64_t next_job = 1;

  static inline const char* name = "gateway";
};

gateway_actor::behavior_type gateway(gateway_actor::stateful_pointer<gateway_state> self,
                                     GatewayConfig config);

}  // namespace claimsched::actors
