// What nodes tell the scheduler: registration (add_node), deltas (tasks
// ended), full reports (reconciliation), and silence (a node lost).

#include <algorithm>

#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

Status Scheduler::add_node(const NodeSpec& spec, const NodeSnapshot& snapshot) {
  auto pool = view_.find_pool(spec.pool);
  if (!pool)
    return make_error(Errc::unknown_name, "node " + spec.name + ": pool '" + spec.pool +
                                              "' is not owned by partition " + std::to_string(config_.partition.value));
  if (pool_removed(spec.pool))
    return make_error(Errc::wrong_state, "node " + spec.name + ": pool '" + spec.pool +
                                             "' was removed (claimsched pool remove); register it in another pool");
  bool known = view_.find_node(spec.id).has_value();
  NodeIndex n = view_.add_node(spec, *pool, snapshot);
  if (config_.keep_node_names) {
    if (node_names_.size() <= n) node_names_.resize(n + 1);
    node_names_[n] = spec.name;
  }
  shape_counts_.clear();  // what the pool can ever hold may have grown
  if (config_.journal && !known) journal_.nodes_registered.push_back(spec);
  return Status::ok();
}

void Scheduler::on_node_delta(const NodeDelta& delta, TimePoint now, Outbox& out) {
  auto n = view_.find_node(delta.snapshot.node);
  if (!n) return;
  if (delta.full)
    view_.apply_snapshot(*n, delta.snapshot);
  else
    observe_generation(*n, delta.snapshot, true, out);
  process_events(delta, now, out);
  // After a gap: the events above may have ended some tasks; what we still
  // believe runs there and the node does not hold is lost.
  if (delta.full)
    apply(reconciler_.reconcile(*n, delta.snapshot.node, delta.allocations, nullptr, true, config_.partition, table_,
                                window_),
          *n, delta.snapshot.node, now, out);
}

void Scheduler::process_events(const NodeDelta& delta, TimePoint now, Outbox& out) {
  for (const auto& ev : delta.events) {
    if (ev.partition != config_.partition) continue;
    if (ev.kind == NodeEvent::Kind::task_exited) {
      record_exit(ev);
      continue;
    }
    if (ev.kind == NodeEvent::Kind::task_started) {
      // DUCC: a task that started has passed initialization.
      if (JobRecord* jp = table_.find(ev.task.job); jp && jp->task(ev.task.index)) {
        TaskRecord& r = jp->tasks[ev.task.index];
        if (r.state == TaskState::running && !r.initialized && now >= r.started) {
          ++jp->observed.starts;
          jp->observed.start_time += now - r.started;
        }
        r.initialized = true;
        jp->initialized = true;
        uncap(*jp);
      }
      continue;
    }
    if (ev.kind != NodeEvent::Kind::task_finished) continue;
    JobRecord* jp = table_.find(ev.task.job);
    if (!jp || !jp->task(ev.task.index)) continue;
    JobRecord& j = *jp;
    TaskState state = j.tasks[ev.task.index].state;
    if (state == TaskState::claimed) {
      // The task ran, so its confirm took effect on the node, but the reply
      // is not here yet (lost, or slower than a short task) or the gang
      // waits for other members. Losing the event would leave the task
      // "running" forever, or run it again when a resent confirm finds
      // nothing left to confirm. (An aborted gang's claim being released is
      // no longer in the window: its release reply decides.)
      Claim* c = window_.find(ev.claim_id);
      if (!c || c->request.node != delta.snapshot.node) continue;
      const auto& tasks = c->request.tasks;
      if (std::find(tasks.begin(), tasks.end(), ev.task.index) == tasks.end()) continue;
      if (c->phase != ClaimPhase::confirming && c->phase != ClaimPhase::confirmed) continue;
      if (!c->gang) {
        view_.remove_change_in_flight(c->node);
        mark_running(j, *c, now, out);
        window_.erase(ev.claim_id);
      } else {
        table_.set_state(j, ev.task.index, ev.final_state);
        record_final(j, ev);
        ++stats_.tasks_finished;
        if (c->phase == ClaimPhase::confirming) {
          view_.remove_change_in_flight(c->node);
          c->phase = ClaimPhase::confirmed;
          GangId gang = *c->gang;
          --window_.gang(gang).outstanding;
          gang_step(gang, now, out);  // may complete the gang
        }
        continue;
      }
    } else if (state != TaskState::running) {
      continue;  // duplicate or stale
    }
    end_task(j, ev, now, out);
  }
}

void Scheduler::end_task(JobRecord& j, const NodeEvent& ev, TimePoint now, Outbox& out) {
  TaskRecord& r = j.tasks[ev.task.index];
  r.exit_code = ev.exit_code;
  r.end = ev.end.reason != EndReason::none ? ev.end : inferred_end(ev.final_state, ev.exit_code);
  bool failed = ev.final_state == TaskState::failed;
  bool lost = ev.final_state == TaskState::lost;
  bool again = !j.cancelled && ((failed && r.failures < j.spec.max_retries) ||
                                (lost && r.losses < j.spec.max_lost_retries));
  if (again) {
    ++(failed ? r.failures : r.losses);
    ++stats_.tasks_retried;
    if (lost) ++stats_.tasks_lost;
    std::string why = failed ? "task " + std::to_string(ev.task.index) + " failed (" + describe(r.end) +
                                   "), retry " + std::to_string(r.failures) + " of " +
                                   std::to_string(j.spec.max_retries)
                             : "task " + std::to_string(ev.task.index) + " was lost with its node, retry " +
                                   std::to_string(r.losses) + " of " + std::to_string(j.spec.max_lost_retries);
    views_.note(j.spec.id).last_removal = why;
    r.node.reset();
    return_to_queue(j, {ev.task.index}, false, why, now);
    return;
  }
  // The node stays in the record: `status` says where a finished task ran.
  if (ev.final_state == TaskState::succeeded && now >= r.started) {
    ++j.observed.successes;
    j.observed.run_time += now - r.started;
  }
  table_.set_state(j, ev.task.index, ev.final_state);
  record_final(j, ev);
  ++stats_.tasks_finished;
  maybe_finished(j, now, out);
}

void Scheduler::keep_first_run(JobRecord& j, const NodeEvent& ev, std::optional<NodeIndex> n, TimePoint now,
                               Outbox& out) {
  TaskIndex t = ev.task.index;
  TaskRecord& r = j.tasks[t];
  if (r.state == TaskState::pending) {
    if (j.pending() == 1) queue_.remove(j);  // keyed as it is now
    table_.end_requeued(j, t, TaskState::succeeded);
  } else if (r.state == TaskState::running && r.node) {
    // The agent kills the rerun; the end its node reports later is stale.
    out.releases.push_back(window_.release_request(view_.node(*r.node).id, j.spec.id, std::nullopt, {t}));
  }
  r.node = n;
  r.exit_code = ev.exit_code;
  r.end = ev.end.reason != EndReason::none ? ev.end : inferred_end(ev.final_state, ev.exit_code);
  table_.set_state(j, t, TaskState::succeeded);
  record_final(j, ev);
  ++stats_.tasks_finished;
  views_.note(j.spec.id).last_removal = "task " + std::to_string(t) +
                                        ": its node came back and said its run there had succeeded; the run "
                                        "placed meanwhile was stopped";
  maybe_finished(j, now, out);
}

void Scheduler::record_final(JobRecord& j, const NodeEvent& ev) {
  j.tasks[ev.task.index].journaled = false;
  rerank(j);
  // The node stays in the record: after a restart `status` still says where
  // a finished task ran.
  const TaskRecord& r = j.tasks[ev.task.index];
  journal_tasks(j.spec.id, {ev.task.index}, ev.final_state, r.node ? view_.node(*r.node).id : NodeId{}, ev.claim_id,
                ev.exit_code, r.end);
}

void Scheduler::record_exit(const NodeEvent& ev) {
  JobRecord* j = table_.find(ev.task.job);
  if (!j || ev.task.index >= j->tasks.size()) return;
  TaskRecord& r = j->tasks[ev.task.index];
  // Only the run the scheduler took away, and only once: a task placed
  // again meanwhile has a new run whose end this is not.
  bool taken = r.end.reason == EndReason::cancelled || r.end.reason == EndReason::preempted ||
               r.end.reason == EndReason::evicted;
  if (!taken || r.end.signal != 0 || r.end.exit_code >= 0 || ev.end.reason == EndReason::none) return;
  r.end.signal = ev.end.signal;
  r.end.exit_code = ev.end.exit_code;
  r.end.peak_memory_bytes = ev.end.peak_memory_bytes;
  r.exit_code = ev.exit_code;
  if (is_final(r.state))
    journal_tasks(j->spec.id, {ev.task.index}, r.state, NodeId{}, ev.claim_id, r.exit_code, r.end);
}

void Scheduler::maybe_finished(JobRecord& j, TimePoint now, Outbox& out) {
  if (!j.finished()) return;
  if (j.finished_at == kNever) {
    j.finished_at = now;
    switch (job_state(j.by_state, j.spec.count, j.cancelled)) {
      case JobState::succeeded:
        ++stats_.jobs_ended_succeeded;
        break;
      case JobState::cancelled:
        ++stats_.jobs_ended_cancelled;
        break;
      default:
        ++stats_.jobs_ended_failed;
    }
  }
  // What the policy and the allotments kept about it.
  drop_hold(j.spec.id);
  // Its running slot and locks go to the next jobs of the lock queues.
  for (JobId next : gate_.finish(j.spec.id)) on_granted(next);
  marks_.erase(j.spec.id);
  if (auto mine = reserve_jobs_.find(j.spec.user); mine != reserve_jobs_.end()) {
    mine->second.erase(j.spec.id);
    if (mine->second.empty()) reserve_jobs_.erase(mine);
  }
  machines_.erase(j.spec.id);
  out.finished_jobs.push_back(j.spec.id);
}

void Scheduler::declare_lost(JobRecord& j, const std::vector<TaskIndex>& tasks, TimePoint now) {
  if (tasks.empty()) return;
  stats_.tasks_lost += tasks.size();
  if (!j.tasks.empty())
    for (auto t : tasks) j.tasks[t].end = TaskEnd::decided(EndReason::node_lost);
  return_to_queue(j, tasks, false, "its node no longer holds it", now);
}

void Scheduler::reconcile_node(const NodeReport& report, TimePoint now, Outbox& out, bool restarted) {
  auto n = view_.find_node(report.spec.id);
  for (const NodeEvent* ev : reconciler_.succeeded_while_lost(report, config_.partition, table_))
    keep_first_run(table_.at(ev->task.job), *ev, n, now, out);
  for (const NodeEvent* ev : reconciler_.finished_while_away(report, n, config_.partition, table_)) {
    JobRecord& j = table_.at(ev->task.job);
    if (n) j.tasks[ev->task.index].node = n;  // it ran there: its record says so after it ends
    end_task(j, *ev, now, out);
  }
  if (!n) return;
  apply(reconciler_.reconcile(*n, report.spec.id, report.allocations, &report.claims, restarted, config_.partition,
                              table_, window_),
        *n, report.spec.id, now, out);
}

void Scheduler::apply(const ReconcileDecision& d, NodeIndex n, NodeId node, TimePoint now, Outbox& out) {
  for (const auto& t : d.adopt) table_.at(t.job).tasks[t.index].node = n;
  for (const auto& [job, tasks] : d.release_allocations) {
    stats_.reconcile_releases += tasks.size();
    out.releases.push_back(window_.release_request(node, job, std::nullopt, tasks));
  }
  for (const auto& [job, claim] : d.release_claims) {
    ++stats_.reconcile_releases;
    out.releases.push_back(window_.release_request(node, job, claim));
  }
  for (const auto& [job, tasks] : d.lost) {
    JobRecord& j = table_.at(job);
    for (auto t : tasks) j.tasks[t].node.reset();
    declare_lost(j, tasks, now);
  }
}

void Scheduler::node_down(NodeId node, TimePoint now, Outbox& out) {
  auto n = view_.find_node(node);
  if (!n) return;
  const NodeView& v = view_.node(*n);
  NodeSnapshot s;
  s.node = node;
  s.generation = v.generation;
  s.state = NodeState::down;
  s.capacity = v.capacity;
  s.free = v.reported_free;
  view_.apply_snapshot(*n, s);
  // Claims to it will not be answered: give up on them now.
  for (auto id : window_.unanswered_on(*n))
    if (window_.find(id)) give_up_claim(id, now, out);
  // Releases waiting for it: what they release is gone with the node.
  std::vector<Release> gone;
  for (auto it = window_.releases().begin(); it != window_.releases().end();) {
    if (it->second.node != *n) {
      ++it;
      continue;
    }
    gone.push_back(std::move(it->second));
    it = window_.releases().erase(it);
  }
  for (JobId job : reservations_.on_node(*n)) drop_hold(job);
  for (auto& r : gone) {
    for (auto t : r.request.tasks) reservations_.freed(TaskRef{r.request.job, t});
    view_.remove_change_in_flight(*n);
    JobRecord& j = table_.at(r.request.job);
    TaskState held = r.why == Release::Why::removal ? TaskState::running : TaskState::claimed;
    std::vector<TaskIndex> back;
    for (auto t : r.request.tasks)
      if (j.tasks[t].state == held) back.push_back(t);
    for (auto t : back) j.tasks[t].node.reset();
    const JobNotes* notes = views_.notes(j.spec.id);
    return_to_queue(j, back, false, notes ? notes->last_removal : std::string("node lost"), now);
    queue_.enqueue(j);
  }
  // Running tasks: lost (unless the node comes back saying they succeeded).
  for (const auto& t : table_.running_on(*n)) {
    reconciler_.lost_with(node, t);
    NodeEvent ev;
    ev.kind = NodeEvent::Kind::task_finished;
    ev.partition = config_.partition;
    ev.task = t;
    ev.final_state = TaskState::lost;
    ev.exit_code = -1;
    ev.end = TaskEnd::decided(EndReason::node_lost);
    end_task(table_.at(t.job), ev, now, out);
  }
  // Anything restored onto it and still unverified is lost too.
  for (auto& [job, tasks] : reconciler_.forget(node)) declare_lost(table_.at(job), tasks, now);
}

}  // namespace claimsched::core
