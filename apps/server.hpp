#pragma once

// `claimsched server --config cluster.toml`: the scheduler partitions with
// their stores, and the gateway published on TCP for agents and clients.
// Without [ha] it owns every partition; with [ha] it is one member of
// several, owning the partitions etcd's election gives it and a standby copy
// of the others (actors/member.hpp). Prints "claimsched server listening on
// HOST:PORT" once it serves; stops cleanly on SIGINT/SIGTERM (a member hands
// its partitions to the others at once).

#include <string>

namespace claimsched::apps {

struct ServerOptions {
  std::string config;
  /// Overrides [listen] port (0: a free port, printed).
  int port = -1;
  /// Overrides [storage] data_dir.
  std::string data_dir;
  /// HA: overrides [ha] name and [ha] etcd (comma-separated URLs).
  std::string name;
  std::string etcd;
  /// Overrides [http] listen (HOST:PORT; port 0: a free one, printed).
  std::string http;
  /// Override [tls] ca, cert and key (each on its own).
  std::string tls_ca, tls_cert, tls_key;
};

int run_server(const ServerOptions& options);

}  // namespace claimsched::apps
