#pragma once

// Turning TLS on for one claimsched process (actors/tls.hpp): where the
// files come from, and the role this process must hold.

#include <optional>
#include <string>

#include "apps/cluster_config.hpp"

namespace claimsched::apps {

enum class TlsRole { server, agent, client };

/// The files for this process: `flags` (--tls-ca/--tls-cert/--tls-key) over
/// $CLAIMSCHED_TLS_CA/_CERT/_KEY over [tls] of the config; each file is
/// chosen on its own. Empty: plain TCP.
TlsFiles resolve_tls_files(const TlsFiles& config, const TlsFiles& flags);

/// Checks the files and turns TLS on for this process as `role`; nullopt if
/// fine (or no TLS asked for), else the message to print (the process then
/// exits: a member with a bad certificate must not start half-secured).
std::optional<std::string> setup_tls(const TlsFiles& files, TlsRole role);

}  // namespace claimsched::apps
