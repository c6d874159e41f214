#pragma once

// The front door with [auth] on (issue 19, "who may do what"). The server
// publishes this actor instead of its gateway: it has the gateway's
// interface, passes agent traffic through, and refuses every client request
// until the client logs in, with a token or, over TLS, by proving it holds a
// client certificate (actors/peer_proof.hpp; the certificate's CN is the
// user, core/auth.hpp has the rule). A login spawns a session: the same
// behaviour bound to the login's principal, which checks each request
// against core::auth's rules and forwards what is allowed to the gateway.
// The session lives as long as the client's connection. Every refusal, and
// every privileged action let through, is a line in the audit log.

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "actors/actors.hpp"
#include "actors/audit_log.hpp"
#include "actors/peer_proof.hpp"
#include "core/auth.hpp"

namespace claimsched::actors {

struct AuthDoorConfig {
  std::shared_ptr<const core::auth::TokenTable> tokens;
  std::shared_ptr<AuditLog> audit;
  /// HA: other members ask for a partition's scheduler (partition_atom).
  /// A single server refuses that: the scheduler's handle would let a
  /// client around the door.
  bool ha_peers = false;
  /// How long a session waits for the gateway.
  core::Duration request_timeout = std::chrono::seconds(15);
  /// Live client sessions the door keeps at most, in all and per client
  /// process (CAF node): each login holds one until its client disconnects,
  /// and a client may log in again and again over one connection. A login
  /// past either cap is refused (capacity_exceeded); per client, so that one
  /// client cannot take every session.
  size_t max_sessions = 1024;
  size_t max_sessions_per_client = 64;
  /// Failed logins a client process may make per window; past that its
  /// logins are refused (unavailable) until the window ends, without looking
  /// at the token, so guessing tokens goes at most this fast per connection.
  /// Per client: an attacker's failures lock out no one else.
  size_t max_failed_logins = 20;
  core::Duration failed_login_window = std::chrono::seconds(10);
};

struct auth_door_state {
  explicit auth_door_state(caf::local_actor*) {}

  gateway_actor gateway;
  AuthDoorConfig config;
  /// None: the door itself (only login and agent traffic get through).
  std::optional<core::auth::Principal> who;
  /// The door's own counts (a session's stay empty). Clients are keyed by
  /// their CAF node; a map's size is bounded by the connections and sessions.
  size_t sessions = 0;
  std::unordered_map<std::string, size_t> sessions_of_client;
  std::unordered_map<caf::actor_addr, std::string> client_of_session;
  /// A client's failed logins in its window, which opens at its first
  /// failure after the last window closed.
  struct Failures {
    size_t count = 0;
    core::TimePoint since{0};
  };
  std::unordered_map<std::string, Failures> failed_logins;
  uint64_t refused_logins = 0;  // throttled or over a session cap, ever
  /// Nonces for logins by certificate (the door's own, not the gateway's).
  LoginProofs login_proofs;

  static inline const char* name = "auth-door";
};

/// Who a session serves, and the client it ends with.
struct AuthSession {
  core::auth::Principal who;
  caf::strong_actor_ptr client;
};

gateway_actor::behavior_type auth_door(gateway_actor::stateful_pointer<auth_door_state> self, gateway_actor gateway,
                                       AuthDoorConfig config, std::shared_ptr<AuthSession> session);

/// The door in front of `gateway` (config.tokens and config.audit set).
gateway_actor spawn_auth_door(caf::actor_system& sys, gateway_actor gateway, AuthDoorConfig config);

}  // namespace claimsched::actors
