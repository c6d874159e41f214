#include "core/pipeline/job_queue.hpp"

#include <algorithm>

namespace claimsched::core {

void JobQueue::enqueue(JobRecord& j) {
  if (j.queue.state != QueueState::idle || j.pending() == 0 || j.cancelled) return;
  queued_.insert(key_of(j));
  j.queue.state = QueueState::queued;
}

void JobQueue::remove(JobRecord& j) {
  switch (j.queue.state) {
    case QueueState::idle:
      return;
    case QueueState::queued:
      queued_.erase(key_of(j));
      break;
    case QueueState::waiting_for_capacity:
      if (j.queue.shape != 0)
        erase_grouped(j);
      else
        waiting_.erase(key_of(j));
      break;
    case QueueState::backing_off:
      backing_off_.erase({j.queue.until, j.spec.id});
      break;
    case QueueState::gated:
      break;
  }
  j.queue.state = QueueState::idle;
}

void JobQueue::gate(JobRecord& j) {
  remove(j);
  j.queue.state = QueueState::gated;
}

void JobQueue::ungate(JobRecord& j) {
  if (j.queue.state != QueueState::gated) return;
  j.queue.state = QueueState::idle;
  enqueue(j);
}

void JobQueue::wait_for_capacity(JobRecord& j) {
  if (j.queue.state == QueueState::backing_off || j.queue.state == QueueState::gated) return;
  if (j.queue.state == QueueState::waiting_for_capacity) {
    // A group's job in line could not go for a reason of its own: the group
    // goes on with its next job.
    if (j.queue.shape == 0) return;
    Group& g = groups_.at(j.queue.shape);
    if (g.in_line && g.head->job == j.spec.id) set_head(j.queue.shape, g, std::next(g.head));
    return;
  }
  remove(j);
  if (j.queue.shape != 0)
    insert_grouped(j);
  else
    waiting_.insert(key_of(j));
  j.queue.state = QueueState::waiting_for_capacity;
}

void JobQueue::no_room(JobRecord& j) {
  if (j.queue.shape == 0 || j.queue.state == QueueState::backing_off || j.queue.state == QueueState::gated) {
    wait_for_capacity(j);
    return;
  }
  if (j.queue.state != QueueState::waiting_for_capacity) {
    remove(j);
    insert_grouped(j);
    j.queue.state = QueueState::waiting_for_capacity;
  }
  // The rest of its group in line has the same shape: no room for it either
  // until capacity grows (room only shrinks within a pass).
  Group& g = groups_.at(j.queue.shape);
  if (g.in_line) set_head(j.queue.shape, g, g.jobs.end());
}

std::set<JobQueue::Key>::iterator JobQueue::insert_grouped(JobRecord& j) {
  auto [at, fresh] = groups_.try_emplace(j.queue.shape);
  Group& g = at->second;
  if (fresh) g.head = g.jobs.end();
  ++grouped_;
  return g.jobs.insert(key_of(j)).first;
}

void JobQueue::erase_grouped(JobRecord& j) {
  auto at = groups_.find(j.queue.shape);
  Group& g = at->second;
  auto it = g.jobs.find(key_of(j));
  if (g.in_line && it == g.head) set_head(j.queue.shape, g, std::next(it));
  g.jobs.erase(it);
  --grouped_;
  if (g.jobs.empty()) groups_.erase(at);
}

void JobQueue::set_head(uint32_t shape, Group& g, std::set<Key>::iterator head) {
  if (g.in_line) heads_.erase({*g.head, shape});
  g.head = head;
  g.in_line = head != g.jobs.end();
  if (g.in_line) heads_.emplace(*head, shape);
}

TimePoint JobQueue::back_off(JobRecord& j, TimePoint now) {
  if (j.queue.state == QueueState::backing_off || j.queue.state == QueueState::gated) return j.queue.until;
  remove(j);
  Duration delay = config_.initial_backoff * (int64_t{1} << std::min<int>(j.queue.backoff_level, 30));
  j.queue.backoff_level = static_cast<uint8_t>(std::min(j.queue.backoff_level + 1, 31));
  j.queue.until = now + std::min(delay, config_.max_backoff);
  backing_off_.emplace(j.queue.until, j.spec.id);
  j.queue.state = QueueState::backing_off;
  return j.queue.until;
}

void JobQueue::rerank(JobRecord& j, int64_t rank) {
  if (rank == j.queue.rank) return;
  if (j.queue.state == QueueState::waiting_for_capacity && j.queue.shape != 0) {
    // In line (at or after its group's head) it stays in line at its new place.
    auto g = groups_.find(j.queue.shape);
    bool in_line = g->second.in_line && !(key_of(j) < *g->second.head);
    erase_grouped(j);
    j.queue.rank = rank;
    auto it = insert_grouped(j);
    Group& now = groups_.at(j.queue.shape);
    if (in_line && (!now.in_line || *it < *now.head)) set_head(j.queue.shape, now, it);
    return;
  }
  std::set<Key>* in = j.queue.state == QueueState::queued                 ? &queued_
                      : j.queue.state == QueueState::waiting_for_capacity ? &waiting_
                                                                          : nullptr;
  if (in) in->erase(key_of(j));
  j.queue.rank = rank;
  if (in) in->insert(key_of(j));
}

void JobQueue::wake(JobRecord& j) {
  if (j.queue.state != QueueState::waiting_for_capacity) return;
  remove(j);
  enqueue(j);
}

void JobQueue::refresh(TimePoint now, bool capacity_grew, TaskTable& table) {
  capacity_grew_ = capacity_grew_ || capacity_grew;
  if (capacity_grew_ && waiting() > 0) {
    if (last_unpark_ == TimePoint::min() || now >= last_unpark_ + config_.unpark_interval)
      unpark_all(now, table);
    else
      unpark_ahead_of_queue(table);
  }
  while (!backing_off_.empty() && backing_off_.begin()->first <= now) {
    JobRecord& j = table.at(backing_off_.begin()->second);
    backing_off_.erase(backing_off_.begin());
    j.queue.state = QueueState::idle;
    enqueue(j);
  }
}

void JobQueue::unpark_all(TimePoint now, TaskTable& table) {
  last_unpark_ = now;
  capacity_grew_ = false;
  std::set<Key> waiting;
  waiting.swap(waiting_);
  for (const auto& key : waiting) {
    JobRecord& j = table.at(key.job);
    j.queue.state = QueueState::idle;
    enqueue(j);
  }
  // A group goes back in line whole, without moving its jobs.
  for (auto& [shape, g] : groups_) set_head(shape, g, g.jobs.begin());
}

void JobQueue::unpark_ahead_of_queue(TaskTable& table) {
  // Waiting jobs that outrank everything queued get the new room first,
  // whatever the rate limit: otherwise a lower job (a preempted task put
  // back, say) takes what was freed for them. The first waiting job goes
  // back in line if it comes before the first in line; a group's, with its
  // group (the rest of it comes after it in key order).
  const Key* first = waiting_.empty() ? nullptr : &*waiting_.begin();
  Group* first_group = nullptr;
  uint32_t first_shape = 0;
  for (auto& [shape, g] : groups_) {
    // A group in line waits only with the jobs before its head (looked at).
    if (g.in_line && g.head == g.jobs.begin()) continue;
    if (!first || *g.jobs.begin() < *first) {
      first = &*g.jobs.begin();
      first_group = &g;
      first_shape = shape;
    }
  }
  if (!first) return;
  if (!queued_.empty() && !(*first < *queued_.begin())) return;
  if (!heads_.empty() && !(*first < heads_.begin()->first)) return;
  if (first_group) {
    set_head(first_shape, *first_group, first_group->jobs.begin());
    return;
  }
  JobRecord& j = table.at(waiting_.begin()->job);
  waiting_.erase(waiting_.begin());
  j.queue.state = QueueState::idle;
  enqueue(j);
}

TimePoint JobQueue::next_wakeup(bool capacity_grew) const {
  TimePoint t = kNever;
  if (!backing_off_.empty()) t = backing_off_.begin()->first;
  if ((capacity_grew_ || capacity_grew) && waiting() > 0)
    t = std::min(t, last_unpark_ == TimePoint::min() ? TimePoint{0} : last_unpark_ + config_.unpark_interval);
  return t;
}

}  // namespace claimsched::core
