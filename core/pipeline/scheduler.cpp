// The pipeline's wiring: configuration, admission into the table and queue,
// and the placement pass (queue -> placement -> claim window).

#include "core/pipeline/scheduler.hpp"

#include <algorithm>

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
  view_.set_one_change_in_flight(config_.strict_cas);
  for (const auto& p : config_.pools) view_.add_pool(p);
}

// --- admission -----------------------------------------------------------------

Status Scheduler::add_node(const NodeSpec& spec, const NodeSnapshot& snapshot) {
  auto pool = view_.find_pool(spec.pool);
  if (!pool)
    return make_error(Errc::unknown_name, "node " + spec.name + ": pool '" + spec.pool +
                                              "' is not owned by partition " + std::to_string(config_.partition.value));
  bool known = view_.find_node(spec.id).has_value();
  view_.add_node(spec, *pool, snapshot);
  if (config_.journal && !known) journal_.nodes_registered.push_back(spec);
  return Status::ok();
}

Status Scheduler::submit(JobSpec job, TimePoint now) {
  (void)now;  // submit_time comes with the job (the gateway stamps it)
  auto admitted = admit(config_, view_, std::move(job));
  if (!admitted) return admitted.error();
  auto added = table_.add(std::move(*admitted));
  if (!added) return added.error();
  JobRecord& j = **added;
  ++stats_.jobs_submitted;
  stats_.tasks_submitted += j.spec.count;
  if (config_.journal) journal_.jobs_accepted.push_back(j.spec);
  queue_.enqueue(j);
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
  queue_.enqueue(j);
  return Status::ok();
}

// --- policy ----------------------------------------------------------------------

void Scheduler::set_fair_share(JobId job, int64_t rank, uint32_t fair_tasks) {
  JobRecord* j = table_.find(job);
  if (!j) return;
  fair_share_[job] = {rank, fair_tasks};
  rerank(*j);
}

int64_t Scheduler::effective_rank(const JobRecord& j) const {
  auto it = fair_share_.find(j.spec.id);
  if (it == fair_share_.end()) return 0;
  auto [rank, fair_tasks] = it->second;
  // Once it holds its fair share it goes behind the jobs still below theirs,
  // at once, not only at the policy's next cycle.
  if (fair_tasks > 0 && j.held() >= fair_tasks) return std::min<int64_t>(rank, -1);
  return rank;
}

void Scheduler::rerank(JobRecord& j) {
  if (fair_share_.empty()) return;
  queue_.rerank(j, effective_rank(j));
}

// --- placement -------------------------------------------------------------------

TimePoint Scheduler::next_wakeup() const { return queue_.next_wakeup(view_.grew_pending()); }

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

void Scheduler::schedule(TimePoint now, Outbox& out) {
  if (fenced_) return;
  queue_.refresh(now, view_.take_grew(), table_);
  while (window_.size() < config_.max_claims_in_flight) {
    auto next = queue_.front();
    if (!next) break;
    JobRecord& j = table_.at(*next);
    if (j.spec.gang)
      place_whole(j, now, out);
    else
      place_batch(j, now, out);
  }
}

void Scheduler::wait_for_room(JobRecord& j, PlacementVerdict verdict) {
  queue_.wait_for_capacity(j);
  views_.note(j.spec.id).verdict = verdict;
}

void Scheduler::place_batch(JobRecord& j, TimePoint now, Outbox& out) {
  auto result = place(view_, request_for(j, false), config_.classes[j.class_index].placement);
  if (result.verdict != PlacementVerdict::fit) {
    wait_for_room(j, result.verdict);
    return;
  }
  auto tasks = table_.take_pending(j, result.tasks);
  if (j.pending() == 0) queue_.remove(j);
  rerank(j);
  send_claim(make_claim(j, result.node, std::move(tasks)), result.node, std::nullopt, now, out);
}

void Scheduler::place_whole(JobRecord& j, TimePoint now, Outbox& out) {
  // An aborted attempt's confirmed tasks are still being released: the gang
  // is placed again, whole, when the last release is answered.
  if (j.count_in(TaskState::claimed) > 0) {
    queue_.remove(j);
    return;
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
  bool grew = view_.take_grew();
  PlacementRequest req = request_for(j, false);
  PlacementVerdict verdict = PlacementVerdict::fit;
  while (planned < wanted) {
    req.tasks_wanted = wanted - planned;
    auto result = place(view_, req, config_.classes[j.class_index].placement);
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
    ClaimRequest c = make_claim(j, p.node, std::move(tasks));
    Gang& g = window_.gang(gang);
    g.claims.push_back(c.claim_id);
    ++g.outstanding;
    send_claim(std::move(c), p.node, gang, now, out);
  }
  queue_.remove(j);
  rerank(j);
}

ClaimRequest Scheduler::make_claim(const JobRecord& j, NodeIndex n, std::vector<TaskIndex> tasks) {
  ClaimRequest c;
  c.claim_id = window_.next_id();
  c.partition = config_.partition;
  c.epoch = config_.epoch;
  c.node = view_.node(n).id;
  if (config_.strict_cas) c.expected_generation = view_.node(n).generation + view_.node(n).in_flight_changes;
  c.job = j.spec.id;
  c.per_task = j.spec.per_task;
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

namespace {

/// How many tasks of `req` the pool's nodes hold now in all, and could hold
/// if they were empty (for words about gangs, which need all at once).
std::pair<uint64_t, uint64_t> pool_room(const ClusterView& view, const PlacementRequest& req) {
  uint64_t now = 0, ever = 0;
  for (NodeIndex n : view.pool(req.pool).nodes) {
    const NodeView& v = view.node(n);
    if (req.constraints && !label_selectors_match(*req.constraints, v.labels)) continue;
    if (v.state != NodeState::up) continue;
    ever += static_cast<uint64_t>(std::max<int64_t>(0, req.per_task.copies_fitting_in(v.capacity)));
    now += tasks_that_fit(v, req.per_task, UINT32_MAX);
  }
  return {now, ever};
}

}  // namespace

std::string Scheduler::explain(JobId id) const {
  const JobRecord* j = table_.find(id);
  if (!j) return "unknown job " + std::to_string(id.value);
  if (j->finished()) return "finished";
  if (j->pending() == 0) return "all tasks placed";
  const JobNotes* notes = views_.notes(id);
  switch (j->queue.state) {
    case QueueState::backing_off:
      return "backing off until " + format_duration(j->queue.until) + " (" +
             std::to_string(j->queue.backoff_level) + " backoff(s) in a row): " + (notes ? notes->reason : "");
    case QueueState::queued:
      return "waiting for its turn in the queue";
    case QueueState::idle:
      if (j->spec.gang && j->count_in(TaskState::claimed) > 0)
        return "gang: the tasks of an aborted attempt are being released; it is placed again, whole, then";
      return "not in the queue";
    case QueueState::waiting_for_capacity:
      break;
  }
  PlacementRequest req = request_for(*j, true);
  if (j->spec.gang) {
    auto [now, ever] = pool_room(view_, req);
    std::string pool = "pool '" + view_.pool(j->pool).name + "'";
    if (ever < j->pending())
      return "gang of " + std::to_string(j->pending()) + " tasks can never run: " + pool +
             " holds at most " + std::to_string(ever) + " tasks of " + req.per_task.to_string() + " at once";
    return "gang of " + std::to_string(j->pending()) + " tasks waits until all fit at once: " + pool + " has room for " +
           std::to_string(now) + " now";
  }
  auto result = place(view_, req, config_.classes[j->class_index].placement);
  if (result.verdict == PlacementVerdict::fit) return "room has appeared; it is placed on the next pass";
  return std::string(result.verdict == PlacementVerdict::unresolvable ? "cannot run as the pool is: "
                                                                      : "waiting for capacity: ") +
         result.reason;
}

Expected<JobView> Scheduler::job_view(JobId id, bool with_tasks) const {
  const JobRecord* j = table_.find(id);
  if (!j) return make_error(Errc::unknown_name, "unknown job " + std::to_string(id.value));
  bool waits = !j->finished() && j->pending() > 0;
  std::string why = waits ? explain(id) : std::string();
  if (j->cancelled) why = "cancelled";
  return views_.view(*j, view_, with_tasks, std::move(why));
}

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
                              ClaimId claim, int32_t exit_code) {
  if (!config_.journal || tasks.empty()) return;
  Journal::TaskChange c;
  c.job = job;
  c.tasks = tasks;
  c.state = state;
  c.node = node;
  c.claim_id = claim;
  c.exit_code = exit_code;
  journal_.task_changes.push_back(std::move(c));
}

}  // namespace claimsched::core
