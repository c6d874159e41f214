#include "actors/member_campaigns.hpp"

#include <spdlog/spdlog.h>

#include <thread>

#include "actors/clock.hpp"

namespace claimsched::actors::member_campaigns {

namespace {

/// Tells the gateway where campaign requests go (null: nowhere for now).
void tell_gateway(self_ptr self, campaign_actor where) {
  if (self->state.gateway) self->send(self->state.gateway, campaign_atom::value, std::move(where));
}

}  // namespace

bool home(self_ptr self, core::PartitionId p) {
  const auto& st = self->state;
  return st.config.campaigns && !st.partitions.empty() && st.partitions.begin()->first == p;
}

void run_here(self_ptr self, member_state::Local& loc, int64_t revision) {
  auto& st = self->state;
  if (st.campaigns || !loc.owned || !loc.owned->store) return;
  CampaignActorConfig cc = *st.config.campaigns;
  cc.gateway = st.gateway;
  storage::CampaignStore::AwaitReplication await;
  if (auto replicated = loc.owned->replicated) {
    // Blocks the campaigns' own thread: a copy's job is sent only once a
    // standby holds its record, so a new owner never sends its index again.
    await = [replicated](uint64_t sequence) -> core::Status {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (replicated->load() < sequence) {
        if (std::chrono::steady_clock::now() > until)
          return core::make_error(core::Errc::unavailable, "campaign records not on a standby within 3 s (sequence " +
                                                               std::to_string(sequence) + ")");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return core::Status::ok();
    };
  }
  cc.store = storage::CampaignStore::in_partition(loc.owned->store, std::move(await));
  st.campaigns = self->system().spawn<caf::detached>(campaigns, std::move(cc));
  st.campaigns_revision = revision;
  tell_gateway(self, st.campaigns);
  spdlog::warn("{}: runs the cluster's campaigns (recorded in partition {})", st.log_name,
               loc.setup.actor.scheduler.partition.value);
}

void stop_here(self_ptr self) {
  auto& st = self->state;
  bool told = st.campaigns_revision != 0 || st.campaigns;
  st.campaigns_revision = 0;
  if (st.campaigns) {
    caf::scoped_actor waiter{self->system()};
    waiter->send_exit(st.campaigns, caf::exit_reason::user_shutdown);
    waiter->wait_for(st.campaigns);
    st.campaigns = nullptr;
    spdlog::warn("{}: no longer runs the cluster's campaigns", st.log_name);
  }
  if (told) tell_gateway(self, {});
}

void follow_owner(self_ptr self, gateway_actor peer, int64_t revision) {
  auto& st = self->state;
  if (st.campaigns_revision == revision || st.fetching_campaigns) return;
  st.fetching_campaigns = true;
  auto timeout = std::chrono::seconds(2);
  st.requests_until = std::max(st.requests_until, now(self) + timeout);
  self->request(peer, timeout, campaign_atom::value)
      .then(
          [=](campaign_actor where) {
            auto& st = self->state;
            st.fetching_campaigns = false;
            // The owner may have changed meanwhile: this is the old one's.
            const auto& owner = st.state.partitions[st.partitions.begin()->first].owner;
            if (!where || st.campaigns || !owner || owner->create_revision != revision) return;
            st.campaigns_revision = revision;
            tell_gateway(self, std::move(where));
            spdlog::info("{}: campaign requests go to the campaign partition's owner", st.log_name);
          },
          [=](caf::error& err) {
            self->state.fetching_campaigns = false;
            spdlog::debug("{}: the campaigns' owner is not ready: {}", self->state.log_name,
                          self->system().render(err));
          });
}

}  // namespace claimsched::actors::member_campaigns
