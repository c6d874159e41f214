#include "core/node_ledger.hpp"

#include <algorithm>

namespace claimsched::core {

namespace {

// std::push_heap builds a max-heap; invert to get the earliest deadline first.
constexpr auto kLater = [](TimePoint a, TimePoint b) { return a > b; };

}  // namespace

NodeLedger::NodeLedger(NodeId id, Resources capacity, LedgerConfig config)
    : id_(id), capacity_(capacity), free_(capacity), config_(config) {}

NodeSnapshot NodeLedger::snapshot() const {
  NodeSnapshot s;
  s.node = id_;
  s.generation = generation_;
  s.state = state_;
  s.capacity = capacity_;
  s.free = free();
  s.starting = starting_;
  return s;
}

Resources NodeLedger::allocated() const {
  Resources sum;
  for (const auto& a : allocations_) sum += a.resources;
  return sum;
}

Resources NodeLedger::claimed() const {
  Resources sum;
  for (const auto& c : claims_) sum += c.total();
  return sum;
}

Epoch NodeLedger::highest_epoch(PartitionId partition) const {
  for (const auto& [p, e] : epochs_)
    if (p == partition) return e;
  return 0;
}

NodeLedger::EpochCheck NodeLedger::observe_epoch(PartitionId partition, Epoch epoch) {
  for (auto& [p, e] : epochs_) {
    if (p != partition) continue;
    if (epoch < e) return EpochCheck::stale;
    e = epoch;
    return EpochCheck::ok;
  }
  epochs_.emplace_back(partition, epoch);
  return EpochCheck::ok;
}

void NodeLedger::restore_epoch(PartitionId partition, Epoch epoch) {
  (void)observe_epoch(partition, epoch);
}

bool NodeLedger::holds(TaskRef task) const {
  for (const auto& a : allocations_)
    if (a.task == task) return true;
  for (const auto& c : claims_)
    if (c.job == task.job && std::find(c.tasks.begin(), c.tasks.end(), task.index) != c.tasks.end())
      return true;
  return false;
}

std::vector<Allocation>::iterator NodeLedger::find_allocation(TaskRef task) {
  return std::find_if(allocations_.begin(), allocations_.end(),
                      [&](const Allocation& a) { return a.task == task; });
}

void NodeLedger::push_deadline(TimePoint at) {
  if (at == kNever) return;
  deadlines_.push_back(at);
  std::push_heap(deadlines_.begin(), deadlines_.end(), kLater);
}

LiveClaim NodeLedger::drop_claim(size_t index) {
  LiveClaim claim = std::move(claims_[index]);
  free_ += claim.total();
  starting_ -= static_cast<uint32_t>(claim.tasks.size());
  if (index + 1 != claims_.size()) claims_[index] = std::move(claims_.back());
  claims_.pop_back();
  return claim;
}

ClaimReply NodeLedger::claim(const ClaimRequest& request, TimePoint now) {
  ClaimReply reply;
  reply.claim_id = request.claim_id;
  auto reject = [&](ClaimOutcome outcome) {
    reply.outcome = outcome;
    reply.snapshot = snapshot();
    return reply;
  };
  if (observe_epoch(request.partition, request.epoch) == EpochCheck::stale)
    return reject(ClaimOutcome::stale_epoch);
  // A retransmitted claim that is still live is answered again, not doubled.
  // Claim ids are unique per partition only (each scheduler numbers its own).
  for (const auto& c : claims_)
    if (c.id == request.claim_id && c.partition == request.partition)
      return reject(c.job == request.job && c.tasks == request.tasks ? ClaimOutcome::accepted
                                                                    : ClaimOutcome::invalid);
  if (request.node != id_ || request.tasks.empty() || request.per_task.any_negative())
    return reject(ClaimOutcome::invalid);
  if (state_ != NodeState::up) return reject(ClaimOutcome::not_schedulable);
  if (request.expected_generation && *request.expected_generation != generation_)
    return reject(ClaimOutcome::conflict);
  // Overflow guard: a claim for more than the node could ever hold is simply insufficient.
  if (static_cast<int64_t>(request.tasks.size()) > request.per_task.copies_fitting_in(capacity_))
    return reject(ClaimOutcome::insufficient);
  Resources total = request.total();
  if (!total.fits_in(free())) return reject(ClaimOutcome::insufficient);
  std::vector<TaskIndex> sorted = request.tasks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return reject(ClaimOutcome::invalid);
  for (auto index : request.tasks)
    if (holds(TaskRef{request.job, index})) return reject(ClaimOutcome::invalid);

  LiveClaim live;
  live.id = request.claim_id;
  live.partition = request.partition;
  live.expires = now + config_.claim_ttl;
  live.job = request.job;
  live.per_task = request.per_task;
  live.tasks = request.tasks;
  live.simulated_runtime = request.simulated_runtime;
  live.launch = request.launch;
  free_ -= total;
  starting_ += static_cast<uint32_t>(live.tasks.size());
  push_deadline(live.expires);
  claims_.push_back(std::move(live));
  ++generation_;
  reply.outcome = ClaimOutcome::accepted;
  reply.snapshot = snapshot();
  return reply;
}

ConfirmReply NodeLedger::confirm(const ConfirmRequest& request, TimePoint now) {
  ConfirmReply reply;
  reply.claim_id = request.claim_id;
  if (observe_epoch(request.partition, request.epoch) == EpochCheck::stale) {
    reply.outcome = ConfirmOutcome::stale_epoch;
    reply.snapshot = snapshot();
    return reply;
  }
  auto it = std::find_if(claims_.begin(), claims_.end(), [&](const LiveClaim& c) {
    return c.id == request.claim_id && c.partition == request.partition;
  });
  if (it == claims_.end()) {
    // A confirm sent again after a lost reply finds its allocations: answer as before.
    bool already = std::any_of(allocations_.begin(), allocations_.end(), [&](const Allocation& a) {
      return a.claim_id == request.claim_id && a.partition == request.partition;
    });
    reply.outcome = already ? ConfirmOutcome::confirmed : ConfirmOutcome::unknown_claim;
    reply.snapshot = snapshot();
    return reply;
  }
  LiveClaim claim = drop_claim(static_cast<size_t>(it - claims_.begin()));
  bool runs_now = config_.start_delay.count() == 0;
  for (auto index : claim.tasks) {
    Allocation a;
    a.task = TaskRef{claim.job, index};
    a.partition = claim.partition;
    a.resources = claim.per_task;
    a.confirmed_at = now;
    a.claim_id = claim.id;
    a.launch = claim.launch;
    a.running = runs_now;
    if (claim.simulated_runtime.count() > 0)
      a.finishes_at = now + config_.start_delay + claim.simulated_runtime;
    if (!runs_now) {
      ++starting_;
      push_deadline(now + config_.start_delay);
    }
    push_deadline(a.finishes_at);
    free_ -= a.resources;
    allocations_.push_back(a);
  }
  ++generation_;
  reply.outcome = ConfirmOutcome::confirmed;
  reply.snapshot = snapshot();
  return reply;
}

ReleaseReply NodeLedger::release(const ReleaseRequest& request, TimePoint /*now*/) {
  ReleaseReply reply;
  reply.claim_id = request.claim_id;
  if (observe_epoch(request.partition, request.epoch) == EpochCheck::stale) {
    reply.stale_epoch = true;
    reply.snapshot = snapshot();
    return reply;
  }
  uint32_t released = 0;
  if (request.claim_id.value != 0) {
    for (size_t i = 0; i < claims_.size(); ++i) {
      if (claims_[i].id == request.claim_id && claims_[i].partition == request.partition) {
        released += static_cast<uint32_t>(claims_[i].tasks.size());
        drop_claim(i);
        break;
      }
    }
  }
  for (auto index : request.tasks) {
    auto it = find_allocation(TaskRef{request.job, index});
    if (it == allocations_.end() || it->partition != request.partition) continue;
    free_ += it->resources;
    if (!it->running) --starting_;
    *it = allocations_.back();
    allocations_.pop_back();
    ++released;
  }
  if (released > 0) ++generation_;
  reply.released = released;
  reply.snapshot = snapshot();
  return reply;
}

bool NodeLedger::finish_task(TaskRef task, TaskState final_state, int32_t exit_code,
                             std::vector<NodeEvent>& events, const TaskEnd& end, std::optional<ClaimId> claim) {
  auto it = find_allocation(task);
  if (it == allocations_.end() || (claim && it->claim_id != *claim)) return false;
  NodeEvent ev;
  ev.kind = NodeEvent::Kind::task_finished;
  ev.partition = it->partition;
  ev.claim_id = it->claim_id;
  ev.task = task;
  ev.final_state = final_state;
  ev.exit_code = exit_code;
  ev.end = end;
  events.push_back(ev);
  remember_finished(ev);
  free_ += it->resources;
  if (!it->running) --starting_;
  *it = allocations_.back();
  allocations_.pop_back();
  ++generation_;
  return true;
}

void NodeLedger::remember_finished(const NodeEvent& ev) {
  const uint32_t cap = config_.recent_finished;
  if (cap == 0) return;
  auto slot = static_cast<size_t>(finished_seen_ % cap);
  if (recent_finished_.size() <= slot) recent_finished_.resize(slot + 1);
  recent_finished_[slot] = ev;
  ++finished_seen_;
  finished_unsaved_ = std::min(finished_unsaved_ + 1, cap);
}

std::vector<NodeEvent> NodeLedger::recent_finished() const {
  std::vector<NodeEvent> out;
  out.reserve(recent_finished_.size());
  const uint64_t cap = config_.recent_finished;
  uint64_t first = finished_seen_ > recent_finished_.size() ? finished_seen_ - recent_finished_.size() : 0;
  for (uint64_t seq = first; seq < finished_seen_; ++seq) {
    auto slot = static_cast<size_t>(seq % cap);
    if (slot < recent_finished_.size() && recent_finished_[slot].task.job.value != 0)
      out.push_back(recent_finished_[slot]);
  }
  return out;
}

std::vector<NodeLedger::FinishedRecord> NodeLedger::take_unsaved_finished() {
  std::vector<FinishedRecord> out;
  out.reserve(finished_unsaved_);
  const uint64_t cap = config_.recent_finished;
  for (uint64_t seq = finished_seen_ - finished_unsaved_; seq < finished_seen_; ++seq) {
    auto slot = static_cast<uint32_t>(seq % cap);
    out.push_back({seq, slot, recent_finished_[slot]});
  }
  finished_unsaved_ = 0;
  return out;
}

void NodeLedger::restore_finished(uint64_t sequence, const NodeEvent& event) {
  const uint32_t cap = config_.recent_finished;
  if (cap == 0 || event.task.job.value == 0) return;
  auto slot = static_cast<size_t>(sequence % cap);
  // Once the ring went round, every slot is in use (the ones the store did
  // not give back stay empty).
  size_t size = sequence >= cap ? cap : slot + 1;
  if (recent_finished_.size() < size) recent_finished_.resize(size);
  // Sequences the store did not give back: their slots hold older ends (or
  // nothing), which are not among the last `cap` any more.
  for (uint64_t s = std::max(finished_seen_, sequence >= cap ? sequence - cap + 1 : 0); s < sequence; ++s)
    recent_finished_[static_cast<size_t>(s % cap)] = NodeEvent{};
  recent_finished_[slot] = event;
  finished_seen_ = std::max(finished_seen_, sequence + 1);
}

TimePoint NodeLedger::next_deadline() const {
  return deadlines_.empty() ? kNever : deadlines_.front();
}

bool NodeLedger::advance(TimePoint now, std::vector<NodeEvent>& events) {
  if (deadlines_.empty() || deadlines_.front() > now) return false;
  while (!deadlines_.empty() && deadlines_.front() <= now) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), kLater);
    deadlines_.pop_back();
  }
  bool changed = false;
  for (size_t i = 0; i < claims_.size();) {
    if (claims_[i].expires > now) {
      ++i;
      continue;
    }
    NodeEvent ev;
    ev.kind = NodeEvent::Kind::claim_expired;
    ev.partition = claims_[i].partition;
    ev.claim_id = claims_[i].id;
    ev.task = TaskRef{claims_[i].job, claims_[i].tasks.empty() ? 0 : claims_[i].tasks.front()};
    events.push_back(ev);
    drop_claim(i);
    changed = true;
  }
  for (size_t i = 0; i < allocations_.size();) {
    Allocation& a = allocations_[i];
    if (!a.running && a.confirmed_at + config_.start_delay <= now) {
      a.running = true;
      --starting_;
      NodeEvent ev;
      ev.kind = NodeEvent::Kind::task_started;
      ev.partition = a.partition;
      ev.claim_id = a.claim_id;
      ev.task = a.task;
      events.push_back(ev);
      changed = true;
    }
    if (a.running && a.finishes_at <= now) {
      NodeEvent ev;
      ev.kind = NodeEvent::Kind::task_finished;
      ev.partition = a.partition;
      ev.claim_id = a.claim_id;
      ev.task = a.task;
      ev.final_state = TaskState::succeeded;
      events.push_back(ev);
      remember_finished(ev);
      free_ += a.resources;
      allocations_[i] = allocations_.back();
      allocations_.pop_back();
      changed = true;
      continue;
    }
    ++i;
  }
  if (changed) ++generation_;
  return changed;
}

bool NodeLedger::set_state(NodeState state) {
  if (state == state_) return false;
  state_ = state;
  ++generation_;
  return true;
}

void NodeLedger::set_capacity(const Resources& capacity) {
  if (capacity == capacity_) return;
  free_ += capacity - capacity_;
  capacity_ = capacity;
  ++generation_;
}

bool NodeLedger::restore_allocation(const Allocation& allocation) {
  if (holds(allocation.task)) return false;
  free_ -= allocation.resources;
  if (!allocation.running) ++starting_;
  allocations_.push_back(allocation);
  if (!allocation.running) push_deadline(allocation.confirmed_at + config_.start_delay);
  push_deadline(allocation.finishes_at);
  return true;
}

bool NodeLedger::restore_claim(const LiveClaim& claim) {
  for (auto index : claim.tasks)
    if (holds(TaskRef{claim.job, index})) return false;
  free_ -= claim.total();
  starting_ += static_cast<uint32_t>(claim.tasks.size());
  push_deadline(claim.expires);
  claims_.push_back(claim);
  return true;
}

}  // namespace claimsched::core
