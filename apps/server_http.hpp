#pragma once

// The server's HTTP endpoint ([http] listen): /metrics, the JSON API under
// /api/v1/ and the dashboard at /, all read through the gateway.

#include <memory>

#include <caf/fwd.hpp>

#include "actors/actors.hpp"
#include "apps/cluster_config.hpp"
#include "apps/http_endpoint.hpp"
#include "apps/server_auth.hpp"

namespace claimsched::apps {

/// Serves while the returned endpoint lives (none without [http] listen);
/// says where on stdout ("claimsched server http on HOST:PORT ..."). With
/// `auth` on, the API wants a bearer token (apps/http_auth.hpp).
core::Expected<std::unique_ptr<HttpEndpoint>> serve_http(caf::actor_system& sys, const ClusterConfig& config,
                                                         actors::gateway_actor gateway, const ServerAuth& auth = {});

}  // namespace claimsched::apps
