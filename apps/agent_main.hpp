#pragma once

// `claimsched agent`: hosts this machine's node actor (or, with --simulate N,
// N synthetic nodes), registers with the server, heartbeats, and runs tasks
// as processes. It reconnects when the server goes away and registers again;
// the server then reconciles what the node still runs. Tasks die with their
// agent (see agent/process_supervisor.hpp); a restarted agent reports the
// tasks it held as lost.

#include <string>
#include <vector>

#include "core/ids.hpp"

namespace claimsched::apps {

struct AgentOptions {
  /// A cluster.toml whose [agent] section (and cluster_id, timeouts) apply.
  std::string config;
  std::string server;
  std::string name;
  std::string pool;
  std::string resources;
  std::vector<std::string> labels;
  std::string state_dir;
  uint32_t simulate = 0;
  int64_t max_starting = -1;
};

int run_agent(const AgentOptions& options);

/// A node's id from its name (FNV-1a, never zero): stable across restarts.
core::NodeId node_id_of(std::string_view name);

}  // namespace claimsched::apps
