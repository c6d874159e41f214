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
//   -                                  carol  operator
//
// Blank lines and lines starting with '#' are ignored. A token is 16 to 256
// characters of [A-Za-z0-9._~+/=-]; a user 1 to 64 of [A-Za-z0-9._-]; roles
// are comma-separated, of `operator` (reads and cancels anyone's jobs) and
// `admin` (drains nodes, removes pools, moves partitions; includes
// operator). Errors name the line, never the token.
//
// Client certificates (mutual TLS): a client that proves it holds a client
// certificate logs in as the user its CN names, if that user has a line in
// the file (a token line, or a certificate-only line whose token is `-`):
// the file is the list of users, so taking a user's lines out shuts their
// certificate out too (the CA has no revocation list). The certificate holds
// the roles that every line of its user gives (the least of them: a user
// with a plain token and an operator token logs in by certificate as a plain
// user). A user has at most one `-` line.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::core::auth {

/// An authenticated user and what they hold.
struct Principal {
  std::string user;
  bool operator_role = false;
  bool admin_role = false;
  /// How the request proved who it is: "token" or "certificate".
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
  /// The CN of a client certificate whose holder proved it holds its key
  /// (the caller verified that: actors/peer_proof.hpp). Empty: none. Used
  /// only without a token: a token, when given, decides alone.
  std::string certificate_cn;
};

class TokenTable {
 public:
  /// Parses a tokens file's text; `source` names it in errors ("tokens
  /// file /etc/claimsched/tokens line 3: ...").
  static Expected<TokenTable> parse(std::string_view text, std::string_view source);

  /// The principal of this token, or null.
  const Principal* find(std::string_view token) const;
  /// The principal a client certificate of `user` logs in as (the roles
  /// every line of that user gives), or null: the user has no line.
  const Principal* find_user(std::string_view user) const;
  /// Tokens, and users (with a token or a `-` line).
  size_t size() const { return by_token_.size(); }
  size_t users() const { return by_user_.size(); }

 private:
  std::map<std::string, Principal, std::less<>> by_token_;
  std::map<std::string, Principal, std::less<>> by_user_;
};

/// The token in a certificate-only line.
inline constexpr std::string_view kNoToken = "-";

/// The fields of a tokens file's line, split on spaces and tabs.
std::vector<std::string_view> fields_of(std::string_view line);

/// Resolves credentials to a principal with this server's tokens: the only
/// place that does. A token, when given, decides alone (an unknown token is
/// refused, whatever certificate came with it); without one, a proven
/// certificate's CN is looked up as a user (TokenTable::find_user).
/// Errc::unauthenticated if nothing presented is known; never names the
/// token.
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
