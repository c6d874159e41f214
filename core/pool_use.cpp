#include "core/pool_use.hpp"

namespace claimsched::core {

namespace {

/// Names this many nodes at most; a pool of hundreds gets a count.
constexpr size_t kNodesNamed = 3;

}  // namespace

Status check_pool_unused(std::string_view pool, const PoolUse& use) {
  std::vector<std::string> parts;
  if (!use.unfinished_jobs.empty())
    parts.push_back(std::to_string(use.unfinished_jobs.size()) + " unfinished job(s) (e.g. " +
                    std::to_string(use.unfinished_jobs.front().value) + ")");
  for (size_t i = 0; i < use.live_nodes.size() && i < kNodesNamed; ++i)
    parts.push_back("node " + use.live_nodes[i].first + " is " + std::string(to_string(use.live_nodes[i].second)));
  if (use.live_nodes.size() > kNodesNamed)
    parts.push_back(std::to_string(use.live_nodes.size() - kNodesNamed) + " more node(s) are not down");
  for (const auto& sub : use.subpools) parts.push_back("pool " + sub + " is below it");
  if (parts.empty()) return Status::ok();
  std::string why = "pool " + std::string(pool) + " is in use: ";
  for (size_t i = 0; i < parts.size(); ++i) why += (i ? ", " : "") + parts[i];
  return make_error(Errc::wrong_state, std::move(why));
}

}  // namespace claimsched::core
