#pragma once

// `claimsched server --config cluster.toml`: the scheduler partitions with
// their stores, and the gateway published on TCP for agents and clients.
// Prints "claimsched server listening on HOST:PORT" once it serves; stops
// cleanly on SIGINT/SIGTERM.

#include <string>

namespace claimsched::apps {

struct ServerOptions {
  std::string config;
  /// Overrides [listen] port (0: a free port, printed).
  int port = -1;
  /// Overrides [storage] data_dir.
  std::string data_dir;
};

int run_server(const ServerOptions& options);

}  // namespace claimsched::apps
