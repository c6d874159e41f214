#include "apps/sim_http.hpp"

#include <caf/all.hpp>
#include <cstdio>

#include "actors/gateway_metrics.hpp"
#include "apps/cluster_config.hpp"
#include "core/metrics_text.hpp"
#include "messages/errors.hpp"

namespace claimsched::apps {

namespace {

/// How long a scrape waits for a scheduler: a busy one answers between two
/// batches of claims, well within this.
constexpr auto kAskTimeout = std::chrono::seconds(5);

/// The Prometheus text of every scheduler's metrics, in partition order.
core::Expected<std::string> render(caf::actor_system& sys, const std::vector<actors::scheduler_actor>& schedulers) {
  // One scoped actor per scrape, on cpp-httplib's thread: no actor of the
  // sim waits for the HTTP side.
  caf::scoped_actor self{sys};
  core::MetricsText m;
  for (const auto& s : schedulers) {
    std::optional<core::Error> failed;
    self->request(s, kAskTimeout, actors::metrics_atom::value)
        .receive([&](actors::PartitionMetrics& metrics) { actors::scheduler_metrics(m, metrics); },
                 [&](caf::error& err) { failed = messages::from_caf_error(err, &sys); });
    if (failed) return *failed;
  }
  return m.text();
}

}  // namespace

core::Expected<std::unique_ptr<HttpEndpoint>> serve_sim_metrics(caf::actor_system& sys, const std::string& listen,
                                                                std::vector<actors::scheduler_actor> schedulers) {
  auto address = parse_http_listen(listen);
  if (!address) return core::make_error(core::Errc::invalid_argument, "--http: " + address.error().message);
  auto endpoint = HttpEndpoint::start(address->host, address->port,
                                      [&sys, schedulers = std::move(schedulers)] { return render(sys, schedulers); });
  if (!endpoint) return endpoint.error();
  std::fprintf(stderr, "claimsched sim http on %s:%u (GET /metrics)\n", address->host.c_str(),
               static_cast<unsigned>((*endpoint)->port()));
  std::fflush(stderr);
  return endpoint;
}

}  // namespace claimsched::apps
