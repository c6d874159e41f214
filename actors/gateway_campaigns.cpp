#include "actors/gateway_campaigns.hpp"

#include <algorithm>

#include "actors/gateway_forward.hpp"

namespace claimsched::actors {

using namespace gateway_detail;

caf::result<core::campaign::CampaignReply> ask_campaigns(gateway_self self, core::campaign::CampaignRequest request) {
  auto& st = self->state;
  if (!st.campaigns)
    return error_of(core::Errc::unavailable,
                    st.config.member ? "no member runs the campaigns right now (the campaign partition's owner "
                                       "is changing); try again"
                                     : "this server runs no campaigns");
  auto promise = self->make_response_promise<core::campaign::CampaignReply>();
  self->request(st.campaigns, timeout_of(st), campaign_atom::value, std::move(request))
      .then([=](core::campaign::CampaignReply& answer) mutable { promise.deliver(std::move(answer)); },
            [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

void set_campaign_runner(gateway_self self, campaign_actor campaigns) {
  auto sender = self->current_sender();
  if (!sender || sender->node() != self->node()) return;
  auto& st = self->state;
  auto& watchers = st.job_watchers;
  auto remote = [&](const campaign_actor& c) { return c && c->node() != self->node(); };
  // Another member's campaigns hear of this member's jobs through this
  // gateway: its schedulers take watchers from local senders only.
  if (remote(st.campaigns))
    watchers.erase(std::remove(watchers.begin(), watchers.end(), caf::actor_cast<caf::actor>(st.campaigns)),
                   watchers.end());
  st.campaigns = std::move(campaigns);
  if (remote(st.campaigns)) {
    auto watcher = caf::actor_cast<caf::actor>(st.campaigns);
    watchers.push_back(watcher);
    for (const auto& p : st.config.partitions)
      if (p.local && p.scheduler) self->send(p.scheduler, watch_atom::value, watcher);
  }
}

caf::result<campaign_actor> local_campaign_runner(gateway_self self) {
  auto& c = self->state.campaigns;
  if (!c || c->node() != self->node())
    return error_of(core::Errc::unavailable, "this member does not run the campaigns");
  return c;
}

}  // namespace claimsched::actors
