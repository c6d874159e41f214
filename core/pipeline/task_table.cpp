#include "core/pipeline/task_table.hpp"

#include <algorithm>

namespace claimsched::core {

std::string_view to_string(QueueState s) {
  switch (s) {
    case QueueState::idle:
      return "idle";
    case QueueState::queued:
      return "queued";
    case QueueState::waiting_for_capacity:
      return "waiting_for_capacity";
    case QueueState::gated:
      return "gated";
    case QueueState::backing_off:
      return "backing_off";
  }
  return "unknown";
}

bool JobRecord::finished() const {
  uint32_t done = 0;
  for (size_t s = static_cast<size_t>(TaskState::succeeded); s < by_state.size(); ++s) done += by_state[s];
  return done == spec.count;
}

Expected<JobRecord*> TaskTable::add(JobRecord job) {
  JobId id = job.spec.id;
  if (jobs_.contains(id))
    return make_error(Errc::duplicate, "job " + std::to_string(id.value) + " already exists");
  job.by_state = TaskCounts{};
  job.by_state[static_cast<size_t>(TaskState::pending)] = job.spec.count;
  job.next_fresh = 0;
  job.requeued.clear();
  job.tasks.clear();
  pending_tasks_ += job.spec.count;
  JobRecord* added = &jobs_.emplace(id, std::move(job)).first->second;
  list_unfinished(*added);
  depths_.add(added->pool, added->class_index, id, added->spec.submit_time, added->spec.count, added->spec.count > 0,
              waiting());
  return added;
}

void TaskTable::list_unfinished(const JobRecord& j) {
  JobId id = j.spec.id;
  // Ids mostly arrive in order: an append.
  if (unfinished_.empty() || unfinished_.back()->spec.id < id) {
    unfinished_.push_back(&j);
    return;
  }
  auto at = std::lower_bound(unfinished_.begin(), unfinished_.end(), id,
                             [](const JobRecord* r, JobId v) { return r->spec.id < v; });
  if (at == unfinished_.end() || (*at)->spec.id != id) unfinished_.insert(at, &j);
}

JobRecord* TaskTable::find(JobId id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobRecord* TaskTable::find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void TaskTable::set_state(JobRecord& j, TaskIndex t, TaskState s) {
  if (j.tasks.empty()) j.tasks.resize(j.spec.count);
  TaskRecord& r = j.tasks[t];
  if (r.state == s) return;
  auto held = [](TaskState x) { return x == TaskState::claimed || x == TaskState::running; };
  if (held(r.state) != held(s)) {
    if (track_holders_) {
      if (held(s) && j.held() == 0) holders_.insert(j.spec.id);
      if (!held(s) && j.held() == 1) holders_.erase(j.spec.id);
    }
    if (held_by_pool_.size() <= j.pool) held_by_pool_.resize(j.pool + 1);
    if (held(s))
      held_by_pool_[j.pool] += j.spec.per_task;
    else
      held_by_pool_[j.pool] -= j.spec.per_task;
    if (j.allotted) {
      UserHold& u = allotted_by_user_[j.spec.user];
      if (u.by_class.size() <= j.class_index) u.by_class.resize(j.class_index + 1);
      if (held(s)) {
        u.total += j.spec.per_task;
        u.by_class[j.class_index] += j.spec.per_task;
      } else {
        u.total -= j.spec.per_task;
        u.by_class[j.class_index] -= j.spec.per_task;
      }
    }
  }
  if (r.state == TaskState::running) --running_tasks_;
  if (r.state == TaskState::pending) --pending_tasks_;
  if (s == TaskState::running) ++running_tasks_;
  if (s == TaskState::pending) ++pending_tasks_;
  --j.by_state[static_cast<size_t>(r.state)];
  ++j.by_state[static_cast<size_t>(s)];
  uint32_t now_pending = j.count_in(TaskState::pending);
  if (r.state == TaskState::pending) depths_.remove(j.pool, j.class_index, 1, now_pending == 0);
  if (s == TaskState::pending)
    depths_.add(j.pool, j.class_index, j.spec.id, j.spec.submit_time, 1, now_pending == 1, waiting());
  // A task back from a final state (a preempted one requeued) makes a
  // finished job unfinished again, and one the index dropped must return.
  bool revived = r.state >= TaskState::succeeded && s < TaskState::succeeded;
  r.state = s;
  if (revived) list_unfinished(j);
}

std::vector<TaskIndex> TaskTable::take_pending(JobRecord& j, uint32_t n) {
  std::vector<TaskIndex> out;
  out.reserve(n);
  while (out.size() < n && !j.requeued.empty()) {
    out.push_back(j.requeued.back());
    j.requeued.pop_back();
  }
  while (out.size() < n && j.next_fresh < j.spec.count) out.push_back(j.next_fresh++);
  for (auto t : out) set_state(j, t, TaskState::claimed);
  return out;
}

std::vector<TaskIndex> TaskTable::requeue(JobRecord& j, const std::vector<TaskIndex>& tasks) {
  std::vector<TaskIndex> journaled;
  for (auto t : tasks) {
    set_state(j, t, TaskState::pending);
    TaskRecord& r = j.tasks[t];
    r.node.reset();
    r.initialized = false;
    if (r.journaled) {
      r.journaled = false;
      journaled.push_back(t);
    }
    j.requeued.push_back(t);
  }
  return journaled;
}

std::vector<TaskIndex> TaskTable::end_pending(JobRecord& j, TaskState state) {
  std::vector<TaskIndex> out = j.requeued;
  for (TaskIndex t = j.next_fresh; t < j.spec.count; ++t) out.push_back(t);
  j.requeued.clear();
  j.next_fresh = j.spec.count;
  std::sort(out.begin(), out.end());
  for (auto t : out) set_state(j, t, state);
  return out;
}

void TaskTable::end_requeued(JobRecord& j, TaskIndex t, TaskState state) {
  auto it = std::find(j.requeued.begin(), j.requeued.end(), t);
  if (it == j.requeued.end()) return;
  j.requeued.erase(it);
  set_state(j, t, state);
}

void TaskTable::set_restored_pending(JobRecord& j, TaskIndex next_fresh, std::vector<TaskIndex> requeued) {
  j.next_fresh = next_fresh;
  // Lowest index first out of the stack.
  std::sort(requeued.begin(), requeued.end(), std::greater<>());
  j.requeued = std::move(requeued);
}

std::vector<TaskRef> TaskTable::running_on(NodeIndex n) const {
  std::vector<TaskRef> out;
  for (const auto& [id, j] : jobs_) {
    if (j.count_in(TaskState::running) == 0) continue;
    for (TaskIndex t = 0; t < j.tasks.size(); ++t)
      if (j.tasks[t].state == TaskState::running && j.tasks[t].node == n) out.push_back(TaskRef{id, t});
  }
  std::sort(out.begin(), out.end());
  return out;
}

void TaskTable::for_each_in_id_order(const std::function<void(const JobRecord&)>& f) const {
  std::vector<JobId> ids;
  ids.reserve(jobs_.size());
  for (const auto& [id, j] : jobs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) f(jobs_.at(id));
}

void TaskTable::for_each_unfinished_in_id_order(const std::function<void(const JobRecord&)>& f) const {
  size_t finished = 0;
  for (const JobRecord* j : unfinished_) {
    if (j->finished())
      ++finished;
    else
      f(*j);
  }
  if (finished * 2 <= unfinished_.size()) return;
  std::erase_if(unfinished_, [](const JobRecord* j) { return j->finished(); });
}

Status TaskTable::check_accounting() const {
  uint64_t pending = 0, running = 0;
  // The pending depths, recomputed: [pool][class] -> (row, oldest submit).
  std::vector<std::vector<std::pair<PendingDepths::Row, TimePoint>>> depths;
  for (const auto& [id, j] : jobs_) {
    uint64_t sum = 0;
    for (auto c : j.by_state) sum += c;
    auto name = "job " + std::to_string(id.value);
    if (sum != j.spec.count)
      return make_error(Errc::wrong_state, name + ": task states add up to " + std::to_string(sum) +
                                               ", count is " + std::to_string(j.spec.count));
    if (j.count_in(TaskState::pending) != j.pending())
      return make_error(Errc::wrong_state, name + ": " + std::to_string(j.pending()) + " tasks queued but " +
                                               std::to_string(j.count_in(TaskState::pending)) + " pending");
    if (!j.tasks.empty()) {
      TaskCounts seen{};
      for (const auto& t : j.tasks) ++seen[static_cast<size_t>(t.state)];
      if (seen != j.by_state)
        return make_error(Errc::wrong_state, name + ": per-task states disagree with the counts");
      for (auto t : j.requeued)
        if (j.tasks[t].state != TaskState::pending)
          return make_error(Errc::wrong_state, name + ": task " + std::to_string(t) + " is queued but " +
                                                   std::string(to_string(j.tasks[t].state)));
    }
    pending += j.count_in(TaskState::pending);
    running += j.count_in(TaskState::running);
    if (j.count_in(TaskState::pending) > 0) {
      if (depths.size() <= j.pool) depths.resize(j.pool + 1);
      if (depths[j.pool].size() <= j.class_index) depths[j.pool].resize(j.class_index + 1, {{}, kNever});
      auto& [row, oldest] = depths[j.pool][j.class_index];
      ++row.jobs;
      row.tasks += j.count_in(TaskState::pending);
      oldest = std::min(oldest, j.spec.submit_time);
    }
  }
  for (uint32_t p = 0; p < std::max<size_t>(depths.size(), depths_.pools()); ++p)
    for (uint32_t c = 0; c < std::max<size_t>(p < depths.size() ? depths[p].size() : 0, depths_.classes(p)); ++c) {
      std::pair<PendingDepths::Row, TimePoint> want{{}, kNever};
      if (p < depths.size() && c < depths[p].size()) want = depths[p][c];
      PendingDepths::Row kept = depths_.row(p, c);
      TimePoint kept_oldest = depths_.oldest(p, c, waiting());
      if (kept.jobs != want.first.jobs || kept.tasks != want.first.tasks || kept_oldest != want.second)
        return make_error(Errc::wrong_state, "pool " + std::to_string(p) + " class " + std::to_string(c) +
                                                 ": the table keeps " + std::to_string(kept.jobs) + " jobs with " +
                                                 std::to_string(kept.tasks) + " tasks pending, its jobs have " +
                                                 std::to_string(want.first.jobs) + " with " +
                                                 std::to_string(want.first.tasks));
    }
  if (pending != pending_tasks_ || running != running_tasks_)
    return make_error(Errc::wrong_state, "the table counts " + std::to_string(pending_tasks_) + " pending and " +
                                             std::to_string(running_tasks_) + " running tasks, its jobs " +
                                             std::to_string(pending) + " and " + std::to_string(running));
  return Status::ok();
}

}  // namespace claimsched::core
