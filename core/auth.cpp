#include "core/auth.hpp"

#include <algorithm>
#include <vector>

namespace claimsched::core::auth {

namespace {

constexpr size_t kMinToken = 16;
constexpr size_t kMaxToken = 256;
constexpr size_t kMaxUser = 64;

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '~' || c == '+' || c == '/' || c == '=' || c == '-';
}

bool user_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// A field for an error message: quoted when it is too short to be a token,
// else only its length. An operator who misplaces a token (in the user or
// roles column, say) must not find it in the log.
std::string shown(std::string_view field) {
  if (field.size() < kMinToken) return "'" + std::string(field) + "'";
  return "of " + std::to_string(field.size()) + " characters (not shown: it could be a token)";
}

}  // namespace

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string Principal::roles() const {
  if (admin_role) return operator_role ? "admin,operator" : "admin";
  return operator_role ? "operator" : "";
}

Expected<TokenTable> TokenTable::parse(std::string_view text, std::string_view source) {
  TokenTable table;
  std::map<std::string, size_t, std::less<>> line_of;
  std::map<std::string, size_t, std::less<>> certificate_line_of;
  size_t number = 0;
  while (!text.empty()) {
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto bad = [&](const std::string& why) {
      return make_error(Errc::parse_error,
                        "tokens file " + std::string(source) + " line " + std::to_string(number) + ": " + why);
    };
    auto fields = fields_of(line);
    if (fields.empty() || fields[0].front() == '#') continue;
    // The token is never echoed: an error message may end up in a log.
    if (fields.size() < 2) return bad("expected TOKEN USER [ROLES], got only one field");
    if (fields.size() > 3)
      return bad("expected TOKEN USER [ROLES], got " + std::to_string(fields.size()) +
                 " fields (roles are comma-separated, without spaces)");
    std::string_view token = fields[0];
    bool certificate_only = token == kNoToken;
    if (certificate_only) {
      // No token: the user logs in by certificate only.
    } else if (token.size() < kMinToken || token.size() > kMaxToken)
      return bad("the token has " + std::to_string(token.size()) + " characters; a token has " +
                 std::to_string(kMinToken) + " to " + std::to_string(kMaxToken) + " (e.g. `openssl rand -hex 16`)");
    else if (!std::all_of(token.begin(), token.end(), token_char))
      return bad("the token has a character outside [A-Za-z0-9._~+/=-]");
    std::string_view user = fields[1];
    if (user.size() > kMaxUser || !std::all_of(user.begin(), user.end(), user_char) || user.front() == '-')
      return bad("user " + shown(user) + " is not 1 to 64 characters of [A-Za-z0-9._-]");
    Principal p;
    p.user = std::string(user);
    if (fields.size() == 3) {
      std::string_view roles = fields[2];
      while (true) {
        auto comma = roles.find(',');
        std::string_view role = roles.substr(0, comma);
        bool* slot = role == "operator" ? &p.operator_role : role == "admin" ? &p.admin_role : nullptr;
        if (!slot) return bad("unknown role " + shown(role) + " (roles: operator, admin; comma-separated)");
        if (*slot) return bad("role " + shown(role) + " is given twice");
        *slot = true;
        if (comma == std::string_view::npos) break;
        roles = roles.substr(comma + 1);
      }
    }
    if (certificate_only) {
      if (auto seen = certificate_line_of.find(p.user); seen != certificate_line_of.end())
        return bad("user " + shown(user) + " has a certificate line already (line " + std::to_string(seen->second) +
                   ")");
      certificate_line_of.emplace(p.user, number);
    } else {
      if (auto seen = line_of.find(token); seen != line_of.end())
        return bad("the same token as line " + std::to_string(seen->second) + " (each token names one user)");
      line_of.emplace(std::string(token), number);
      table.by_token_.emplace(std::string(token), p);
    }
    // A certificate gets the least roles of its user's lines.
    Principal by_certificate = p;
    by_certificate.via = "certificate";
    auto [known, fresh] = table.by_user_.emplace(p.user, by_certificate);
    if (!fresh) {
      // admin includes operator: "admin" and "operator" lines leave operator.
      known->second.operator_role = known->second.is_operator() && p.is_operator();
      known->second.admin_role = known->second.admin_role && p.admin_role;
    }
  }
  if (table.by_user_.empty())
    return make_error(Errc::parse_error, "tokens file " + std::string(source) +
                                             " has no users: nobody could use the cluster (lines: TOKEN USER "
                                             "[ROLES], or - USER [ROLES] for a user who logs in by certificate)");
  return table;
}

const Principal* TokenTable::find(std::string_view token) const {
  auto it = by_token_.find(token);
  return it == by_token_.end() ? nullptr : &it->second;
}

const Principal* TokenTable::find_user(std::string_view user) const {
  auto it = by_user_.find(user);
  return it == by_user_.end() ? nullptr : &it->second;
}

Expected<Principal> resolve(const TokenTable& tokens, const Credentials& credentials) {
  if (!credentials.token.empty()) {
    if (const Principal* p = tokens.find(credentials.token)) return *p;
    return make_error(Errc::unauthenticated, "the token is not known to this server");
  }
  if (!credentials.certificate_cn.empty()) {
    if (const Principal* p = tokens.find_user(credentials.certificate_cn)) return *p;
    return make_error(Errc::unauthenticated, "the certificate's user '" + credentials.certificate_cn +
                                                 "' is not a user of this server (the server's tokens file has no "
                                                 "line for it; '- " +
                                                 credentials.certificate_cn + "' would let its certificate in)");
  }
  return make_error(Errc::unauthenticated,
                    "this server requires authentication: give a token (--token-file FILE, or CLAIMSCHED_TOKEN), or a "
                    "client certificate of your user over TLS");
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::submit:
      return "submit";
    case Action::read_job:
      return "read";
    case Action::cancel_job:
      return "cancel";
    case Action::list_jobs:
      return "list";
    case Action::read_cluster:
      return "read_cluster";
    case Action::drain_node:
      return "drain";
    case Action::remove_pool:
      return "remove_pool";
    case Action::move_partition:
      return "move_partition";
    case Action::login:
      return "login";
  }
  return "unknown";
}

Status authorize(const Principal& who, Action action, std::string_view object, std::string_view owner) {
  auto refuse = [&](const std::string& why) {
    return make_error(Errc::permission_denied, "user " + who.user + " may not " + std::string(to_string(action)) + " " +
                                                   std::string(object) + ": " + why);
  };
  switch (action) {
    case Action::login:
    case Action::read_cluster:
      return Status::ok();
    case Action::submit:
      if (owner.empty() || owner == who.user) return Status::ok();
      return refuse("it names user " + std::string(owner) + "; a job runs as the user who logged in (" + who.user +
                    ")");
    case Action::read_job:
    case Action::cancel_job:
    case Action::list_jobs:
      if (owner.empty() || owner == who.user || who.is_operator()) return Status::ok();
      return refuse("it belongs to user " + std::string(owner) + "; another user's jobs need the operator role");
    case Action::drain_node:
    case Action::remove_pool:
    case Action::move_partition:
      if (who.is_admin()) return Status::ok();
      return refuse("this needs the admin role");
  }
  return refuse("unknown action");
}

}  // namespace claimsched::core::auth
