#pragma once

// Where a gateway sends campaign requests. One process runs the campaigns
// (a single server; in HA, the member owning the lowest partition: see
// member_campaigns.hpp); every other member's gateway forwards to it.

#include "actors/actors.hpp"
#include "actors/gateway_waits.hpp"

namespace claimsched::actors {

/// A client's campaign request, passed to the campaign actor; a retryable
/// error while no member runs the campaigns.
caf::result<core::campaign::CampaignReply> ask_campaigns(gateway_self self, core::campaign::CampaignRequest request);

/// This process says where campaigns run now (local senders only). A runner
/// in another member hears of this member's jobs through this gateway.
void set_campaign_runner(gateway_self self, campaign_actor campaigns);

/// The campaign actor, if it runs in this process (another member's gateway
/// asks, to forward to it).
caf::result<campaign_actor> local_campaign_runner(gateway_self self);

}  // namespace claimsched::actors
