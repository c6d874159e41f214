#pragma once

// Reaching the server's gateway from another process (agent, client).

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <optional>
#include <string>

#include "actors/actors.hpp"

namespace claimsched::actors {

/// Connects to the gateway published at host:port (over TLS once
/// enable_tls was called: the server must show a server certificate), giving up after
/// `timeout`. CAF 0.17's middleman().remote_actor() waits without a limit,
/// and a connect that races the server's restart can leave it waiting for a
/// handshake that never comes, with every later connect to the same address
/// queued behind it: an agent would never reconnect.
caf::expected<gateway_actor> connect_gateway(caf::actor_system& sys, const std::string& host, uint16_t port,
                                             core::Duration timeout);

/// Publishes `gateway` on host:port (0: a free port) and answers the port:
/// over TLS once enable_tls was called (actors/tls.hpp), else plain TCP,
/// with a loud warning in the log when `host` is not a loopback address.
caf::expected<uint16_t> publish_gateway(caf::actor_system& sys, const gateway_actor& gateway, uint16_t port,
                                        const std::string& host);

/// Splits "host:port"; nullopt if it is not that.
std::optional<std::pair<std::string, uint16_t>> split_address(const std::string& address);

/// True only if host:port actively refuses a TCP connection (the host is up
/// and nothing listens there: the process is gone). A paused process still
/// accepts (its socket lives), an unreachable host times out: both false.
bool nothing_listens_at(const std::string& host, uint16_t port, core::Duration timeout);

}  // namespace claimsched::actors
