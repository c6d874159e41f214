#include "actors/node_actor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <map>
#include <utility>

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
  const auto& store = self->state.host->store;
  if (!store) return;
  NodeChanges changes(*store, self->state.ledger.id(), clock_mapping(self));
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
    auto& all_stopping = self->state.stopping;
    auto stopping = std::find_if(all_stopping.begin(), all_stopping.end(),
                                 [&](const node_state::Stopping& s) { return s.task == e.task; });
    if (stopping == all_stopping.end()) continue;
    if (e.claim.value != 0 && stopping->claim.value != 0 && stopping->claim != e.claim) continue;
    core::NodeEvent ev;
    ev.kind = core::NodeEvent::Kind::task_exited;
    ev.partition = stopping->partition;
    ev.claim_id = stopping->claim;
    ev.task = e.task;
    ev.final_state = e.state;
    ev.exit_code = e.exit_code;
    ev.end = e.end;
    exited.push_back(ev);
    all_stopping.erase(stopping);
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
    for (const auto& ev : delta.events) c.allocation_removed(ev.task, ev.claim_id);
  });
  delta.snapshot = self->state.ledger.snapshot();
  publish(self, delta, nullptr);
}

/// Starts what a confirm just allocated: processes through the executor, or
/// (agent --simulate) ends command tasks that have no simulated runtime.
void launch(self_ptr self, core::ClaimId claim, core::PartitionId partition) {
  auto& st = self->state;
  const auto& executor = st.host->executor;
  std::vector<actors::TaskEnded> ended;
  for (const auto& a : st.ledger.allocations()) {
    if (a.claim_id != claim || a.partition != partition) continue;
    if (executor && !a.launch) {
      // A real node cannot run a task without a command: it would hold its
      // slot forever.
      ended.push_back({a.task, core::TaskState::failed, -1, "the job has no command",
                       core::TaskEnd::spawn_failed(core::SpawnStage::no_command, 0), a.claim_id});
    } else if (executor) {
      if (auto s = executor->start(caf::actor_cast<caf::actor>(self), st.spec(), a); !s)
        ended.push_back({a.task, core::TaskState::failed, -1, s.error().to_string(),
                         core::TaskEnd::spawn_failed(core::SpawnStage::system, 0), a.claim_id});
    } else if (a.launch && st.host->finish_unrun_tasks && a.finishes_at == core::kNever) {
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
  r.spec = self->state.spec();
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
    persist(self, [&](NodeChanges& c) { c.header_changed(self->state.spec()); });
    publish_change(self, caf::strong_actor_ptr{});
  }
  arm_timer(self, t);
  return self->state.ledger.snapshot();
}

// -- one behavior for all node actors ---------------------------------------
//
// A behavior is a heap object holding the actor's handlers. Built per actor,
// with handlers that capture `self`, it cost about 500 bytes per node: a
// fifth of a node's memory in a sim of 100k nodes. So every node actor of a
// process returns the same behavior, whose handlers capture nothing. CAF 0.17
// hands a handler no actor, so they find theirs through `running_node`, which
// node_actor_impl::resume sets for the duration of the actor's turn. That
// covers every handler: CAF runs an actor's handlers (and its make_behavior)
// only inside its resume, whoever calls it: a worker of the work-stealing
// scheduler, a detached actor's thread, or the test coordinator. The test
// coordinator's inline enqueues can run one actor's resume inside another's,
// so resume restores the outer actor when it returns. Behaviors are
// immutable once built and reference-counted atomically, so sharing one
// across threads is safe.

class node_actor_impl;

/// The node actor whose turn this thread is running, if any.
thread_local node_actor_impl* running_node = nullptr;

class node_actor_impl : public node_actor::stateful_base<node_state> {
 public:
  using super = node_actor::stateful_base<node_state>;

  node_actor_impl(caf::actor_config& cfg, NodeActorConfig config);

  caf::resumable::resume_result resume(caf::execution_unit* unit, size_t max_throughput) override {
    auto* outer = std::exchange(running_node, this);
    auto result = super::resume(unit, max_throughput);
    running_node = outer;
    return result;
  }

 protected:
  behavior_type make_behavior() override;
};

/// The node actor a shared handler runs for.
self_ptr running() {
  assert(running_node != nullptr && "a node handler ran outside its actor's resume");
  return running_node;
}

const node_actor::behavior_type& shared_behavior() {
  static const node_actor::behavior_type behavior{
      [](core::ClaimRequest& request) {
        auto self = running();
        handle(self, [&](core::TimePoint t) {
          EpochWatch epoch(self->state.ledger, request.partition);
          auto reply = self->state.ledger.claim(request, t);
          bool fenced_more = epoch.raised();
          if (reply.outcome == core::ClaimOutcome::accepted || fenced_more)
            persist(self, [&](NodeChanges& c) {
              if (fenced_more) c.header_changed(self->state.spec());
              if (reply.outcome != core::ClaimOutcome::accepted) return;
              for (const auto& claim : self->state.ledger.claims())
                if (claim.id == request.claim_id && claim.partition == request.partition)
                  c.claim_added(claim);
            });
          answer(self, std::move(reply));
        });
      },
      [](core::ConfirmRequest& request) {
        auto self = running();
        handle(self, [&](core::TimePoint t) {
          auto before = self->state.ledger.generation();
          EpochWatch epoch(self->state.ledger, request.partition);
          auto reply = self->state.ledger.confirm(request, t);
          bool started = self->state.ledger.generation() != before;
          if (started || epoch.raised())
            persist(self, [&](NodeChanges& c) {
              if (epoch.raised()) c.header_changed(self->state.spec());
              c.claim_removed(request.claim_id);
              for (const auto& a : self->state.ledger.allocations())
                if (a.claim_id == request.claim_id && a.partition == request.partition)
                  c.allocation_set(a);
            });
          answer(self, std::move(reply));
          if (started) launch(self, request.claim_id, request.partition);
        });
      },
      [](core::ReleaseRequest& request) {
        auto self = running();
        handle(self, [&](core::TimePoint t) {
          auto& st = self->state;
          auto before = st.ledger.generation();
          EpochWatch epoch(st.ledger, request.partition);
          std::map<core::TaskIndex, core::ClaimId> claims;  // of the runs this release ends
          for (const auto& a : st.ledger.allocations())
            if (a.task.job == request.job) claims[a.task.index] = a.claim_id;
          auto reply = st.ledger.release(request, t);
          // Released allocations that run a process: stop it (its end comes
          // back as a TaskEnded, which then finds nothing to free).
          if (const auto& executor = st.host->executor; executor && reply.released > 0)
            for (auto index : request.tasks) {
              core::TaskRef task{request.job, index};
              if (!executor->kill(task, std::string(core::to_string(request.reason)))) continue;
              node_state::Stopping stopping{task, request.partition, claims[index]};
              auto known = std::find_if(st.stopping.begin(), st.stopping.end(),
                                        [&](const node_state::Stopping& s) { return s.task == task; });
              if (known != st.stopping.end())
                *known = stopping;
              else
                st.stopping.push_back(stopping);
            }
          if (st.ledger.generation() != before || epoch.raised())
            persist(self, [&](NodeChanges& c) {
              if (epoch.raised()) c.header_changed(st.spec());
              if (request.claim_id.value != 0) c.claim_removed(request.claim_id);
              for (auto index : request.tasks) c.allocation_removed(core::TaskRef{request.job, index}, claims[index]);
            });
          answer(self, std::move(reply));
        });
      },
      [](subscribe_atom, node_listener_actor listener) -> core::NodeReport {
        auto self = running();
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
      [](snapshot_atom) {
        auto self = running();
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
      [](report_atom) -> core::NodeReport {
        auto self = running();
        fire_due(self, now(self));
        return make_report(self);
      },
      [](drain_atom) -> core::NodeSnapshot { return set_draining(running(), true); },
      [](drain_atom, bool drain) -> core::NodeSnapshot {
        auto self = running();
        spdlog::info("node {}: {} by an operator", self->state.node_name, drain ? "drained" : "undrained");
        return set_draining(self, drain);
      },
      [](logs_atom, const core::LogRequest& request) -> caf::result<core::LogChunk> {
        const auto& st = running()->state;
        const auto& executor = st.host->executor;
        if (!executor)
          return messages::to_caf_error(core::make_error(
              core::Errc::wrong_state, "node " + st.node_name + " runs simulated tasks: they have no output"));
        // Running is asked before the read: a task that ends after it is
        // read again on the next request, so nothing it wrote last is missed.
        const auto& held = st.ledger.allocations();
        bool running_task = std::any_of(held.begin(), held.end(),
                                        [&](const core::Allocation& a) { return a.task == request.task; });
        auto chunk = executor->read_output(request);
        if (!chunk && running_task) chunk = core::LogChunk{};  // starting: no file yet
        if (!chunk) return messages::to_caf_error(chunk.error());
        chunk->node = st.node_name;
        chunk->running = running_task;
        return std::move(*chunk);
      },
      [](tick_atom) {
        auto self = running();
        auto t = now(self);
        self->state.timer_at = core::kNever;
        fire_due(self, t);
        arm_timer(self, t);
      },
      [](actors::TaskEnded& ended) {
        auto self = running();
        auto t = now(self);
        fire_due(self, t);
        end_tasks(self, {ended});
        arm_timer(self, t);
      },
      [](actors::TasksEnded& batch) {
        auto self = running();
        auto t = now(self);
        fire_due(self, t);
        end_tasks(self, batch.ended);
        arm_timer(self, t);
      },
  };
  return behavior;
}

/// For nodes spawned without a host: no store, synthetic tasks.
const std::shared_ptr<const NodeHost>& no_host() {
  static const auto host = std::make_shared<const NodeHost>();
  return host;
}

node_actor_impl::node_actor_impl(caf::actor_config& cfg, NodeActorConfig config) : super(cfg) {
  auto& st = state;
  st.ledger = config.restored ? std::move(*config.restored)
                              : core::NodeLedger(config.spec.id, config.spec.capacity, config.ledger);
  st.node_name = std::move(config.spec.name);
  st.pool = std::move(config.spec.pool);
  st.labels = std::move(config.spec.labels);
  st.max_starting = config.spec.max_starting;
  st.host = config.host ? std::move(config.host) : no_host();
}

node_actor_impl::behavior_type node_actor_impl::make_behavior() {
  auto& st = state;
  if (const auto& executor = st.host->executor) {
    // Tasks restored from the store run on if the last agent left them
    // running (a drain): this one adopts them. The others died with it, or
    // ended just before it did (their keepers recorded how): those end as
    // they did; the rest are reported lost, so the scheduler places them
    // again instead of believing they run.
    std::vector<actors::TaskEnded> gone;
    for (const auto& a : st.ledger.allocations()) {
      if (executor->adopt(caf::actor_cast<caf::actor>(this), a)) continue;
      if (auto end = executor->recorded_end(a))
        gone.push_back(std::move(*end));
      else
        gone.push_back({a.task, core::TaskState::lost, -1, "the agent restarted",
                        core::TaskEnd::decided(core::EndReason::agent_stopped), a.claim_id});
    }
    if (!gone.empty()) end_tasks(this, gone);
  }
  arm_timer(this, actors::now(this));
  set_down_handler([this](const caf::down_msg& msg) {
    auto& subs = state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const node_listener_actor& s) { return s.address() == msg.source; }),
               subs.end());
  });
  return shared_behavior();
}

}  // namespace

core::NodeSpec node_state::spec() const {
  core::NodeSpec s;
  s.id = ledger.id();
  s.name = node_name;
  s.pool = pool;
  s.capacity = ledger.capacity();
  s.labels = labels;
  s.max_starting = max_starting;
  return s;
}

node_actor spawn_node(caf::actor_system& sys, NodeActorConfig config) {
  return sys.spawn<node_actor_impl>(std::move(config));
}

}  // namespace claimsched::actors
