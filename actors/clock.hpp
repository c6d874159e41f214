#pragma once

// Actors read time from CAF's actor clock (the test coordinator's virtual
// clock in deterministic tests) and hand it to core/ as a TimePoint.

#include <caf/actor_clock.hpp>
#include <caf/local_actor.hpp>

#include "core/ids.hpp"

namespace claimsched::actors {

inline core::TimePoint now(const caf::local_actor* self) {
  return std::chrono::duration_cast<core::TimePoint>(self->clock().now().time_since_epoch());
}

inline core::TimePoint now(caf::actor_system& sys) {
  return std::chrono::duration_cast<core::TimePoint>(sys.clock().now().time_since_epoch());
}

}  // namespace claimsched::actors
