#pragma once

// The cluster's campaigns in an HA cluster (member.hpp, MemberConfig::
// campaigns): the member that owns the campaign partition (the lowest id)
// runs the one campaign actor, over the campaign records in that partition's
// store; every other member gives its gateway the owner's campaign actor, so
// campaign requests work through any member. Internal to the member.

#include "actors/member.hpp"

namespace claimsched::actors::member_campaigns {

using self_ptr = member_actor::stateful_pointer<member_state>;

/// Whether partition `p` is the one whose owner runs the campaigns.
bool home(self_ptr self, core::PartitionId p);

/// This member owns the campaign partition (`loc`, owner key `revision`):
/// runs the campaigns here, rebuilt from that partition's store, unless
/// they already run.
void run_here(self_ptr self, member_state::Local& loc, int64_t revision);

/// Stops the campaigns running here (before the partition's store closes)
/// and tells the gateway none runs for now.
void stop_here(self_ptr self);

/// Another member owns the campaign partition (owner key `revision`): asks
/// its gateway `peer` for its campaign actor and hands that to ours, once
/// per owner.
void follow_owner(self_ptr self, gateway_actor peer, int64_t revision);

}  // namespace claimsched::actors::member_campaigns
