#include "apps/tls_setup.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "actors/tls.hpp"

namespace claimsched::apps {

TlsFiles resolve_tls_files(const TlsFiles& config, const TlsFiles& flags) {
  auto pick = [](const std::string& flag, const char* env, const std::string& from_config) {
    if (!flag.empty()) return flag;
    if (const char* v = std::getenv(env); v && *v) return std::string(v);
    return from_config;
  };
  return {pick(flags.ca, "CLAIMSCHED_TLS_CA", config.ca), pick(flags.cert, "CLAIMSCHED_TLS_CERT", config.cert),
          pick(flags.key, "CLAIMSCHED_TLS_KEY", config.key)};
}

std::optional<std::string> setup_tls(const TlsFiles& files, TlsRole role) {
  if (!files.enabled()) return std::nullopt;
  auto own = role == TlsRole::server  ? actors::PeerRole::server
             : role == TlsRole::agent ? actors::PeerRole::agent
                                      : actors::PeerRole::client;
  auto status = actors::enable_tls({files.ca, files.cert, files.key}, own);
  if (!status) return status.error().message;
  spdlog::debug("tls: on, as {} (certificate {}, CA {})", actors::to_string(own), files.cert, files.ca);
  return std::nullopt;
}

}  // namespace claimsched::apps
