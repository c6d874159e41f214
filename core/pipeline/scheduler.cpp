// The pipeline's wiring: configuration, admission into the table and queue,
// and the placement pass (queue -> placement -> claim window).

#include "core/pipeline/scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/duration.hpp"
#include "core/pipeline/admission.hpp"

namespace claimsched::core {

Status SchedulerConfig::validate() const {
  auto bad = [](std::string what) { return make_error(Errc::invalid_argument, "scheduler: " + std::move(what)); };
  if (pools.empty()) return bad("no pools");
  if (classes.empty()) return bad("no classes");
  if (auto s = validate_classes(classes); !s) return s;
  if (!find_class(default_class)) return bad("default class '" + default_class + "' is not defined");
  if (max_claims_in_flight == 0) return bad("max_claims_in_flight must be positive");
  if (max_tasks_per_claim == 0) return bad("max_tasks_per_claim must be positive");
  if (max_claim_attempts == 0) return bad("max_claim_attempts must be positive");
  if (max_future_starts == 0) return bad("max_future_starts must be positive");
  if (initial_backoff.count() <= 0 || max_backoff < initial_backoff)
    return bad("backoff must be positive, and max_backoff at least initial_backoff");
  if (epoch == 0 || epoch >= kMaxEpoch) return bad("epoch must be in 1.." + std::to_string(kMaxEpoch - 1));
  return Status::ok();
}

const ClassConfig* SchedulerConfig::find_class(std::string_view name) const {
  for (const auto& c : classes)
    if (c.name == name) return &c;
  return nullptr;
}

Scheduler::Scheduler(SchedulerConfig config)
    : config_(std::move(config)),
      queue_(QueueConfig{config_.unpark_interval, config_.initial_backoff, config_.max_backoff}),
      window_(config_.partition, config_.epoch) {
  std::vector<LockQueueSettings> queues;
  for (const auto& cls : config_.classes) queues.push_back(cls.queue);
  queues.push_back(LockQueueSettings{});  // operator operations: fifo, no limit
  gate_ = LockQueue(std::move(queues));
  view_.set_one_change_in_flight(config_.strict_cas);
  for (const auto& cls : config_.classes) backfill_ = backfill_ || cls.backfill != BackfillMode::none;
  table_.track_holders(backfill_);
  // Parents before their children, whatever the order of `pools`.
  auto parent_of = [&](const std::string& pool) -> const std::string* {
    for (const auto& [child, parent] : config_.pool_parents)
      if (child == pool) return &parent;
    return nullptr;
  };
  std::function<uint32_t(const std::string&, size_t)> add = [&](const std::string& pool, size_t depth) {
    if (auto p = view_.find_pool(pool)) return *p;
    const std::string* parent = depth < config_.pools.size() ? parent_of(pool) : nullptr;
    std::optional<uint32_t> parent_index;
    if (parent) parent_index = add(*parent, depth + 1);
    return view_.add_pool(pool, parent_index);
  };
  for (const auto& p : config_.pools) add(p, 0);
  for (const auto& [pool, limits] : config_.pool_limits)
    if (auto p = view_.find_pool(pool)) {
      if (limits_.size() <= *p) limits_.resize(view_.pool_count());
      limits_[*p] = limits;
    }
}

// --- admission -----------------------------------------------------------------

Status Scheduler::submit(JobSpec job, TimePoint now) {
  last_now_ = std::max(last_now_, now);
  if (pool_removed(job.pool))
    return make_error(Errc::wrong_state, "job field 'pool': pool '" + job.pool +
                                             "' was removed (claimsched pool remove); it takes no jobs");
  auto admitted = admit(config_, view_, std::move(job));
  if (!admitted) return admitted.error();
  if (!admitted->spec.wait_for_nodes) {
    // As Slurm does: a job that no node of its pool can ever run is refused
    // now, not left waiting forever (--hold keeps it, for nodes to come).
    if (auto why = never_fits_now(*admitted); !why.empty())
      return make_error(Errc::invalid_argument, "job field 'resources': " + why);
  }
  auto added = table_.add(std::move(*admitted));
  if (!added) return added.error();
  JobRecord& j = **added;
  queue_.set_shape(j, shape_of(j));
  ++stats_.jobs_submitted;
  stats_.tasks_submitted += j.spec.count;
  if (config_.journal) journal_.jobs_accepted.push_back(j.spec);
  if (config_.classes[j.class_index].policy == ClassPolicy::reserve) reserve_jobs_[j.spec.user].insert(j.spec.id);
  enter_queue(j, now);
  return Status::ok();
}

Status Scheduler::restore_job(JobSpec job, std::vector<RestoredTask> tasks, TimePoint now, bool cancelled) {
  auto admitted = admit(config_, view_, std::move(job));
  if (!admitted) return admitted.error();
  for (const auto& t : tasks)
    if (t.index >= admitted->spec.count)
      return make_error(Errc::corrupt, "job " + std::to_string(admitted->spec.id.value) + " task " +
                                           std::to_string(t.index) + " is beyond its count");
  auto added = table_.add(std::move(*admitted));
  if (!added) return added.error();
  JobRecord& j = **added;
  queue_.set_shape(j, shape_of(j));
  std::sort(tasks.begin(), tasks.end(), [](const RestoredTask& a, const RestoredTask& b) { return a.index < b.index; });
  // Tasks past the last one with a record were never placed: they stay the
  // fresh range; pending ones below it are requeued.
  TaskIndex fresh = tasks.empty() ? 0 : tasks.back().index + 1;
  std::vector<TaskIndex> requeued;
  size_t next_record = 0;
  for (TaskIndex t = 0; t < fresh; ++t) {
    const RestoredTask* r = next_record < tasks.size() && tasks[next_record].index == t ? &tasks[next_record++] : nullptr;
    TaskState s = r ? r->state : TaskState::pending;
    bool on_node = r && r->node.value != 0 && (s == TaskState::running || s == TaskState::claimed);
    if (is_final(s)) {
      table_.set_state(j, t, s);
      TaskRecord& rec = j.tasks[t];
      if (r && r->node.value != 0) rec.node = view_.find_node(r->node);  // where it ran (status)
      rec.exit_code = r ? r->exit_code : 0;
      rec.end = r && r->end.reason != EndReason::none ? r->end : inferred_end(s, rec.exit_code);
    } else if (on_node) {
      // Believed on its node until the node reports (or the grace passes).
      table_.set_state(j, t, TaskState::running);
      j.tasks[t].journaled = true;
      reconciler_.expect(r->node, TaskRef{j.spec.id, t}, now);
    } else {
      if (j.tasks.empty()) j.tasks.resize(j.spec.count);
      requeued.push_back(t);
    }
  }
  table_.set_restored_pending(j, fresh, std::move(requeued));
  if (cancelled) {
    // Whatever the records did not end yet ended with the cancel.
    j.cancelled = true;
    views_.note(j.spec.id).reason = "cancelled";
    table_.end_pending(j, TaskState::cancelled);
  }
  ++stats_.jobs_submitted;
  stats_.tasks_submitted += j.spec.count;
  if (config_.classes[j.class_index].policy == ClassPolicy::reserve && !j.finished())
    reserve_jobs_[j.spec.user].insert(j.spec.id);
  if (uses_lock_queue(j) && !j.finished() && j.held() > 0) {
    // It ran before the restart: it holds its slot and its locks again,
    // before any job still in line can take them.
    gate_.adopt(j.spec.id, j.class_index, j.spec.locks);
    queue_.enqueue(j);
  } else if (!j.finished()) {
    enter_queue(j, now);
  }
  return Status::ok();
}

void Scheduler::restore_started(TaskRef task, TimePoint started, bool initialized) {
  JobRecord* j = table_.find(task.job);
  if (!j || task.index >= j->tasks.size()) return;
  j->tasks[task.index].started = started;
  j->tasks[task.index].initialized = initialized;
  j->initialized = j->initialized || initialized;
}

// --- policy ----------------------------------------------------------------------

void Scheduler::set_fair_share(JobId job, int64_t rank, uint32_t fair_tasks) {
  JobRecord* j = table_.find(job);
  if (!j) return;
  PolicyMark& m = marks_[job];
  m.rank = rank;
  m.fair_tasks = fair_tasks;
  rerank(*j);
}

void Scheduler::set_cap(JobId job, std::optional<uint32_t> cap, const std::string& why) {
  JobRecord* j = table_.find(job);
  if (!j) return;
  if (!cap && !marks_.contains(job)) return;
  marks_[job].cap = cap;
  if (cap && j->held() >= *cap) {
    if (j->queue.state == QueueState::queued) wait(*j, WaitCause::capped, "capped: " + why);
    return;
  }
  uncap(*j);
}

int64_t Scheduler::effective_rank(const JobRecord& j) const {
  auto it = marks_.find(j.spec.id);
  if (it == marks_.end()) return 0;
  const PolicyMark& m = it->second;
  // Once it holds its fair share it goes behind the jobs still below theirs,
  // at once, not only at the policy's next cycle.
  if (m.fair_tasks > 0 && j.held() >= m.fair_tasks) return std::min<int64_t>(m.rank, -1);
  return m.rank;
}

void Scheduler::rerank(JobRecord& j) {
  if (marks_.empty()) return;
  queue_.rerank(j, effective_rank(j));
}

std::optional<uint32_t> Scheduler::cap_room(const JobRecord& j) const {
  std::optional<uint32_t> cap;
  // DUCC's initialization cap holds from the first placement, before any
  // policy cycle saw the job: the scheduler knows when a task started.
  const ClassConfig& cls = config_.classes[j.class_index];
  if (!j.initialized && cls.initialization_cap > 0) cap = cls.initialization_cap;
  if (!marks_.empty())
    if (auto it = marks_.find(j.spec.id); it != marks_.end() && it->second.cap)
      cap = cap ? std::min(*cap, *it->second.cap) : *it->second.cap;
  if (!cap) return std::nullopt;
  return *cap > j.held() ? *cap - j.held() : 0;
}

void Scheduler::uncap(JobRecord& j) {
  const JobNotes* n = views_.notes(j.spec.id);
  if (!n || n->waits != WaitCause::capped || j.queue.state != QueueState::idle || reservations_.of(j.spec.id)) return;
  if (auto room = cap_room(j); room && *room == 0) return;
  views_.note(j.spec.id).waits = WaitCause::none;
  queue_.enqueue(j);
}

uint32_t Scheduler::limits_room(const JobRecord& j, std::string* why) const {
  if (limits_.empty()) return UINT32_MAX;
  int64_t room = UINT32_MAX;
  for (std::optional<uint32_t> p = j.pool; p; p = view_.pool(*p).parent) {
    if (*p >= limits_.size() || !limits_[*p]) continue;
    const Limits& limits = *limits_[*p];
    Resources used = table_.held_in_pool(*p);
    for (uint32_t d : view_.pool(*p).descendants) used += table_.held_in_pool(d);
    for (DimensionId d = 0; d < kMaxDimensions; ++d) {
      if (!limits.has(d) || j.spec.per_task[d] <= 0) continue;
      int64_t left = std::max<int64_t>(0, limits.values[d] - used[d]) / j.spec.per_task[d];
      if (left < room && why)
        *why = "resource_limits " + limits.to_string() + " of pool '" + view_.pool(*p).name + "' (its work holds " +
               used.to_string() + ")";
      room = std::min(room, left);
    }
  }
  return static_cast<uint32_t>(room);
}

uint32_t Scheduler::batch_limit(const JobRecord& j) const {
  // Below its fair share a job is placed up to its share and no further in
  // one go: then it goes behind the jobs still below theirs (DUCC: every job
  // up to its fair share first, then what is left).
  if (marks_.empty()) return UINT32_MAX;
  auto it = marks_.find(j.spec.id);
  if (it == marks_.end() || it->second.fair_tasks == 0 || j.held() >= it->second.fair_tasks) return UINT32_MAX;
  return it->second.fair_tasks - j.held();
}

const Limits& SchedulerConfig::allotment_of(std::string_view user) const {
  auto it = std::lower_bound(user_allotments.begin(), user_allotments.end(), user,
                             [](const auto& e, std::string_view u) { return e.first < u; });
  return it != user_allotments.end() && it->first == user ? it->second : global_allotment;
}

Resources Scheduler::held_resources(const JobRecord& j) const {
  if (config_.classes[j.class_index].policy != ClassPolicy::reserve)
    return j.spec.per_task.times(j.held());
  if (j.held() == 0) return Resources{};
  Resources r;
  if (auto it = machines_.find(j.spec.id); it != machines_.end())
    r = it->second;
  else if (const TaskRecord* t = j.task(0); t && t->node)
    r = view_.node(*t->node).capacity;  // restored: its node tells
  else
    r = j.spec.per_task;
  return reservation_charge(r, config_.quantum);
}

std::optional<std::string> Scheduler::refuse_by_allotment(const JobRecord& j, const Resources& need) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  const Limits& user_limit = config_.allotment_of(j.spec.user);
  const Limits& class_limit = cls.allotment_of(j.spec.user);
  if (user_limit.empty() && class_limit.empty()) return std::nullopt;
  Resources user_use, class_use;
  if (const TaskTable::UserHold* held = table_.allotted_held(j.spec.user)) {
    user_use = held->total;
    if (j.class_index < held->by_class.size()) class_use = held->by_class[j.class_index];
  }
  if (auto mine = reserve_jobs_.find(j.spec.user); mine != reserve_jobs_.end())
    for (JobId id : mine->second) {
      const JobRecord* k = table_.find(id);
      if (!k) continue;
      Resources r = held_resources(*k);
      user_use += r;
      if (k->class_index == j.class_index) class_use += r;
    }
  auto who = [&] { return "user '" + j.spec.user + "' would exceed the allotment "; };
  if (!user_limit.allows(user_use + need))
    return who() + user_limit.to_string() + " (holds " + user_use.to_string() + ", asks " + need.to_string() + ")";
  if (!class_limit.allows(class_use + need))
    return who() + class_limit.to_string() + " of class '" + cls.name + "' (holds " + class_use.to_string() +
           ", asks " + need.to_string() + ")";
  return std::nullopt;
}

Status Scheduler::hold(Hold h) {
  JobRecord* j = table_.find(h.job);
  if (!j) return make_error(Errc::unknown_name, "hold: unknown job " + std::to_string(h.job.value));
  if (j->cancelled || j->pending() < h.tasks() || h.parts.empty())
    return make_error(Errc::wrong_state, "hold: job " + std::to_string(h.job.value) + " has " +
                                             std::to_string(j->pending()) + " pending tasks, not " +
                                             std::to_string(h.tasks()));
  if (reservations_.of(h.job))
    return make_error(Errc::duplicate, "hold: job " + std::to_string(h.job.value) + " holds room already");
  if (j->queue.state == QueueState::gated)
    return make_error(Errc::wrong_state, "hold: job " + std::to_string(h.job.value) +
                                             " has not started yet (its class's lock queue)");
  for (const auto& p : h.parts)
    if (p.node >= view_.node_count()) return make_error(Errc::unknown_name, "hold: unknown node");
  // The room counts as taken from now on: nothing else is placed there.
  for (const auto& p : h.parts) view_.add_in_flight(p.node, h.per_task.times(p.tasks), p.tasks);
  queue_.remove(*j);
  views_.note(h.job).waits = WaitCause::none;
  reservations_.add(std::move(h));
  return Status::ok();
}

void Scheduler::drop_hold(JobId job) {
  auto h = reservations_.take(job);
  if (!h) return;
  for (const auto& p : h->parts) view_.remove_in_flight(p.node, h->per_task.times(p.tasks), p.tasks);
  if (JobRecord* j = table_.find(job)) queue_.enqueue(*j);
}

// --- placement -------------------------------------------------------------------

TimePoint Scheduler::next_wakeup() const { return queue_.next_wakeup(view_.grew_pending()); }

PlacementRequest Scheduler::request_for(const JobRecord& j, bool explain) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  PlacementRequest req;
  req.per_task = j.spec.per_task;
  req.tasks_wanted = j.pending();
  req.max_tasks_per_claim = config_.max_tasks_per_claim;
  req.constraints = j.spec.constraints.empty() ? nullptr : &j.spec.constraints;
  req.pool = j.pool;
  // DUCC: only preemptible work squats in subpools.
  req.subpools = cls.policy == ClassPolicy::fair_share && j.spec.preemptible;
  req.rotation = config_.rotation;
  req.span = config_.rotation_span;
  req.explain = explain;
  return req;
}

void Scheduler::schedule(TimePoint now, Outbox& out) {
  if (fenced_) return;
  ++pass_;
  last_now_ = std::max(last_now_, now);
  if (gate_.pending() > 0) start_gated(now);
  run_ready_removals();
  for (auto& ended : ended_operations_) out.operations_ended.push_back(std::move(ended));
  ended_operations_.clear();
  for (JobId id : operations_ready_)
    if (auto it = operations_.find(id); it != operations_.end()) out.operations.emplace_back(id, it->second);
  operations_ready_.clear();
  if (reservations_.size() > 0) claim_ready_holds(now, out);
  queue_.refresh(now, view_.take_grew(), table_);
  // Backfilling: jobs that wait hold future starts that later jobs must not
  // delay (core/pipeline/backfill.hpp).
  if (backfill_) backfill_begin(now);
  // DUCC: a pool's residents come before squatters from above. Jobs that
  // found no room in their own pool try its subpools only once every job
  // had its turn in its own.
  std::vector<JobId> squatters;
  while (window_.size() < config_.max_claims_in_flight) {
    auto next = queue_.front();
    if (!next) break;
    JobRecord& j = table_.at(*next);
    if (backfill_ ? place_backfilling(j, false, now, out) : place_next(j, now, out)) squatters.push_back(j.spec.id);
  }
  for (JobId id : squatters) {
    JobRecord& j = table_.at(id);
    while (window_.size() < config_.max_claims_in_flight && j.queue.state == QueueState::waiting_for_capacity &&
           (backfill_ ? place_backfilling(j, true, now, out) : place_batch(j, true, now, out))) {
    }
  }
  if (backfill_) backfill_end(now);
}

bool Scheduler::place_next(JobRecord& j, TimePoint now, Outbox& out) {
  switch (config_.classes[j.class_index].policy) {
    case ClassPolicy::reserve:
      place_machine(j, now, out);
      return false;
    case ClassPolicy::fixed_share:
      place_whole(j, now, out);  // one allocation per request (DUCC)
      return false;
    case ClassPolicy::fair_share:
      if (j.spec.gang) {
        place_whole(j, now, out);
        return false;
      }
      return !place_batch(j, false, now, out) && request_for(j, false).subpools &&
             !view_.pool(j.pool).descendants.empty();
  }
  return false;
}

// --- the lock queue ----------------------------------------------------------------

bool Scheduler::uses_lock_queue(const JobRecord& j) const {
  return !j.spec.locks.empty() || config_.classes[j.class_index].queue.gates_every_job();
}

void Scheduler::enter_queue(JobRecord& j, TimePoint now) {
  if (!uses_lock_queue(j)) {
    queue_.enqueue(j);
    return;
  }
  gate_.add(j.spec.id, j.class_index, j.spec.submit_time, now, j.spec.locks);
  queue_.gate(j);
}

void Scheduler::start_gated(TimePoint now) {
  for (const auto& started : gate_.start_ready(now)) {
    if (!started.block) {
      on_granted(started.job);
      continue;
    }
    if (is_operation(started.job)) continue;  // its words come from the lock queue
    JobRecord& j = table_.at(started.job);
    JobNotes& n = views_.note(j.spec.id);
    n.waits = WaitCause::lock;
    n.reason = "waits for " + started.block->to_string();
  }
}

void Scheduler::on_granted(JobId id) {
  if (is_operation(id))
    operations_ready_.push_back(id);
  else
    run_gated(table_.at(id));
}

void Scheduler::run_gated(JobRecord& j) {
  JobNotes& n = views_.note(j.spec.id);
  if (n.waits == WaitCause::lock) {
    n.waits = WaitCause::none;
    n.reason.clear();
  }
  queue_.ungate(j);
}

void Scheduler::requeue_in_lock_queue(JobRecord& j, TimePoint now) {
  for (JobId next : gate_.finish(j.spec.id)) on_granted(next);
  enter_queue(j, now);
}

void Scheduler::wait_for_room(JobRecord& j, PlacementVerdict verdict, const bool* fragmented) {
  queue_.no_room(j);
  JobNotes& n = views_.note(j.spec.id);
  n.verdict = verdict;
  n.waits = WaitCause::no_room;
  n.fragmented = fragmented ? *fragmented : fragmented_now(j, verdict);
  // The other waiting jobs of its shape were not looked at but would have
  // found the same: their notes (explain, the policy's defragmenting) say so.
  if (uint32_t shape = j.queue.shape; shape != 0) {
    NoRoom& told = no_room_[shape];
    if (told.told_verdict != n.verdict || told.told_fragmented != n.fragmented) {
      told.told_verdict = n.verdict;
      told.told_fragmented = n.fragmented;
      queue_.for_each_in_group(shape, [&](JobId id) {
        JobNotes& other = views_.note(id);
        if (other.waits != WaitCause::no_room) return;
        other.verdict = told.told_verdict;
        other.fragmented = told.told_fragmented;
      });
    }
  }
}

bool Scheduler::fragmented_now(const JobRecord& j, PlacementVerdict verdict) const {
  // No node has room for one task: is the room there in all (fragmented)?
  Resources total = view_.pool(j.pool).total_available;
  bool subpools = request_for(j, false).subpools;
  if (subpools)
    for (uint32_t p : view_.pool(j.pool).descendants) total += view_.pool(p).total_available;
  // Room backfilling withholds for the moment is there all the same.
  for (const auto& [node, room] : withheld_) {
    const auto& below = view_.pool(j.pool).descendants;
    uint32_t p = view_.node(node).pool;
    if (p == j.pool || (subpools && std::find(below.begin(), below.end(), p) != below.end())) total += room;
  }
  return verdict == PlacementVerdict::unschedulable && j.spec.per_task.fits_in(total);
}

void Scheduler::wait(JobRecord& j, WaitCause cause, std::string why) {
  // Refused by the allotments: looked at again when capacity changes (an
  // allocation ended). Capped: taken out until the policy changes the cap.
  if (cause == WaitCause::capped)
    queue_.remove(j);
  else
    queue_.wait_for_capacity(j);
  JobNotes& n = views_.note(j.spec.id);
  n.waits = cause;
  n.reason = std::move(why);
}

bool Scheduler::place_batch(JobRecord& j, bool squat, TimePoint now, Outbox& out) {
  PlacementRequest req = request_for(j, false);
  req.subpools = squat;
  if (auto room = cap_room(j)) {
    if (*room == 0) {
      wait(j, WaitCause::capped, "capped by the policy at " + std::to_string(j.held()) + " tasks");
      return false;
    }
    req.tasks_wanted = std::min(req.tasks_wanted, *room);
  }
  req.tasks_wanted = std::min(req.tasks_wanted, batch_limit(j));
  if (!limits_.empty()) {
    std::string why;
    uint32_t room = limits_room(j, &why);
    if (room == 0) {
      wait(j, WaitCause::not_granted, "at the " + why);
      return false;
    }
    req.tasks_wanted = std::min(req.tasks_wanted, room);
  }
  PlacementResult result;
  if (due_ && !squat) {
    // Backfilling: its future start is due; its task goes where it was booked.
    result.verdict = PlacementVerdict::fit;
    result.node = due_->parts.front().node;
    result.tasks = std::min(req.tasks_wanted, due_->parts.front().tasks);
  } else if (uint32_t shape = j.queue.shape; shape != 0 && !squat && no_room_[shape].pass == pass_) {
    // A job of its shape found no room earlier in this pass: neither would it.
    wait_for_room(j, no_room_[shape].verdict, &no_room_[shape].fragmented);
    return false;
  } else {
    result = place(view_, req, config_.classes[j.class_index].placement);
    ++placement_searches_;
  }
  if (result.verdict != PlacementVerdict::fit) {
    if (squat) return false;
    wait_for_room(j, result.verdict);
    if (uint32_t shape = j.queue.shape; shape != 0 && !due_)
      no_room_[shape] = NoRoom{pass_, result.verdict, views_.note(j.spec.id).fragmented};
    return false;
  }
  auto tasks = table_.take_pending(j, result.tasks);
  if (j.pending() == 0) queue_.remove(j);
  rerank(j);
  send_claim(make_claim(j, result.node, std::move(tasks), j.spec.per_task), result.node, std::nullopt, now, out);
  return true;
}

void Scheduler::place_whole(JobRecord& j, TimePoint now, Outbox& out) {
  // An aborted attempt's confirmed tasks are still being released: the gang
  // is placed again, whole, when the last release is answered.
  if (j.count_in(TaskState::claimed) > 0) {
    queue_.remove(j);
    return;
  }
  uint32_t wanted = j.pending();
  if (config_.classes[j.class_index].non_preemptible())
    if (auto no = refuse_by_allotment(j, j.spec.per_task.times(wanted))) {
      wait(j, WaitCause::not_granted, "not granted: " + *no);
      return;
    }
  std::string limited;
  if (limits_room(j, &limited) < wanted) {
    wait(j, WaitCause::not_granted, "would exceed the " + limited);
    return;
  }
  if (auto room = cap_room(j); room && *room < wanted) {
    wait(j, WaitCause::capped, "capped by the policy below the " + std::to_string(wanted) + " tasks it needs at once");
    return;
  }
  // Plan every task before claiming any: the view's in-flight accounting
  // keeps later decisions of the plan from reusing room taken by earlier ones.
  struct Part {
    NodeIndex node;
    uint32_t tasks;
  };
  std::vector<Part> plan;
  uint32_t planned = 0;
  // Planning borrows room in the view and gives it back; that is not growth.
  bool grew = view_.take_grew();
  PlacementRequest req = request_for(j, false);
  PlacementVerdict verdict = PlacementVerdict::fit;
  if (due_ && due_->tasks() == wanted) {
    // Backfilling: its future start is due; it goes where it was booked.
    for (const auto& p : due_->parts) {
      plan.push_back({p.node, p.tasks});
      view_.add_in_flight(p.node, j.spec.per_task.times(p.tasks), p.tasks);
    }
    planned = wanted;
  }
  // A gang wider than all the room in reach fails however it is planned:
  // one placement says which way (no room now, or never), not one per node.
  Resources reach = view_.pool(j.pool).total_available;
  if (req.subpools)
    for (uint32_t p : view_.pool(j.pool).descendants) reach += view_.pool(p).total_available;
  bool too_wide = planned < wanted && !j.spec.per_task.times(wanted).fits_in(reach);
  if (too_wide) {
    req.tasks_wanted = wanted;
    auto result = place(view_, req, config_.classes[j.class_index].placement);
    ++placement_searches_;
    verdict = result.verdict == PlacementVerdict::fit ? PlacementVerdict::unschedulable : result.verdict;
  }
  while (!too_wide && planned < wanted) {
    req.tasks_wanted = wanted - planned;
    auto result = place(view_, req, config_.classes[j.class_index].placement);
    ++placement_searches_;
    if (result.verdict != PlacementVerdict::fit) {
      verdict = result.verdict;
      break;
    }
    plan.push_back({result.node, result.tasks});
    planned += result.tasks;
    view_.add_in_flight(result.node, j.spec.per_task.times(result.tasks), result.tasks);
  }
  for (const auto& p : plan) view_.remove_in_flight(p.node, j.spec.per_task.times(p.tasks), p.tasks);
  (void)view_.take_grew();
  if (grew) queue_.note_growth();
  if (planned < wanted) {
    wait_for_room(j, verdict);
    return;
  }
  GangId gang = window_.open_gang(j.spec.id);
  for (const auto& p : plan) {
    auto tasks = table_.take_pending(j, p.tasks);
    ClaimRequest c = make_claim(j, p.node, std::move(tasks), j.spec.per_task);
    Gang& g = window_.gang(gang);
    g.claims.push_back(c.claim_id);
    ++g.outstanding;
    send_claim(std::move(c), p.node, gang, now, out);
  }
  queue_.remove(j);
  rerank(j);
}

void Scheduler::place_machine(JobRecord& j, TimePoint now, Outbox& out) {
  // DUCC RESERVE: one whole machine whose memory matches, never a bigger one.
  auto machine = find_free_machine(view_, j.pool, j.spec.per_task, config_.quantum,
                                   j.spec.constraints.empty() ? nullptr : &j.spec.constraints);
  ++placement_searches_;
  if (!machine) {
    wait_for_room(j, PlacementVerdict::unschedulable);
    return;
  }
  Resources whole = view_.node(*machine).capacity;
  if (auto no = refuse_by_allotment(j, reservation_charge(whole, config_.quantum))) {
    wait(j, WaitCause::not_granted, "not granted: " + *no);
    return;
  }
  machines_[j.spec.id] = whole;
  auto tasks = table_.take_pending(j, 1);
  queue_.remove(j);
  send_claim(make_claim(j, *machine, std::move(tasks), whole), *machine, std::nullopt, now, out);
}

void Scheduler::claim_ready_holds(TimePoint now, Outbox& out) {
  for (JobId id : reservations_.ready()) {
    Hold h;
    auto parts = reservations_.take_ready(id, &h);
    for (const auto& p : parts) view_.remove_in_flight(p.node, h.per_task.times(p.tasks), p.tasks);
    JobRecord* jp = table_.find(id);
    if (!jp || jp->cancelled) continue;
    JobRecord& j = *jp;
    bool still_held = reservations_.of(id) != nullptr;
    uint32_t need = h.whole ? h.tasks() : 1;
    if (j.pending() < need) {
      if (!still_held) queue_.enqueue(j);  // placed meanwhile
      continue;
    }
    std::optional<GangId> gang;
    if (h.whole) gang = window_.open_gang(id);
    if (config_.classes[j.class_index].policy == ClassPolicy::reserve) machines_[id] = h.per_task;
    for (const auto& p : parts) {
      auto tasks = table_.take_pending(j, std::min(p.tasks, j.pending()));
      if (tasks.empty()) break;
      ClaimRequest c = make_claim(j, p.node, std::move(tasks), h.per_task);
      if (gang) {
        Gang& g = window_.gang(*gang);
        g.claims.push_back(c.claim_id);
        ++g.outstanding;
      }
      send_claim(std::move(c), p.node, gang, now, out);
    }
    rerank(j);
    if (!gang && !still_held) queue_.enqueue(j);
  }
}

ClaimRequest Scheduler::make_claim(const JobRecord& j, NodeIndex n, std::vector<TaskIndex> tasks,
                                   const Resources& per_task) {
  ClaimRequest c;
  c.claim_id = window_.next_id();
  c.partition = config_.partition;
  c.epoch = config_.epoch;
  c.node = view_.node(n).id;
  if (config_.strict_cas) c.expected_generation = view_.node(n).generation + view_.node(n).in_flight_changes;
  c.job = j.spec.id;
  c.per_task = per_task;
  c.tasks = std::move(tasks);
  c.simulated_runtime = j.spec.simulated_runtime;
  c.launch = j.launch;
  return c;
}

void Scheduler::send_claim(ClaimRequest request, NodeIndex n, std::optional<GangId> gang, TimePoint now,
                           Outbox& out) {
  view_.add_in_flight(n, request.total(), static_cast<uint32_t>(request.tasks.size()));
  ++stats_.claims_sent;
  out.claims.push_back(request);
  window_.add(std::move(request), n, gang, now);
}

// --- what others read ------------------------------------------------------------

void Scheduler::for_each_claim_in_flight(
    const std::function<void(JobId, const std::vector<TaskIndex>&, NodeId)>& f) const {
  for (const auto& [id, c] : window_.claims()) f(c.request.job, c.request.tasks, c.request.node);
}

void Scheduler::for_each_releasing(const std::function<void(TaskRef, NodeId, const Resources&)>& f) const {
  for (const auto& [id, rel] : window_.releases()) {
    if (rel.why != Release::Why::removal) continue;
    const JobRecord& j = table_.at(rel.request.job);
    for (auto t : rel.request.tasks) f(TaskRef{rel.request.job, t}, rel.request.node, j.spec.per_task);
  }
}

void Scheduler::journal_tasks(JobId job, const std::vector<TaskIndex>& tasks, TaskState state, NodeId node,
                              ClaimId claim, int32_t exit_code, const TaskEnd& end) {
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

uint32_t Scheduler::shape_of(const JobRecord& j) {
  // Backfilling books a start per job, gangs and reservations place by the
  // job's size, squatters try subpools one by one: those wait alone.
  const ClassConfig& cls = config_.classes[j.class_index];
  if (backfill_ || cls.policy != ClassPolicy::fair_share || j.spec.gang) return 0;
  if (request_for(j, false).subpools && !view_.pool(j.pool).descendants.empty()) return 0;
  auto key = std::make_pair(j.class_index, ShapeKey{j.pool, j.spec.per_task, j.spec.constraints});
  if (auto it = group_shapes_.find(key); it != group_shapes_.end()) return it->second;
  if (group_shapes_.size() >= 4096) return 0;  // a bound on memory, not on correctness
  auto shape = static_cast<uint32_t>(group_shapes_.size() + 1);
  group_shapes_.emplace(std::move(key), shape);
  no_room_.resize(shape + 1);
  return shape;
}

std::string Scheduler::never_fits_now(const JobRecord& j) const {
  ShapeKey key{j.pool, j.spec.per_task, j.spec.constraints};
  auto it = shape_counts_.find(key);
  if (it == shape_counts_.end()) {
    if (shape_counts_.size() >= 1024) shape_counts_.clear();  // many shapes: a cache, not a record
    it = shape_counts_.emplace(std::move(key), count_placement(view_, j.pool, j.spec.per_task, j.spec.constraints,
                                                               std::numeric_limits<uint32_t>::max()))
             .first;
  }
  return never_fits(it->second, j.spec);
}

}  // namespace claimsched::core
