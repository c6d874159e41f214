#include "core/ownership.hpp"

#include <algorithm>

namespace claimsched::core {

std::map<PartitionId, std::string> balance_partitions(
    const std::vector<PartitionId>& partitions, const std::vector<std::string>& members,
    const std::map<PartitionId, std::string>& current, const std::map<PartitionId, std::string>& pinned) {
  std::map<PartitionId, std::string> out;
  if (members.empty()) return out;
  std::vector<std::string> names = members;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::vector<PartitionId> ids = partitions;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());

  auto live = [&](const std::string& m) { return std::binary_search(names.begin(), names.end(), m); };
  std::map<PartitionId, std::string> pins;
  for (const auto& [p, m] : pinned)
    if (live(m) && std::binary_search(ids.begin(), ids.end(), p)) pins[p] = m;

  // Shares: (P mod N) members take one more - those pinned the most, then
  // those holding the most now (they keep it: nothing moves for the
  // remainder), then in name order.
  std::map<std::string, size_t> holding;
  std::map<std::string, size_t> pin_count;
  for (const auto& [p, m] : current) ++holding[m];
  for (const auto& [p, m] : pins) ++pin_count[m];
  std::vector<std::string> by_holding = names;
  std::stable_sort(by_holding.begin(), by_holding.end(), [&](const std::string& a, const std::string& b) {
    if (pin_count[a] != pin_count[b]) return pin_count[a] > pin_count[b];
    return holding[a] > holding[b];
  });
  std::map<std::string, size_t> quota;
  for (size_t i = 0; i < by_holding.size(); ++i)
    quota[by_holding[i]] = ids.size() / names.size() + (i < ids.size() % names.size() ? 1 : 0);
  std::map<std::string, size_t> held;
  for (const auto& [p, m] : pins) {
    out[p] = m;
    ++held[m];
  }
  std::vector<PartitionId> unplaced;
  for (auto id : ids) {
    if (pins.contains(id)) continue;
    auto it = current.find(id);
    if (it != current.end() && quota.contains(it->second) && held[it->second] < quota[it->second]) {
      out[id] = it->second;
      ++held[it->second];
    } else {
      unplaced.push_back(id);
    }
  }
  for (auto id : unplaced) {
    // The member furthest below its share; ties in name order.
    const std::string* best = nullptr;
    size_t best_gap = 0;
    for (const auto& name : names) {
      size_t gap = quota[name] - std::min(quota[name], held[name]);
      if (gap > best_gap) {
        best = &name;
        best_gap = gap;
      }
    }
    // Shares add up to the partitions, so someone is below theirs (a member
    // pinned above its share leaves as much room below the others').
    out[id] = *best;
    ++held[*best];
  }
  return out;
}

bool consistent_with_history(std::span<const EpochStart> history, Epoch store_epoch, uint64_t applied) {
  for (const auto& e : history)
    if (e.epoch > store_epoch && e.first_sequence <= applied) return false;
  return true;
}

std::optional<std::string> choose_owner(std::span<const OwnerCandidate> candidates,
                                        std::span<const EpochStart> history, std::string_view preferred) {
  const OwnerCandidate* best = nullptr;
  auto better = [&](const OwnerCandidate& a, const OwnerCandidate& b) {
    if (a.applied != b.applied) return a.applied > b.applied;
    bool a_preferred = a.member == preferred, b_preferred = b.member == preferred;
    if (a_preferred != b_preferred) return a_preferred;
    return a.member < b.member;
  };
  for (const auto& c : candidates) {
    if (!c.eligible || !consistent_with_history(history, c.store_epoch, c.applied)) continue;
    if (!best || better(c, *best)) best = &c;
  }
  if (!best) return std::nullopt;
  return best->member;
}

}  // namespace claimsched::core
