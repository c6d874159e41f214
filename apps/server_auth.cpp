#include "apps/server_auth.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <caf/all.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "actors/auth_door.hpp"

namespace claimsched::apps {

namespace {

std::string relative_to(const std::string& path, const std::string& config_path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(config_path).parent_path() / path).string();
}

}  // namespace

core::Expected<ServerAuth> load_server_auth(const ClusterConfig& config, const std::string& config_path) {
  ServerAuth out;
  if (!config.auth) {
    spdlog::warn(
        "authentication is off (no [auth] in the config): any client that reaches this server may submit "
        "as any user, cancel any job and drain nodes; fine on loopback, not across machines");
    return out;
  }
  std::string tokens_path = relative_to(config.auth->tokens_file, config_path);
  std::ifstream in(tokens_path, std::ios::binary);
  if (!in) return core::make_error(core::Errc::io_error, "[auth] tokens_file: cannot read '" + tokens_path + "'");
  std::stringstream text;
  text << in.rdbuf();
  auto tokens = core::auth::TokenTable::parse(text.str(), tokens_path);
  if (!tokens) return core::make_error(tokens.error().code, "[auth] " + tokens.error().message);
  struct stat info {};
  if (::stat(tokens_path.c_str(), &info) == 0 && (info.st_mode & 077) != 0)
    spdlog::warn("[auth] tokens file {} is readable by others than its owner (chmod 600 it)", tokens_path);
  std::string audit_path = config.auth->audit_log.empty() ? config.storage.data_dir + "/audit.log"
                                                          : relative_to(config.auth->audit_log, config_path);
  auto audit = actors::AuditLog::open(audit_path);
  if (!audit) return audit.error();
  out.tokens = std::make_shared<const core::auth::TokenTable>(std::move(*tokens));
  out.audit = std::move(*audit);
  spdlog::info("authentication is on: {} token(s) and {} user(s) from {}, audit log {}", out.tokens->size(),
               out.tokens->users(), tokens_path, audit_path);
  return out;
}

actors::gateway_actor front_door(caf::actor_system& sys, actors::gateway_actor gateway, const ServerAuth& auth,
                                 bool ha) {
  if (!auth.on()) return gateway;
  actors::AuthDoorConfig c;
  c.tokens = auth.tokens;
  c.audit = auth.audit;
  c.ha_peers = ha;
  return actors::spawn_auth_door(sys, std::move(gateway), std::move(c));
}

}  // namespace claimsched::apps
