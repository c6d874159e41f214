#pragma once

// `claimsched agent`: hosts this machine's node actor (or, with --simulate N,
// N synthetic nodes), registers with the server, heartbeats, and runs tasks
// as processes. It reconnects when the server goes away and registers again;
// the server then reconciles what the node still runs.
//
// Stopping (SIGTERM, SIGINT) drains: the node takes no new claims. Then, by
// --on-stop: "leave" (the default) leaves the running tasks to their keepers
// (agent/keeper.hpp), tells the server it will be back (its node is not
// declared down for agent_restart_grace), and exits; the next start adopts
// them, so they finish once and use no retry. "wait" keeps heartbeating until
// every task ended, then exits (a second signal leaves the rest running).
// An agent that dies without stopping (kill -9, a crash) takes its tasks
// with it; a restarted agent reports those as lost.

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
  /// "leave" or "wait" (empty: [agent] on_stop, else leave).
  std::string on_stop;
  /// How long task outputs are kept (empty: [agent] keep_outputs, else 7d).
  std::string keep_outputs;
  /// Serve GET /metrics on HOST:PORT (empty: no HTTP); HTTPS with the
  /// agent's certificate when it has [tls], unless `http_plain`.
  std::string http;
  bool http_plain = false;
  /// Override [tls] ca, cert and key (each on its own).
  std::string tls_ca, tls_cert, tls_key;
  /// A delegated cgroup v2 directory the tasks' cgroups go under (empty:
  /// the agent's own cgroup, if delegated; agent/cgroup.hpp).
  std::string cgroup;
};

int run_agent(const AgentOptions& options);

/// A node's id from its name (FNV-1a, never zero): stable across restarts.
core::NodeId node_id_of(std::string_view name);

}  // namespace claimsched::apps
