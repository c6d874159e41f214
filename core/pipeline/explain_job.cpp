// What a job is doing, for those who ask: explain's words and structure, the
// job's view for status, and the lock queue's part of the story. Reads the
// stages; changes nothing.

#include <limits>

#include "core/duration.hpp"
#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

std::optional<LockExplanation> Scheduler::lock_explanation(const JobRecord& j) const {
  if (!uses_lock_queue(j)) return std::nullopt;
  const LockQueueSettings& s = gate_.settings(j.class_index);
  LockExplanation e;
  e.order = s.order;
  e.declared = j.spec.locks.to_string();
  e.running_limit = s.running_limit;
  for (LockLevel level : kAllLockLevels)
    e.levels[static_cast<size_t>(level)] = j.spec.locks.bgl ? "bgl" : j.spec.locks[level].to_string();
  if (auto st = gate_.standing(j.spec.id, last_now_)) {
    e.running = st->running;
    e.value = st->value;
    e.age_ticks = st->age_ticks;
    e.weight = st->weight;
    return e;
  }
  e.running = gate_.running_in(j.class_index);
  e.started = gate_.is_started(j.spec.id);
  e.held = gate_.locks().held_by(j.spec.id).to_string();
  e.block = gate_.blocked_on(j.spec.id);
  return e;
}

std::string Scheduler::explain(JobId id) const {
  auto e = explanation(id);
  return e ? e->summary : e.error().message;
}

Expected<Explanation> Scheduler::explanation(JobId id) const {
  const JobRecord* j = table_.find(id);
  if (!j) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  Explanation e;
  e.job = id;
  e.pending = j->pending();
  e.gang = j->spec.gang;
  auto say = [&](WaitVerdict v, std::string words) -> Expected<Explanation> {
    e.verdict = v;
    e.summary = std::move(words);
    return e;
  };
  e.locks = lock_explanation(*j);
  const JobNotes* notes = views_.notes(id);
  if (j->finished()) return say(WaitVerdict::ended, "finished");
  if (j->pending() == 0)
    return say(WaitVerdict::placed, "all tasks placed" + (notes && !notes->backfilled.empty()
                                                             ? "; " + notes->backfilled
                                                             : std::string()));
  if (j->queue.state == QueueState::gated && e.locks) {
    const LockExplanation& l = *e.locks;
    std::string cls = "class '" + config_.classes[j->class_index].name + "'";
    std::string slots = std::to_string(l.running) + " of " +
                        (l.running_limit ? std::to_string(l.running_limit) : std::string("unlimited")) +
                        " running or waiting";
    if (l.block)
      return say(WaitVerdict::waiting_on_lock, "holds a running slot of " + cls + " and waits for " +
                                                   l.block->to_string());
    char weight[32];
    std::snprintf(weight, sizeof weight, "%.3g", l.weight);
    return say(WaitVerdict::queued, "in line for a running slot of " + cls + " (" + slots + ", " +
                                        std::string(to_string(l.order)) + " order): weight " + weight +
                                        " (value " + format_tenths(l.value ? l.value->value : 0) + ", age " +
                                        std::to_string(l.age_ticks) + " ticks)");
  }
  if (const Hold* h = reservations_.of(id)) {
    std::string nodes;
    for (const auto& p : h->parts) nodes += (nodes.empty() ? "" : ", ") + std::to_string(view_.node(p.node).id.value);
    return say(h->waiting() == 0 ? WaitVerdict::fits_now : WaitVerdict::unschedulable,
               "room is held for it on node(s) " + nodes +
                   (h->waiting() == 0 ? std::string(", claimed on the next pass")
                                      : " until " + std::to_string(h->waiting()) +
                                            " task(s) taken away for it are freed") +
                   (h->why.empty() ? "" : ": " + h->why));
  }
  if (notes && notes->waits == WaitCause::reservation && j->queue.state == QueueState::waiting_for_capacity &&
      !future_start(id))
    return say(WaitVerdict::unschedulable, notes->reason);
  if (notes && (notes->waits == WaitCause::not_granted || notes->waits == WaitCause::capped) &&
      j->queue.state != QueueState::queued)
    return say(notes->waits == WaitCause::capped ? WaitVerdict::queued : WaitVerdict::unschedulable, notes->reason);
  switch (j->queue.state) {
    case QueueState::backing_off:
      return say(WaitVerdict::backing_off, "backing off until " + format_duration(j->queue.until) + " (" +
                                               std::to_string(j->queue.backoff_level) +
                                               " backoff(s) in a row): " + (notes ? notes->reason : ""));
    case QueueState::queued:
      return say(WaitVerdict::queued, "waiting for its turn in the queue");
    case QueueState::gated:
      return say(WaitVerdict::queued, "in its class's lock queue");
    case QueueState::idle:
      if (j->spec.gang && j->count_in(TaskState::claimed) > 0)
        return say(WaitVerdict::queued,
                   "gang: the tasks of an aborted attempt are being released; it is placed again, whole, then");
      return say(WaitVerdict::queued, "not in the queue");
    case QueueState::waiting_for_capacity:
      break;
  }
  PlacementRequest req = request_for(*j, true);
  explain_waiting(e, count_placement(view_, j->pool, req.per_task, j->spec.constraints, j->pending()),
                  view_.pool(j->pool).name, req.per_task);
  if (!j->spec.gang && e.verdict != WaitVerdict::fits_now) {
    // The placement stage's own words: what is free where.
    auto result = place(view_, req, config_.classes[j->class_index].placement);
    if (result.verdict != PlacementVerdict::fit)
      e.summary = (e.verdict == WaitVerdict::unresolvable ? "" : "waiting for capacity: ") + result.reason;
  }
  if (const FutureStart* fs = future_start(id)) {
    e.reserved_start = fs->at;
    for (const auto& p : fs->parts) e.reserved_nodes.push_back(view_.node(p.node).id);
    if (notes && notes->waits == WaitCause::reservation) {
      // The room it sees now is another reservation's.
      e.verdict = WaitVerdict::unschedulable;
      e.summary = start_words(*fs) + "; " + notes->reason;
    } else {
      e.summary = start_words(*fs) + ": " + e.summary;
    }
  } else if (notes && !notes->no_reservation.empty()) {
    e.summary += "; " + notes->no_reservation;
  }
  return e;
}

Expected<JobView> Scheduler::job_view(JobId id, bool with_tasks) const {
  const JobRecord* j = table_.find(id);
  if (!j) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  bool waits = !j->finished() && j->pending() > 0;
  std::string why = waits ? explain(id) : std::string();
  if (j->cancelled) why = "cancelled";
  JobView v = views_.view(*j, view_, with_tasks, std::move(why));
  if (j->queue.state == QueueState::gated) {
    if (auto st = gate_.standing(id, last_now_)) {
      v.queue_weight = st->weight;
      v.queue_age_ticks = st->age_ticks;
    } else if (gate_.blocked_on(id) && v.state == JobState::pending) {
      v.state = JobState::waiting;
    }
  }
  return v;
}

std::vector<QueueDepth> Scheduler::queue_depths(TimePoint now) const {
  std::vector<QueueDepth> out;
  auto row = [&](uint32_t p, uint32_t c) {
    PendingDepths::Row r = table_.pending_in(p, c);
    QueueDepth q{view_.pool(p).name, config_.classes[c].name, r.jobs, r.tasks, Duration{0}};
    TimePoint oldest = table_.oldest_pending_in(p, c);
    if (oldest != kNever) q.oldest_wait = std::max(Duration{0}, now - oldest);
    out.push_back(std::move(q));
  };
  // Every (pool, class) a job of the class may wait in, empty or not; a
  // class bound to another pool only where a job of it waits all the same.
  for (uint32_t p = 0; p < view_.pool_count(); ++p)
    for (uint32_t c = 0; c < config_.classes.size(); ++c) {
      const ClassConfig& cls = config_.classes[c];
      if (cls.pool.empty() || cls.pool == view_.pool(p).name || table_.pending_in(p, c).jobs > 0) row(p, c);
    }
  return out;
}

}  // namespace claimsched::core
