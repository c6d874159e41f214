#include "core/pipeline/reservations.hpp"

#include <algorithm>

namespace claimsched::core {

bool Reservations::add(Hold hold) {
  JobId job = hold.job;
  std::sort(hold.waiting_for.begin(), hold.waiting_for.end());
  return holds_.emplace(job, std::move(hold)).second;
}

const Hold* Reservations::of(JobId job) const {
  auto it = holds_.find(job);
  return it == holds_.end() ? nullptr : &it->second;
}

std::optional<Hold> Reservations::take(JobId job) {
  auto it = holds_.find(job);
  if (it == holds_.end()) return std::nullopt;
  Hold h = std::move(it->second);
  holds_.erase(it);
  return h;
}

void Reservations::freed(TaskRef victim) {
  for (auto& [job, h] : holds_) {
    auto it = std::lower_bound(h.waiting_for.begin(), h.waiting_for.end(), victim);
    if (it != h.waiting_for.end() && *it == victim) h.waiting_for.erase(it);
  }
}

std::vector<JobId> Reservations::ready() const {
  std::vector<JobId> out;
  for (const auto& [job, h] : holds_)
    if (h.waiting_for.empty()) out.push_back(job);
  return out;
}

std::vector<JobId> Reservations::on_node(NodeIndex n) const {
  std::vector<JobId> out;
  for (const auto& [job, h] : holds_)
    for (const auto& p : h.parts)
      if (p.node == n) {
        out.push_back(job);
        break;
      }
  return out;
}

}  // namespace claimsched::core
