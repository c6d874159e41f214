#include "actors/node_actor.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = node_actor::stateful_pointer<node_state>;

/// Sends `delta` to every subscriber except `except` (who got a reply).
void publish(self_ptr self, const core::NodeDelta& delta, const caf::strong_actor_ptr& except) {
  for (const auto& sub : self->state.subscribers)
    if (!except || caf::actor_cast<caf::strong_actor_ptr>(sub) != except) self->send(sub, delta);
}

void publish_change(self_ptr self, const caf::strong_actor_ptr& except) {
  core::NodeDelta delta;
  delta.snapshot = self->state.ledger.snapshot();
  publish(self, delta, except);
}

/// Fires due deadlines first, so every message sees an up-to-date ledger and
/// subscribers see the expiry as its own generation before the reply.
void fire_due(self_ptr self, core::TimePoint t) {
  auto& ledger = self->state.ledger;
  if (ledger.next_deadline() > t) return;
  core::NodeDelta delta;
  if (!ledger.advance(t, delta.events)) return;
  delta.snapshot = ledger.snapshot();
  publish(self, delta, nullptr);
}

void arm_timer(self_ptr self, core::TimePoint t) {
  auto deadline = self->state.ledger.next_deadline();
  if (deadline == core::kNever || deadline >= self->state.timer_at) return;
  self->state.timer_at = deadline;
  auto delay = std::max(core::Duration{0}, deadline - t);
  self->delayed_send(self, delay, tick_atom::value);
}

template <class Reply>
void answer(self_ptr self, Reply reply) {
  auto to = caf::actor_cast<claim_client_actor>(self->current_sender());
  if (to) self->send(to, std::move(reply));
}

core::NodeReport make_report(self_ptr self) {
  core::NodeReport r;
  r.spec = self->state.spec;
  r.snapshot = self->state.ledger.snapshot();
  r.claims = self->state.ledger.claims();
  r.allocations = self->state.ledger.allocations();
  r.epochs = self->state.ledger.epochs();
  return r;
}

}  // namespace

node_actor::behavior_type node(node_actor::stateful_pointer<node_state> self,
                               NodeActorConfig config) {
  self->state.ledger = core::NodeLedger(config.spec.id, config.spec.capacity, config.ledger);
  self->state.spec = std::move(config.spec);
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const node_listener_actor& s) { return s.address() == msg.source; }),
               subs.end());
  });
  return {
      [=](core::ClaimRequest& request) {
        auto t = now(self);
        fire_due(self, t);
        auto before = self->state.ledger.generation();
        auto reply = self->state.ledger.claim(request, t);
        auto sender = self->current_sender();
        answer(self, std::move(reply));
        if (self->state.ledger.generation() != before) publish_change(self, sender);
        arm_timer(self, t);
      },
      [=](core::ConfirmRequest& request) {
        auto t = now(self);
        fire_due(self, t);
        auto before = self->state.ledger.generation();
        auto reply = self->state.ledger.confirm(request, t);
        auto sender = self->current_sender();
        answer(self, std::move(reply));
        if (self->state.ledger.generation() != before) publish_change(self, sender);
        arm_timer(self, t);
      },
      [=](core::ReleaseRequest& request) {
        auto t = now(self);
        fire_due(self, t);
        auto before = self->state.ledger.generation();
        auto reply = self->state.ledger.release(request, t);
        auto sender = self->current_sender();
        answer(self, std::move(reply));
        if (self->state.ledger.generation() != before) publish_change(self, sender);
        arm_timer(self, t);
      },
      [=](subscribe_atom, node_listener_actor listener) -> core::NodeReport {
        auto t = now(self);
        fire_due(self, t);
        auto& subs = self->state.subscribers;
        if (std::find(subs.begin(), subs.end(), listener) == subs.end()) {
          if (listener->node() != self->node()) self->monitor(listener);
          subs.push_back(std::move(listener));
        }
        arm_timer(self, t);
        return make_report(self);
      },
      [=](snapshot_atom) {
        fire_due(self, now(self));
        auto to = caf::actor_cast<node_listener_actor>(self->current_sender());
        if (!to) return;
        core::NodeDelta delta;
        delta.full = true;
        delta.snapshot = self->state.ledger.snapshot();
        self->send(to, std::move(delta));
      },
      [=](report_atom) -> core::NodeReport {
        fire_due(self, now(self));
        return make_report(self);
      },
      [=](tick_atom) {
        auto t = now(self);
        self->state.timer_at = core::kNever;
        fire_due(self, t);
        arm_timer(self, t);
      },
  };
}

}  // namespace claimsched::actors
