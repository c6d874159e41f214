#include "actors/scheduler_actor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/clock.hpp"
#include "actors/job_log.hpp"
#include "actors/scheduler_writes.hpp"
#include "core/policy/policy.hpp"
#include "messages/json_views.hpp"
#include "storage/journal.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

/// Every this many unanswered subscription requests to one node, the warning
/// is an error: the node is registered, and this scheduler cannot reach it.
constexpr uint32_t kSubscribeAttemptsPerError = 6;

/// Answers whoever waits for operation `id` (an error if `outcome` is one).
void answer_waiter(self_ptr self, core::JobId id, core::Expected<std::string> outcome) {
  auto& st = self->state;
  auto it = st.operation_waiters.find(id);
  if (it == st.operation_waiters.end()) return;
  auto promise = std::move(it->second);
  st.operation_waiters.erase(it);
  if (outcome)
    promise.deliver(std::move(*outcome));
  else
    promise.deliver(messages::to_caf_error(outcome.error()));
}

/// A partition move holds its locks: the owning member pins the partition to
/// its new member, and hands it over at its next rebalance.
void carry_out_move(self_ptr self, core::JobId id, const core::Operation& op) {
  std::string words = core::describe(op) + " (operation " + std::to_string(id.value - core::kFirstOperationId) + "): ";
  auto finished = [self, id, words](core::Expected<std::string> outcome) {
    if (outcome)
      spdlog::info("{}: {}{}", self->state.log_name, words, *outcome);
    else
      spdlog::warn("{}: {}refused: {}", self->state.log_name, words, outcome.error().message);
    self->state.core->finish_operation(id);
    self->send(self, wake_atom::value);  // jobs waiting behind it go on
    answer_waiter(self, id, outcome ? core::Expected<std::string>(words + *outcome) : outcome);
  };
  if (!self->state.member) {
    finished(core::make_error(core::Errc::invalid_argument,
                              "a partition moves between the members of an HA cluster; this server runs without [ha]"));
    return;
  }
  self->request(self->state.member, std::chrono::seconds(10), move_atom::value, op.partition.value, op.member)
      .then([=](std::string& outcome) { finished(std::move(outcome)); },
            [=](const caf::error& err) { finished(messages::from_caf_error(err)); });
}

/// Carries out an operator operation that holds its locks: the node drains
/// or undrains, then the operation's locks go to whoever waits for them.
void carry_out(self_ptr self, core::JobId id, const core::Operation& op) {
  if (op.kind == core::OperationKind::move_partition) {
    carry_out_move(self, id, op);
    return;
  }
  auto finished = [self, id, what = core::describe(op)](const std::string& outcome) {
    spdlog::info("{}: {}: {}", self->state.log_name, what, outcome);
    self->state.core->finish_operation(id);
    self->send(self, wake_atom::value);  // jobs waiting behind it go on
  };
  auto* n = node_handle(self, op.node);
  if (!n) {
    finished("its node is not connected; given up");
    return;
  }
  self->request(*n, self->state.core->config().reply_timeout, drain_atom::value,
                op.kind == core::OperationKind::drain_node)
      .then([=](const core::NodeSnapshot& s) { finished(std::string("done, node ") + std::string(core::to_string(s.state))); },
            [=](const caf::error& err) { finished("failed: " + self->system().render(err)); });
}

/// An operation the core carried out (a pool removal) ended: whoever waits
/// hears how, a success once the write holding it is durable.
void answer_operation(self_ptr self, core::OperationEnd& ended) {
  auto& st = self->state;
  std::string words = core::describe(ended.op) + " (operation " +
                      std::to_string(ended.id.value - core::kFirstOperationId) + "): ";
  if (ended.outcome)
    spdlog::info("{}: {}done", st.log_name, words);
  else
    spdlog::warn("{}: {}refused: {}", st.log_name, words, ended.outcome.error().message);
  auto it = st.operation_waiters.find(ended.id);
  if (it == st.operation_waiters.end()) return;
  auto promise = std::move(it->second);
  st.operation_waiters.erase(it);
  if (!ended.outcome)
    promise.deliver(messages::to_caf_error(ended.outcome.error()));
  else if (st.log)
    st.assembling.replies.emplace_back(std::move(promise), words + "done");
  else
    promise.deliver(words + "done");
}

core::Duration to_wall(self_ptr self);
core::JobView wall_clock_view(core::JobView v, core::Duration offset);

/// Job events for the watchers (the campaigns, a gateway's waits): one
/// message per pass with the jobs that started or ended in it, and the views
/// of those that ended (what a waiting client is answered: no round trip
/// back here to ask for them), nothing when no job did either.
void tell_watchers(self_ptr self, const core::Outbox& out) {
  auto& st = self->state;
  if (st.watchers.empty() || (out.started_jobs.empty() && out.finished_jobs.empty())) return;
  std::vector<core::JobId> jobs;
  jobs.reserve(out.started_jobs.size() + out.finished_jobs.size());
  jobs.insert(jobs.end(), out.started_jobs.begin(), out.started_jobs.end());
  jobs.insert(jobs.end(), out.finished_jobs.begin(), out.finished_jobs.end());
  std::vector<core::JobView> ended;
  ended.reserve(out.finished_jobs.size());
  auto offset = to_wall(self);
  for (auto id : out.finished_jobs)
    if (auto v = st.core->job_view(id, true)) ended.push_back(wall_clock_view(std::move(*v), offset));
  // One-way and untyped: a watcher is any actor that takes the lists.
  for (const auto& w : st.watchers) caf::anon_send(w, watch_atom::value, jobs, ended);
}

/// Runs a scheduling pass (if started) and sends what the core asked for.
/// With a log, confirms wait for the write that holds their placements.
void flush(self_ptr self, core::TimePoint t) {
  auto& st = self->state;
  st.pass_owed = false;
  if (st.started) {
    st.core->schedule(t, st.outbox);
    // Work that waits only for time: wake up for it rather than for the
    // next message or tick.
    auto wake = st.core->next_wakeup();
    if (wake < st.wake_at) {
      st.wake_at = wake;
      self->delayed_send(self, std::max(core::Duration{0}, wake - t), wake_atom::value);
    }
  }
  if (st.core->stats().placements != st.placements_seen) {
    st.placements_seen = st.core->stats().placements;
    st.last_placement = t;
  }
  auto& out = st.outbox;
  for (auto& c : out.claims)
    if (auto* n = node_handle(self, c.node)) self->send(*n, std::move(c));
  for (auto& r : out.releases) {
    spdlog::debug("{}: releases claim {} / {} task(s) of job {} on node {} ({})", st.log_name, r.claim_id.value,
                  r.tasks.size(), r.job.value, r.node.value, core::to_string(r.reason));
    if (auto* n = node_handle(self, r.node)) self->send(*n, std::move(r));
  }
  for (auto id : out.snapshot_requests)
    if (auto* n = node_handle(self, id)) self->send(*n, snapshot_atom::value);
  for (const auto& [id, op] : out.operations) carry_out(self, id, op);
  for (auto& ended : out.operations_ended) answer_operation(self, ended);
  st.jobs_finished += out.finished_jobs.size();
  log_jobs_ended(st.log_name, *st.core, out.finished_jobs);
  tell_watchers(self, out);
  if (st.log && st.store_error.empty()) {
    auto journal = st.core->take_journal();
    if (!journal.empty()) st.journals.push_back(std::move(journal));
    auto& confirms = st.assembling.confirms;
    confirms.insert(confirms.end(), std::make_move_iterator(out.confirms.begin()),
                    std::make_move_iterator(out.confirms.end()));
    out.confirms.clear();
    submit_write(self);
  } else if (st.log) {
    out.confirms.clear();
  } else {
    send_confirms(self, out.confirms);
  }
  out.clear();
}

/// A message of a burst (more wait in the mailbox) leaves the pass to the
/// last of them: one pass, one write and one send per node for the burst
/// instead of one per message, and fewer thread wake-ups for the writer and
/// the network. A wake_atom behind the burst runs the pass whatever the last
/// message is.
void flush_after_burst(self_ptr self, core::TimePoint t) {
  auto& st = self->state;
  if (self->mailbox().empty()) {
    flush(self, t);
    return;
  }
  if (st.pass_owed) return;
  st.pass_owed = true;
  self->send(self, wake_atom::value);
}

caf::error store_failed(const scheduler_state& st) {
  return messages::to_caf_error(
      core::make_error(core::Errc::io_error, st.log_name + " cannot store jobs: " + st.store_error));
}

/// A client retrying a submit whose answer it lost: the same job again is
/// the same job; another spec under a held id is refused.
core::Status same_as_held(const scheduler_state& st, const core::JobSpec& job, const core::JobRecord& held) {
  auto again = job;
  again.submit_time = held.spec.submit_time;
  if (again.job_class.empty()) again.job_class = st.core->config().default_class;
  if (again == held.spec) return core::Status::ok();
  return core::make_error(core::Errc::duplicate,
                          "job " + std::to_string(job.id.value) + " already exists (with another spec)");
}

caf::result<core::JobId> accept_job(self_ptr self, core::JobSpec job) {
  auto& st = self->state;
  if (!st.store_error.empty()) return store_failed(st);
  auto t = now(self);
  auto id = job.id;
  if (const auto* held = st.core->job(id)) {
    if (auto same = same_as_held(st, job, *held); !same) return messages::to_caf_error(same.error());
    // Answered once its record is safe.
    if (auto* w = write_holding(st, {id})) {
      auto promise = self->make_response_promise<core::JobId>();
      w->acks.emplace_back(id, promise);
      return promise;
    }
    return id;
  }
  if (auto status = st.core->submit(std::move(job), t); !status) {
    spdlog::debug("{}: rejects job {}: {}", st.log_name, id.value, status.error().to_string());
    return messages::to_caf_error(status.error());
  }
  if (!st.log) {
    flush_after_burst(self, t);
    return id;
  }
  // Acknowledged once the job's record is durable (and replicated).
  auto promise = self->make_response_promise<core::JobId>();
  st.assembling.acks.emplace_back(id, promise);
  flush_after_burst(self, t);
  return promise;
}

/// One copy of `job` under each of `ids`, all or none: every id is checked
/// (new, or a retry of this same spec) and the first copy admitted before
/// the rest are queued. Admission looks only at the spec and the cluster,
/// so the other copies pass too; should one not, the answer names only the
/// ids accepted, and the gateway tells the client.
caf::result<std::vector<core::JobId>> accept_copies(self_ptr self, core::JobSpec job, std::vector<core::JobId> ids) {
  auto& st = self->state;
  if (!st.store_error.empty()) return store_failed(st);
  if (ids.empty() || ids.size() > kMaxJobsPerSubmit)
    return messages::to_caf_error(core::make_error(
        core::Errc::invalid_argument, "a submit names 1 to " + std::to_string(kMaxJobsPerSubmit) + " jobs, not " +
                                          std::to_string(ids.size())));
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    return messages::to_caf_error(core::make_error(core::Errc::invalid_argument,
                                                   "a submit names job " + std::to_string(twice->value) + " twice"));
  std::vector<core::JobId> fresh;
  for (auto id : ids) {
    job.id = id;
    if (const auto* held = st.core->job(id)) {
      if (auto same = same_as_held(st, job, *held); !same) return messages::to_caf_error(same.error());
    } else {
      fresh.push_back(id);
    }
  }
  auto t = now(self);
  std::vector<core::JobId> refused;
  for (size_t i = 0; i < fresh.size(); ++i) {
    job.id = fresh[i];
    auto status = st.core->submit(job, t);
    if (status) continue;
    if (i == 0) {
      spdlog::debug("{}: rejects {} copies of a job: {}", st.log_name, ids.size(), status.error().to_string());
      return messages::to_caf_error(status.error());
    }
    spdlog::error("{}: job {} refused after {} copies of the same spec were accepted: {}", st.log_name,
                  fresh[i].value, i, status.error().to_string());
    refused.push_back(fresh[i]);
  }
  auto was_refused = [&](core::JobId id) { return std::find(refused.begin(), refused.end(), id) != refused.end(); };
  if (!refused.empty()) ids.erase(std::remove_if(ids.begin(), ids.end(), was_refused), ids.end());
  if (!st.log) {
    flush_after_burst(self, t);
    return ids;
  }
  // Acknowledged once every record is durable (and replicated): the new
  // ones are in the write being assembled, the last of the writes.
  PendingWrite* write = fresh.size() > refused.size() ? &st.assembling : write_holding(st, ids);
  if (!write) return ids;
  auto promise = self->make_response_promise<std::vector<core::JobId>>();
  write->batch_acks.emplace_back(ids, promise);
  flush_after_burst(self, t);
  return promise;
}

/// A node's answer to our subscription: add it (or see that its agent
/// restarted) and reconcile what it holds against our records.
void on_node_report(self_ptr self, const node_actor& node, core::NodeReport& report) {
  auto& st = self->state;
  // Another actor for a node we knew: its agent restarted.
  bool restarted = false;
  if (auto known = st.core->view().find_node(report.spec.id);
      known && *known < st.nodes.size() && st.nodes[*known])
    restarted = st.nodes[*known].address() != node.address();
  if (auto status = st.core->add_node(report.spec, report.snapshot); !status) {
    spdlog::error("{}: cannot add node {}: {}", st.log_name, report.spec.name, status.error().to_string());
    return;
  }
  auto n = *st.core->view().find_node(report.spec.id);
  if (st.nodes.size() <= n) st.nodes.resize(n + 1);
  st.nodes[n] = node;
  auto t = now(self);
  st.core->reconcile_node(report, t, st.outbox, restarted);
  flush(self, t);
}

/// The tracked entry of `node`'s subscription if `node` is the newest handle
/// registered for its node actor and its subscription still waits.
std::map<caf::actor_addr, node_actor>::iterator pending_subscription(self_ptr self, const node_actor& node) {
  auto& handles = self->state.newest_node_handle;
  auto it = handles.find(node.address());
  // Handles compare equal by address; the control block tells a newer
  // connection's proxy from this one.
  if (it == handles.end() ||
      caf::actor_cast<caf::strong_actor_ptr>(it->second).get() != caf::actor_cast<caf::strong_actor_ptr>(node).get())
    return handles.end();
  return it;
}

/// Subscribes to a node. A subscription that goes unanswered is asked again
/// at once (the timeout was the wait), for as long as the handle is the
/// newest one registered for that node: until it is answered the scheduler
/// hears none of the node's task ends, and a task restored onto it is
/// declared lost when recovery_grace passes and runs a second time. A
/// registration through a new connection starts its own subscription, and
/// the older one stops (CAF keeps the dead connection's proxy, and what is
/// sent to it vanishes without an error). A node whose actor is gone answers
/// with an error and is not asked again; its agent registers anew.
void subscribe(self_ptr self, node_actor node, uint32_t attempt) {
  auto& st = self->state;
  // In-process nodes (no timeout) answer or are gone: nothing to retry.
  if (attempt == 1 && st.subscribe_timeout != core::Duration::max()) st.newest_node_handle[node.address()] = node;
  // A timeout costs a clock entry per node until it fires; in-process nodes
  // (Duration::max()) answer or are gone, and need none.
  caf::duration timeout =
      st.subscribe_timeout == core::Duration::max()
          ? caf::infinite
          : caf::duration(std::chrono::duration_cast<std::chrono::milliseconds>(st.subscribe_timeout));
  auto listener = caf::actor_cast<node_listener_actor>(self);
  self->request(node, timeout, subscribe_atom::value, listener)
      .then(
          [=](core::NodeReport& report) {
            // Only subscriptions still waiting are tracked (memory per node).
            if (auto newest = pending_subscription(self, node); newest != self->state.newest_node_handle.end())
              self->state.newest_node_handle.erase(newest);
            on_node_report(self, node, report);
          },
              [=](caf::error& err) {
                auto& st = self->state;
                auto who = caf::to_string(node.address());
                auto newest = pending_subscription(self, node);
                bool current = newest != st.newest_node_handle.end();
                if (err != caf::sec::request_timeout) {
                  if (current) st.newest_node_handle.erase(newest);
                  spdlog::warn("{}: subscribing to node {} failed ({}); it is subscribed to again when its agent "
                               "registers",
                               st.log_name, who, self->system().render(err));
                  return;
                }
                if (!current || !st.store_error.empty()) return;
                auto level = attempt % kSubscribeAttemptsPerError == 0 ? spdlog::level::err : spdlog::level::warn;
                spdlog::log(level, "{}: node {} did not answer its subscription within {} ms (attempt {}); asking again",
                            st.log_name, who,
                            std::chrono::duration_cast<std::chrono::milliseconds>(st.subscribe_timeout).count(),
                            attempt);
                subscribe(self, node, attempt + 1);
              });
  }

void arm_tick(self_ptr self) {
  if (self->state.tick_armed) return;
  self->state.tick_armed = true;
  self->delayed_send(self, self->state.tick_interval, tick_atom::value);
}

/// The offset from this actor's clock to the wall clock: views leave with
/// wall-clock times, which mean something to a user and to another process.
/// Measured afresh it moves by some nanoseconds each time, so two views of
/// an unchanged job would differ (and an HTTP poller's ETag with them): it is
/// kept until the wall clock really moves (an NTP step) by more than 1 ms.
core::Duration to_wall(self_ptr self) {
  auto measured = wall_now() - now(self);
  auto& kept = self->state.wall_offset;
  if (!kept || std::chrono::abs(measured - *kept) > std::chrono::milliseconds(1)) kept = measured;
  return *kept;
}

core::JobView wall_clock_view(core::JobView v, core::Duration offset) {
  auto shift = [&](core::TimePoint& t) {
    if (t != core::kNever && t.count() != 0) t += offset;
  };
  shift(v.spec.submit_time);
  shift(v.started_at);
  shift(v.finished_at);
  return v;
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
  s.unverified_tasks = core.unverified_tasks();
  s.jobs_finished = self->state.jobs_finished;
  s.store_writes = self->state.writes_completed;
  s.epoch = core.config().epoch;
  s.durable_sequence = self->state.durable_sequence;
  s.replicated_sequence = self->state.replicated_sequence;
  s.writes_awaiting_replication = self->state.replicating.size();
  s.policy_cycles = self->state.policy_cycles;
  s.store_error = self->state.store_error;
  s.fenced = core.fenced();
  s.started = self->state.started;
  s.last_placement = self->state.last_placement;
  return s;
}

}  // namespace

core::Status SchedulerActorConfig::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (!restored)
    if (auto st = scheduler.validate(); !st) return st;
  if (restored && log == nullptr && restored->config().journal)
    return bad("scheduler: a scheduler restored from a store needs the store's log");
  if (await_replication && log == nullptr) return bad("scheduler: await_replication needs a log");
  if (max_writes_in_flight == 0) return bad("scheduler: max_writes_in_flight must be at least 1");
  if (tick_interval.count() <= 0) return bad("scheduler: tick_interval must be positive");
  if (subscribe_timeout.count() <= 0) return bad("scheduler: subscribe_timeout must be positive");
  if (policy)
    if (auto st = policy->validate(); !st) return st;
  return core::Status::ok();
}

core::Expected<scheduler_actor> spawn_scheduler(caf::actor_system& sys, SchedulerActorConfig config) {
  if (auto st = config.validate(); !st) return st.error();
  return sys.spawn(scheduler, std::move(config));
}

scheduler_actor::behavior_type scheduler(self_ptr self, SchedulerActorConfig config) {
  auto& st = self->state;
  if (config.restored) {
    st.core = std::move(config.restored);
  } else {
    config.scheduler.journal = config.log != nullptr;
    st.core = std::make_shared<core::Scheduler>(config.scheduler);
  }
  st.log_name = "scheduler-" + std::to_string(st.core->config().partition.value);
  st.log = std::move(config.log);
  st.await_replication = config.await_replication;
  st.member = config.member;
  st.max_writes_in_flight = std::max<uint32_t>(1, config.max_writes_in_flight);
  st.started = config.start_immediately;
  st.tick_interval = config.tick_interval;
  st.subscribe_timeout = config.subscribe_timeout;
  if (config.policy) {
    st.policy = std::make_unique<core::policy::PolicyDriver>(std::move(*config.policy));
    self->delayed_send(self, st.policy->config().interval, policy_atom::value);
  }
  if (st.started) {
    st.core->start(now(self));
    arm_tick(self);
  }
  return {
      [=](core::ClaimReply& reply) {
        auto t = now(self);
        self->state.core->on_claim_reply(reply, t, self->state.outbox);
        flush_after_burst(self, t);
      },
      [=](core::ConfirmReply& reply) {
        auto t = now(self);
        self->state.core->on_confirm_reply(reply, t, self->state.outbox);
        flush_after_burst(self, t);
      },
      [=](core::ReleaseReply& reply) {
        auto t = now(self);
        self->state.core->on_release_reply(reply, t, self->state.outbox);
        flush_after_burst(self, t);
      },
      [=](core::NodeDelta& delta) {
        auto t = now(self);
        self->state.core->on_node_delta(delta, t, self->state.outbox);
        flush_after_burst(self, t);
      },
      [=](core::JobSpec& job) { return accept_job(self, std::move(job)); },
      [=](repeat_atom, core::JobSpec& job, std::vector<core::JobId>& ids) {
        return accept_copies(self, std::move(job), std::move(ids));
      },
      [=](durable_atom, uint64_t sequence, std::string& error) { on_write_durable(self, sequence, error); },
      [=](replicated_atom, uint64_t sequence) { on_replicated(self, sequence); },
      [=](register_atom, node_actor node) { subscribe(self, std::move(node), 1); },
      [=](start_atom) {
        if (self->state.started || !self->state.store_error.empty()) return;
        self->state.started = true;
        self->state.core->start(now(self));
        arm_tick(self);
        flush(self, now(self));
      },
      [=](hold_atom) { self->state.started = false; },
      [=](policy_atom) {
        auto& st = self->state;
        if (!st.policy) return;
        self->delayed_send(self, st.policy->config().interval, policy_atom::value);
        if (!st.started) return;
        auto t = now(self);
        // A cycle with the input of the last and no timer passed would
        // decide what it decided (the replay skips the same cycles).
        auto checked = st.policy->check(*st.core, t);
        if (!checked.due) return;
        auto summary = st.policy->cycle(*st.core, t, st.outbox, &checked);
        if (!summary) {
          spdlog::error("{}: policy cycle failed: {}", st.log_name, summary.error().to_string());
          return;
        }
        ++st.policy_cycles;
        if (summary->preemptions + summary->evictions > 0)
          spdlog::debug("{}: policy cycle preempts {}, evicts {}, boosts {} job(s)", st.log_name,
                       summary->preemptions, summary->evictions, summary->boosted);
        flush(self, t);
      },
      [=](status_atom, core::JobId id) -> caf::result<core::JobView> {
        auto v = self->state.core->job_view(id, true);
        if (!v) return messages::to_caf_error(v.error());
        return wall_clock_view(std::move(*v), to_wall(self));
      },
      [=](queue_atom) -> std::vector<core::JobView> {
        std::vector<core::JobView> out;
        const auto& core = *self->state.core;
        auto offset = to_wall(self);
        core.for_each_job([&](const core::JobRecord& j) {
          if (j.finished()) return;
          if (auto v = core.job_view(j.spec.id, false)) out.push_back(wall_clock_view(std::move(*v), offset));
        });
        return out;
      },
      [=](ended_atom, const std::vector<core::JobId>& ids) -> std::vector<core::JobView> {
        std::vector<core::JobView> out;
        const auto& core = *self->state.core;
        auto offset = to_wall(self);
        for (auto id : ids) {
          const auto* j = core.job(id);
          // A cancelled job has ended for its user even while its last
          // tasks are still being stopped (as `status` shows it).
          if (!j || !(j->finished() || j->cancelled)) continue;
          if (auto v = core.job_view(id, true)) out.push_back(wall_clock_view(std::move(*v), offset));
        }
        return out;
      },
      [=](history_atom, const core::JobFilter& filter) -> std::vector<core::JobView> {
        // Newest first; with a limit, views are made only until the page is
        // full (a page of 50 of 10,000 jobs makes about 50, not 10,000).
        const auto& core = *self->state.core;
        std::vector<core::JobId> ids;
        core.for_each_job([&](const core::JobRecord& j) {
          if (!filter.user.empty() && j.spec.user != filter.user) return;
          if (!filter.pool.empty() && j.spec.pool != filter.pool) return;
          if (filter.older_than.value != 0 && j.spec.id.value >= filter.older_than.value) return;
          ids.push_back(j.spec.id);
        });
        std::vector<core::JobView> out;
        auto offset = to_wall(self);
        for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
          if (filter.limit > 0 && out.size() >= filter.limit) break;
          if (auto v = core.job_view(*it, false)) {
            auto view = wall_clock_view(std::move(*v), offset);
            if (core::matches(filter, view)) out.push_back(std::move(view));
          }
        }
        return out;
      },
      [=](nodes_atom) -> std::vector<core::NodeStatus> {
        std::vector<core::NodeStatus> out;
        const auto& view = self->state.core->view();
        for (core::NodeIndex n = 0; n < view.node_count(); ++n) {
          const auto& v = view.node(n);
          if (self->state.core->pool_removed(view.pool(v.pool).name)) continue;
          core::NodeStatus s;
          s.spec.id = v.id;
          s.spec.pool = view.pool(v.pool).name;
          s.spec.capacity = v.capacity;
          s.spec.labels = v.labels;
          s.spec.max_starting = v.max_starting;
          s.snapshot.node = v.id;
          s.snapshot.generation = v.generation;
          s.snapshot.state = v.state;
          s.snapshot.capacity = v.capacity;
          s.snapshot.free = v.reported_free;
          s.snapshot.starting = v.reported_starting;
          s.alive = v.state != core::NodeState::down;
          out.push_back(std::move(s));
        }
        return out;
      },
      [=](cancel_atom, core::JobId id) -> caf::result<core::JobView> {
        auto& st = self->state;
        auto t = now(self);
        if (auto s = st.core->cancel(id, t, st.outbox); !s) return messages::to_caf_error(s.error());
        flush(self, t);
        auto v = st.core->job_view(id, false);
        if (!v) return messages::to_caf_error(v.error());
        return wall_clock_view(std::move(*v), to_wall(self));
      },
      [=](drain_atom, core::NodeId node, std::string& name, bool drain) -> caf::result<std::string> {
        auto& st = self->state;
        auto t = now(self);
        core::Operation op;
        op.kind = drain ? core::OperationKind::drain_node : core::OperationKind::undrain_node;
        op.node = node;
        op.node_name = name;
        auto queued = st.core->submit_operation(std::move(op), t);
        if (!queued) return messages::to_caf_error(queued.error());
        spdlog::info("{}: {}", st.log_name, queued->second);
        flush(self, t);
        return queued->second;
      },
      [=](remove_pool_atom, std::string& pool, bool wait) -> caf::result<std::string> {
        auto& st = self->state;
        if (!st.store_error.empty())
          return messages::to_caf_error(core::make_error(
              core::Errc::io_error, st.log_name + " cannot store the removal: " + st.store_error));
        auto t = now(self);
        core::Operation op;
        op.kind = core::OperationKind::remove_pool;
        op.pool = pool;
        auto queued = st.core->submit_operation(std::move(op), t);
        if (!queued) {
          spdlog::warn("{}: remove pool {}: refused: {}", st.log_name, pool, queued.error().message);
          return messages::to_caf_error(queued.error());
        }
        spdlog::info("{}: {}", st.log_name, queued->second);
        // submit_operation refuses a pool removed before: removed now, it
        // went at once.
        bool done = st.core->pool_removed(pool);
        if (done && st.log) {
          // Answered once the removal is durable (and replicated).
          auto promise = self->make_response_promise<std::string>();
          st.assembling.replies.emplace_back(promise, queued->second);
          flush(self, t);
          return promise;
        }
        if (done || !wait) {
          flush(self, t);
          return queued->second;
        }
        auto promise = self->make_response_promise<std::string>();
        st.operation_waiters.emplace(queued->first, promise);
        flush(self, t);
        return promise;
      },
      [=](removed_atom) {
        const auto& removed = self->state.core->removed_pools();
        return std::vector<std::string>(removed.begin(), removed.end());
      },
      [=](move_atom, std::string& member, bool wait) -> caf::result<std::string> {
        auto& st = self->state;
        auto t = now(self);
        core::Operation op;
        op.kind = core::OperationKind::move_partition;
        op.member = member;
        auto queued = st.core->submit_operation(std::move(op), t);
        if (!queued) {
          spdlog::warn("{}: move to {}: refused: {}", st.log_name, member, queued.error().message);
          return messages::to_caf_error(queued.error());
        }
        spdlog::info("{}: {}", st.log_name, queued->second);
        if (!wait) {
          flush(self, t);
          return queued->second;
        }
        auto promise = self->make_response_promise<std::string>();
        st.operation_waiters.emplace(queued->first, promise);
        flush(self, t);  // carries it out now if nothing holds its locks
        return promise;
      },
      [=](watch_atom, caf::actor watcher) {
        // Local only (as the gateway's own watch_atom): the events name every
        // user's jobs, and a scheduler's handle reaches HA peers and clients.
        // A remote campaign actor is registered by its member's own gateway.
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node()) return;
        // Not monitored: each server's gateway registers its one watcher,
        // and a message to one that went away is dropped.
        auto& w = self->state.watchers;
        if (watcher && std::find(w.begin(), w.end(), watcher) == w.end()) w.push_back(std::move(watcher));
      },
      [=](unwatch_atom, const caf::actor& watcher) {
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node()) return;
        auto& w = self->state.watchers;
        if (watcher) w.erase(std::remove(w.begin(), w.end(), watcher), w.end());
      },
      [=](node_down_atom, core::NodeId node) {
        auto t = now(self);
        spdlog::warn("{}: node {} is down; what ran there is lost", self->state.log_name, node.value);
        self->state.core->node_down(node, t, self->state.outbox);
        flush(self, t);
      },
      [=](pools_atom) -> std::string {
        const auto& p = self->state.policy;
        const core::policy::CycleResult* cycle = p && p->last() ? &*p->last() : nullptr;
        return messages::pools_json(self->state.core->config().partition, cycle, to_wall(self),
                                    self->state.core->removed_pools());
      },
      [=](explain_atom, core::JobId id) -> caf::result<std::string> {
        const auto& st = self->state;
        auto explanation = st.core->explanation(id);
        if (!explanation) return messages::to_caf_error(explanation.error());
        auto view = st.core->job_view(id, false);
        if (!view) return messages::to_caf_error(view.error());
        const auto& p = st.policy;
        const core::policy::CycleResult* cycle = p && p->last() ? &*p->last() : nullptr;
        return messages::explain_json(*explanation, *view, cycle, to_wall(self));
      },
      [=](wake_atom) {
        auto t = now(self);
        if (t >= self->state.wake_at) self->state.wake_at = core::kNever;
        flush(self, t);
      },
      [=](tick_atom) {
        auto t = now(self);
        self->state.tick_armed = false;
        self->state.core->on_tick(t, self->state.outbox);
        flush(self, t);
        if (self->state.started) arm_tick(self);
      },
      [=](status_atom) -> SchedulerStatus { return make_status(self); },
      [=](metrics_atom) -> PartitionMetrics {
        PartitionMetrics m;
        m.status = make_status(self);
        m.queues = self->state.core->queue_depths(now(self));
        const auto& by_state = self->state.core->view().nodes_by_state();
        std::copy(by_state.begin(), by_state.end(), m.nodes_by_state.begin());
        const auto& p = self->state.policy;
        if (p && p->last())
          for (const auto& row : p->last()->pools)
            m.pools.push_back(PartitionMetrics::PoolShares{row.name, core::policy::share_to_double(row.fair_share_share),
                                                           core::policy::share_to_double(row.demand_share),
                                                           core::policy::share_to_double(row.usage_share)});
        if (const auto* commits = self->state.log ? self->state.log->commit_metrics() : nullptr) {
          m.commit_seconds = commits->seconds.snapshot();
          m.commit_records = commits->records.snapshot();
        }
        return m;
      },
      [=](jobs_atom) -> std::vector<core::JobId> {
        std::vector<core::JobId> ids;
        self->state.core->for_each_job([&](const core::JobRecord& j) { ids.push_back(j.spec.id); });
        return ids;
      },
      [=](audit_atom) -> SchedulerStatus {
        auto s = make_status(self);
        if (auto st = self->state.core->check_accounting(); !st)
          s.accounting_error = st.error().to_string();
        return s;
      },
  };
}

}  // namespace claimsched::actors
