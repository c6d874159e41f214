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
  if (j.queue.state == QueueState::waiting_for_capacity || j.queue.state == QueueState::backing_off ||
      j.queue.state == QueueState::gated)
    return;
  remove(j);
  waiting_.insert(key_of(j));
  j.queue.state = QueueState::waiting_for_capacity;
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
  std::set<Key>* in = j.queue.state == QueueState::queued                 ? &queued_
                      : j.queue.state == QueueState::waiting_for_capacity ? &waiting_
                                                                          : nullptr;
  if (in) in->erase(key_of(j));
  j.queue.rank = rank;
  if (in) in->insert(key_of(j));
}

void JobQueue::wake(JobRecord& j) {
  if (j.queue.state != QueueState::waiting_for_capacity) return;
  waiting_.erase(key_of(j));
  j.queue.state = QueueState::idle;
  enqueue(j);
}

void JobQueue::refresh(TimePoint now, bool capacity_grew, TaskTable& table) {
  capacity_grew_ = capacity_grew_ || capacity_grew;
  if (capacity_grew_ && !waiting_.empty()) {
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
}

void JobQueue::unpark_ahead_of_queue(TaskTable& table) {
  // Waiting jobs that outrank everything queued get the new room first,
  // whatever the rate limit: otherwise a lower job (a preempted task put
  // back, say) takes what was freed for them.
  while (!waiting_.empty() && (queued_.empty() || *waiting_.begin() < *queued_.begin())) {
    JobRecord& j = table.at(waiting_.begin()->job);
    waiting_.erase(waiting_.begin());
    j.queue.state = QueueState::idle;
    enqueue(j);
  }
}

TimePoint JobQueue::next_wakeup(bool capacity_grew) const {
  TimePoint t = kNever;
  if (!backing_off_.empty()) t = backing_off_.begin()->first;
  if ((capacity_grew_ || capacity_grew) && !waiting_.empty())
    t = std::min(t, last_unpark_ == TimePoint::min() ? TimePoint{0} : last_unpark_ + config_.unpark_interval);
  return t;
}

}  // namespace claimsched::core
