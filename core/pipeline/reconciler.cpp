#include "core/pipeline/reconciler.hpp"

#include <algorithm>

namespace claimsched::core {

namespace {

std::map<JobId, std::vector<TaskIndex>> by_job(std::vector<TaskRef> tasks) {
  std::sort(tasks.begin(), tasks.end());
  std::map<JobId, std::vector<TaskIndex>> out;
  for (const auto& t : tasks) out[t.job].push_back(t.index);
  return out;
}

}  // namespace

void Reconciler::expect(NodeId node, TaskRef task, TimePoint now) {
  unverified_[node].push_back(task);
  restored_at_ = now;
}

uint64_t Reconciler::unverified() const {
  uint64_t n = 0;
  for (const auto& [node, tasks] : unverified_) n += tasks.size();
  return n;
}

std::vector<const NodeEvent*> Reconciler::finished_while_away(const NodeReport& report,
                                                              std::optional<NodeIndex> n, PartitionId partition,
                                                              const TaskTable& table) const {
  std::vector<const NodeEvent*> out;
  if (report.finished.empty()) return out;
  auto it = unverified_.find(report.spec.id);
  std::vector<TaskRef> held;
  held.reserve(report.allocations.size());
  for (const auto& a : report.allocations) held.push_back(a.task);
  std::sort(held.begin(), held.end());
  // Oldest first: the last event of a task is its latest run's end.
  std::map<TaskRef, const NodeEvent*> latest;
  for (const auto& ev : report.finished)
    if (ev.partition == partition && ev.kind == NodeEvent::Kind::task_finished) latest[ev.task] = &ev;
  for (const auto& [task, ev] : latest) {
    // Held again: the node runs the task anew, the event is an older run's.
    if (std::binary_search(held.begin(), held.end(), task)) continue;
    const JobRecord* j = table.find(task.job);
    if (!j || !j->in_state(task.index, TaskState::running)) continue;
    // Restored onto this node from the store, or running here as we know it.
    bool restored_here = it != unverified_.end() &&
                         std::find(it->second.begin(), it->second.end(), task) != it->second.end();
    bool running_here = n && j->tasks[task.index].node == n;
    if (!restored_here && !running_here) continue;
    out.push_back(ev);
  }
  return out;
}

ReconcileDecision Reconciler::reconcile(NodeIndex n, NodeId node, const std::vector<Allocation>& allocations,
                                        const std::vector<LiveClaim>* claims, bool check_running,
                                        PartitionId partition, const TaskTable& table,
                                        const ClaimWindow& window) {
  ReconcileDecision d;
  std::vector<TaskRef> expected;
  if (auto it = unverified_.find(node); it != unverified_.end()) {
    expected = std::move(it->second);
    unverified_.erase(it);
  }
  // Everything we believe runs there (a gap may have hidden its end).
  if (check_running)
    for (const auto& t : table.running_on(n)) expected.push_back(t);
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
  std::vector<TaskRef> held;
  for (const auto& a : allocations) {
    if (a.partition != partition) continue;
    const JobRecord* j = table.find(a.task.job);
    const TaskRecord* rec = j ? j->task(a.task.index) : nullptr;
    if (!rec) {
      d.release_allocations[a.task.job].push_back(a.task.index);
      continue;
    }
    bool expected_here = std::binary_search(expected.begin(), expected.end(), a.task);
    if (rec->state == TaskState::running && !rec->node && expected_here) {
      d.adopt.push_back(a.task);  // the records and the node agree
      held.push_back(a.task);
    } else if (rec->state == TaskState::running && rec->node == n) {
      held.push_back(a.task);  // already known here
    } else if (rec->state == TaskState::claimed && window.claims().contains(a.claim_id)) {
      // A confirm of ours is on its way back.
    } else {
      d.release_allocations[a.task.job].push_back(a.task.index);
    }
  }
  if (claims)
    for (const auto& c : *claims)
      if (c.partition == partition && !window.claims().contains(c.id)) d.release_claims.emplace_back(c.job, c.id);
  // Expected here, not held: lost.
  std::sort(held.begin(), held.end());
  std::vector<TaskRef> lost;
  for (const auto& t : expected) {
    if (std::binary_search(held.begin(), held.end(), t)) continue;
    const JobRecord* j = table.find(t.job);
    // Ended meanwhile (finished_while_away, or an event): not lost.
    if (!j || !j->in_state(t.index, TaskState::running) || j->tasks.empty()) continue;
    lost.push_back(t);
  }
  d.lost = by_job(std::move(lost));
  return d;
}

void Reconciler::lost_with(NodeId node, TaskRef task) {
  auto& lost = lost_with_[node];
  if (lost.size() == kLostKept) lost.erase(lost.begin());
  lost.push_back(task);
}

std::vector<const NodeEvent*> Reconciler::succeeded_while_lost(const NodeReport& report, PartitionId partition,
                                                               const TaskTable& table) {
  std::vector<const NodeEvent*> out;
  auto it = lost_with_.find(report.spec.id);
  if (it == lost_with_.end()) return out;
  std::vector<TaskRef> lost = std::move(it->second);
  lost_with_.erase(it);
  if (report.finished.empty()) return out;
  std::sort(lost.begin(), lost.end());
  // Oldest first: the last event of a task is its latest run's end. Only a
  // success can be the lost run's: an older run there that succeeded would
  // have ended the task before it was ever lost.
  std::map<TaskRef, const NodeEvent*> latest;
  for (const auto& ev : report.finished)
    if (ev.partition == partition && ev.kind == NodeEvent::Kind::task_finished &&
        std::binary_search(lost.begin(), lost.end(), ev.task))
      latest[ev.task] = &ev;
  for (const auto& a : report.allocations) latest.erase(a.task);  // held again: it runs there anew
  for (const auto& [task, ev] : latest) {
    if (ev->final_state != TaskState::succeeded) continue;
    const JobRecord* j = table.find(task.job);
    const TaskRecord* r = j ? j->task(task.index) : nullptr;
    if (!r || is_final(r->state) || j->spec.gang || j->cancelled) continue;
    out.push_back(ev);
  }
  return out;
}

std::map<JobId, std::vector<TaskIndex>> Reconciler::forget(NodeId node) {
  auto it = unverified_.find(node);
  if (it == unverified_.end()) return {};
  auto tasks = std::move(it->second);
  unverified_.erase(it);
  for (const auto& t : tasks) lost_with(node, t);
  return by_job(std::move(tasks));
}

std::map<JobId, std::vector<TaskIndex>> Reconciler::expire(TimePoint now, Duration grace) {
  if (unverified_.empty() || now - restored_at_ < grace) return {};
  std::vector<TaskRef> all;
  for (auto& [node, tasks] : unverified_) {
    for (const auto& t : tasks) lost_with(node, t);
    all.insert(all.end(), tasks.begin(), tasks.end());
  }
  unverified_.clear();
  return by_job(std::move(all));
}

}  // namespace claimsched::core
