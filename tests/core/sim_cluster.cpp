#include "tests/core/sim_cluster.hpp"

#include <algorithm>
#include <stdexcept>

namespace claimsched::core::testing {

namespace {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

std::string tasks_text(const std::vector<TaskIndex>& tasks) {
  std::string out = "[";
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(tasks[i]);
  }
  return out + "]";
}

std::string who(PartitionId p, Epoch e) {
  return "p" + std::to_string(p.value) + "e" + std::to_string(e);
}

std::string snap(const NodeSnapshot& s) {
  return "n" + std::to_string(s.node.value) + " g" + std::to_string(s.generation);
}

}  // namespace

std::string describe(const ToNode& m) {
  return std::visit(
      overloaded{
          [](const ClaimRequest& c) {
            return "claim#" + std::to_string(c.claim_id.value) + " " + who(c.partition, c.epoch) +
                   " n" + std::to_string(c.node.value) + " job" + std::to_string(c.job.value) +
                   tasks_text(c.tasks) +
                   (c.expected_generation ? " expect g" + std::to_string(*c.expected_generation)
                                          : std::string());
          },
          [](const ConfirmRequest& c) {
            return "confirm#" + std::to_string(c.claim_id.value) + " " + who(c.partition, c.epoch) +
                   " n" + std::to_string(c.node.value);
          },
          [](const ReleaseRequest& r) {
            return "release#" + std::to_string(r.claim_id.value) + " " + who(r.partition, r.epoch) +
                   " n" + std::to_string(r.node.value) + " job" + std::to_string(r.job.value) +
                   tasks_text(r.tasks);
          },
          [](const SnapshotRequest& r) { return "snapshot? n" + std::to_string(r.node.value); },
      },
      m);
}

std::string describe(const ToScheduler& m) {
  return std::visit(
      overloaded{
          [](const ClaimReply& r) {
            return "claim#" + std::to_string(r.claim_id.value) + " " +
                   std::string(to_string(r.outcome)) + " " + snap(r.snapshot);
          },
          [](const ConfirmReply& r) {
            return "confirm#" + std::to_string(r.claim_id.value) + " " +
                   std::string(to_string(r.outcome)) + " " + snap(r.snapshot);
          },
          [](const ReleaseReply& r) {
            return "release#" + std::to_string(r.claim_id.value) + " freed " +
                   std::to_string(r.released) + (r.stale_epoch ? " stale_epoch " : " ") +
                   snap(r.snapshot);
          },
          [](const NodeDelta& d) {
            std::string out = std::string(d.full ? "full " : "delta ") + snap(d.snapshot);
            for (const auto& ev : d.events)
              out += " " + std::string(to_string(ev.kind)) + "(" +
                     std::to_string(ev.task.job.value) + "." + std::to_string(ev.task.index) + ")";
            return out;
          },
      },
      m);
}

SimCluster::SimCluster(LedgerConfig ledger_config) : ledger_config_(ledger_config) {}

size_t SimCluster::add_node(const NodeSpec& spec) {
  if (spec.id.value != ledgers_.size() + 1)
    throw std::invalid_argument("SimCluster: node ids must be 1, 2, 3, ... in order");
  size_t n = ledgers_.size();
  ledgers_.emplace_back(spec.id, spec.capacity, ledger_config_);
  specs_.push_back(spec);
  last_allocated_.emplace_back();
  for (size_t s = 0; s < schedulers_.size(); ++s)
    if (subscribed(s, n)) {
      auto st = scheduler(s).add_node(spec, ledgers_[n].snapshot());
      if (!st) violation("add_node: " + st.error().to_string());
    }
  return n;
}

size_t SimCluster::add_scheduler(SchedulerConfig config) {
  Slot slot;
  slot.scheduler = std::make_unique<Scheduler>(std::move(config));
  schedulers_.push_back(std::move(slot));
  size_t s = schedulers_.size() - 1;
  for (size_t n = 0; n < ledgers_.size(); ++n)
    if (subscribed(s, n)) {
      auto st = scheduler(s).add_node(specs_[n], ledgers_[n].snapshot());
      if (!st) violation("add_node: " + st.error().to_string());
    }
  return s;
}

size_t SimCluster::take_over(size_t old, bool announce) {
  SchedulerConfig config = scheduler(old).config();
  ++config.epoch;
  size_t s = add_scheduler(config);
  if (announce) {
    for (size_t n = 0; n < ledgers_.size(); ++n) {
      if (!subscribed(s, n)) continue;
      ReleaseRequest r;
      r.partition = config.partition;
      r.epoch = config.epoch;
      r.node = specs_[n].id;
      to_node(s, n).push_back(r);
      push({s, n, true});
    }
  }
  return s;
}

bool SimCluster::subscribed(size_t s, size_t n) const {
  const auto& pools = schedulers_[s].scheduler->config().pools;
  return std::find(pools.begin(), pools.end(), specs_[n].pool) != pools.end();
}

void SimCluster::violation(std::string what) {
  violations_.push_back("t=" + std::to_string(now_.count() / 1'000'000) + "ms: " + std::move(what));
}

void SimCluster::push(const Channel& c) {
  if (busy_set_.insert(c).second) busy_.push_back(c);
}

void SimCluster::refresh_busy() {
  busy_.clear();
  busy_set_.clear();
  for (const auto& [c, q] : to_node_)
    if (!q.empty()) push(c);
  for (const auto& [c, q] : to_sched_)
    if (!q.empty()) push(c);
}

size_t SimCluster::messages_in_flight() const {
  size_t total = 0;
  for (const auto& [c, q] : to_node_) total += q.size();
  for (const auto& [c, q] : to_sched_) total += q.size();
  return total;
}

void SimCluster::publish(size_t n, std::vector<NodeEvent> events, std::optional<size_t> except) {
  NodeDelta d;
  d.snapshot = ledgers_[n].snapshot();
  d.events = std::move(events);
  for (size_t s = 0; s < schedulers_.size(); ++s) {
    if (except && *except == s) continue;
    if (!subscribed(s, n)) continue;
    to_scheduler(n, s).push_back(d);
    push({s, n, false});
  }
}

void SimCluster::advance_ledger(size_t n) {
  std::vector<NodeEvent> events;
  if (ledgers_[n].advance(now_, events)) publish(n, std::move(events), std::nullopt);
}

void SimCluster::set_node_state(size_t n, NodeState state) {
  advance_ledger(n);
  if (ledgers_[n].set_state(state)) publish(n, {}, std::nullopt);
}

bool SimCluster::finish_task(size_t n, TaskRef task, TaskState final_state, int32_t exit_code,
                             const TaskEnd& end) {
  advance_ledger(n);
  std::vector<NodeEvent> events;
  if (!ledgers_[n].finish_task(task, final_state, exit_code, events, end)) return false;
  publish(n, std::move(events), std::nullopt);
  return true;
}

void SimCluster::report_exit(size_t n, PartitionId partition, TaskRef task, const TaskEnd& end) {
  // As the node actor sends it: generation 0, not a change of the node.
  NodeDelta note;
  note.snapshot = ledgers_[n].snapshot();
  note.snapshot.generation = 0;
  NodeEvent ev;
  ev.kind = NodeEvent::Kind::task_exited;
  ev.partition = partition;
  ev.task = task;
  ev.final_state = TaskState::lost;
  ev.exit_code = shell_exit_code(end);
  ev.end = end;
  note.events.push_back(ev);
  for (size_t s = 0; s < schedulers_.size(); ++s) {
    Outbox out;
    schedulers_[s].scheduler->on_node_delta(note, now_, out);
    route(s, out);
  }
}

ClaimReply SimCluster::foreign_claim(size_t n, const ClaimRequest& c, bool publish_it) {
  advance_ledger(n);
  Generation before = ledgers_[n].generation();
  Epoch& seen = seen_epoch(n, c.partition);
  seen = std::max(seen, c.epoch);
  ClaimReply r = ledgers_[n].claim(c, now_);
  if (ledgers_[n].generation() != before) {
    claim_born_[{n, c.partition.value, c.claim_id.value}] = now_;
    if (publish_it) publish(n, {}, std::nullopt);
  }
  return r;
}

ReleaseReply SimCluster::foreign_release(size_t n, const ReleaseRequest& r, bool publish_it) {
  advance_ledger(n);
  Generation before = ledgers_[n].generation();
  Epoch& seen = seen_epoch(n, r.partition);
  seen = std::max(seen, r.epoch);
  ReleaseReply reply = ledgers_[n].release(r, now_);
  if (ledgers_[n].generation() != before && publish_it) publish(n, {}, std::nullopt);
  return reply;
}

void SimCluster::advance_to(TimePoint t) {
  if (t < now_) throw std::invalid_argument("SimCluster: time does not go back");
  now_ = t;
  for (size_t n = 0; n < ledgers_.size(); ++n) advance_ledger(n);
  for (size_t s = 0; s < schedulers_.size(); ++s) tick(s);
}

Status SimCluster::submit(size_t s, JobSpec job) {
  Outbox out;
  auto st = scheduler(s).submit(std::move(job), now_);
  scheduler(s).schedule(now_, out);
  route(s, out);
  return st;
}

void SimCluster::tick(size_t s) {
  Outbox out;
  scheduler(s).on_tick(now_, out);
  scheduler(s).schedule(now_, out);
  route(s, out);
}

void SimCluster::route(size_t s, Outbox& out) {
  const Scheduler& sched = scheduler(s);
  if (sched.fenced() && !out.claims.empty())
    violation("scheduler " + std::to_string(s) + " is fenced but sent " +
              describe(ToNode{out.claims.front()}));
  auto node_of = [&](NodeId id) {
    size_t n = id.value - 1;
    if (id.value == 0 || n >= ledgers_.size()) throw std::logic_error("message to an unknown node");
    return n;
  };
  for (auto& c : out.claims) {
    size_t n = node_of(c.node);
    to_node(s, n).push_back(std::move(c));
    push({s, n, true});
  }
  for (auto& c : out.confirms) {
    size_t n = node_of(c.node);
    to_node(s, n).push_back(std::move(c));
    push({s, n, true});
  }
  for (auto& r : out.releases) {
    size_t n = node_of(r.node);
    to_node(s, n).push_back(std::move(r));
    push({s, n, true});
  }
  for (auto id : out.snapshot_requests) {
    size_t n = node_of(id);
    to_node(s, n).push_back(SnapshotRequest{id});
    push({s, n, true});
  }
  Slot& slot = schedulers_[s];
  slot.operations.insert(slot.operations.end(), out.operations.begin(), out.operations.end());
  slot.operations_ended.insert(slot.operations_ended.end(), out.operations_ended.begin(), out.operations_ended.end());
  for (auto id : out.finished_jobs) {
    if (!slot.finished_set.insert(id).second)
      violation("scheduler " + std::to_string(s) + " reported job " + std::to_string(id.value) +
                " finished twice");
    const JobRecord* j = sched.job(id);
    if (!j || !j->finished())
      violation("scheduler " + std::to_string(s) + " reported job " + std::to_string(id.value) +
                " finished but it is not");
    slot.finished.push_back(id);
  }
  for (auto id : out.started_jobs) {
    // A job's first start, once: what a watcher (the campaigns) is told.
    if (!slot.started_set.insert(id).second)
      violation("scheduler " + std::to_string(s) + " reported job " + std::to_string(id.value) + " started twice");
    const JobRecord* j = sched.job(id);
    if (!j || j->first_running == kNever)
      violation("scheduler " + std::to_string(s) + " reported job " + std::to_string(id.value) +
                " started but it has not");
    slot.started.push_back(id);
  }
  out.clear();
}

bool SimCluster::deliver(Channel c) {
  bool delivered = false;
  if (c.to_node) {
    auto& q = to_node_[c];
    if (!q.empty()) {
      ToNode m = std::move(q.front());
      q.pop_front();
      if (q.empty()) busy_set_.erase(c);
      node_receive(c.scheduler, c.node, m);
      delivered = true;
    } else {
      busy_set_.erase(c);
    }
  } else {
    auto& q = to_sched_[c];
    if (!q.empty()) {
      ToScheduler m = std::move(q.front());
      q.pop_front();
      if (q.empty()) busy_set_.erase(c);
      scheduler_receive(c.node, c.scheduler, m);
      delivered = true;
    } else {
      busy_set_.erase(c);
    }
  }
  settle(c);
  return delivered;
}

// Handling may have refilled the channel; keep busy_ and busy_set_ in step.
void SimCluster::settle(const Channel& c) {
  if (busy_set_.contains(c)) return;
  auto it = std::find(busy_.begin(), busy_.end(), c);
  if (it != busy_.end()) {
    *it = busy_.back();
    busy_.pop_back();
  }
}

void SimCluster::send_to_node(size_t s, size_t n, ToNode m) {
  to_node(s, n).push_back(std::move(m));
  push({s, n, true});
}

void SimCluster::send_to_scheduler(size_t n, size_t s, ToScheduler m) {
  to_scheduler(n, s).push_back(std::move(m));
  push({s, n, false});
}

std::optional<ToNode> SimCluster::take_to_node(size_t s, size_t n) {
  Channel c{s, n, true};
  auto& q = to_node_[c];
  std::optional<ToNode> m;
  if (!q.empty()) {
    m = std::move(q.front());
    q.pop_front();
  }
  if (q.empty()) busy_set_.erase(c);
  settle(c);
  return m;
}

std::optional<ToScheduler> SimCluster::take_to_scheduler(size_t n, size_t s) {
  Channel c{s, n, false};
  auto& q = to_sched_[c];
  std::optional<ToScheduler> m;
  if (!q.empty()) {
    m = std::move(q.front());
    q.pop_front();
  }
  if (q.empty()) busy_set_.erase(c);
  settle(c);
  return m;
}

size_t SimCluster::run(size_t limit) {
  size_t delivered = 0;
  while (!busy_.empty() && delivered < limit) {
    Channel c = *std::min_element(busy_.begin(), busy_.end());
    if (deliver(c)) ++delivered;
  }
  return delivered;
}

void SimCluster::node_receive(size_t s, size_t n, const ToNode& m) {
  NodeLedger& l = ledgers_[n];
  advance_ledger(n);
  Generation before = l.generation();
  ToScheduler reply;
  auto note_epoch = [&](PartitionId p, Epoch e) {
    Epoch& seen = seen_epoch(n, p);
    Epoch fence = seen;
    seen = std::max(seen, e);
    return fence;
  };
  std::visit(
      overloaded{
          [&](const ClaimRequest& c) {
            Epoch fence = note_epoch(c.partition, c.epoch);
            ClaimReply r = l.claim(c, now_);
            if (l.generation() != before) {
              if (c.epoch < fence)
                violation("node " + std::to_string(n + 1) + " accepted " + describe(ToNode{c}) +
                          " after seeing epoch " + std::to_string(fence));
              claim_born_[{n, c.partition.value, c.claim_id.value}] = now_;
            }
            reply = r;
          },
          [&](const ConfirmRequest& c) {
            Epoch fence = note_epoch(c.partition, c.epoch);
            std::vector<TaskRef> tasks;
            for (const auto& live : l.claims())
              if (live.id == c.claim_id && live.partition == c.partition)
                for (auto t : live.tasks) tasks.push_back(TaskRef{live.job, t});
            ConfirmReply r = l.confirm(c, now_);
            if (l.generation() != before) {
              if (c.epoch < fence)
                violation("node " + std::to_string(n + 1) + " confirmed " + describe(ToNode{c}) +
                          " after seeing epoch " + std::to_string(fence));
              for (auto t : tasks) ++confirmations_[t];
            }
            reply = r;
          },
          [&](const ReleaseRequest& rel) {
            note_epoch(rel.partition, rel.epoch);
            reply = l.release(rel, now_);
          },
          [&](const SnapshotRequest&) {
            // As the node actor answers: the snapshot, the recent task ends
            // a gap may have swallowed, and everything allocated.
            NodeDelta d;
            d.snapshot = l.snapshot();
            d.full = true;
            d.events = l.recent_finished();
            d.allocations = l.allocations();
            reply = d;
          },
      },
      m);
  if (l.generation() != before) publish(n, {}, s);
  if (trace)
    trace("s" + std::to_string(s) + "->n" + std::to_string(n + 1) + " " + describe(m) + " => " +
          describe(reply));
  to_scheduler(n, s).push_back(std::move(reply));
  push({s, n, false});
}

void SimCluster::scheduler_receive(size_t n, size_t s, const ToScheduler& m) {
  Scheduler& sched = scheduler(s);
  Outbox out;
  if (trace) trace("n" + std::to_string(n + 1) + "->s" + std::to_string(s) + " " + describe(m));
  std::visit(overloaded{
                 [&](const ClaimReply& r) { sched.on_claim_reply(r, now_, out); },
                 [&](const ConfirmReply& r) { sched.on_confirm_reply(r, now_, out); },
                 [&](const ReleaseReply& r) { sched.on_release_reply(r, now_, out); },
                 [&](const NodeDelta& d) { sched.on_node_delta(d, now_, out); },
             },
             m);
  sched.schedule(now_, out);
  route(s, out);
}

std::string SimCluster::check_ledger(size_t n) const {
  const NodeLedger& l = ledgers_[n];
  std::string name = "node " + std::to_string(n + 1) + ": ";
  Resources claimed, allocated;
  uint32_t starting = 0;
  std::vector<TaskRef> held;
  for (const auto& c : l.claims()) {
    claimed += c.total();
    starting += static_cast<uint32_t>(c.tasks.size());
    for (auto t : c.tasks) held.push_back(TaskRef{c.job, t});
    auto born = claim_born_.find({n, c.partition.value, c.id.value});
    if (born == claim_born_.end())
      return name + "holds claim " + std::to_string(c.id.value) + " it never accepted";
    if (born->second + ledger_config_.claim_ttl <= now_)
      return name + "claim " + std::to_string(c.id.value) + " accepted at " +
             std::to_string(born->second.count() / 1'000'000) + "ms outlived its ttl";
  }
  for (const auto& a : l.allocations()) {
    allocated += a.resources;
    if (!a.running) ++starting;
    held.push_back(a.task);
  }
  if (!(allocated + claimed).fits_in(l.capacity()))
    return name + "allocated " + allocated.to_string() + " + claimed " + claimed.to_string() +
           " exceed capacity " + l.capacity().to_string();
  if (!(l.snapshot().free == l.capacity() - allocated - claimed)) return name + "free is off";
  if (l.snapshot().starting != starting) return name + "starting count is off";
  std::sort(held.begin(), held.end());
  auto dup = std::adjacent_find(held.begin(), held.end());
  if (dup != held.end())
    return name + "holds task " + std::to_string(dup->job.value) + "." +
           std::to_string(dup->index) + " twice";
  return "";
}

std::string SimCluster::check_allocations_unique(size_t n) {
  for (const auto& t : last_allocated_[n]) --allocated_count_[t];
  auto& now_held = last_allocated_[n];
  now_held.clear();
  for (const auto& a : ledgers_[n].allocations()) now_held.push_back(a.task);
  std::string problem;
  for (const auto& t : now_held)
    if (++allocated_count_[t] > 1 && problem.empty())
      problem = "task " + std::to_string(t.job.value) + "." + std::to_string(t.index) +
                " is allocated on two nodes (one is node " + std::to_string(n + 1) + ")";
  return problem;
}

std::string SimCluster::check_all() {
  for (size_t n = 0; n < ledgers_.size(); ++n) {
    if (auto p = check_ledger(n); !p.empty()) return p;
    if (auto p = check_allocations_unique(n); !p.empty()) return p;
  }
  for (size_t s = 0; s < schedulers_.size(); ++s)
    if (auto st = scheduler(s).check_accounting(); !st)
      return "scheduler " + std::to_string(s) + ": " + st.error().to_string();
  if (!violations_.empty()) return violations_.front();
  return "";
}

}  // namespace claimsched::core::testing
