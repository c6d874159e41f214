// The claim window's transitions as the scheduler applies them: replies to
// claims, confirms and releases, timeouts, gangs, and the removals the policy
// or the user ask for (preempt, cancel).

#include <algorithm>
#include <map>

#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

namespace {

std::string describe_reject(ClaimOutcome o, const NodeView& node) {
  std::string why = "claim ";
  why += to_string(o);
  why += " on node ";
  why += std::to_string(node.id.value);
  if (o == ClaimOutcome::insufficient) why += " (free there: " + node.reported_free.to_string() + ")";
  return why;
}

}  // namespace

void Scheduler::observe_generation(NodeIndex n, const NodeSnapshot& s, bool is_change, Outbox& out) {
  const NodeView& v = view_.node(n);
  Generation expected = v.generation + (is_change ? 1 : 0);
  if (s.generation > expected) {
    ++stats_.generation_gaps;
    out.snapshot_requests.push_back(v.id);
  }
  view_.apply_snapshot(n, s);
}

void Scheduler::return_to_queue(JobRecord& j, const std::vector<TaskIndex>& tasks, bool count_attempt,
                                const std::string& why, TimePoint now) {
  if (tasks.empty()) return;
  if (j.cancelled) {
    // Nothing of a cancelled job goes back to the queue.
    for (auto t : tasks) {
      table_.set_state(j, t, TaskState::cancelled);
      j.tasks[t].node.reset();
    }
    journal_tasks(j.spec.id, tasks, TaskState::cancelled, NodeId{}, ClaimId{});
    return;
  }
  bool exhausted = false;
  if (count_attempt)
    for (auto t : tasks) {
      TaskRecord& r = j.tasks[t];
      if (++r.attempts >= config_.max_claim_attempts) {
        exhausted = true;
        r.attempts = 0;
      }
    }
  auto unjournal = table_.requeue(j, tasks);
  journal_tasks(j.spec.id, unjournal, TaskState::pending, NodeId{}, ClaimId{});
  stats_.tasks_requeued += tasks.size();
  rerank(j);
  if (!exhausted) {
    queue_.enqueue(j);
    return;
  }
  // Its attempts are spent: it backs off (doubling, capped) and is tried
  // again; explain() shows why it waits and until when.
  if (j.queue.state != QueueState::backing_off) {
    queue_.back_off(j, now);
    ++stats_.backoffs;
  }
  views_.note(j.spec.id).reason =
      why + " (" + std::to_string(config_.max_claim_attempts) + " attempts in a row)";
}

// --- claims ------------------------------------------------------------------------

void Scheduler::confirm_claim(Claim& c, TimePoint now, Outbox& out) {
  // The placement is recorded before the node is asked to make it real.
  if (config_.journal) {
    JobRecord& j = table_.at(c.request.job);
    // Not a task that ended while its claim was out (keep_first_run): its
    // record stays final.
    std::vector<TaskIndex> placed;
    for (auto t : c.request.tasks)
      if (!is_final(j.tasks[t].state)) {
        j.tasks[t].journaled = true;
        placed.push_back(t);
      }
    if (!placed.empty())
      journal_tasks(c.request.job, placed, TaskState::claimed, c.request.node, c.request.claim_id);
  }
  c.phase = ClaimPhase::confirming;
  c.sent_at = now;
  view_.add_change_in_flight(c.node);
  ++stats_.confirms_sent;
  out.confirms.push_back(window_.confirm_request(c.request));
}

void Scheduler::mark_running(JobRecord& j, const Claim& c, TimePoint now, Outbox& out) {
  uint64_t placed = 0;
  for (auto t : c.request.tasks) {
    TaskRecord& r = j.tasks[t];
    // Ended while its claim was out (keep_first_run): it does not run here.
    if (!c.gang && is_final(r.state)) continue;
    ++placed;
    // A gang member can have run and finished before its gang completed.
    if (r.state == TaskState::claimed) table_.set_state(j, t, TaskState::running);
    r.node = c.node;
    r.attempts = 0;
    r.started = now;
  }
  queue_.reset_backoff(j);
  if (placed > 0 && j.first_running == kNever) out.started_jobs.push_back(j.spec.id);
  j.first_running = std::min(j.first_running, now);
  stats_.placements += placed;
  auto latency = now - std::max(j.spec.submit_time, started_at_);
  stats_.placement_latency.record(static_cast<uint64_t>(std::max<int64_t>(0, latency.count())), placed);
}

void Scheduler::on_claim_reply(const ClaimReply& reply, TimePoint now, Outbox& out) {
  bool accepted = reply.outcome == ClaimOutcome::accepted;
  Claim* c = window_.find(reply.claim_id);
  if (!c || c->phase != ClaimPhase::sent) {
    // An answer to a claim we gave up on (or a duplicate).
    ++stats_.late_replies;
    // Late or not, the node says a newer owner has the partition.
    if (reply.outcome == ClaimOutcome::stale_epoch) on_fenced();
    if (auto n = view_.find_node(reply.snapshot.node)) {
      observe_generation(*n, reply.snapshot, accepted, out);
      // Given up: free what it holds, right away. Fire and forget: unanswered, it expires.
      if (accepted && !c) out.releases.push_back(window_.release_request(reply.snapshot.node, JobId{}, reply.claim_id));
    }
    return;
  }
  stats_.claim_round_trip.record(static_cast<uint64_t>(std::max<int64_t>(0, (now - c->sent_at).count())));
  view_.remove_in_flight(c->node, c->request.total(), static_cast<uint32_t>(c->request.tasks.size()));
  observe_generation(c->node, reply.snapshot, accepted, out);
  JobRecord& j = table_.at(c->request.job);
  if (accepted && j.cancelled) {
    // Cancelled meanwhile: give the room back instead of confirming.
    out.releases.push_back(window_.release_request(c->request.node, c->request.job, c->request.claim_id));
    claim_failed(reply.claim_id, "cancelled", false, now, out);
    maybe_finished(j, now, out);
    return;
  }
  if (accepted && !c->gang &&
      std::all_of(c->request.tasks.begin(), c->request.tasks.end(),
                  [&](TaskIndex t) { return is_final(j.tasks[t].state); })) {
    // Its tasks ended meanwhile (keep_first_run): give the room back.
    out.releases.push_back(window_.release_request(c->request.node, c->request.job, c->request.claim_id));
    claim_failed(reply.claim_id, "its tasks ended meanwhile", false, now, out);
    return;
  }
  if (accepted) {
    ++stats_.claims_accepted;
    if (!c->gang) {
      confirm_claim(*c, now, out);
      return;
    }
    c->phase = ClaimPhase::accepted;
    GangId gang = *c->gang;
    --window_.gang(gang).outstanding;
    gang_step(gang, now, out);
    return;
  }
  switch (reply.outcome) {
    case ClaimOutcome::conflict:
      ++stats_.rejected_conflict;
      break;
    case ClaimOutcome::insufficient:
      ++stats_.rejected_insufficient;
      break;
    case ClaimOutcome::stale_epoch:
      ++stats_.rejected_stale_epoch;
      on_fenced();
      break;
    default:
      ++stats_.rejected_other;
      break;
  }
  claim_failed(reply.claim_id, describe_reject(reply.outcome, view_.node(c->node)),
               reply.outcome != ClaimOutcome::stale_epoch, now, out);
}

void Scheduler::claim_failed(ClaimId id, const std::string& why, bool count_attempt, TimePoint now, Outbox& out) {
  Claim c = std::move(*window_.find(id));
  window_.erase(id);
  JobRecord& j = table_.at(c.request.job);
  if (!c.gang) {
    // A task may have ended meanwhile (keep_first_run): only the others come back.
    std::vector<TaskIndex> back;
    for (auto t : c.request.tasks)
      if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
    return_to_queue(j, back, count_attempt, why, now);
    return;
  }
  Gang& g = window_.gang(*c.gang);
  g.claims.erase(std::find(g.claims.begin(), g.claims.end(), id));
  --g.outstanding;
  if (!g.failure) g.failure = why;
  // The gang's other tasks come back when it resolves; these now (their
  // claim holds nothing on the node).
  std::vector<TaskIndex> back;
  for (auto t : c.request.tasks)
    if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
  return_to_queue(j, back, false, why, now);
  queue_.remove(j);  // placed again, whole, once the gang resolved
  gang_step(*c.gang, now, out);
}

void Scheduler::gang_step(GangId id, TimePoint now, Outbox& out) {
  Gang& g = window_.gang(id);
  if (g.outstanding > 0) return;
  if (g.failure) {
    abort_gang(id, now, out);
    return;
  }
  if (!g.confirming) {
    g.confirming = true;
    for (auto cid : g.claims) {
      confirm_claim(*window_.find(cid), now, out);
      ++g.outstanding;
    }
    return;
  }
  JobRecord& j = table_.at(g.job);
  for (auto cid : g.claims) {
    mark_running(j, *window_.find(cid), now, out);
    window_.erase(cid);
  }
  window_.close_gang(id);
  maybe_finished(j, now, out);
}

void Scheduler::abort_gang(GangId id, TimePoint now, Outbox& out) {
  ++stats_.gangs_aborted;
  Gang g = std::move(window_.gang(id));
  window_.close_gang(id);
  JobRecord& j = table_.at(g.job);
  std::vector<TaskIndex> back;
  for (auto cid : g.claims) {
    Claim c = std::move(*window_.find(cid));
    window_.erase(cid);
    if (c.phase == ClaimPhase::confirmed) {
      // Allocated on the node: its tasks come back only when the node says
      // they are freed (else they could be allocated twice); the release is
      // resent until it is answered.
      view_.add_change_in_flight(c.node);
      auto request = window_.release_request(c.request.node, c.request.job, c.request.claim_id, c.request.tasks);
      out.releases.push_back(request);
      window_.add_release(std::move(request), c.node, Release::Why::aborted_gang, now);
      continue;
    }
    // Only accepted: the claim is never confirmed now, so the tasks are free
    // to go elsewhere at once. Fire and forget: if lost, the claim expires.
    for (auto t : c.request.tasks)
      if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
    out.releases.push_back(window_.release_request(c.request.node, c.request.job, c.request.claim_id));
  }
  return_to_queue(j, back, true, "gang aborted: " + g.failure.value_or("?"), now);
  // Tasks already returned when their own claim failed are pending too.
  queue_.enqueue(j);
}

void Scheduler::on_confirm_reply(const ConfirmReply& reply, TimePoint now, Outbox& out) {
  Claim* c = window_.find(reply.claim_id);
  if (!c || c->phase != ClaimPhase::confirming) {
    ++stats_.late_replies;
    if (reply.outcome == ConfirmOutcome::stale_epoch) on_fenced();
    if (auto n = view_.find_node(reply.snapshot.node)) observe_generation(*n, reply.snapshot, false, out);
    return;
  }
  view_.remove_change_in_flight(c->node);
  bool confirmed = reply.outcome == ConfirmOutcome::confirmed;
  observe_generation(c->node, reply.snapshot, confirmed, out);
  if (reply.outcome == ConfirmOutcome::stale_epoch) on_fenced();
  JobRecord& j = table_.at(c->request.job);
  // Worded only when a confirm failed: this runs once per placement.
  auto expired = [node = c->request.node] {
    return "claim on node " + std::to_string(node.value) + " expired before its confirm";
  };
  if (c->gang) {
    if (!confirmed) {
      // The claim is gone on the node: nothing to release there.
      ++stats_.confirms_failed;
      claim_failed(reply.claim_id, expired(), false, now, out);
      return;
    }
    c->phase = ClaimPhase::confirmed;
    GangId gang = *c->gang;
    --window_.gang(gang).outstanding;
    gang_step(gang, now, out);
    return;
  }
  if (confirmed && j.cancelled) {
    // Cancelled while its confirm was on the way: free it again.
    out.releases.push_back(
        window_.release_request(c->request.node, c->request.job, std::nullopt, c->request.tasks));
    for (auto t : c->request.tasks) table_.set_state(j, t, TaskState::cancelled);
    window_.erase(reply.claim_id);
    maybe_finished(j, now, out);
    return;
  }
  if (confirmed) {
    mark_running(j, *c, now, out);
    // A task that ended while its confirm was out (keep_first_run): free it.
    std::vector<TaskIndex> ended;
    for (auto t : c->request.tasks)
      if (is_final(j.tasks[t].state)) ended.push_back(t);
    if (!ended.empty())
      out.releases.push_back(window_.release_request(c->request.node, c->request.job, std::nullopt, ended));
    window_.erase(reply.claim_id);
    maybe_finished(j, now, out);
    return;
  }
  ++stats_.confirms_failed;
  claim_failed(reply.claim_id, expired(), true, now, out);
}

void Scheduler::on_release_reply(const ReleaseReply& reply, TimePoint now, Outbox& out) {
  auto n = view_.find_node(reply.snapshot.node);
  if (!n) return;
  if (reply.stale_epoch) on_fenced();
  Release* rel = reply.claim_id.value == 0 ? nullptr : window_.find_release(reply.claim_id);
  observe_generation(*n, reply.snapshot, reply.released > 0, out);
  // Only tracked releases count as changes in flight: a fire-and-forget one
  // that is lost must not leave the node "busy" for good (strict CAS).
  if (!rel || rel->node != *n) return;
  view_.remove_change_in_flight(*n);
  Release r = std::move(*rel);
  window_.erase_release(reply.claim_id);
  JobRecord& j = table_.at(r.request.job);
  std::vector<TaskIndex> back;
  if (r.why == Release::Why::removal) {
    // A preempted or evicted task is free on its node: it may run again
    // (unless it ended there meanwhile).
    if (r.for_job)
      if (JobRecord* p = table_.find(*r.for_job)) queue_.wake(*p);
    for (auto t : r.request.tasks) reservations_.freed(TaskRef{j.spec.id, t});
    for (auto t : r.request.tasks)
      if (j.tasks[t].state == TaskState::running) back.push_back(t);
    const JobNotes* notes = views_.notes(j.spec.id);
    return_to_queue(j, back, false, notes ? notes->last_removal : std::string(), now);
    if (j.held() == 0 && !j.finished() && gate_.is_started(j.spec.id)) requeue_in_lock_queue(j, now);
    return;
  }
  // An aborted gang's confirmed tasks are free now: back to the queue.
  for (auto t : r.request.tasks)
    if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
  return_to_queue(j, back, false, "gang aborted", now);
  queue_.enqueue(j);
}

// --- timeouts --------------------------------------------------------------------

void Scheduler::give_up_claim(ClaimId id, TimePoint now, Outbox& out) {
  ++stats_.claim_timeouts;
  // Treated as rejected: the node's claim, if any, expires on its own and a
  // late accept is released on arrival.
  Claim& c = *window_.find(id);
  view_.remove_in_flight(c.node, c.request.total(), static_cast<uint32_t>(c.request.tasks.size()));
  claim_failed(id, "node " + std::to_string(c.request.node.value) + " did not answer a claim", true, now, out);
}

void Scheduler::on_tick(TimePoint now, Outbox& out) {
  for (auto& [job, tasks] : reconciler_.expire(now, config_.recovery_grace))
    declare_lost(table_.at(job), tasks, now);
  for (auto& [id, rel] : window_.releases()) {
    if (now - rel.sent_at < config_.reply_timeout) continue;
    rel.sent_at = now;  // releasing is idempotent on the node
    out.releases.push_back(rel.request);
  }
  for (auto id : window_.overdue(now, config_.reply_timeout)) {
    Claim* c = window_.find(id);
    if (!c) continue;  // a gang aborted by an earlier one
    if (c->phase == ClaimPhase::confirming) {
      // Confirms are idempotent on the node: ask again.
      c->sent_at = now;
      out.confirms.push_back(window_.confirm_request(c->request));
    } else if (c->phase == ClaimPhase::sent) {
      give_up_claim(id, now, out);
    }
    // accepted / confirmed gang members wait for their gang.
  }
}

// --- removals --------------------------------------------------------------------

Status Scheduler::preempt(TaskRef task, TaskState kind, const std::string& why, TimePoint now, Outbox& out,
                          std::optional<JobId> for_job) {
  JobRecord* j = table_.find(task.job);
  if (!j) return make_error(Errc::unknown_name, "preempt: unknown job " + std::to_string(task.job.value));
  const TaskRecord* r = j->task(task.index);
  if (!r || r->state != TaskState::running || !r->node || window_.releasing(task))
    return make_error(Errc::wrong_state, "preempt: task " + std::to_string(task.job.value) + "." +
                                             std::to_string(task.index) + " is not running");
  NodeIndex n = *r->node;
  // The task stays running until the node says it is freed; only then does
  // it come back to the queue (placed elsewhere before, it could be
  // allocated twice).
  auto request = window_.release_request(view_.node(n).id, task.job, window_.next_id(), {task.index}, kind);
  out.releases.push_back(request);
  window_.add_release(std::move(request), n, Release::Why::removal, now, for_job);
  view_.add_change_in_flight(n);
  JobNotes& notes = views_.note(task.job);
  bool evicted = kind == TaskState::evicted;
  j->tasks[task.index].end = TaskEnd::decided(evicted ? EndReason::evicted : EndReason::preempted);
  if (for_job && !evicted)
    notes.preempted_by[task.index] = *for_job;
  else
    notes.preempted_by.erase(task.index);
  if (kind == TaskState::evicted) {
    ++notes.evictions;
    ++stats_.evictions;
  } else {
    ++notes.preemptions;
    ++stats_.preemptions;
  }
  notes.last_removal = std::string(to_string(kind)) + " task " + std::to_string(task.index) + " on node " +
                       std::to_string(view_.node(n).id.value) + ": " + why;
  return Status::ok();
}

Status Scheduler::cancel(JobId id, TimePoint now, Outbox& out) {
  JobRecord* jp = table_.find(id);
  if (!jp) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  JobRecord& j = *jp;
  if (j.cancelled) return Status::ok();  // cancelling twice is harmless
  if (j.finished()) return make_error(Errc::wrong_state, "job " + std::to_string(id.value) + " already ended");
  j.cancelled = true;
  drop_hold(id);
  queue_.remove(j);
  if (j.tasks.empty()) j.tasks.resize(j.spec.count);
  // Pending tasks end here; running ones are released on their nodes (the
  // agent kills them); claimed ones end when their claim comes back.
  std::vector<TaskIndex> ended = table_.end_pending(j, TaskState::cancelled);
  std::map<NodeIndex, std::vector<TaskIndex>> release;
  for (TaskIndex t = 0; t < j.spec.count; ++t) {
    TaskRecord& r = j.tasks[t];
    if (r.state != TaskState::running) continue;
    if (r.node) release[*r.node].push_back(t);
    table_.set_state(j, t, TaskState::cancelled);
    ended.push_back(t);
  }
  for (auto t : ended) j.tasks[t].end = TaskEnd::decided(EndReason::cancelled);
  std::sort(ended.begin(), ended.end());
  for (auto& [n, tasks] : release)
    out.releases.push_back(window_.release_request(view_.node(n).id, id, std::nullopt, std::move(tasks)));
  journal_tasks(id, ended, TaskState::cancelled, NodeId{}, ClaimId{}, -1, TaskEnd::decided(EndReason::cancelled));
  if (config_.journal) journal_.jobs_cancelled.push_back(j.spec);
  views_.note(id).reason = "cancelled";
  maybe_finished(j, now, out);
  return Status::ok();
}

}  // namespace claimsched::core
