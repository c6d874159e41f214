#pragma once

// What a server (or an HA member) exposes at /metrics: the counters, gauges
// and latency histogram of every partition it owns, labelled by partition,
// and its gateway's nodes by state. Each member exposes only the partitions
// it owns (scrape every member); a partition's counters start again from
// zero when another member takes it over, as Prometheus' counter resets
// expect.

#include <string>

#include "actors/gateway_actor.hpp"

namespace claimsched::actors {

/// Answers `promise` with the Prometheus text of what `self` (a gateway)
/// and its local partitions' schedulers know now.
void answer_metrics(gateway_actor::stateful_pointer<gateway_state> self, caf::typed_response_promise<std::string> promise);

}  // namespace claimsched::actors
