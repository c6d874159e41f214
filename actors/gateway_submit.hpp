#pragma once

// Jobs through the front door: the checks a job passes before its
// partition's scheduler sees it, its id, and its route.

#include <vector>

#include "actors/actors.hpp"
#include "actors/gateway_waits.hpp"

namespace claimsched::actors {

/// A job (its id assigned here when zero; the same id again is a retry).
caf::result<core::JobId> submit_job(gateway_self self, core::JobSpec job);

/// `count` copies of a job in one message and one store write: their ids in
/// order, all or none.
caf::result<std::vector<core::JobId>> submit_copies(gateway_self self, core::JobSpec job, uint32_t count);

}  // namespace claimsched::actors
