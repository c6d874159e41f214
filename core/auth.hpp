#pragma once

// Who may do what (issue 19): the tokens file, the principal a request's
// credentials resolve to, and the rules every door (the CAF gateway's
// sessions, the HTTP API) asks. Pure: no I/O, no clock.
//
// Tokens file (`[auth] tokens_file`), one token per line:
//
//   # TOKEN                            USER   [ROLES]
//   4f1c0e2a9b7d43c6a8e5f0d1b2c3a4e5   alice
//   9a8b7c6d5e4f30211203f4e5d6c7b8a9   bob    operator
//   0a1b2c3d4e5f60718293a4b5c6d7e8f9   root   admin,operator
//
// Blank lines and lines starting with '#' are ignored. A token is 16 to 256
// characters of [A-Za-z0-9._~+/=-]; a user 1 to 64 of [A-Za-z0-9._-]; roles
// are comma-separated, of `operator` (reads and cancels anyone's jobs) and
// `admin` (drains nodes, removes pools, moves partitions; includes
// operator). Errors name the line, never the token.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::core::auth {

/// An authenticated user and what they hold.
struct Principal {
  std::string user;
  bool operator_role = false;
  bool admin_role = false;
  /// How the request proved who it is: "token" (or "certificate" once the
  /// transport hands in a verified certificate's CN).
  std::string via = "token";

  /// Reads and cancels anyone's jobs.
  bool is_operator() const { return operator_role || admin_role; }
  bool is_admin() const { return admin_role; }
  /// "admin,operator", "operator" or "" (a plain user).
  std::string roles() const;
};

/// What a request presents. Each source is optional; `resolve` is the one
/// place that turns them into a principal.
struct Credentials {
  /// A bearer token (the client's --token-file, CLAIMSCHED_TOKEN, HTTP's
  /// Authorization: Bearer). Empty: none.
  std::string token;
  /// The CN of the peer's verified TLS client certificate (mutual TLS).
  /// Empty: none. Not used yet: resolve says so when it is the only source.
  std::string certificate_cn;
};

class TokenTable {
 public:
  /// Parses a tokens file's text; `source` names it in errors ("tokens
  /// file /etc/claimsched/tokens line 3: ...").
  static Expected<TokenTable> parse(std::string_view text, std::string_view source);

  /// The principal of this token, or null.
  const Principal* find(std::string_view token) const;
  size_t size() const { return by_token_.size(); }

 private:
  std::map<std::string, Principal, std::less<>> by_token_;
};

/// Resolves credentials to a principal with this server's tokens: the only
/// place that does (a certificate's CN is to be added here). Errc::
/// unauthenticated if nothing presented is known; never names the token.
Expected<Principal> resolve(const TokenTable& tokens, const Credentials& credentials);

/// What a request does, for the rules and the audit log.
enum class Action : uint8_t {
  submit,          ///< a job (or campaign) in the owner's name
  read_job,        ///< status, explain, logs of one job (or campaign)
  cancel_job,      ///< cancel one job (or campaign)
  list_jobs,       ///< queue, jobs, campaign list (owner: the user filtered on)
  read_cluster,    ///< nodes, pools, members
  drain_node,      ///< drain or undrain a node
  remove_pool,     ///< remove a pool
  move_partition,  ///< move a partition to another member
  login,           ///< present credentials
};

std::string_view to_string(Action action);

/// Whether `who` may do `action` on `object` (words: "job 12", "node n1")
/// that belongs to `owner` (empty: nobody, e.g. a node). For submit, the
/// owner is the user the job names. Errc::permission_denied says why.
Status authorize(const Principal& who, Action action, std::string_view object, std::string_view owner);

/// One line of the audit log: who did (or was refused) what, on what, when.
struct AuditRecord {
  /// Wall clock, ns since the Unix epoch.
  TimePoint time{0};
  /// Empty: not authenticated.
  std::string user;
  std::string roles;
  Action action = Action::login;
  std::string object;
  bool allowed = false;
  /// Why it was refused (or what an allowed privileged action did).
  std::string reason;
  /// Which door: "cli" (the CAF port) or "http".
  std::string door;
  /// The peer, when known (HTTP: its address).
  std::string peer;
};

}  // namespace claimsched::core::auth
