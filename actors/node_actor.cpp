#include "actors/node_actor.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"
#include "actors/node_persistence.hpp"

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

/// Persists one operation's changes if the node has a store; `record` adds
/// the operation's own records.
template <class F>
void persist(self_ptr self, F&& record) {
  if (!self->state.store) return;
  NodeChanges changes(*self->state.store, self->state.spec, clock_mapping(self));
  record(changes);
  changes.commit(self->state.ledger);
}

/// Whether a request raised its partition's epoch (a new owner fencing the
/// old one): that must survive a restart, or a restarted node would accept the
/// old owner's claims again.
struct EpochWatch {
  EpochWatch(const core::NodeLedger& ledger, core::PartitionId partition)
      : ledger_(ledger), partition_(partition), before_(ledger.highest_epoch(partition)) {}
  bool raised() const { return ledger_.highest_epoch(partition_) != before_; }

  const core::NodeLedger& ledger_;
  core::PartitionId partition_;
  core::Epoch before_;
};

/// Fires due deadlines first, so every message sees an up-to-date ledger and
/// subscribers see the expiry as its own generation before the reply.
void fire_due(self_ptr self, core::TimePoint t) {
  auto& ledger = self->state.ledger;
  if (ledger.next_deadline() > t) return;
  core::NodeDelta delta;
  if (!ledger.advance(t, delta.events)) return;
  persist(self, [&](NodeChanges& c) { c.events(ledger, delta.events); });
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

/// Tasks end on the node (a process exited, or a synthetic task finished at
/// once): the ledger frees them, the store forgets them, subscribers hear.
void end_tasks(self_ptr self, const std::vector<actors::TaskEnded>& ended) {
  core::NodeDelta delta;
  std::vector<core::NodeEvent> exited;
  for (const auto& e : ended) {
    // Only the run it belongs to: a released run of the task may end after
    // the task was placed here again.
    const auto& held = self->state.ledger.allocations();
    auto current = std::find_if(held.begin(), held.end(), [&](const core::Allocation& a) { return a.task == e.task; });
    bool this_run = current != held.end() && (e.claim.value == 0 || current->claim_id == e.claim);
    if (this_run && self->state.ledger.finish_task(e.task, e.state, e.exit_code, delta.events, e.end,
                                                   e.claim.value != 0 ? std::optional(e.claim) : std::nullopt))
      continue;
    auto stopping = self->state.stopping.find(e.task);
    if (stopping == self->state.stopping.end()) continue;
    if (e.claim.value != 0 && stopping->second.claim.value != 0 && stopping->second.claim != e.claim) continue;
    core::NodeEvent ev;
    ev.kind = core::NodeEvent::Kind::task_exited;
    ev.partition = stopping->second.partition;
    ev.claim_id = stopping->second.claim;
    ev.task = e.task;
    ev.final_state = e.state;
    ev.exit_code = e.exit_code;
    ev.end = e.end;
    exited.push_back(ev);
    self->state.stopping.erase(stopping);
  }
  if (!exited.empty()) {
    // Frees nothing and changes no generation: only the record of how it ended.
    core::NodeDelta note;
    note.snapshot = self->state.ledger.snapshot();
    note.snapshot.generation = 0;
    note.events = std::move(exited);
    publish(self, note, nullptr);
  }
  if (delta.events.empty()) return;
  persist(self, [&](NodeChanges& c) {
    for (const auto& ev : delta.events) c.allocation_removed(ev.task);
  });
  delta.snapshot = self->state.ledger.snapshot();
  publish(self, delta, nullptr);
}

/// Starts what a confirm just allocated: processes through the executor, or
/// (agent --simulate) ends command tasks that have no simulated runtime.
void launch(self_ptr self, core::ClaimId claim, core::PartitionId partition) {
  auto& st = self->state;
  std::vector<actors::TaskEnded> ended;
  for (const auto& a : st.ledger.allocations()) {
    if (a.claim_id != claim || a.partition != partition) continue;
    if (st.executor && !a.launch) {
      // A real node cannot run a task without a command: it would hold its
      // slot forever.
      ended.push_back({a.task, core::TaskState::failed, -1, "the job has no command",
                       core::TaskEnd::spawn_failed(core::SpawnStage::no_command, 0), a.claim_id});
    } else if (st.executor) {
      if (auto s = st.executor->start(caf::actor_cast<caf::actor>(self), st.spec, a); !s)
        ended.push_back({a.task, core::TaskState::failed, -1, s.error().to_string(),
                         core::TaskEnd::spawn_failed(core::SpawnStage::system, 0), a.claim_id});
    } else if (a.launch && st.finish_unrun_tasks && a.finishes_at == core::kNever) {
      ended.push_back({a.task, core::TaskState::succeeded, 0, "simulated", core::TaskEnd::exited(0), a.claim_id});
    }
  }
  if (!ended.empty()) end_tasks(self, ended);
}

template <class Reply>
void answer(self_ptr self, Reply reply) {
  auto to = caf::actor_cast<claim_client_actor>(self->current_sender());
  if (to) self->send(to, std::move(reply));
}

core::NodeReport make_report(self_ptr self) {
  core::NodeReport r;
  r.spec = self->state.spec;
  r.spec.capacity = self->state.ledger.capacity();
  r.snapshot = self->state.ledger.snapshot();
  r.claims = self->state.ledger.claims();
  r.allocations = self->state.ledger.allocations();
  r.epochs = self->state.ledger.epochs();
  r.finished = self->state.ledger.recent_finished();
  return r;
}

/// Runs one request against the ledger: due deadlines first, then `op`; the
/// reply goes to the sender, the change (if any) to the store and to every
/// other subscriber.
template <class Op>
void handle(self_ptr self, Op&& op) {
  auto t = now(self);
  fire_due(self, t);
  auto before = self->state.ledger.generation();
  auto sender = self->current_sender();
  op(t);
  if (self->state.ledger.generation() != before) publish_change(self, sender);
  arm_timer(self, t);
}

/// Takes no new claims (drain) or takes them again; every subscriber hears
/// of it, the scheduler that asked too (its view must stop placing here).
core::NodeSnapshot set_draining(self_ptr self, bool drain) {
  auto t = now(self);
  fire_due(self, t);
  if (self->state.ledger.set_state(drain ? core::NodeState::draining : core::NodeState::up)) {
    persist(self, [](NodeChanges& c) { c.header_changed(); });
    publish_change(self, caf::strong_actor_ptr{});
  }
  arm_timer(self, t);
  return self->state.ledger.snapshot();
}

}  // namespace

node_actor::behavior_type node(node_actor::stateful_pointer<node_state> self,
                               NodeActorConfig config) {
  auto& st = self->state;
  st.ledger = config.restored ? std::move(*config.restored)
                              : core::NodeLedger(config.spec.id, config.spec.capacity, config.ledger);
  st.spec = std::move(config.spec);
  st.store = std::move(config.store);
  st.executor = std::move(config.executor);
  st.finish_unrun_tasks = config.finish_unrun_tasks;
  if (st.executor) {
    // Tasks restored from the store run on if the last agent left them
    // running (a drain): this one adopts them. The others died with it, or
    // ended just before it did (their keepers recorded how): those end as
    // they did; the rest are reported lost, so the scheduler places them
    // again instead of believing they run.
    std::vector<actors::TaskEnded> gone;
    for (const auto& a : st.ledger.allocations()) {
      if (st.executor->adopt(caf::actor_cast<caf::actor>(self), a)) continue;
      if (auto end = st.executor->recorded_end(a))
        gone.push_back(std::move(*end));
      else
        gone.push_back({a.task, core::TaskState::lost, -1, "the agent restarted",
                        core::TaskEnd::decided(core::EndReason::agent_stopped), a.claim_id});
    }
    if (!gone.empty()) end_tasks(self, gone);
  }
  arm_timer(self, now(self));
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const node_listener_actor& s) { return s.address() == msg.source; }),
               subs.end());
  });
  return {
      [=](core::ClaimRequest& request) {
        handle(self, [&](core::TimePoint t) {
          EpochWatch epoch(self->state.ledger, request.partition);
          auto reply = self->state.ledger.claim(request, t);
          bool fenced_more = epoch.raised();
          if (reply.outcome == core::ClaimOutcome::accepted || fenced_more)
            persist(self, [&](NodeChanges& c) {
              if (fenced_more) c.header_changed();
              if (reply.outcome != core::ClaimOutcome::accepted) return;
              for (const auto& claim : self->state.ledger.claims())
                if (claim.id == request.claim_id && claim.partition == request.partition)
                  c.claim_added(claim);
            });
          answer(self, std::move(reply));
        });
      },
      [=](core::ConfirmRequest& request) {
        handle(self, [&](core::TimePoint t) {
          auto before = self->state.ledger.generation();
          EpochWatch epoch(self->state.ledger, request.partition);
          auto reply = self->state.ledger.confirm(request, t);
          bool started = self->state.ledger.generation() != before;
          if (started || epoch.raised())
            persist(self, [&](NodeChanges& c) {
              if (epoch.raised()) c.header_changed();
              c.claim_removed(request.claim_id);
              for (const auto& a : self->state.ledger.allocations())
                if (a.claim_id == request.claim_id && a.partition == request.partition)
                  c.allocation_set(a);
            });
          answer(self, std::move(reply));
          if (started) launch(self, request.claim_id, request.partition);
        });
      },
      [=](core::ReleaseRequest& request) {
        handle(self, [&](core::TimePoint t) {
          auto before = self->state.ledger.generation();
          EpochWatch epoch(self->state.ledger, request.partition);
          std::map<core::TaskIndex, core::ClaimId> claims;  // of the runs this release ends
          for (const auto& a : self->state.ledger.allocations())
            if (a.task.job == request.job) claims[a.task.index] = a.claim_id;
          auto reply = self->state.ledger.release(request, t);
          // Released allocations that run a process: stop it (its end comes
          // back as a TaskEnded, which then finds nothing to free).
          if (self->state.executor && reply.released > 0)
            for (auto index : request.tasks) {
              core::TaskRef task{request.job, index};
              if (self->state.executor->kill(task, std::string(core::to_string(request.reason))))
                self->state.stopping[task] = {request.partition, claims[index]};
            }
          if (self->state.ledger.generation() != before || epoch.raised())
            persist(self, [&](NodeChanges& c) {
              if (epoch.raised()) c.header_changed();
              if (request.claim_id.value != 0) c.claim_removed(request.claim_id);
              for (auto index : request.tasks) c.allocation_removed(core::TaskRef{request.job, index});
            });
          answer(self, std::move(reply));
        });
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
        delta.events = self->state.ledger.recent_finished();
        delta.allocations = self->state.ledger.allocations();
        self->send(to, std::move(delta));
      },
      [=](report_atom) -> core::NodeReport {
        fire_due(self, now(self));
        return make_report(self);
      },
      [=](drain_atom) -> core::NodeSnapshot { return set_draining(self, true); },
      [=](drain_atom, bool drain) -> core::NodeSnapshot {
        spdlog::info("node {}: {} by an operator", self->state.spec.name, drain ? "drained" : "undrained");
        return set_draining(self, drain);
      },
      [=](logs_atom, const core::LogRequest& request) -> caf::result<core::LogChunk> {
        const auto& st = self->state;
        if (!st.executor)
          return messages::to_caf_error(core::make_error(
              core::Errc::wrong_state, "node " + st.spec.name + " runs simulated tasks: they have no output"));
        // Running is asked before the read: a task that ends after it is
        // read again on the next request, so nothing it wrote last is missed.
        const auto& held = st.ledger.allocations();
        bool running = std::any_of(held.begin(), held.end(),
                                   [&](const core::Allocation& a) { return a.task == request.task; });
        auto chunk = st.executor->read_output(request);
        if (!chunk && running) chunk = core::LogChunk{};  // starting: no file yet
        if (!chunk) return messages::to_caf_error(chunk.error());
        chunk->node = st.spec.name;
        chunk->running = running;
        return std::move(*chunk);
      },
      [=](tick_atom) {
        auto t = now(self);
        self->state.timer_at = core::kNever;
        fire_due(self, t);
        arm_timer(self, t);
      },
      [=](actors::TaskEnded& ended) {
        auto t = now(self);
        fire_due(self, t);
        end_tasks(self, {ended});
        arm_timer(self, t);
      },
  };
}

}  // namespace claimsched::actors
