#include "actors/scheduler_actor.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

node_actor* node_handle(self_ptr self, core::NodeId id) {
  auto n = self->state.core->view().find_node(id);
  if (!n || *n >= self->state.nodes.size() || !self->state.nodes[*n]) return nullptr;
  return &self->state.nodes[*n];
}

/// Runs a scheduling pass (if started) and sends everything the core asked for.
void flush(self_ptr self, core::TimePoint t) {
  auto& st = self->state;
  if (st.started) st.core->schedule(t, st.outbox);
  if (st.core->stats().placements != st.placements_seen) {
    st.placements_seen = st.core->stats().placements;
    st.last_placement = t;
  }
  auto& out = st.outbox;
  for (auto& c : out.claims)
    if (auto* n = node_handle(self, c.node)) self->send(*n, std::move(c));
  for (auto& c : out.confirms)
    if (auto* n = node_handle(self, c.node)) self->send(*n, std::move(c));
  for (auto& r : out.releases)
    if (auto* n = node_handle(self, r.node)) self->send(*n, std::move(r));
  for (auto id : out.snapshot_requests)
    if (auto* n = node_handle(self, id)) self->send(*n, snapshot_atom::value);
  st.jobs_finished += out.finished_jobs.size();
  out.clear();
}

void arm_tick(self_ptr self) {
  if (self->state.tick_armed) return;
  self->state.tick_armed = true;
  self->delayed_send(self, self->state.tick_interval, tick_atom::value);
}

SchedulerStatus make_status(self_ptr self) {
  const auto& core = *self->state.core;
  SchedulerStatus s;
  s.partition = core.config().partition;
  s.stats = core.stats();
  s.nodes = core.view().node_count();
  s.queued_jobs = core.queued_jobs();
  s.parked_jobs = core.parked_jobs();
  s.backing_off_jobs = core.backing_off_jobs();
  s.claims_in_flight = core.claims_in_flight();
  s.pending_tasks = core.pending_tasks();
  s.running_tasks = core.running_tasks();
  s.jobs_finished = self->state.jobs_finished;
  s.fenced = core.fenced();
  s.started = self->state.started;
  s.last_placement = self->state.last_placement;
  return s;
}

}  // namespace

scheduler_actor::behavior_type scheduler(self_ptr self, SchedulerActorConfig config) {
  auto& st = self->state;
  st.log_name = "scheduler-" + std::to_string(config.scheduler.partition.value);
  st.core = std::make_unique<core::Scheduler>(config.scheduler);
  st.started = config.start_immediately;
  st.tick_interval = config.tick_interval;
  st.subscribe_timeout = config.subscribe_timeout;
  if (st.started) {
    st.core->start(now(self));
    arm_tick(self);
  }
  return {
      [=](core::ClaimReply& reply) {
        auto t = now(self);
        self->state.core->on_claim_reply(reply, t, self->state.outbox);
        flush(self, t);
      },
      [=](core::ConfirmReply& reply) {
        auto t = now(self);
        self->state.core->on_confirm_reply(reply, t, self->state.outbox);
        flush(self, t);
      },
      [=](core::ReleaseReply& reply) {
        auto t = now(self);
        self->state.core->on_release_reply(reply, t, self->state.outbox);
        flush(self, t);
      },
      [=](core::NodeDelta& delta) {
        auto t = now(self);
        self->state.core->on_node_delta(delta, t, self->state.outbox);
        flush(self, t);
      },
      [=](core::JobSpec& job) -> caf::result<core::JobId> {
        auto t = now(self);
        auto id = job.id;
        if (auto status = self->state.core->submit(std::move(job), t); !status) {
          spdlog::debug("{}: rejects job {}: {}", self->state.log_name, id.value,
                        status.error().to_string());
          return messages::to_caf_error(status.error());
        }
        flush(self, t);
        return id;
      },
      [=](register_atom, node_actor node) {
        auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
            self->state.subscribe_timeout);
        auto listener = caf::actor_cast<node_listener_actor>(self);
        self->request(node, timeout, subscribe_atom::value, listener)
            .then(
                [=](core::NodeReport& report) {
                  auto& st = self->state;
                  if (auto status = st.core->add_node(report.spec, report.snapshot); !status) {
                    spdlog::error("{}: cannot add node {}: {}", st.log_name, report.spec.name,
                                  status.error().to_string());
                    return;
                  }
                  auto n = *st.core->view().find_node(report.spec.id);
                  if (st.nodes.size() <= n) st.nodes.resize(n + 1);
                  st.nodes[n] = node;
                  flush(self, now(self));
                },
                [=](caf::error& err) {
                  spdlog::error("{}: subscribing to a node failed: {}", self->state.log_name,
                                self->system().render(err));
                });
      },
      [=](start_atom) {
        if (self->state.started) return;
        self->state.started = true;
        self->state.core->start(now(self));
        arm_tick(self);
        flush(self, now(self));
      },
      [=](tick_atom) {
        auto t = now(self);
        self->state.tick_armed = false;
        self->state.core->on_tick(t, self->state.outbox);
        flush(self, t);
        arm_tick(self);
      },
      [=](status_atom) -> SchedulerStatus { return make_status(self); },
      [=](audit_atom) -> SchedulerStatus {
        auto s = make_status(self);
        if (auto st = self->state.core->check_accounting(); !st)
          s.accounting_error = st.error().to_string();
        return s;
      },
  };
}

}  // namespace claimsched::actors
