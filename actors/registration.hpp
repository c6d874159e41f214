#pragma once

// Everything a claimsched process adds to its CAF configuration: the message
// types (messages::register_types), the actor handle types that travel
// between processes, and the middleman's failure detection. Every process
// calls it, or a type known only to the sender arrives empty.

#include <caf/actor_system_config.hpp>

#include "core/ids.hpp"

namespace claimsched::actors {

struct LinkOptions {
  /// CAF's heartbeat between connected processes; zero leaves CAF's default
  /// (off, and a hung peer is never detected).
  core::Duration heartbeat = std::chrono::milliseconds(250);
  /// A connection silent this long is closed (down_msg to monitors).
  core::Duration timeout = std::chrono::seconds(2);
  /// Worker threads (0: one per core).
  uint32_t threads = 0;
  /// One shared job queue whose idle workers sleep, instead of CAF's work
  /// stealing, whose idle workers poll. Stealing wins for one busy process
  /// (the sim); a server and agents sharing few cores lose to the polling.
  bool shared_queue = false;
};

/// Registers types, loads the middleman and sets its timeouts.
void configure(caf::actor_system_config& cfg, const LinkOptions& link = {});

}  // namespace claimsched::actors
