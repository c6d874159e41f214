#pragma once

// The server's [auth]: the tokens file read and checked at start (a bad one
// stops the server with the line it trips on), the audit log opened, and
// the front door that enforces both (actors/auth_door.hpp).

#include <caf/fwd.hpp>
#include <memory>
#include <string>

#include "actors/actors.hpp"
#include "actors/audit_log.hpp"
#include "apps/cluster_config.hpp"
#include "core/auth.hpp"

namespace claimsched::apps {

struct ServerAuth {
  /// Null: authentication is off.
  std::shared_ptr<const core::auth::TokenTable> tokens;
  std::shared_ptr<actors::AuditLog> audit;
  bool on() const { return tokens != nullptr; }
};

/// Reads [auth] (relative paths against `config_path`'s directory). Without
/// [auth], logs once that authentication is off and answers an empty one.
core::Expected<ServerAuth> load_server_auth(const ClusterConfig& config, const std::string& config_path);

/// What the server publishes on [listen]: the gateway itself, or with auth
/// on the door in front of it (`ha`: HA peers ask it for schedulers).
actors::gateway_actor front_door(caf::actor_system& sys, actors::gateway_actor gateway, const ServerAuth& auth,
                                 bool ha);

}  // namespace claimsched::apps
