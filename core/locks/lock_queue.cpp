#include "core/locks/lock_queue.hpp"

#include <algorithm>

namespace claimsched::core {

std::string_view to_string(QueueOrder order) { return order == QueueOrder::fifo ? "fifo" : "predictive"; }

std::optional<QueueOrder> parse_queue_order(std::string_view text) {
  if (text == "fifo") return QueueOrder::fifo;
  if (text == "predictive") return QueueOrder::predictive;
  return std::nullopt;
}

Status LockQueueSettings::validate() const {
  if (base_value < 0) return make_error(Errc::invalid_argument, "base_value must not be negative");
  if (aging_tick.count() <= 0) return make_error(Errc::invalid_argument, "aging_tick must be positive");
  if (aging_k == 0) return make_error(Errc::invalid_argument, "aging_k must be at least 1 (ticks)");
  return Status::ok();
}

LockQueue::LockQueue(std::vector<LockQueueSettings> queues) {
  queues_.reserve(queues.size());
  for (auto& s : queues) queues_.push_back(Queue{s, {}, 0});
}

void LockQueue::add(JobId job, uint32_t queue, TimePoint submitted, TimePoint queued_at, LockDeclaration declared) {
  if (pending_.contains(job) || started_.contains(job)) return;
  queues_.at(queue).line.emplace(submitted, job);
  pending_.emplace(job, Pending{queue, submitted, queued_at, std::move(declared)});
}

void LockQueue::adopt(JobId job, uint32_t queue, const LockDeclaration& declared) {
  if (started_.contains(job)) return;
  if (auto it = pending_.find(job); it != pending_.end()) {
    queues_[it->second.queue].line.erase({it->second.submitted, job});
    pending_.erase(it);
  }
  started_.emplace(job, queue);
  ++queues_.at(queue).started;
  if (!declared.empty()) locks_.adopt(job, declared);
}

std::optional<JobId> LockQueue::best(const Queue& q, TimePoint now, const std::vector<HeldLocks>& held) const {
  if (q.line.empty()) return std::nullopt;
  if (q.settings.order == QueueOrder::fifo) return q.line.begin()->second;
  std::optional<JobId> best;
  int64_t best_key = 0;
  for (const auto& [submitted, id] : q.line) {
    const Pending& p = pending_.at(id);
    LockWeight spv = static_predictive_value(p.declared, held, q.settings.base_value).value;
    int64_t key = weight_key(spv, age_in_ticks(p.queued_at, now, q.settings.aging_tick), q.settings.aging_k);
    if (!best || key < best_key) {  // ties: the line's order (submit time, id)
      best = id;
      best_key = key;
      if (key == 0) break;
    }
  }
  return best;
}

std::vector<LockQueue::Started> LockQueue::start_ready(TimePoint now, const Resolver& resolve) {
  std::vector<Started> out;
  for (auto& q : queues_) {
    while (!q.line.empty() && (q.settings.running_limit == 0 || q.started < q.settings.running_limit)) {
      std::vector<HeldLocks> held;
      if (q.settings.order == QueueOrder::predictive) held = locks_.holders();
      JobId id = *best(q, now, held);
      auto it = pending_.find(id);
      Pending p = std::move(it->second);
      pending_.erase(it);
      if (q.line.begin()->second != id) {
        const Pending& oldest = pending_.at(q.line.begin()->second);
        oldest_passed_over_ticks_ =
            std::max(oldest_passed_over_ticks_, age_in_ticks(oldest.queued_at, now, q.settings.aging_tick));
      }
      q.line.erase({p.submitted, id});
      ++q.started;
      started_.emplace(id, p.queue);
      Started s{id, std::nullopt};
      if (!p.declared.empty()) {
        const LockDeclaration& taken = resolve && p.declared.has_unknown() ? resolve(id, p.declared) : p.declared;
        s.block = locks_.acquire(id, taken);
        if (s.block) ++waiting_transitions_;
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<JobId> LockQueue::finish(JobId job) {
  if (auto it = pending_.find(job); it != pending_.end()) {
    queues_[it->second.queue].line.erase({it->second.submitted, job});
    pending_.erase(it);
    return {};
  }
  auto it = started_.find(job);
  if (it == started_.end()) return {};
  --queues_[it->second].started;
  started_.erase(it);
  return locks_.release(job);
}

std::optional<LockQueue::Standing> LockQueue::standing(JobId job, TimePoint now) const {
  auto it = pending_.find(job);
  if (it == pending_.end()) return std::nullopt;
  const Pending& p = it->second;
  const Queue& q = queues_[p.queue];
  Standing s;
  s.value = static_predictive_value(p.declared, locks_.holders(), q.settings.base_value);
  s.age_ticks = age_in_ticks(p.queued_at, now, q.settings.aging_tick);
  s.weight = weight_value(s.value.value, s.age_ticks, q.settings.aging_k);
  s.order = q.settings.order;
  s.running = q.started;
  s.running_limit = q.settings.running_limit;
  return s;
}

}  // namespace claimsched::core
