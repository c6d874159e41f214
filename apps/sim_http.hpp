#pragma once

// `claimsched sim --http HOST:PORT`: GET /metrics while the simulation runs,
// with the families a server exposes per partition (scheduler_metrics in
// actors/gateway_metrics.hpp), read from the sim's schedulers. It lets one
// measure what scraping costs the scheduler (bench/metrics_overhead.sh) and
// try a Prometheus or Grafana setup without a cluster.

#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/actors.hpp"
#include "apps/http_endpoint.hpp"

namespace claimsched::apps {

/// Serves /metrics on `listen` ("HOST:PORT"; port 0: a free one) while the
/// returned endpoint lives; says where on stderr ("claimsched sim http on
/// HOST:PORT"), stdout being the sim's report. An error names the address.
core::Expected<std::unique_ptr<HttpEndpoint>> serve_sim_metrics(caf::actor_system& sys, const std::string& listen,
                                                                std::vector<actors::scheduler_actor> schedulers);

}  // namespace claimsched::apps
