#pragma once

// Campaigns as clients read them: JSON documents for `campaign submit`,
// `status`, `list` and `explain` (apps/client_campaign.cpp prints them as
// text, or as they are with --json; deploy/CLI.md has the keys). Times are
// ISO 8601 UTC strings, null when not known. Plain C++: no CAF here.

#include <map>
#include <string>

#include "actors/campaign_actor.hpp"

namespace claimsched::actors {

/// Id, name, user, type, state (running, done, cancelled) and task counts.
std::string campaign_summary_json(const CampaignRun& run, core::TimePoint now);
/// The summary of each campaign, oldest first, under "campaigns".
std::string campaign_list_json(const std::map<core::campaign::CampaignId, CampaignRun>& runs, core::TimePoint now);
/// The summary plus, per pool, what waits and runs there, throughput and ETA.
std::string campaign_status_json(const CampaignRun& run, core::TimePoint now);
/// The status plus the predictor's state per pool (ratio, its last move,
/// the flood limits) and why each abandoned pool was found a sink.
std::string campaign_explain_json(const CampaignRun& run, core::TimePoint now);

}  // namespace claimsched::actors
