#include "core/campaign/tasks.hpp"

#include <algorithm>
#include <cassert>

#include "core/duration.hpp"

namespace claimsched::core::campaign {

std::string_view to_string(CopyState state) {
  switch (state) {
    case CopyState::waiting: return "waiting";
    case CopyState::running: return "running";
    case CopyState::succeeded: return "succeeded";
    case CopyState::failed: return "failed";
    case CopyState::withdrawn: return "withdrawn";
    case CopyState::cancelled_by_replica: return "cancelled_by_replica";
    case CopyState::cancelled: return "cancelled";
    case CopyState::suspect: return "suspect";
  }
  return "waiting";
}

CampaignTasks::CampaignTasks(uint32_t task_count) : tasks_(task_count) {
  for (TaskIndex i = 0; i < task_count; ++i) pending_.insert(pending_.end(), i);
}

TaskCopy& CampaignTasks::live_copy(CopyId id) {
  TaskCopy& c = copies_.at(id);
  assert(c.live() && "an event for a copy that has already ended");
  return c;
}

std::vector<CopyId> CampaignTasks::launch(const std::string& pool, const std::vector<TaskIndex>& indices,
                                          TimePoint now, bool replica) {
  std::vector<CopyId> out;
  PoolStats& stats = pools_[pool];
  for (TaskIndex i : indices) {
    CopyId id = copies_.size();
    copies_.push_back(TaskCopy{id, i, pool, now, std::nullopt, std::nullopt, CopyState::waiting, replica});
    tasks_[i].live.push_back(id);
    in_flight_.insert(i);
    pending_.erase(i);
    ++stats.waiting;
    ++stats.dispatched;
    out.push_back(id);
  }
  return out;
}

std::vector<CopyId> CampaignTasks::dispatch(const std::string& pool, uint32_t n, TimePoint now) {
  if (cancelled_ || abandoned(pool)) return {};
  std::vector<TaskIndex> indices;
  for (auto it = pending_.begin(); it != pending_.end() && indices.size() < n; ++it) indices.push_back(*it);
  return launch(pool, indices, now, false);
}

void CampaignTasks::started(CopyId id, TimePoint now) {
  TaskCopy& c = live_copy(id);
  assert(c.state == CopyState::waiting);
  PoolStats& stats = pools_[c.pool];
  --stats.waiting;
  ++stats.running;
  c.state = CopyState::running;
  c.started = now;
}

void CampaignTasks::end(TaskCopy& c, CopyState state, TimePoint now) {
  PoolStats& stats = pools_[c.pool];
  --(c.state == CopyState::waiting ? stats.waiting : stats.running);
  c.state = state;
  c.ended = now;
  Task& task = tasks_[c.index];
  std::erase(task.live, c.id);
  if (!task.live.empty()) return;
  in_flight_.erase(c.index);
  if (!task.winner && !cancelled_) pending_.insert(c.index);
}

SuccessOutcome CampaignTasks::succeeded(CopyId id, TimePoint now, bool output_present) {
  TaskCopy& c = live_copy(id);
  Task& task = tasks_[c.index];
  SuccessOutcome out;
  if (abandoned(c.pool)) {
    end(c, CopyState::suspect, now);
    return out;
  }
  if (task.winner) {
    // Lost the race to a copy that succeeded first: its result is discarded.
    end(c, CopyState::cancelled_by_replica, now);
    return out;
  }
  task.winner = id;
  ++done_;
  out.counted = true;
  PoolStats& stats = pools_[c.pool];
  ++stats.successes;
  if (!output_present) ++stats.without_output;
  stats.success_run_times.push_back(now - c.started.value_or(now));
  end(c, CopyState::succeeded, now);
  out.cancel = task.live;
  return out;
}

void CampaignTasks::failed(CopyId id, TimePoint now) {
  end(live_copy(id), CopyState::failed, now);
}

void CampaignTasks::cancelled(CopyId id, TimePoint now) {
  TaskCopy& c = live_copy(id);
  bool lost_to_replica = tasks_[c.index].winner.has_value();
  end(c, lost_to_replica ? CopyState::cancelled_by_replica : CopyState::cancelled, now);
}

std::vector<CopyId> CampaignTasks::withdraw(const std::string& pool, uint32_t n, TimePoint now) {
  std::vector<CopyId> candidates;
  for (TaskIndex i : in_flight_) {
    for (CopyId id : tasks_[i].live) {
      if (copies_[id].pool == pool && copies_[id].state == CopyState::waiting) candidates.push_back(id);
    }
  }
  std::sort(candidates.rbegin(), candidates.rend());
  if (candidates.size() > n) candidates.resize(n);
  for (CopyId id : candidates) end(copies_[id], CopyState::withdrawn, now);
  return candidates;
}

bool CampaignTasks::reclaim(CopyId id, TimePoint started) {
  TaskCopy& c = copies_.at(id);
  Task& task = tasks_[c.index];
  if (c.state != CopyState::withdrawn || task.winner || cancelled_ || abandoned(c.pool)) return false;
  c.state = CopyState::running;
  c.started = started;
  c.ended.reset();
  ++pools_[c.pool].running;
  task.live.push_back(id);
  in_flight_.insert(c.index);
  pending_.erase(c.index);
  return true;
}

bool CampaignTasks::finalizing() const {
  return !cancelled_ && pending_.empty() && !in_flight_.empty();
}

std::vector<CopyId> CampaignTasks::replicate(const std::string& pool, uint32_t free, uint32_t max_replicas,
                                             TimePoint now) {
  if (!finalizing() || abandoned(pool) || free == 0) return {};
  std::vector<std::pair<TimePoint, TaskIndex>> running_since;
  for (TaskIndex i : in_flight_) {
    const Task& task = tasks_[i];
    if (task.winner || task.replicas >= max_replicas) continue;
    std::optional<TimePoint> first_start;
    for (CopyId id : task.live) {
      if (auto s = copies_[id].started) first_start = std::min(first_start.value_or(*s), *s);
    }
    if (first_start) running_since.emplace_back(*first_start, i);
  }
  std::sort(running_since.begin(), running_since.end());
  if (running_since.size() > free) running_since.resize(free);
  std::vector<TaskIndex> indices;
  for (auto [since, i] : running_since) {
    indices.push_back(i);
    ++tasks_[i].replicas;
  }
  return launch(pool, indices, now, true);
}

std::optional<std::string> wrong_output_reason(const std::string& declared_output,
                                               const std::vector<OutputHistory>& pools) {
  if (declared_output.empty()) return std::nullopt;
  uint32_t tried = 0;
  uint32_t missing_total = 0;
  std::vector<std::string> missing;
  for (const OutputHistory& p : pools) {
    if (p.successes > p.without_output) return std::nullopt;  // produced somewhere: the path is right
    tried += p.tried;
    if (p.without_output == 0) continue;
    missing.push_back(p.pool);
    missing_total += p.without_output;
  }
  bool everywhere = !missing.empty() && missing.size() == tried && missing_total >= kSinkEvidence;
  if (missing.size() < 2 && !everywhere) return std::nullopt;
  std::string where;
  for (const auto& pool : missing) where += (where.empty() ? "" : ", ") + pool;
  return "no task produced the declared output " + declared_output + " in any pool (" + std::to_string(missing_total) +
         " succeeded without it, in " + where + "): is the path right?";
}

std::vector<OutputHistory> CampaignTasks::output_histories() const {
  std::vector<OutputHistory> out;
  for (const auto& [pool, stats] : pools_)
    out.push_back({pool, stats.dispatched > 0, stats.successes, stats.without_output});
  return out;
}

std::optional<std::string> CampaignTasks::sink_reason(const std::string& pool, TimePoint now,
                                                      Duration sink_runtime) const {
  auto it = pools_.find(pool);
  if (it == pools_.end() || abandoned(pool)) return std::nullopt;
  const PoolStats& stats = it->second;
  if (stats.without_output >= kSinkEvidence) {
    return std::to_string(stats.without_output) + " tasks succeeded without the declared output";
  }
  uint32_t quick = 0;
  Duration quick_total{0};
  for (Duration d : stats.success_run_times) {
    if (d < sink_runtime) {
      ++quick;
      quick_total += d;
    }
  }
  // A pool is a sink when most of its successes are quick, not when a few
  // tasks happen to be short.
  if (quick < kSinkEvidence || quick * 2 <= stats.successes) return std::nullopt;
  Duration much_longer = std::max(sink_runtime, quick_total / quick * kSinkMuchLonger);
  uint32_t longer_elsewhere = 0;
  for (TaskIndex i : in_flight_) {
    for (CopyId id : tasks_[i].live) {
      const TaskCopy& c = copies_[id];
      if (c.pool != pool && c.started && now - *c.started >= much_longer) ++longer_elsewhere;
    }
    if (longer_elsewhere >= kSinkEvidence) break;
  }
  for (const auto& [other, other_stats] : pools_) {
    if (other == pool || longer_elsewhere >= kSinkEvidence) continue;
    for (Duration d : other_stats.success_run_times) {
      if (d >= much_longer && ++longer_elsewhere >= kSinkEvidence) break;
    }
  }
  if (longer_elsewhere < kSinkEvidence) return std::nullopt;
  return std::to_string(quick) + " of " + std::to_string(stats.successes) + " tasks succeeded in under " +
         format_duration(sink_runtime) + " (mean " + human_duration(quick_total / quick) +
         ") while tasks elsewhere ran longer than " + format_duration(much_longer);
}

std::vector<CopyId> CampaignTasks::abandon(const std::string& pool, std::string reason) {
  abandoned_.emplace(pool, std::move(reason));
  for (TaskCopy& c : copies_) {
    if (c.pool != pool || c.state != CopyState::succeeded) continue;
    Task& task = tasks_[c.index];
    c.state = CopyState::suspect;
    if (task.winner != c.id) continue;
    task.winner.reset();
    --done_;
    if (task.live.empty() && !cancelled_) pending_.insert(c.index);
  }
  std::vector<CopyId> live;
  for (TaskIndex i : in_flight_) {
    for (CopyId id : tasks_[i].live) {
      if (copies_[id].pool == pool) live.push_back(id);
    }
  }
  std::sort(live.begin(), live.end());
  return live;
}

std::optional<CopyId> CampaignTasks::restore(TaskIndex index, const std::string& pool, bool replica, bool succeeded,
                                             TimePoint dispatched) {
  if (index >= tasks_.size() || tasks_[index].winner) return std::nullopt;
  if (replica) ++tasks_[index].replicas;
  CopyId id = launch(pool, {index}, dispatched, replica).front();
  if (!succeeded) return id;
  TaskCopy& c = copies_[id];
  --pools_[pool].waiting;
  c.state = CopyState::succeeded;
  c.ended = dispatched;
  Task& task = tasks_[index];
  task.winner = id;
  std::erase(task.live, id);
  ++done_;
  if (task.live.empty()) in_flight_.erase(index);
  return id;
}

std::vector<CopyId> CampaignTasks::cancel_all(TimePoint now) {
  cancelled_ = true;
  pending_.clear();
  std::vector<CopyId> live;
  for (TaskIndex i : in_flight_) live.insert(live.end(), tasks_[i].live.begin(), tasks_[i].live.end());
  std::sort(live.begin(), live.end());
  for (CopyId id : live) end(copies_[id], CopyState::cancelled, now);
  return live;
}

uint32_t CampaignTasks::waiting(const std::string& pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.waiting;
}

uint32_t CampaignTasks::running(const std::string& pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.running;
}

std::optional<CopyId> CampaignTasks::winner(TaskIndex index) const {
  return tasks_.at(index).winner;
}

}  // namespace claimsched::core::campaign
