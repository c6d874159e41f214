#include "core/pipeline/claim_window.hpp"

#include <algorithm>

namespace claimsched::core {

std::string_view to_string(ClaimPhase p) {
  switch (p) {
    case ClaimPhase::sent:
      return "sent";
    case ClaimPhase::accepted:
      return "accepted";
    case ClaimPhase::confirming:
      return "confirming";
    case ClaimPhase::confirmed:
      return "confirmed";
  }
  return "unknown";
}

Claim& ClaimWindow::add(ClaimRequest request, NodeIndex node, std::optional<GangId> gang, TimePoint now) {
  ClaimId id = request.claim_id;
  Claim c;
  c.request = std::move(request);
  c.node = node;
  c.sent_at = now;
  c.gang = gang;
  return claims_.insert_or_assign(claims_.end(), id, std::move(c))->second;
}

Claim* ClaimWindow::find(ClaimId id) {
  auto it = claims_.find(id);
  return it == claims_.end() ? nullptr : &it->second;
}

std::vector<ClaimId> ClaimWindow::unanswered_on(NodeIndex n) const {
  std::vector<ClaimId> out;
  for (const auto& [id, c] : claims_)
    if (c.node == n && c.phase == ClaimPhase::sent) out.push_back(id);
  return out;
}

std::vector<ClaimId> ClaimWindow::overdue(TimePoint now, Duration timeout) const {
  std::vector<ClaimId> out;
  for (const auto& [id, c] : claims_)
    if (now - c.sent_at >= timeout) out.push_back(id);
  return out;
}

GangId ClaimWindow::open_gang(JobId job) {
  GangId id{next_gang_++};
  gangs_[id].job = job;
  return id;
}

Release& ClaimWindow::add_release(ReleaseRequest request, NodeIndex node, Release::Why why, TimePoint now,
                                  std::optional<JobId> for_job) {
  ClaimId id = request.claim_id;
  Release r;
  r.request = std::move(request);
  r.node = node;
  r.sent_at = now;
  r.why = why;
  r.for_job = for_job;
  return releases_.insert_or_assign(id, std::move(r)).first->second;
}

Release* ClaimWindow::find_release(ClaimId id) {
  auto it = releases_.find(id);
  return it == releases_.end() ? nullptr : &it->second;
}

bool ClaimWindow::releasing(TaskRef t) const {
  for (const auto& [id, r] : releases_)
    if (r.request.job == t.job && std::find(r.request.tasks.begin(), r.request.tasks.end(), t.index) !=
                                      r.request.tasks.end())
      return true;
  return false;
}

ReleaseRequest ClaimWindow::release_request(NodeId node, JobId job, std::optional<ClaimId> claim,
                                            std::vector<TaskIndex> tasks, TaskState reason) const {
  ReleaseRequest r;
  r.partition = partition_;
  r.epoch = epoch_;
  r.node = node;
  r.job = job;
  if (claim) r.claim_id = *claim;
  r.tasks = std::move(tasks);
  r.reason = reason;
  return r;
}

ConfirmRequest ClaimWindow::confirm_request(const ClaimRequest& claim) const {
  ConfirmRequest r;
  r.claim_id = claim.claim_id;
  r.partition = partition_;
  r.epoch = epoch_;
  r.node = claim.node;
  return r;
}

}  // namespace claimsched::core
