#include "core/campaign/metascheduler.hpp"

#include <algorithm>
#include <tuple>

namespace claimsched::core::campaign {

namespace {

std::vector<std::string> available(const std::vector<std::string>& pools, const std::set<std::string>& free) {
  std::vector<std::string> out;
  for (const auto& p : pools) {
    if (free.contains(p)) out.push_back(p);
  }
  return out;
}

}  // namespace

std::vector<Launch> metaschedule(std::vector<QueuedCampaign> campaigns, const std::set<std::string>& available_pools) {
  // Tests: FIFO by submission only (the seed gives them no priority among
  // themselves); bulk: priority, then FIFO.
  std::sort(campaigns.begin(), campaigns.end(), [](const QueuedCampaign& a, const QueuedCampaign& b) {
    bool a_bulk = a.type == CampaignType::bulk;
    bool b_bulk = b.type == CampaignType::bulk;
    int32_t a_priority = a_bulk ? a.priority : 0;
    int32_t b_priority = b_bulk ? b.priority : 0;
    return std::tuple(a_bulk, -int64_t{a_priority}, a.submitted, a.id) <
           std::tuple(b_bulk, -int64_t{b_priority}, b.submitted, b.id);
  });
  std::vector<Launch> out;
  auto launch = [&](CampaignId id, std::vector<std::string> pools) {
    if (!pools.empty()) out.push_back(Launch{id, std::move(pools)});
  };
  for (const auto& c : campaigns) {
    if (c.type != CampaignType::test) continue;
    std::vector<std::string> all = c.pools;
    all.insert(all.end(), c.other_pools.begin(), c.other_pools.end());
    launch(c.id, available(all, available_pools));
  }
  for (const auto& c : campaigns) {
    if (c.type == CampaignType::bulk) launch(c.id, available(c.pools, available_pools));
  }
  for (const auto& c : campaigns) {
    if (c.type == CampaignType::bulk) launch(c.id, available(c.other_pools, available_pools));
  }
  return out;
}

}  // namespace claimsched::core::campaign
