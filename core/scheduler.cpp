#include "core/scheduler.hpp"

#include <algorithm>
#include <map>

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

/// A release under this partition's epoch of a claim (zero: none) and/or
/// tasks of `job` on `node`.
ReleaseRequest release_request(const SchedulerConfig& config, NodeId node, JobId job, ClaimId claim,
                               std::vector<TaskIndex> tasks = {}) {
  ReleaseRequest r;
  r.partition = config.partition;
  r.epoch = config.epoch;
  r.node = node;
  r.job = job;
  r.claim_id = claim;
  r.tasks = std::move(tasks);
  r.reason = TaskState::cancelled;
  return r;
}

// Frees the confirmed tasks of an aborted gang's claim. It names the claim so
// that the reply can be matched to it (the node finds no live claim by that
// id and frees the tasks), and is resent until answered.
ReleaseRequest release_of_confirmed(const SchedulerConfig& config, const ClaimRequest& claim) {
  return release_request(config, claim.node, claim.job, claim.claim_id, claim.tasks);
}

}  // namespace

Status SchedulerConfig::validate() const {
  if (pools.empty()) return make_error(Errc::invalid_argument, "scheduler: no pools");
  if (classes.empty()) return make_error(Errc::invalid_argument, "scheduler: no classes");
  bool has_default = false;
  for (const auto& c : classes) {
    if (c.name.empty()) return make_error(Errc::invalid_argument, "scheduler: a class has no name");
    if (c.weight == 0)
      return make_error(Errc::invalid_argument, "class '" + c.name + "': weight must be positive");
    has_default |= c.name == default_class;
  }
  if (!has_default)
    return make_error(Errc::invalid_argument,
                      "scheduler: default class '" + default_class + "' is not defined");
  if (max_claims_in_flight == 0)
    return make_error(Errc::invalid_argument, "scheduler: max_claims_in_flight must be positive");
  if (max_tasks_per_claim == 0)
    return make_error(Errc::invalid_argument, "scheduler: max_tasks_per_claim must be positive");
  if (max_claim_attempts == 0)
    return make_error(Errc::invalid_argument, "scheduler: max_claim_attempts must be positive");
  if (epoch == 0 || epoch >= kMaxEpoch)
    return make_error(Errc::invalid_argument, "scheduler: epoch must be in 1.." +
                                                  std::to_string(kMaxEpoch - 1));
  return Status::ok();
}

void SchedulerStats::merge(const SchedulerStats& o) {
  jobs_submitted += o.jobs_submitted;
  tasks_submitted += o.tasks_submitted;
  claims_sent += o.claims_sent;
  claims_accepted += o.claims_accepted;
  rejected_conflict += o.rejected_conflict;
  rejected_insufficient += o.rejected_insufficient;
  rejected_other += o.rejected_other;
  rejected_stale_epoch += o.rejected_stale_epoch;
  confirms_sent += o.confirms_sent;
  confirms_failed += o.confirms_failed;
  placements += o.placements;
  tasks_finished += o.tasks_finished;
  tasks_requeued += o.tasks_requeued;
  claim_timeouts += o.claim_timeouts;
  late_replies += o.late_replies;
  generation_gaps += o.generation_gaps;
  gangs_aborted += o.gangs_aborted;
  preemptions += o.preemptions;
  evictions += o.evictions;
  backoffs += o.backoffs;
  placement_latency.merge(o.placement_latency);
}

bool JobRecord::finished() const {
  uint32_t done = 0;
  for (size_t s = static_cast<size_t>(TaskState::succeeded); s < by_state.size(); ++s)
    done += by_state[s];
  return done == spec.count;
}

Scheduler::Scheduler(SchedulerConfig config) : config_(std::move(config)) {
  view_.set_one_change_in_flight(config_.strict_cas);
  for (const auto& p : config_.pools) pool_ids_.push_back(view_.add_pool(p));
}

Status Scheduler::add_node(const NodeSpec& spec, const NodeSnapshot& snapshot) {
  auto pool = view_.find_pool(spec.pool);
  if (!pool)
    return make_error(Errc::unknown_name, "node " + spec.name + ": pool '" + spec.pool +
                                              "' is not owned by partition " +
                                              std::to_string(config_.partition.value));
  bool known = view_.find_node(spec.id).has_value();
  view_.add_node(spec, *pool, snapshot);
  if (config_.journal && !known) journal_.nodes_registered.push_back(spec);
  return Status::ok();
}

Expected<JobRecord> Scheduler::admit(JobSpec job) const {
  if (auto st = validate(job); !st) return st.error();
  auto pool = view_.find_pool(job.pool);
  if (!pool)
    return make_error(Errc::unknown_name, "job field 'pool': '" + job.pool +
                                              "' is not a pool of partition " +
                                              std::to_string(config_.partition.value));
  if (job.job_class.empty()) job.job_class = config_.default_class;
  auto cls = std::find_if(config_.classes.begin(), config_.classes.end(),
                          [&](const ClassConfig& c) { return c.name == job.job_class; });
  if (cls == config_.classes.end())
    return make_error(Errc::unknown_name, "job field 'class': unknown class '" + job.job_class + "'");
  if (jobs_.contains(job.id))
    return make_error(Errc::duplicate, "job " + std::to_string(job.id.value) + " already exists");
  JobRecord r;
  r.pool = *pool;
  r.class_index = static_cast<uint32_t>(cls - config_.classes.begin());
  r.priority = cls->priority;
  r.by_state[static_cast<size_t>(TaskState::pending)] = job.count;
  if (!job.command.empty())
    r.launch = LaunchRef(TaskLaunch{job.command, job.env, job.workdir, job.max_run_time});
  r.spec = std::move(job);
  return r;
}

Status Scheduler::submit(JobSpec job, TimePoint now) {
  (void)now;
  auto admitted = admit(std::move(job));
  if (!admitted) return admitted.error();
  JobRecord& r = *admitted;
  if (!r.spec.wait_for_nodes) {
    // As Slurm does: a job that no node of its pool can ever run is refused
    // now, not left waiting forever (--hold keeps it, for nodes to come).
    auto why = never_fits(count_placement(view_, r.pool, r.spec.per_task, r.spec.constraints, r.spec.count), r.spec);
    if (!why.empty()) return make_error(Errc::invalid_argument, "job field 'resources': " + why);
  }
  pending_tasks_ += r.spec.count;
  ++stats_.jobs_submitted;
  stats_.tasks_submitted += r.spec.count;
  if (config_.journal) journal_.jobs_accepted.push_back(r.spec);
  auto [it, inserted] = jobs_.emplace(r.spec.id, std::move(r));
  (void)inserted;
  enqueue(it->second);
  return Status::ok();
}

Status Scheduler::restore_job(JobSpec job, std::vector<RestoredTask> tasks, TimePoint now,
                              bool cancelled) {
  auto admitted = admit(std::move(job));
  if (!admitted) return admitted.error();
  auto [it, inserted] = jobs_.emplace(admitted->spec.id, std::move(*admitted));
  (void)inserted;
  JobRecord& j = it->second;
  std::sort(tasks.begin(), tasks.end(),
            [](const RestoredTask& a, const RestoredTask& b) { return a.index < b.index; });
  // Tasks past the last one with a record were never placed: they stay the
  // fresh range; pending ones below it are requeued.
  TaskIndex fresh = 0;
  for (const auto& t : tasks) {
    if (t.index >= j.spec.count)
      return make_error(Errc::corrupt, "job " + std::to_string(j.spec.id.value) + " task " +
                                           std::to_string(t.index) + " is beyond its count");
    fresh = t.index + 1;
  }
  j.next_fresh = fresh;
  size_t next_record = 0;
  for (TaskIndex t = 0; t < fresh; ++t) {
    const RestoredTask* r = next_record < tasks.size() && tasks[next_record].index == t
                                ? &tasks[next_record++]
                                : nullptr;
    TaskState s = r ? r->state : TaskState::pending;
    if (is_final(s)) {
      set_task_state(j, t, s);
      if (auto n = r && r->node.value != 0 ? view_.find_node(r->node) : std::nullopt) j.tasks[t].node_plus_one = *n + 1;
      j.tasks[t].exit_code = r ? r->exit_code : 0;
      j.tasks[t].end = r && r->end.reason != EndReason::none ? r->end : inferred_end(s, j.tasks[t].exit_code);
    } else if ((s == TaskState::running || s == TaskState::claimed) && r->node.value != 0) {
      // Believed on its node until the node reports (or the grace passes).
      set_task_state(j, t, TaskState::running);
      j.tasks[t].journaled = true;
      unverified_[r->node].push_back(TaskRef{j.spec.id, t});
    } else {
      j.requeued.push_back(t);
    }
  }
  // Lowest index first out of the requeued stack.
  std::reverse(j.requeued.begin(), j.requeued.end());
  if (cancelled) {
    // Whatever the records did not end yet ended with the cancel.
    j.cancelled = true;
    j.reason = "cancelled";
    std::vector<TaskIndex> open = j.requeued;
    for (TaskIndex t = j.next_fresh; t < j.spec.count; ++t) open.push_back(t);
    j.requeued.clear();
    j.next_fresh = j.spec.count;
    if (!open.empty() && j.tasks.empty()) j.tasks.resize(j.spec.count);
    for (auto t : open) set_task_state(j, t, TaskState::cancelled);
  }
  pending_tasks_ += j.pending();
  ++stats_.jobs_submitted;
  stats_.tasks_submitted += j.spec.count;
  recovered_at_ = now;
  enqueue(j);
  return Status::ok();
}

TimePoint Scheduler::next_wakeup() const {
  TimePoint t = kNever;
  if (!backoff_.empty()) t = backoff_.begin()->first;
  if ((capacity_grew_ || view_.grew_pending()) && !parked_.empty())
    t = std::min(t, last_unpark_ == TimePoint::min() ? TimePoint{0} : last_unpark_ + config_.unpark_interval);
  return t;
}

void Scheduler::set_fair_share(JobId job, int32_t boost, uint32_t fair_tasks) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  it->second.boost = boost;
  it->second.fair_tasks = fair_tasks;
  rekey(it->second);
}

int32_t Scheduler::effective_boost(const JobRecord& j) const {
  uint32_t held = j.count_in(TaskState::running) + j.count_in(TaskState::claimed);
  if (j.fair_tasks > 0 && held >= j.fair_tasks) return std::min(j.boost, -1);
  return j.boost;
}

void Scheduler::rekey(JobRecord& j) {
  int32_t boost = effective_boost(j);
  if (boost == j.queued_boost) return;
  if (j.queued) {
    dequeue(j);
    enqueue(j);  // recomputes the key
    return;
  }
  bool waiting = j.parked && parked_.erase(key_of(j)) > 0;
  j.queued_boost = boost;
  if (waiting) parked_.insert(key_of(j));
}

Status Scheduler::preempt(TaskRef task, TaskState kind, const std::string& why, TimePoint now,
                          Outbox& out, std::optional<JobId> for_job) {
  auto it = jobs_.find(task.job);
  if (it == jobs_.end())
    return make_error(Errc::unknown_name, "preempt: unknown job " + std::to_string(task.job.value));
  JobRecord& j = it->second;
  if (task.index >= j.spec.count || j.tasks.empty() || j.tasks[task.index].state != TaskState::running ||
      j.tasks[task.index].node_plus_one == 0)
    return make_error(Errc::wrong_state, "preempt: task " + std::to_string(task.job.value) + "." +
                                             std::to_string(task.index) + " is not running");
  NodeIndex n = j.tasks[task.index].node_plus_one - 1;
  // The task comes back to the queue when the node says it is freed, not
  // before: placed elsewhere meanwhile, it could be allocated twice.
  Releasing rel;
  rel.request.partition = config_.partition;
  rel.request.epoch = config_.epoch;
  rel.request.node = view_.node(n).id;
  rel.request.claim_id = ClaimId{(config_.epoch << kClaimCounterBits) | next_claim_++};
  rel.request.job = task.job;
  rel.request.tasks = {task.index};
  rel.request.reason = kind;
  rel.sent_at = now;
  rel.for_job = for_job;
  set_task_state(j, task.index, TaskState::claimed);
  bool evicted = kind == TaskState::evicted;
  j.tasks[task.index].end = TaskEnd::decided(evicted ? EndReason::evicted : EndReason::preempted);
  if (for_job && !evicted)
    j.preempted_by[task.index] = *for_job;
  else
    j.preempted_by.erase(task.index);
  view_.add_change_in_flight(n);
  out.releases.push_back(rel.request);
  releasing_.emplace(rel.request.claim_id, std::move(rel));
  if (kind == TaskState::evicted) {
    ++j.evictions;
    ++stats_.evictions;
  } else {
    ++j.preemptions;
    ++stats_.preemptions;
  }
  j.last_removal = std::string(to_string(kind)) + " task " + std::to_string(task.index) +
                   " on node " + std::to_string(view_.node(n).id.value) + ": " + why;
  return Status::ok();
}

void Scheduler::for_each_claim_in_flight(
    const std::function<void(JobId, const std::vector<TaskIndex>&, NodeId)>& f) const {
  std::vector<ClaimId> ids;
  ids.reserve(in_flight_.size());
  for (const auto& [id, c] : in_flight_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) {
    const auto& c = in_flight_.at(id);
    f(c.request.job, c.request.tasks, c.request.node);
  }
}

void Scheduler::for_each_releasing(
    const std::function<void(TaskRef, NodeId, const Resources&)>& f) const {
  for (const auto& [id, rel] : releasing_) {
    const JobRecord& j = jobs_.at(rel.request.job);
    for (auto t : rel.request.tasks) f(TaskRef{rel.request.job, t}, rel.request.node, j.spec.per_task);
  }
}

uint64_t Scheduler::unverified_tasks() const {
  uint64_t n = 0;
  for (const auto& [node, tasks] : unverified_) n += tasks.size();
  return n;
}

void Scheduler::journal_tasks(JobId job, const std::vector<TaskIndex>& tasks, TaskState state,
                              NodeId node, ClaimId claim, int32_t exit_code, const TaskEnd& end) {
  if (!config_.journal || tasks.empty()) return;
  Journal::TaskChange c;
  c.job = job;
  c.tasks = tasks;
  c.state = state;
  c.node = node;
  c.claim_id = claim;
  c.exit_code = exit_code;
  c.end = end;
  journal_.task_changes.push_back(std::move(c));
}

void Scheduler::release_on(NodeId node, JobId job, std::vector<TaskIndex> tasks, Outbox& out) {
  if (tasks.empty()) return;
  stats_.reconcile_releases += tasks.size();
  out.releases.push_back(release_request(config_, node, job, ClaimId{}, std::move(tasks)));
}

void Scheduler::declare_lost(JobRecord& j, const std::vector<TaskIndex>& tasks, TimePoint now) {
  if (tasks.empty()) return;
  stats_.tasks_lost += tasks.size();
  if (!j.tasks.empty())
    for (auto t : tasks) j.tasks[t].end = TaskEnd::decided(EndReason::node_lost);
  return_to_queue(j, tasks, false, "its node no longer holds it", now);
}

void Scheduler::reconcile_node(const NodeReport& report, TimePoint now, Outbox& out) {
  end_tasks_finished_while_away(report, now, out);
  // Every task believed to run there, not only restored ones: an agent that
  // restarted quickly (within node_grace) no longer runs what it ran.
  reconcile(report.spec.id, report.allocations, &report.claims, true, now, out);
}

void Scheduler::end_tasks_finished_while_away(const NodeReport& report, TimePoint now, Outbox& out) {
  if (report.finished.empty()) return;
  auto n = view_.find_node(report.spec.id);
  // Restored onto the node and not verified yet, or believed running there.
  std::vector<TaskRef> expected;
  if (auto it = unverified_.find(report.spec.id); it != unverified_.end()) expected = it->second;
  if (n)
    for (const auto& ev : report.finished) {
      auto jt = jobs_.find(ev.task.job);
      if (jt == jobs_.end() || ev.task.index >= jt->second.tasks.size()) continue;
      const TaskRecord& r = jt->second.tasks[ev.task.index];
      if (r.state == TaskState::running && r.node_plus_one == *n + 1) expected.push_back(ev.task);
    }
  if (expected.empty()) return;
  std::vector<TaskRef> held;
  held.reserve(report.allocations.size());
  for (const auto& a : report.allocations) held.push_back(a.task);
  std::sort(held.begin(), held.end());
  // Oldest first: the last event of a task is its latest run's end.
  std::map<TaskRef, const NodeEvent*> latest;
  for (const auto& ev : report.finished)
    if (ev.partition == config_.partition && ev.kind == NodeEvent::Kind::task_finished) latest[ev.task] = &ev;
  for (const auto& [task, ev] : latest) {
    // Held again: the node runs the task anew, the event is an older run's.
    if (std::binary_search(held.begin(), held.end(), task)) continue;
    if (std::find(expected.begin(), expected.end(), task) == expected.end()) continue;
    auto jt = jobs_.find(task.job);
    if (jt == jobs_.end()) continue;
    JobRecord& j = jt->second;
    if (task.index >= j.spec.count || j.tasks.empty() || j.tasks[task.index].state != TaskState::running)
      continue;
    // It ran there: its record says so after it ends.
    if (n) j.tasks[task.index].node_plus_one = *n + 1;
    end_task(j, *ev, now, out);
  }
}

void Scheduler::reconcile(NodeId node, const std::vector<Allocation>& allocations,
                          const std::vector<LiveClaim>* claims, bool check_running, TimePoint now,
                          Outbox& out) {
  auto n = view_.find_node(node);
  if (!n) return;
  std::vector<TaskRef> expected;
  if (auto it = unverified_.find(node); it != unverified_.end()) {
    expected = std::move(it->second);
    unverified_.erase(it);
  }
  if (check_running) {
    // Everything we believe runs there (a gap may have hidden its end).
    for (const auto& [id, j] : jobs_) {
      if (j.count_in(TaskState::running) == 0 || j.tasks.empty()) continue;
      for (TaskIndex t = 0; t < j.spec.count; ++t)
        if (j.tasks[t].state == TaskState::running && j.tasks[t].node_plus_one == *n + 1)
          expected.push_back(TaskRef{id, t});
    }
  }
  std::sort(expected.begin(), expected.end());
  std::vector<TaskRef> held;
  // Releases grouped by job, in job order.
  std::map<JobId, std::vector<TaskIndex>> release;
  for (const auto& a : allocations) {
    if (a.partition != config_.partition) continue;
    auto jt = jobs_.find(a.task.job);
    if (jt == jobs_.end() || a.task.index >= jt->second.spec.count || jt->second.tasks.empty()) {
      release[a.task.job].push_back(a.task.index);
      continue;
    }
    JobRecord& j = jt->second;
    TaskRecord& rec = j.tasks[a.task.index];
    bool expected_here = std::binary_search(expected.begin(), expected.end(), a.task);
    if (rec.state == TaskState::running && rec.node_plus_one == 0 && expected_here) {
      rec.node_plus_one = *n + 1;  // adopted: the records and the node agree
      held.push_back(a.task);
    } else if (rec.state == TaskState::running && rec.node_plus_one == *n + 1) {
      held.push_back(a.task);  // already known here
    } else if (rec.state == TaskState::claimed && in_flight_.contains(a.claim_id)) {
      // A confirm of ours is on its way back.
    } else {
      release[a.task.job].push_back(a.task.index);
    }
  }
  for (auto& [job, tasks] : release) release_on(node, job, std::move(tasks), out);
  for (const auto& c : claims ? *claims : std::vector<LiveClaim>{}) {
    if (c.partition != config_.partition || in_flight_.contains(c.id)) continue;
    ++stats_.reconcile_releases;
    out.releases.push_back(release_request(config_, node, c.job, c.id));
  }
  // Restored here, not held: lost.
  std::sort(held.begin(), held.end());
  std::map<JobId, std::vector<TaskIndex>> lost;
  for (const auto& t : expected) {
    if (std::binary_search(held.begin(), held.end(), t)) continue;
    auto jt = jobs_.find(t.job);
    // Ended meanwhile (end_tasks_finished_while_away, or an event): not lost.
    if (jt == jobs_.end() || jt->second.tasks.empty() || jt->second.tasks[t.index].state != TaskState::running)
      continue;
    lost[t.job].push_back(t.index);
  }
  for (auto& [job, tasks] : lost) declare_lost(jobs_.at(job), tasks, now);
}

const JobRecord* Scheduler::job(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void Scheduler::for_each_job(const std::function<void(const JobRecord&)>& f) const {
  std::vector<JobId> ids;
  ids.reserve(jobs_.size());
  for (const auto& [id, j] : jobs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) f(jobs_.at(id));
}

void Scheduler::enqueue(JobRecord& j) {
  if (j.queued || j.parked || j.pending() == 0) return;
  j.queued_boost = effective_boost(j);
  queue_.insert(key_of(j));
  j.queued = true;
}

void Scheduler::dequeue(JobRecord& j) {
  if (!j.queued) return;
  queue_.erase(key_of(j));
  j.queued = false;
}

void Scheduler::park(JobRecord& j) {
  dequeue(j);
  if (!j.parked) {
    j.parked = true;
    j.queued_boost = effective_boost(j);
    parked_.insert(key_of(j));
  }
}

void Scheduler::unpark(JobRecord& j) {
  if (parked_.erase(key_of(j)) == 0) return;
  j.parked = false;
  enqueue(j);
}

void Scheduler::unpark_all(TimePoint now) {
  last_unpark_ = now;
  capacity_grew_ = false;
  std::set<QueueKey> parked;
  parked.swap(parked_);
  for (const auto& key : parked) {
    JobRecord& j = jobs_.at(key.job);
    j.parked = false;
    enqueue(j);
  }
}

void Scheduler::unpark_ahead_of_queue() {
  // Waiting jobs that outrank everything queued get the new room first,
  // whatever the rate limit: otherwise a lower job (a preempted task put
  // back, say) takes what was freed for them.
  while (!parked_.empty() && (queue_.empty() || *parked_.begin() < *queue_.begin())) {
    JobRecord& j = jobs_.at(parked_.begin()->job);
    parked_.erase(parked_.begin());
    j.parked = false;
    enqueue(j);
  }
}

void Scheduler::set_task_state(JobRecord& j, TaskIndex t, TaskState s) {
  if (j.tasks.empty()) j.tasks.resize(j.spec.count);
  TaskRecord& r = j.tasks[t];
  if (r.state == TaskState::running) --running_tasks_;
  if (s == TaskState::running) ++running_tasks_;
  --j.by_state[static_cast<size_t>(r.state)];
  ++j.by_state[static_cast<size_t>(s)];
  r.state = s;
}

std::vector<TaskIndex> Scheduler::take_pending(JobRecord& j, uint32_t n) {
  std::vector<TaskIndex> out;
  out.reserve(n);
  while (out.size() < n && !j.requeued.empty()) {
    out.push_back(j.requeued.back());
    j.requeued.pop_back();
  }
  while (out.size() < n && j.next_fresh < j.spec.count) out.push_back(j.next_fresh++);
  for (auto t : out) set_task_state(j, t, TaskState::claimed);
  pending_tasks_ -= out.size();
  if (j.fair_tasks > 0) rekey(j);
  return out;
}

void Scheduler::schedule(TimePoint now, Outbox& out) {
  if (fenced_) return;
  if (view_.take_grew()) capacity_grew_ = true;
  if (capacity_grew_ && !parked_.empty()) {
    if (now >= last_unpark_ + config_.unpark_interval)
      unpark_all(now);
    else
      unpark_ahead_of_queue();
  }
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    JobRecord& j = jobs_.at(backoff_.begin()->second);
    backoff_.erase(backoff_.begin());
    j.parked = false;
    enqueue(j);
  }
  while (in_flight_.size() < config_.max_claims_in_flight && !queue_.empty()) {
    JobRecord& j = jobs_.at(queue_.begin()->job);
    if (j.spec.gang)
      place_gang(j, now, out);
    else
      place_some(j, now, out);
  }
}

ClaimRequest Scheduler::make_claim(JobRecord& j, NodeIndex n, std::vector<TaskIndex> tasks) {
  ClaimRequest c;
  // The epoch in the high bits: a new owner of the partition never reuses a
  // claim id of the one it replaced (a node would take the new owner's
  // confirm for the old owner's claim).
  c.claim_id = ClaimId{(config_.epoch << kClaimCounterBits) | next_claim_++};
  c.partition = config_.partition;
  c.epoch = config_.epoch;
  c.node = view_.node(n).id;
  if (config_.strict_cas)
    c.expected_generation = view_.node(n).generation + view_.node(n).in_flight_changes;
  c.job = j.spec.id;
  c.per_task = j.spec.per_task;
  c.tasks = std::move(tasks);
  c.simulated_runtime = j.spec.simulated_runtime;
  c.launch = j.launch;
  return c;
}

void Scheduler::send_claim(ClaimRequest request, NodeIndex n, uint64_t gang, TimePoint now,
                           Outbox& out) {
  view_.add_in_flight(n, request.total(), static_cast<uint32_t>(request.tasks.size()));
  InFlightClaim c;
  c.request = request;
  c.node = n;
  c.sent_at = now;
  c.gang = gang;
  ++stats_.claims_sent;
  in_flight_.emplace(request.claim_id, std::move(c));
  out.claims.push_back(std::move(request));
}

PlacementRequest Scheduler::request_for(const JobRecord& j, bool explain) const {
  PlacementRequest req;
  req.per_task = j.spec.per_task;
  req.tasks_wanted = j.pending();
  req.max_tasks_per_claim = config_.max_tasks_per_claim;
  req.constraints = j.spec.constraints.empty() ? nullptr : &j.spec.constraints;
  req.pool = j.pool;
  req.rotation = config_.rotation;
  req.explain = explain;
  return req;
}

bool Scheduler::place_some(JobRecord& j, TimePoint now, Outbox& out) {
  auto result = place(view_, request_for(j, false), config_.classes[j.class_index].placement);
  if (result.verdict != PlacementVerdict::fit) {
    park(j);
    return false;
  }
  j.reason.clear();
  auto tasks = take_pending(j, result.tasks);
  if (j.pending() == 0) dequeue(j);
  send_claim(make_claim(j, result.node, std::move(tasks)), result.node, 0, now, out);
  return true;
}

bool Scheduler::place_gang(JobRecord& j, TimePoint now, Outbox& out) {
  // An aborted attempt's confirmed tasks are still being released: the gang
  // is placed again, whole, when the last release is answered.
  if (j.count_in(TaskState::claimed) > 0) {
    dequeue(j);
    return false;
  }
  // Plan every task before claiming any: the view's in-flight accounting
  // keeps later decisions of the plan from reusing room taken by earlier ones.
  uint32_t wanted = j.pending();
  struct Part {
    NodeIndex node;
    uint32_t tasks;
  };
  std::vector<Part> plan;
  uint32_t planned = 0;
  // Planning borrows room in the view and gives it back; that is not growth.
  if (view_.take_grew()) capacity_grew_ = true;
  PlacementRequest req = request_for(j, false);
  while (planned < wanted) {
    req.tasks_wanted = wanted - planned;
    auto result = place(view_, req, config_.classes[j.class_index].placement);
    if (result.verdict != PlacementVerdict::fit) break;
    plan.push_back({result.node, result.tasks});
    planned += result.tasks;
    view_.add_in_flight(result.node, j.spec.per_task.times(result.tasks), result.tasks);
  }
  for (const auto& p : plan) view_.remove_in_flight(p.node, j.spec.per_task.times(p.tasks), p.tasks);
  (void)view_.take_grew();
  if (planned < wanted) {
    park(j);
    return false;
  }
  j.reason.clear();
  uint64_t gang_id = next_gang_++;
  Gang& g = gangs_[gang_id];
  g.job = j.spec.id;
  for (const auto& p : plan) {
    auto tasks = take_pending(j, p.tasks);
    ClaimRequest c = make_claim(j, p.node, std::move(tasks));
    g.claims.push_back(c.claim_id);
    ++g.outstanding;
    send_claim(std::move(c), p.node, gang_id, now, out);
  }
  dequeue(j);
  return true;
}

void Scheduler::return_to_queue(JobRecord& j, const std::vector<TaskIndex>& tasks,
                                bool count_attempt, const std::string& why, TimePoint now) {
  if (j.cancelled) {
    // Nothing of a cancelled job goes back to the queue.
    for (auto t : tasks) {
      set_task_state(j, t, TaskState::cancelled);
      j.tasks[t].node_plus_one = 0;
    }
    journal_tasks(j.spec.id, tasks, TaskState::cancelled, NodeId{}, ClaimId{});
    return;
  }
  bool exhausted = false;
  std::vector<TaskIndex> unjournal;
  for (auto t : tasks) {
    set_task_state(j, t, TaskState::pending);
    TaskRecord& r = j.tasks[t];
    r.node_plus_one = 0;
    if (r.journaled) {
      r.journaled = false;
      unjournal.push_back(t);
    }
    if (count_attempt && ++r.attempts >= config_.max_claim_attempts) {
      exhausted = true;
      r.attempts = 0;
    }
    j.requeued.push_back(t);
  }
  journal_tasks(j.spec.id, unjournal, TaskState::pending, NodeId{}, ClaimId{});
  if (j.fair_tasks > 0) rekey(j);
  pending_tasks_ += tasks.size();
  stats_.tasks_requeued += tasks.size();
  if (exhausted) {
    // Bounded retries spent: the reason is kept and the job backs off.
    j.reason = why + " (" + std::to_string(config_.max_claim_attempts) + " attempts; backing off)";
    dequeue(j);
    if (!j.parked) {
      auto delay = config_.initial_backoff * (int64_t{1} << std::min<int>(j.backoff_level, 20));
      j.backoff_level = static_cast<uint8_t>(std::min(j.backoff_level + 1, 30));
      j.parked = true;
      backoff_.emplace(now + std::min(delay, config_.max_backoff), j.spec.id);
      ++stats_.backoffs;
    }
    return;
  }
  enqueue(j);
}

void Scheduler::observe_generation(NodeIndex n, const NodeSnapshot& s, bool is_change,
                                   Outbox& out) {
  const NodeView& v = view_.node(n);
  Generation expected = v.generation + (is_change ? 1 : 0);
  if (s.generation > expected) {
    ++stats_.generation_gaps;
    out.snapshot_requests.push_back(v.id);
  }
  view_.apply_snapshot(n, s);
}

void Scheduler::confirm_claim(InFlightClaim& c, TimePoint now, Outbox& out) {
  // The placement is recorded before the node is asked to make it real.
  if (config_.journal) {
    JobRecord& j = jobs_.at(c.request.job);
    for (auto t : c.request.tasks) j.tasks[t].journaled = true;
    journal_tasks(c.request.job, c.request.tasks, TaskState::claimed, c.request.node,
                  c.request.claim_id);
  }
  ConfirmRequest r;
  r.claim_id = c.request.claim_id;
  r.partition = config_.partition;
  r.epoch = config_.epoch;
  r.node = c.request.node;
  c.confirming = true;
  c.sent_at = now;
  view_.add_change_in_flight(c.node);
  ++stats_.confirms_sent;
  out.confirms.push_back(r);
}

void Scheduler::mark_running(JobRecord& j, const InFlightClaim& c, TimePoint now) {
  for (auto t : c.request.tasks) {
    // A gang member can have run and finished before its gang completed.
    if (j.tasks[t].state == TaskState::claimed) set_task_state(j, t, TaskState::running);
    j.tasks[t].node_plus_one = c.node + 1;
    j.tasks[t].attempts = 0;
    j.tasks[t].started = now;
  }
  j.backoff_level = 0;
  j.first_running = std::min(j.first_running, now);
  auto n = static_cast<uint64_t>(c.request.tasks.size());
  stats_.placements += n;
  auto latency = now - std::max(j.spec.submit_time, started_at_);
  stats_.placement_latency.record(static_cast<uint64_t>(std::max<int64_t>(0, latency.count())), n);
}

void Scheduler::on_fenced() {
  fenced_ = true;
}

void Scheduler::on_claim_reply(const ClaimReply& reply, TimePoint now, Outbox& out) {
  auto it = in_flight_.find(reply.claim_id);
  if (it == in_flight_.end() || it->second.accepted) {
    // Answer to a claim we gave up on: free what it holds, right away.
    ++stats_.late_replies;
    // Late or not, the node says a newer owner has the partition.
    if (reply.outcome == ClaimOutcome::stale_epoch) on_fenced();
    if (auto n = view_.find_node(reply.snapshot.node)) {
      observe_generation(*n, reply.snapshot, reply.outcome == ClaimOutcome::accepted, out);
      if (reply.outcome == ClaimOutcome::accepted && it == in_flight_.end()) {
        // Fire and forget: unanswered, it expires.
        out.releases.push_back(release_request(config_, reply.snapshot.node, JobId{}, reply.claim_id));
      }
    }
    return;
  }
  InFlightClaim& c = it->second;
  auto ntasks = static_cast<uint32_t>(c.request.tasks.size());
  view_.remove_in_flight(c.node, c.request.total(), ntasks);
  bool accepted = reply.outcome == ClaimOutcome::accepted;
  observe_generation(c.node, reply.snapshot, accepted, out);
  JobRecord& j = jobs_.at(c.request.job);

  if (accepted && j.cancelled) {
    // Cancelled meanwhile: give the room back instead of confirming.
    out.releases.push_back(release_request(config_, c.request.node, c.request.job, c.request.claim_id));
    for (auto t : c.request.tasks) set_task_state(j, t, TaskState::cancelled);
    in_flight_.erase(it);
    maybe_finished(j, now, out);
    return;
  }
  if (accepted) {
    ++stats_.claims_accepted;
    c.accepted = true;
    if (c.gang == 0) {
      confirm_claim(c, now, out);
      return;
    }
    Gang& g = gangs_.at(c.gang);
    --g.outstanding;
    gang_reply(c.gang, now, out);
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
  std::string why = describe_reject(reply.outcome, view_.node(c.node));
  bool count_attempt = reply.outcome != ClaimOutcome::stale_epoch;
  uint64_t gang_id = c.gang;
  std::vector<TaskIndex> tasks = std::move(c.request.tasks);
  in_flight_.erase(it);
  if (gang_id == 0) {
    return_to_queue(j, tasks, count_attempt, why, now);
    return;
  }
  Gang& g = gangs_.at(gang_id);
  g.claims.erase(std::find(g.claims.begin(), g.claims.end(), reply.claim_id));
  --g.outstanding;
  g.failed = true;
  g.why = why;
  // The gang's other tasks come back when the gang resolves; these now.
  for (auto t : tasks) {
    set_task_state(j, t, TaskState::pending);
    j.requeued.push_back(t);
  }
  pending_tasks_ += tasks.size();
  stats_.tasks_requeued += tasks.size();
  gang_reply(gang_id, now, out);
}

void Scheduler::gang_reply(uint64_t gang_id, TimePoint now, Outbox& out) {
  Gang& g = gangs_.at(gang_id);
  if (g.outstanding > 0) return;
  JobRecord& j = jobs_.at(g.job);
  if (!g.failed && !g.confirming) {
    g.confirming = true;
    for (auto id : g.claims) {
      confirm_claim(in_flight_.at(id), now, out);
      ++g.outstanding;
    }
    return;
  }
  if (!g.failed) {
    for (auto id : g.claims) {
      auto it = in_flight_.find(id);
      mark_running(j, it->second, now);
      in_flight_.erase(it);
    }
    gangs_.erase(gang_id);
    maybe_finished(j, now, out);
    return;
  }
  // Failed: release everything the gang still holds, requeue it whole.
  ++stats_.gangs_aborted;
  std::vector<TaskIndex> back;
  for (auto id : g.claims) {
    auto it = in_flight_.find(id);
    InFlightClaim& c = it->second;
    if (c.confirmed) {
      // Allocated on the node: its tasks come back only when the node says
      // they are freed (else they could be allocated twice), and the release
      // is resent until it is answered. The entry stays, out of the gang.
      view_.add_change_in_flight(c.node);
      out.releases.push_back(release_of_confirmed(config_, c.request));
      c.gang = 0;
      c.sent_at = now;
      continue;
    }
    for (auto t : c.request.tasks)
      if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
    if (c.request.claim_id.value == 0) {
      in_flight_.erase(it);  // its claim expired on the node: nothing held there
      continue;
    }
    // Only claimed: the claim is never confirmed now, so the tasks are free
    // to go elsewhere at once. Fire and forget: if lost, the claim expires.
    out.releases.push_back(release_request(config_, c.request.node, c.request.job, c.request.claim_id));
    in_flight_.erase(it);
  }
  std::string why = "gang aborted: " + g.why;
  gangs_.erase(gang_id);
  return_to_queue(j, back, true, why, now);
  // Tasks already returned when their own claim failed are pending too.
  enqueue(j);
}

void Scheduler::on_confirm_reply(const ConfirmReply& reply, TimePoint now, Outbox& out) {
  auto it = in_flight_.find(reply.claim_id);
  if (it == in_flight_.end() || !it->second.confirming) {
    ++stats_.late_replies;
    if (reply.outcome == ConfirmOutcome::stale_epoch) on_fenced();
    if (auto n = view_.find_node(reply.snapshot.node))
      observe_generation(*n, reply.snapshot, false, out);
    return;
  }
  InFlightClaim& c = it->second;
  view_.remove_change_in_flight(c.node);
  bool confirmed = reply.outcome == ConfirmOutcome::confirmed;
  observe_generation(c.node, reply.snapshot, confirmed, out);
  JobRecord& j = jobs_.at(c.request.job);
  c.confirming = false;
  if (reply.outcome == ConfirmOutcome::stale_epoch) on_fenced();
  if (c.gang != 0) {
    Gang& g = gangs_.at(c.gang);
    --g.outstanding;
    if (confirmed) {
      c.confirmed = true;
    } else {
      ++stats_.confirms_failed;
      g.failed = true;
      g.why = "claim on node " + std::to_string(c.request.node.value) + " expired before confirm";
      // The claim is gone on the node; nothing to release there.
      c.confirmed = false;
      c.request.claim_id = ClaimId{0};
    }
    gang_reply(c.gang, now, out);
    return;
  }
  if (confirmed && j.cancelled) {
    // Cancelled while its confirm was on the way: free it again.
    out.releases.push_back(release_request(config_, c.request.node, c.request.job, ClaimId{}, c.request.tasks));
    for (auto t : c.request.tasks) set_task_state(j, t, TaskState::cancelled);
    in_flight_.erase(it);
    maybe_finished(j, now, out);
    return;
  }
  if (confirmed) {
    mark_running(j, c, now);
    in_flight_.erase(it);
    maybe_finished(j, now, out);
    return;
  }
  ++stats_.confirms_failed;
  std::vector<TaskIndex> tasks = std::move(c.request.tasks);
  in_flight_.erase(it);
  return_to_queue(j, tasks, true, "claim expired before it was confirmed", now);
}

void Scheduler::on_release_reply(const ReleaseReply& reply, TimePoint now, Outbox& out) {
  auto n = view_.find_node(reply.snapshot.node);
  if (!n) return;
  if (reply.stale_epoch) on_fenced();
  if (auto rel = releasing_.find(reply.claim_id); rel != releasing_.end()) {
    // A preempted or evicted task is free on its node: it may run again.
    view_.remove_change_in_flight(*n);
    observe_generation(*n, reply.snapshot, reply.released > 0, out);
    JobRecord& j = jobs_.at(rel->second.request.job);
    auto tasks = rel->second.request.tasks;
    if (rel->second.for_job)
      if (auto p = jobs_.find(*rel->second.for_job); p != jobs_.end()) unpark(p->second);
    releasing_.erase(rel);
    for (auto t : tasks) j.tasks[t].node_plus_one = 0;
    return_to_queue(j, tasks, false, j.last_removal, now);
    return;
  }
  auto it = reply.claim_id.value == 0 ? in_flight_.end() : in_flight_.find(reply.claim_id);
  bool releasing = it != in_flight_.end() && it->second.gang == 0 && it->second.confirmed &&
                   it->second.node == *n;
  observe_generation(*n, reply.snapshot, reply.released > 0, out);
  // Only tracked releases count as changes in flight: a fire-and-forget one
  // that is lost must not leave the node "busy" for good (strict CAS).
  if (!releasing) return;
  view_.remove_change_in_flight(*n);
  // An aborted gang's confirmed tasks are free now: back to the queue.
  InFlightClaim c = std::move(it->second);
  in_flight_.erase(it);
  JobRecord& j = jobs_.at(c.request.job);
  std::vector<TaskIndex> back;
  for (auto t : c.request.tasks)
    if (j.tasks[t].state == TaskState::claimed) back.push_back(t);
  return_to_queue(j, back, false, "gang aborted", now);
}

void Scheduler::on_node_delta(const NodeDelta& delta, TimePoint now, Outbox& out) {
  auto n = view_.find_node(delta.snapshot.node);
  if (!n) return;
  if (delta.full) {
    view_.apply_snapshot(*n, delta.snapshot);
  } else {
    observe_generation(*n, delta.snapshot, true, out);
  }
  process_events(delta, now, out);
  // After a gap: the events above may have ended some tasks; what we still
  // believe runs there and the node does not hold is lost.
  if (delta.full) reconcile(delta.snapshot.node, delta.allocations, nullptr, true, now, out);
}

void Scheduler::process_events(const NodeDelta& delta, TimePoint now, Outbox& out) {
  for (const auto& ev : delta.events) {
    if (ev.partition != config_.partition) continue;
    if (ev.kind == NodeEvent::Kind::task_exited) record_exit(ev);
    if (ev.kind != NodeEvent::Kind::task_finished) continue;
    auto jt = jobs_.find(ev.task.job);
    if (jt == jobs_.end()) continue;
    JobRecord& j = jt->second;
    if (ev.task.index >= j.spec.count || j.tasks.empty()) continue;
    TaskState state = j.tasks[ev.task.index].state;
    if (state == TaskState::claimed) {
      // The task ran, so its confirm took effect on the node, but the reply
      // is not here yet (lost, or slower than a short task) or the gang
      // waits for other members. Losing the event would leave the task
      // "running" forever, or run it again when a resent confirm finds
      // nothing left to confirm.
      auto it = in_flight_.find(ev.claim_id);
      if (it == in_flight_.end() || it->second.request.node != delta.snapshot.node) continue;
      InFlightClaim& c = it->second;
      const auto& tasks = c.request.tasks;
      if (std::find(tasks.begin(), tasks.end(), ev.task.index) == tasks.end()) continue;
      if (!c.confirming && !c.confirmed) continue;
      if (c.gang == 0 && c.confirmed) continue;  // being released: its reply decides
      if (c.gang == 0) {
        view_.remove_change_in_flight(c.node);
        mark_running(j, c, now);
        in_flight_.erase(it);
      } else {
        set_task_state(j, ev.task.index, ev.final_state);
        record_final(j, ev);
        ++stats_.tasks_finished;
        if (c.confirming) {
          view_.remove_change_in_flight(c.node);
          c.confirming = false;
          c.confirmed = true;
          --gangs_.at(c.gang).outstanding;
          gang_reply(c.gang, now, out);  // may complete the gang
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
  bool again = !j.cancelled &&
               ((ev.final_state == TaskState::failed && r.failures < j.spec.max_retries) ||
                (ev.final_state == TaskState::lost && r.losses < j.spec.max_lost_retries));
  if (again) {
    ++(ev.final_state == TaskState::failed ? r.failures : r.losses);
    ++stats_.tasks_retried;
    if (ev.final_state == TaskState::lost) ++stats_.tasks_lost;
    std::string why = ev.final_state == TaskState::failed
                          ? "task " + std::to_string(ev.task.index) + " failed (" + describe(r.end) +
                                "), retry " +
                                std::to_string(r.failures) + " of " +
                                std::to_string(j.spec.max_retries)
                          : "task " + std::to_string(ev.task.index) + " was lost with its node, retry " +
                                std::to_string(r.losses) + " of " +
                                std::to_string(j.spec.max_lost_retries);
    j.last_removal = why;
    return_to_queue(j, {ev.task.index}, false, why, now);
    return;
  }
  set_task_state(j, ev.task.index, ev.final_state);
  record_final(j, ev);
  ++stats_.tasks_finished;
  maybe_finished(j, now, out);
}

Status Scheduler::cancel(JobId id, TimePoint now, Outbox& out) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  JobRecord& j = it->second;
  if (j.cancelled) return Status::ok();  // cancelling twice is harmless
  if (j.finished())
    return make_error(Errc::wrong_state, "job " + std::to_string(id.value) + " already ended");
  j.cancelled = true;
  dequeue(j);
  if (j.parked) {
    parked_.erase(key_of(j));
    for (auto b = backoff_.begin(); b != backoff_.end();)
      b = b->second == id ? backoff_.erase(b) : std::next(b);
    j.parked = false;
  }
  if (j.tasks.empty()) j.tasks.resize(j.spec.count);
  // Pending tasks end here; running ones are released on their nodes (the
  // agent kills them); claimed ones end when their claim comes back.
  std::map<NodeIndex, std::vector<TaskIndex>> release;
  std::vector<TaskIndex> ended;
  for (TaskIndex t = 0; t < j.spec.count; ++t) {
    TaskRecord& r = j.tasks[t];
    if (r.state == TaskState::pending) {
      ended.push_back(t);
    } else if (r.state == TaskState::running) {
      if (r.node_plus_one != 0) release[r.node_plus_one - 1].push_back(t);
      ended.push_back(t);
    }
  }
  pending_tasks_ -= j.pending();
  j.requeued.clear();
  j.next_fresh = j.spec.count;
  for (auto t : ended) {
    set_task_state(j, t, TaskState::cancelled);
    j.tasks[t].end = TaskEnd::decided(EndReason::cancelled);
  }
  for (auto& [n, tasks] : release)
    out.releases.push_back(release_request(config_, view_.node(n).id, id, ClaimId{}, std::move(tasks)));
  journal_tasks(id, ended, TaskState::cancelled, NodeId{}, ClaimId{}, -1, TaskEnd::decided(EndReason::cancelled));
  if (config_.journal) journal_.jobs_cancelled.push_back(j.spec);
  j.reason = "cancelled";
  maybe_finished(j, now, out);
  return Status::ok();
}

void Scheduler::node_down(NodeId node, TimePoint now, Outbox& out) {
  auto n = view_.find_node(node);
  if (!n) return;
  NodeSnapshot s;
  s.node = node;
  s.generation = view_.node(*n).generation;
  s.state = NodeState::down;
  s.capacity = view_.node(*n).capacity;
  s.free = view_.node(*n).reported_free;
  view_.apply_snapshot(*n, s);
  // Claims to it will not be answered: give up on them now.
  std::vector<ClaimId> claims;
  for (const auto& [id, c] : in_flight_)
    if (c.node == *n && !c.accepted) claims.push_back(id);
  std::sort(claims.begin(), claims.end());
  for (auto id : claims) {
    InFlightClaim& c = in_flight_.at(id);
    c.sent_at = TimePoint::min();  // on_tick's timeout path takes it from here
  }
  if (!claims.empty()) on_tick(now, out);
  // Releases of preempted tasks there: the task is gone with the node.
  for (auto it = releasing_.begin(); it != releasing_.end();) {
    if (it->second.request.node != node) {
      ++it;
      continue;
    }
    JobRecord& j = jobs_.at(it->second.request.job);
    auto tasks = it->second.request.tasks;
    it = releasing_.erase(it);
    view_.remove_change_in_flight(*n);
    for (auto t : tasks) j.tasks[t].node_plus_one = 0;
    return_to_queue(j, tasks, false, j.last_removal, now);
  }
  // Running tasks: lost.
  std::vector<std::pair<JobId, TaskIndex>> lost;
  for (const auto& [id, j] : jobs_) {
    if (j.count_in(TaskState::running) == 0 || j.tasks.empty()) continue;
    for (TaskIndex t = 0; t < j.spec.count; ++t)
      if (j.tasks[t].state == TaskState::running && j.tasks[t].node_plus_one == *n + 1)
        lost.emplace_back(id, t);
  }
  std::sort(lost.begin(), lost.end());
  for (auto [id, t] : lost) {
    NodeEvent ev;
    ev.kind = NodeEvent::Kind::task_finished;
    ev.partition = config_.partition;
    ev.task = TaskRef{id, t};
    ev.final_state = TaskState::lost;
    ev.exit_code = -1;
    ev.end = TaskEnd::decided(EndReason::node_lost);
    JobRecord& j = jobs_.at(id);
    j.tasks[t].node_plus_one = 0;
    end_task(j, ev, now, out);
  }
  // Anything restored onto it and still unverified is lost too.
  if (auto it = unverified_.find(node); it != unverified_.end()) {
    auto tasks = std::move(it->second);
    unverified_.erase(it);
    std::map<JobId, std::vector<TaskIndex>> by_job;
    for (const auto& t : tasks) by_job[t.job].push_back(t.index);
    for (auto& [id, indices] : by_job) declare_lost(jobs_.at(id), indices, now);
  }
}

void Scheduler::record_final(JobRecord& j, const NodeEvent& ev) {
  j.tasks[ev.task.index].journaled = false;
  if (j.fair_tasks > 0) rekey(j);
  // The node stays in the record: after a restart `status` still says where
  // a finished task ran.
  uint32_t node = j.tasks[ev.task.index].node_plus_one;
  journal_tasks(j.spec.id, {ev.task.index}, ev.final_state, node == 0 ? NodeId{} : view_.node(node - 1).id,
                ev.claim_id, ev.exit_code, j.tasks[ev.task.index].end);
}

void Scheduler::record_exit(const NodeEvent& ev) {
  auto jt = jobs_.find(ev.task.job);
  if (jt == jobs_.end() || ev.task.index >= jt->second.tasks.size()) return;
  JobRecord& j = jt->second;
  TaskRecord& r = j.tasks[ev.task.index];
  // Only the run the scheduler took away, and only once: a task placed
  // again meanwhile has a new run whose end this is not.
  bool taken = r.end.reason == EndReason::cancelled || r.end.reason == EndReason::preempted ||
               r.end.reason == EndReason::evicted;
  if (!taken || r.end.signal != 0 || r.end.exit_code >= 0 || ev.end.reason == EndReason::none) return;
  r.end.signal = ev.end.signal;
  r.end.exit_code = ev.end.exit_code;
  r.exit_code = ev.exit_code;
  if (is_final(r.state))
    journal_tasks(j.spec.id, {ev.task.index}, r.state, NodeId{}, ev.claim_id, r.exit_code, r.end);
}

void Scheduler::maybe_finished(JobRecord& j, TimePoint now, Outbox& out) {
  if (!j.finished()) return;
  if (j.finished_at == kNever) j.finished_at = now;
  out.finished_jobs.push_back(j.spec.id);
}

void Scheduler::on_tick(TimePoint now, Outbox& out) {
  if (!unverified_.empty() && now - recovered_at_ >= config_.recovery_grace) {
    // Nodes that did not come back: what the store placed on them is lost.
    auto unverified = std::move(unverified_);
    unverified_.clear();
    for (auto& [node, tasks] : unverified) {
      std::sort(tasks.begin(), tasks.end());
      std::map<JobId, std::vector<TaskIndex>> lost;
      for (const auto& t : tasks) lost[t.job].push_back(t.index);
      for (auto& [job, indices] : lost) declare_lost(jobs_.at(job), indices, now);
    }
  }
  for (auto& [id, rel] : releasing_) {
    if (now - rel.sent_at < config_.reply_timeout) continue;
    rel.sent_at = now;  // releasing is idempotent on the node
    out.releases.push_back(rel.request);
  }
  // Overdue entries in id order, so the outbox does not depend on hash order.
  std::vector<ClaimId> overdue;
  for (const auto& [id, c] : in_flight_)
    if (now - c.sent_at >= config_.reply_timeout) overdue.push_back(id);
  std::sort(overdue.begin(), overdue.end());
  std::vector<ClaimId> expired;
  for (auto id : overdue) {
    InFlightClaim& c = in_flight_.at(id);
    if (c.gang == 0 && c.confirmed) {
      // An aborted gang's release, unanswered: releasing is idempotent.
      c.sent_at = now;
      out.releases.push_back(release_of_confirmed(config_, c.request));
      continue;
    }
    if (c.confirming) {
      // Confirms are idempotent on the node: ask again.
      ConfirmRequest r;
      r.claim_id = id;
      r.partition = config_.partition;
      r.epoch = config_.epoch;
      r.node = c.request.node;
      c.sent_at = now;
      out.confirms.push_back(r);
      continue;
    }
    if (!c.accepted) expired.push_back(id);
  }
  for (auto id : expired) {
    ++stats_.claim_timeouts;
    // Treat as rejected: the node's claim, if any, expires on its own and a
    // late accept is released on arrival.
    auto it = in_flight_.find(id);
    InFlightClaim& c = it->second;
    view_.remove_in_flight(c.node, c.request.total(), static_cast<uint32_t>(c.request.tasks.size()));
    JobRecord& j = jobs_.at(c.request.job);
    std::vector<TaskIndex> tasks = std::move(c.request.tasks);
    uint64_t gang_id = c.gang;
    // Before the erase: `c` dies with it.
    std::string why = "node " + std::to_string(c.request.node.value) + " did not answer a claim";
    in_flight_.erase(it);
    if (gang_id == 0) {
      return_to_queue(j, tasks, true, why, now);
      continue;
    }
    Gang& g = gangs_.at(gang_id);
    g.claims.erase(std::find(g.claims.begin(), g.claims.end(), id));
    --g.outstanding;
    g.failed = true;
    g.why = why;
    for (auto t : tasks) {
      set_task_state(j, t, TaskState::pending);
      j.requeued.push_back(t);
    }
    pending_tasks_ += tasks.size();
    gang_reply(gang_id, now, out);
  }
}

std::string Scheduler::explain(JobId id) const {
  auto e = explanation(id);
  return e ? e->summary : e.error().message;
}

Expected<Explanation> Scheduler::explanation(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  const JobRecord& j = it->second;
  Explanation e;
  e.job = id;
  e.pending = j.pending();
  e.gang = j.spec.gang;
  bool backing_off = std::any_of(backoff_.begin(), backoff_.end(),
                                 [&](const auto& entry) { return entry.second == id; });
  if (j.finished()) {
    e.verdict = WaitVerdict::ended;
    e.summary = "finished";
  } else if (j.pending() == 0) {
    e.verdict = WaitVerdict::placed;
    e.summary = "all tasks placed";
  } else if (backing_off) {
    e.verdict = WaitVerdict::backing_off;
    e.summary = j.reason;
  } else if (!j.parked) {
    e.verdict = WaitVerdict::queued;
    e.summary = "waiting for its turn in the queue";
  } else {
    explain_waiting(e, count_placement(view_, j.pool, j.spec.per_task, j.spec.constraints, j.pending()),
                    j.spec.pool, j.spec.per_task);
    if (!j.spec.gang && e.verdict != WaitVerdict::fits_now) {
      // The placement stage's own words: what is free where.
      auto result = place(view_, request_for(j, true), config_.classes[j.class_index].placement);
      if (result.verdict != PlacementVerdict::fit)
        e.summary = (e.verdict == WaitVerdict::unresolvable ? "" : "waiting for capacity: ") + result.reason;
    }
  }
  return e;
}

Expected<JobView> Scheduler::job_view(JobId id, bool with_tasks) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  const JobRecord& j = it->second;
  JobView v;
  v.spec = j.spec;
  v.by_state = j.by_state;
  v.state = job_state(j.by_state, j.spec.count, j.cancelled);
  if (v.state == JobState::pending || (v.state == JobState::running && j.pending() > 0))
    v.reason = explain(id);
  v.last_removal = j.last_removal;
  v.preemptions = j.preemptions;
  v.evictions = j.evictions;
  v.started_at = j.first_running;
  v.finished_at = j.finished_at;
  if (with_tasks) {
    v.tasks.reserve(j.spec.count);
    for (TaskIndex t = 0; t < j.spec.count; ++t) {
      TaskView tv;
      tv.index = t;
      if (!j.tasks.empty()) {
        const TaskRecord& r = j.tasks[t];
        tv.state = r.state;
        if (r.node_plus_one != 0) tv.node = view_.node(r.node_plus_one - 1).id;
        tv.exit_code = r.exit_code;
        tv.failures = r.failures;
        tv.losses = r.losses;
        tv.end = r.end;
        if (auto by = j.preempted_by.find(t); by != j.preempted_by.end()) tv.preempted_by = by->second;
      }
      v.tasks.push_back(tv);
    }
  }
  return v;
}

Status Scheduler::check_accounting() const {
  for (const auto& [id, j] : jobs_) {
    uint64_t sum = 0;
    for (auto c : j.by_state) sum += c;
    auto name = "job " + std::to_string(id.value);
    if (sum != j.spec.count)
      return make_error(Errc::wrong_state, name + ": task states add up to " + std::to_string(sum) +
                                               ", count is " + std::to_string(j.spec.count));
    if (j.count_in(TaskState::pending) != j.pending())
      return make_error(Errc::wrong_state, name + ": " + std::to_string(j.pending()) +
                                               " tasks queued but " +
                                               std::to_string(j.count_in(TaskState::pending)) +
                                               " pending");
    if (!j.tasks.empty()) {
      std::array<uint32_t, 9> seen{};
      for (const auto& t : j.tasks) ++seen[static_cast<size_t>(t.state)];
      if (seen != j.by_state)
        return make_error(Errc::wrong_state, name + ": per-task states disagree with the counts");
    }
  }
  return Status::ok();
}

}  // namespace claimsched::core
