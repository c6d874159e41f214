#pragma once

// Binding a role to what a peer asks for, where a peer kind first
// identifies itself (issue 19): TLS (actors/tls.hpp) proves that every peer
// of the gateway holds a certificate of the cluster CA, but CAF 0.17 tells
// the gateway nothing about which connection a message came on. So an agent
// proves, when it registers its nodes, that it holds an agent certificate:
//
//   agent -> gateway   challenge                  -> nonce, the server's CN
//   agent -> gateway   prove(cert PEM, message, signature)
//                      message = "claimsched-register-v1" / nonce / server CN /
//                                one line per node: its actor's address and name
//   agent -> gateway   register(spec, node)       (as before)
//
// The gateway accepts the proof if the nonce is one it issued (once, within
// kChallengeTtl), the server CN is its own, the certificate chains to the CA
// and is of role agent, and the signature is by its key; then it accepts the
// registration of each node named, from that node's actor only, within
// kProofTtl. Why that is sound: the nonce makes a proof single-use; the
// server's CN in it keeps a proof made for another server from being
// replayed here; and an agent signs only for a server whose certificate its
// own TLS handshake verified as a server's, so no client (or agent)
// certificate holder can obtain one by posing as a server. The node's actor
// address binds the proof to the registration: another peer registering the
// same name with its own actor is refused.
//
// A client logs in by its certificate the same way (issue 19, "clients
// authenticate by their TLS certificate"), through the auth door
// (actors/auth_door.hpp):
//
//   client -> door     challenge(login)           -> nonce, the server's CN
//   client -> door     login(cert PEM, message, signature)
//                      message = "claimsched-login-v1" / nonce / server CN
//                                                 -> a session of the CN's user
//
// accepted if the nonce is one the door issued (once, within kChallengeTtl),
// the server CN is this server's and the certificate chains to the CA, is of
// role client and made the signature. The client signs only for the CN its
// own TLS handshake verified as a server's (not the one the door sends), so
// the session is bound to a holder of the certificate's key, never to a name
// the client merely sends.

#include <map>
#include <string>
#include <vector>

#include "actors/tls.hpp"
#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::actors {

/// The message an agent signs.
std::string registration_message(const std::string& nonce, const std::string& server_cn,
                                 const std::vector<std::pair<std::string, std::string>>& actor_and_name);

/// The message a client signs to log in with its certificate.
std::string login_message(const std::string& nonce, const std::string& server_cn);

/// Nonces issued and not used yet. Not thread safe (an actor's state).
class Challenges {
 public:
  static constexpr core::Duration kChallengeTtl = std::chrono::seconds(30);
  /// More outstanding challenges than this: the oldest go (a flood of
  /// challenges cannot grow the gateway without bound).
  static constexpr size_t kMaxChallenges = 4096;

  /// A fresh nonce (128 random bits, hex).
  std::string issue(core::TimePoint now);
  /// Whether `nonce` was issued, within kChallengeTtl; it is used up either way.
  bool use(const std::string& nonce, core::TimePoint now);
  size_t size() const { return issued_.size(); }

 private:
  std::map<std::string, core::TimePoint> issued_;
};

/// The auth door's side of a login by certificate: the client's identity
/// (role client) or why not, each message naming the certificate.
class LoginProofs {
 public:
  std::string challenge(core::TimePoint now) { return challenges_.issue(now); }
  core::Expected<PeerIdentity> prove(const std::string& cert_pem, const std::string& message,
                                     const std::string& signature, core::TimePoint now);

 private:
  Challenges challenges_;
};

/// The gateway's side: challenges issued and proofs accepted. Not thread
/// safe (the gateway's state).
class RegistrationProofs {
 public:
  static constexpr core::Duration kChallengeTtl = Challenges::kChallengeTtl;
  static constexpr core::Duration kProofTtl = std::chrono::seconds(60);
  static constexpr size_t kMaxChallenges = Challenges::kMaxChallenges;

  /// A fresh nonce (128 random bits, hex).
  std::string challenge(core::TimePoint now) { return challenges_.issue(now); }
  /// Checks a proof (see the file comment); the agent's identity, or why not.
  core::Expected<PeerIdentity> prove(const std::string& cert_pem, const std::string& message,
                                     const std::string& signature, core::TimePoint now);
  /// May the node `name` register with the actor at `actor_address`?
  core::Status admit(const std::string& name, const std::string& actor_address, core::TimePoint now);

 private:
  Challenges challenges_;
  struct Proven {
    std::string actor;
    std::string cn;
    core::TimePoint until;
  };
  std::map<std::string, Proven> proven_;
};

}  // namespace claimsched::actors
