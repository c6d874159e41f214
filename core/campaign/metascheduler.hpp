#pragma once

// The metascheduler's order (the seed's pseudo-code with Bzizou's note):
//
//   while (a test campaign can run on the available pools)     <- FIFO
//     launch the test campaign's scheduler on those pools
//   while (a default campaign can run on the available pools)  <- affinity
//     launch the campaign's scheduler on those pools
//
// where the second loop follows the (campaign, pool) affinity couples: first
// every campaign on its own pools, in FIFO order, then every campaign on the
// pools it may only borrow, again in FIFO order. With the seed's example
// (cluster1: affinities c1, c2, others c3; cluster2: affinities c2, others
// c1, c3) that launches c1 on cluster1, c2 on cluster1+2, c1 on cluster2,
// c3 on cluster1+2. FIFO among bulk campaigns is by priority (higher first),
// then submission order, then id.

#include <set>
#include <string>
#include <vector>

#include "core/campaign/spec.hpp"

namespace claimsched::core::campaign {

/// A campaign as the metascheduler sees it: still has something to dispatch.
struct QueuedCampaign {
  CampaignId id;
  CampaignType type = CampaignType::bulk;
  int32_t priority = 0;
  /// Submission order (a sequence number or a time).
  uint64_t submitted = 0;
  /// Affinity pools (the user's own), in the campaign's order.
  std::vector<std::string> pools;
  /// Pools it may borrow.
  std::vector<std::string> other_pools;
};

/// One launch: run campaign `campaign`'s scheduler on `pools`, in this order.
struct Launch {
  CampaignId campaign;
  std::vector<std::string> pools;

  friend bool operator==(const Launch&, const Launch&) = default;
};

/// The launches of one metascheduler round, in order, restricted to the pools
/// with free resources. A pool appears in several launches; whoever comes
/// first takes its free slots.
std::vector<Launch> metaschedule(std::vector<QueuedCampaign> campaigns, const std::set<std::string>& available_pools);

}  // namespace claimsched::core::campaign
