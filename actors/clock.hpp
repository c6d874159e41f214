#pragma once

// Actors read time from CAF's actor clock (the test coordinator's virtual
// clock in deterministic tests) and hand it to core/ as a TimePoint. What is
// written to disk is converted to wall-clock time (nanoseconds since the Unix
// epoch): the actor clock's origin is local to a process.

#include <caf/actor_clock.hpp>
#include <caf/local_actor.hpp>
#include <chrono>

#include "core/ids.hpp"

namespace claimsched::actors {

inline core::TimePoint now(const caf::local_actor* self) {
  return std::chrono::duration_cast<core::TimePoint>(self->clock().now().time_since_epoch());
}

inline core::TimePoint now(caf::actor_system& sys) {
  return std::chrono::duration_cast<core::TimePoint>(sys.clock().now().time_since_epoch());
}

inline core::TimePoint wall_now() {
  return std::chrono::duration_cast<core::TimePoint>(
      std::chrono::system_clock::now().time_since_epoch());
}

/// Maps time points between the actor clock and the wall clock, from one
/// reading of both. kNever stays kNever.
struct ClockMapping {
  core::TimePoint actor_now{0};
  core::TimePoint wall_now{0};

  core::TimePoint to_wall(core::TimePoint t) const {
    return t == core::kNever ? t : t - actor_now + wall_now;
  }
  core::TimePoint to_actor(core::TimePoint t) const {
    return t == core::kNever ? t : t - wall_now + actor_now;
  }
};

inline ClockMapping clock_mapping(const caf::local_actor* self) {
  return ClockMapping{now(self), wall_now()};
}

}  // namespace claimsched::actors
