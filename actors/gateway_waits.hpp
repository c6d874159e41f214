#pragma once

// Clients that wait for their jobs to end (`submit --wait`, the e2e bench)
// are answered by the gateway when a scheduler says one of their jobs ended
// (its job events, see the scheduler's watch_atom), instead of polling job
// views: between events a waiting client costs the server nothing. A wait
// is answered at its timeout at the latest, after one more look, so a job
// whose event this gateway cannot hear (a partition another HA member owns)
// is still seen to end.

#include <cstdint>
#include <map>
#include <vector>

#include "actors/actors.hpp"
#include "core/job_waits.hpp"

namespace claimsched::actors {

struct gateway_state;

/// The longest a wait is held before it is answered (empty, if nothing ended).
constexpr uint32_t kMaxJobWaitMs = 60'000;
/// Jobs one wait may name, and waits held at once: beyond, a clear refusal.
constexpr size_t kMaxJobsPerWait = 1'000'000;
constexpr size_t kMaxJobWaits = 10'000;

struct GatewayWaits {
  core::JobWaits waits;
  std::map<core::JobWaits::Key, caf::typed_response_promise<std::vector<core::JobView>>> promises;
  /// This gateway asked the schedulers for their job events.
  bool watching = false;
};

using gateway_self = gateway_actor::stateful_pointer<gateway_state>;

/// A client's wait for `jobs` (see the gateway's ended_atom): answered now
/// if one has ended, else at the first event that ends one, else after
/// `timeout_ms`.
caf::result<std::vector<core::JobView>> wait_for_jobs(gateway_self self, std::vector<core::JobId> jobs,
                                                      uint32_t timeout_ms);

/// A scheduler's job event: these jobs ended; the waits that name one of
/// them are answered with their views.
void jobs_ended(gateway_self self, std::vector<core::JobView> ended);

/// The wait of `key` timed out: one last look, then it is answered.
void job_wait_timed_out(gateway_self self, core::JobWaits::Key key);

}  // namespace claimsched::actors
