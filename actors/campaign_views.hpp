#pragma once

// Campaigns as clients see them: the reports `campaign submit`, `status`,
// `list`, `cancel` and `explain` answer (core/campaign/report.hpp; the client
// prints them as text or JSON, apps/client_campaign.cpp). Plain C++: no CAF.

#include <map>

#include "actors/campaign_actor.hpp"
#include "core/campaign/report.hpp"

namespace claimsched::actors {

/// Id, name, user, type, state (testing, running, done, cancelled, failed)
/// and task counts.
core::campaign::CampaignReport campaign_summary(const CampaignRun& run);
/// The summary of each campaign, oldest first.
core::campaign::CampaignReply campaign_list(const std::map<core::campaign::CampaignId, CampaignRun>& runs);
/// The summary plus, per pool, what waits and runs there, the predictor's
/// state and why an abandoned pool was found a sink; throughput and ETA; the
/// flood limits; the test wave's report; why it failed.
core::campaign::CampaignReport campaign_report(const CampaignRun& run, core::TimePoint now);

}  // namespace claimsched::actors
