#include "actors/gateway_waits.hpp"

#include <algorithm>

#include "actors/gateway_actor.hpp"
#include "messages/errors.hpp"

namespace claimsched::actors {

namespace {

using Key = core::JobWaits::Key;

caf::error refuse(core::Errc code, std::string why) {
  return messages::to_caf_error(core::make_error(code, std::move(why)));
}

/// From now on every partition's owner tells this gateway of its job events
/// (the gateway's route handling asks a new owner too).
void watch_jobs(gateway_self self) {
  auto& st = self->state;
  if (st.job_waits.watching) return;
  st.job_waits.watching = true;
  auto me = caf::actor_cast<caf::actor>(self);
  st.job_watchers.push_back(me);
  for (const auto& p : st.config.partitions)
    if (p.scheduler) self->send(p.scheduler, watch_atom::value, me);
}

/// Answers wait `key` with `views` (its nodes named) and forgets it; nothing
/// if it was answered already (by an earlier look or event, or its timeout).
void answer(gateway_self self, Key key, std::vector<core::JobView> views) {
  auto& waits = self->state.job_waits;
  auto it = waits.promises.find(key);
  if (it == waits.promises.end()) return;
  for (auto& v : views)
    for (auto& t : v.tasks)
      if (auto n = self->state.nodes.find(t.node); t.node.value != 0 && n != self->state.nodes.end())
        t.node_name = n->second.name;
  it->second.deliver(std::move(views));
  waits.promises.erase(it);
  waits.waits.remove(key);
}

/// Asks every owned partition which of `jobs` ended; answers wait `key` with
/// their views when there are some, or whatever there is when `last`.
/// A partition that does not answer counts as none ended: the wait's timeout
/// looks again.
void look(gateway_self self, Key key, std::vector<core::JobId> jobs, bool last) {
  auto& st = self->state;
  std::vector<scheduler_actor> owners;
  for (const auto& p : st.config.partitions)
    if (p.scheduler) owners.push_back(p.scheduler);
  struct Gathered {
    size_t left = 0;
    std::vector<core::JobView> views;
  };
  auto gathered = std::make_shared<Gathered>();
  gathered->left = owners.size();
  auto finish = [self, key, last, gathered] {
    if (gathered->views.empty() && !last) return;
    answer(self, key, std::move(gathered->views));
  };
  if (owners.empty()) {
    finish();
    return;
  }
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(st.config.request_timeout);
  for (const auto& owner : owners)
    self->request(owner, timeout, ended_atom::value, jobs)
        .then(
            [=](std::vector<core::JobView>& views) {
              std::move(views.begin(), views.end(), std::back_inserter(gathered->views));
              if (--gathered->left == 0) finish();
            },
            [=](caf::error&) {
              if (--gathered->left == 0) finish();
            });
}

}  // namespace

caf::result<std::vector<core::JobView>> wait_for_jobs(gateway_self self, std::vector<core::JobId> jobs,
                                                      uint32_t timeout_ms) {
  auto& waits = self->state.job_waits;
  if (jobs.empty()) return std::vector<core::JobView>{};
  if (jobs.size() > kMaxJobsPerWait)
    return refuse(core::Errc::invalid_argument, "a wait names at most " + std::to_string(kMaxJobsPerWait) +
                                                    " jobs (this one " + std::to_string(jobs.size()) + ")");
  if (waits.promises.size() >= kMaxJobWaits)
    return refuse(core::Errc::unavailable,
                  "too many clients are waiting for jobs (" + std::to_string(kMaxJobWaits) + "); try again");
  watch_jobs(self);
  auto key = waits.waits.add(jobs);
  auto promise = self->make_response_promise<std::vector<core::JobView>>();
  waits.promises.emplace(key, promise);
  auto wait = std::chrono::milliseconds(std::clamp<uint32_t>(timeout_ms, 1, kMaxJobWaitMs));
  self->delayed_send(self, wait, ended_atom::value, uint64_t{key});
  // Jobs that ended before the wait began have no event to come.
  look(self, key, *waits.waits.jobs_of(key), false);
  return promise;
}

void jobs_ended(gateway_self self, std::vector<core::JobView> ended) {
  if (ended.empty()) return;
  std::vector<core::JobId> ids;
  ids.reserve(ended.size());
  for (const auto& v : ended) ids.push_back(v.spec.id);
  auto& waits = self->state.job_waits.waits;
  auto keys = waits.touched_by(ids);
  for (size_t k = 0; k < keys.size(); ++k) {
    bool last = k + 1 == keys.size();  // it may take the views; the others copy them
    auto named = waits.named_by(keys[k], ids);  // in the order of `ids`, so of `ended`
    std::vector<core::JobView> views;
    views.reserve(named.size());
    size_t at = 0;
    for (auto& v : ended)
      if (at < named.size() && v.spec.id == named[at]) {
        ++at;
        views.push_back(last ? std::move(v) : v);
      }
    answer(self, keys[k], std::move(views));
  }
}

void job_wait_timed_out(gateway_self self, Key key) {
  const auto* jobs = self->state.job_waits.waits.jobs_of(key);
  if (!jobs) return;
  look(self, key, *jobs, true);
}

}  // namespace claimsched::actors
