#include "core/pipeline/reservations.hpp"

#include <algorithm>

namespace claimsched::core {

bool Reservations::add(Hold hold) {
  JobId job = hold.job;
  for (auto& p : hold.parts) std::sort(p.waiting_for.begin(), p.waiting_for.end());
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
  for (auto& [job, h] : holds_)
    for (auto& p : h.parts) {
      auto it = std::lower_bound(p.waiting_for.begin(), p.waiting_for.end(), victim);
      if (it != p.waiting_for.end() && *it == victim) p.waiting_for.erase(it);
    }
}

std::vector<JobId> Reservations::ready() const {
  std::vector<JobId> out;
  for (const auto& [job, h] : holds_) {
    bool any = std::any_of(h.parts.begin(), h.parts.end(), [](const Hold::Part& p) { return p.waiting_for.empty(); });
    if (h.whole ? h.waiting() == 0 : any) out.push_back(job);
  }
  return out;
}

std::vector<Hold::Part> Reservations::take_ready(JobId job, Hold* taken) {
  auto it = holds_.find(job);
  if (it == holds_.end()) return {};
  Hold& h = it->second;
  std::vector<Hold::Part> out;
  if (h.whole) {
    if (h.waiting() > 0) return {};
    out = std::move(h.parts);
    h.parts.clear();
  } else {
    for (auto p = h.parts.begin(); p != h.parts.end();) {
      if (!p->waiting_for.empty()) {
        ++p;
        continue;
      }
      out.push_back(std::move(*p));
      p = h.parts.erase(p);
    }
  }
  if (taken) {
    *taken = h;
    taken->parts = out;
  }
  if (h.parts.empty()) holds_.erase(it);
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
