#pragma once

// The scheduler's store writes (DESIGN.md, "Persistence"): journals are
// assembled into one write, at most max_writes_in_flight writes are in the
// store at once, and what waits for a write (a placement's confirms, a
// job's acknowledgement, an operation's answer) goes out only once that
// write is durable, and with await_replication once standbys hold it.

#include <string>
#include <vector>

#include "actors/scheduler_actor.hpp"

namespace claimsched::actors {

using scheduler_self = scheduler_actor::stateful_pointer<scheduler_state>;

/// The handle of node `id` (null if this scheduler does not know it).
node_actor* node_handle(scheduler_self self, core::NodeId id);

/// Sends each confirm to its node and empties `confirms`.
void send_confirms(scheduler_self self, std::vector<core::ConfirmRequest>& confirms);

/// Submits the assembled write if the window allows: its callback comes back
/// as a durable_atom message (on_write_durable).
void submit_write(scheduler_self self);

/// The oldest write in flight is durable at `sequence`, or failed (`error`).
void on_write_durable(scheduler_self self, uint64_t sequence, const std::string& error);

/// Standbys hold every change up to `sequence`.
void on_replicated(scheduler_self self, uint64_t sequence);

/// The store failed: nothing more is acknowledged or confirmed (claims expire
/// on the nodes), and the partition stops placing. Another owner takes over
/// from what is durable.
void stop_on_store_failure(scheduler_self self, const std::string& why);

/// A write a retried submit can wait for: the newest one that holds one of
/// `jobs`' records, if it is not acknowledged yet (writes are released in
/// order, so waiting for it waits for all of them).
PendingWrite* write_holding(scheduler_state& st, const std::vector<core::JobId>& jobs);

}  // namespace claimsched::actors
