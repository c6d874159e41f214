#pragma once

// Mutual TLS between members (issue 19): every connection between claimsched
// processes (server <-> agent, server <-> client, member <-> member) runs over
// TLS with certificates from one cluster CA, and each certificate names the
// member's role in its subject's OU: "server", "agent" or "client".
//
// The transport is CAF 0.17's OpenSSL module's (libcaf_openssl's
// middleman_actor.cpp: a stream with an SSL read/write policy, a doorman that
// starts an SSL accept per socket), rebuilt here because that module keeps
// its SSL objects private and gives the application no verify callback. Ours
// installs one, so the role is checked inside the TLS handshake itself:
// - the connecting side (agent, client, a member reaching a peer) accepts
//   only a certificate of role "server": an agent's or client's certificate
//   cannot act as a server, and since TLS proves the peer holds that
//   certificate's key, no relay through another member can fake it;
// - the accepting side (a server's gateway) accepts any of the three roles
//   from the cluster CA and refuses everything else (no certificate, another
//   CA, no role), logging who it refused and why. The role and CN of each
//   accepted connection are known here (tls_peer_identities()).
// The middleman's plain TCP stays the default: without [tls] nothing changes.

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/io/fwd.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace claimsched::actors {

/// What a certificate lets its holder be.
enum class PeerRole : uint8_t { server, agent, client };
const char* to_string(PeerRole role);
std::optional<PeerRole> parse_peer_role(const std::string& text);

/// [tls]: PEM files. All three or none.
struct TlsConfig {
  /// The cluster CA's certificate: peers must chain to it.
  std::string ca;
  /// This member's certificate and its private key.
  std::string cert;
  std::string key;

  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

/// Who is at the other end of a TLS connection (from its verified certificate).
struct PeerIdentity {
  PeerRole role = PeerRole::client;
  /// The certificate's subject CN: the member's name (an agent's host, a
  /// client's user).
  std::string cn;
};

/// Reads and checks `config`: each file is there and readable, the
/// certificate and key are PEM and belong together, the certificate chains
/// to the CA and names a role, `expected` if given. Answers this member's own
/// identity, or an error naming the file and the problem.
core::Expected<PeerIdentity> check_tls_config(const TlsConfig& config, std::optional<PeerRole> expected);

/// From now on this process speaks TLS with `config` (checked as by
/// check_tls_config with `own`): connect_gateway and publish_gateway use it.
/// Call once, before the first connection.
core::Status enable_tls(const TlsConfig& config, PeerRole own);
bool tls_enabled();

/// The TLS variants of connect_gateway's and publish_gateway's transport
/// (see connect.hpp). Errors name what TLS refused, on which side.
/// `problem` answers what TLS refused (empty: nothing yet); once the
/// connection is up, `peer` answers the server's verified identity.
caf::expected<caf::io::scribe_ptr> tls_connect(caf::actor_system& sys, const std::string& host, uint16_t port,
                                               std::function<std::string()>& problem,
                                               std::function<std::optional<PeerIdentity>()>& peer);
caf::expected<caf::io::doorman_ptr> tls_listen(caf::actor_system& sys, uint16_t port, const char* host);

/// Verified peers of this process's accepted TLS connections now open, by
/// the peer's "address:port" (what the gateway would ask to bind a request to
/// its certificate).
std::map<std::string, PeerIdentity> tls_peer_identities();

/// Proofs at the application level (actors/peer_proof.hpp): where a peer
/// kind first identifies itself, it shows its certificate and signs a
/// message naming a nonce the server chose.
/// This process's certificate (PEM; empty without TLS).
std::string own_certificate_pem();
/// This process's identity from its certificate (nullopt without TLS).
std::optional<PeerIdentity> own_identity();
/// A signature (SHA-256) of `message` by this process's key.
core::Expected<std::string> sign_with_own_key(const std::string& message);
/// Checks that `cert_pem` chains to the cluster CA and names `role`, and
/// that its key made `signature` over `message`; the signer's identity.
core::Expected<PeerIdentity> verify_signed(const std::string& cert_pem, const std::string& message,
                                           const std::string& signature, PeerRole role);
/// The verified identity of the server this process last reached at
/// host:port over TLS (nullopt: none yet, or no TLS).
std::optional<PeerIdentity> server_identity_at(const std::string& host, uint16_t port);

/// True if `host` is a loopback address or name (plain TCP is fine there).
bool is_loopback_host(const std::string& host);

}  // namespace claimsched::actors
