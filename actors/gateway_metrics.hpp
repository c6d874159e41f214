#pragma once

// What a server (or an HA member) exposes at /metrics: the counters, gauges
// and latency histogram of every partition it owns, labelled by partition,
// and its gateway's nodes by state. Each member exposes only the partitions
// it owns (scrape every member); a partition's counters start again from
// zero when another member takes it over, as Prometheus' counter resets
// expect.

#include <string>

#include "actors/gateway_actor.hpp"

namespace claimsched::core {
class MetricsText;
}

namespace claimsched::actors {

/// Adds one partition's families (its counters, queue and task gauges,
/// epoch, placement latency; the work waiting per pool and class; each
/// pool's fair share, demand and usage), labelled by partition: what a
/// server exposes per owned partition, and what `claimsched sim --http`
/// exposes, so a dashboard built for one reads the other.
void scheduler_metrics(core::MetricsText& m, const PartitionMetrics& metrics);

/// Answers `promise` with the Prometheus text of what `self` (a gateway)
/// and its local partitions' schedulers know now.
void answer_metrics(gateway_actor::stateful_pointer<gateway_state> self, caf::typed_response_promise<std::string> promise);

/// Answers `promise` with a number that moves whenever a job's record does
/// (each local partition's durable write sequence plus its epoch, summed):
/// the HTTP API's `since`, which lets a poller skip an unchanged list. 0 when
/// a partition is owned elsewhere or does not answer: unknown, so the API
/// answers in full.
void answer_changes(gateway_actor::stateful_pointer<gateway_state> self, caf::typed_response_promise<uint64_t> promise);

}  // namespace claimsched::actors
