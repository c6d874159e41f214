#pragma once

// Everything a claimsched process adds to its CAF configuration: the message
// types (messages::register_types), the actor handle types that travel
// between processes, and the middleman's failure detection. Every process
// calls it, or a type known only to the sender arrives empty.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/blocking_actor.hpp>

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
  /// It also deserializes remote messages on the network thread (no BASP
  /// worker between the socket and the actor).
  bool shared_queue = false;
};

/// Registers types, loads the middleman and sets its timeouts.
void configure(caf::actor_system_config& cfg, const LinkOptions& link = {});

/// Stops every actor CAF still holds for the network (its spawn and config
/// servers, the helper it spawns per peer), and waits for each, while the
/// network layer still runs. Call it last, when every actor of ours is done,
/// from `self`, the one actor of ours still alive.
///
/// Why: CAF 0.17.6's actor_system destructor stops the middleman first; its
/// BASP broker never closes its mailbox (abstract_broker::cleanup skips
/// scheduled_actor::cleanup), and the helpers it watches for its peers get
/// their exit only then. A helper that exits after the broker leaves its down
/// message in the dead broker's mailbox: a reference cycle, which
/// LeakSanitizer reports at exit (tests/lsan.supp has the rest of the story).
void stop_network_helpers(caf::actor_system& sys, caf::blocking_actor& self);

}  // namespace claimsched::actors
