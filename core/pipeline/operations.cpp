// Operator operations through the lock queue: a node's (drain, undrain) and a
// partition's move go out for the actor to carry out; a pool's removal needs
// no node and is carried out here, once it holds the pool's group lock.

#include <algorithm>

#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

Expected<std::pair<JobId, std::string>> Scheduler::submit_operation(Operation op, TimePoint now) {
  std::string partition = "partition " + std::to_string(config_.partition.value);
  if (op.kind == OperationKind::remove_pool) {
    if (!view_.find_pool(op.pool)) return make_error(Errc::unknown_name, describe(op) + ": " + partition + " has no such pool");
    if (pool_removed(op.pool))
      return make_error(Errc::wrong_state, describe(op) + ": pool " + op.pool + " was removed already");
  } else if (op.kind == OperationKind::move_partition) {
    op.partition = config_.partition;
    if (op.member.empty() || op.member.find('/') != std::string::npos)
      return make_error(Errc::invalid_argument, describe(op) + ": '" + op.member + "' is not a member's name");
    op.pools.clear();
    for (const auto& pool : config_.pools)
      if (!pool_removed(pool)) op.pools.push_back(pool);
  } else if (!view_.find_node(op.node)) {
    return make_error(Errc::unknown_name, describe(op) + ": " + partition + " has no such node");
  }
  last_now_ = std::max(last_now_, now);
  JobId id(next_operation_++);
  gate_.add(id, static_cast<uint32_t>(config_.classes.size()), now, now, locks_of(op));
  operations_.emplace(id, op);
  start_gated(now);
  run_ready_removals();
  std::string words = describe(op) + " (operation " + std::to_string(id.value - kFirstOperationId) + "): ";
  // Nothing held its locks: it went at once, and the caller hears how.
  auto ended = std::find_if(ended_operations_.begin(), ended_operations_.end(),
                            [&](const OperationEnd& e) { return e.id == id; });
  if (ended != ended_operations_.end()) {
    Status outcome = std::move(ended->outcome);
    ended_operations_.erase(ended);
    if (!outcome) return outcome.error();
    return std::pair{id, words + "done"};
  }
  if (auto block = gate_.blocked_on(id)) return std::pair{id, words + "waits for " + block->to_string()};
  return std::pair{id, words + "under way"};
}

void Scheduler::finish_operation(JobId id) {
  if (operations_.erase(id) == 0) return;
  for (JobId next : gate_.finish(id)) on_granted(next);
}

void Scheduler::restore_removed_pool(const std::string& pool) {
  if (view_.find_pool(pool)) removed_pools_.insert(pool);
}

PoolUse Scheduler::pool_use(uint32_t p) const {
  PoolUse use;
  table_.for_each_in_id_order([&](const JobRecord& j) {
    if (j.pool == p && !j.finished()) use.unfinished_jobs.push_back(j.spec.id);
  });
  for (NodeIndex n : view_.pool(p).nodes) {
    const NodeView& v = view_.node(n);
    if (v.state == NodeState::down) continue;
    use.live_nodes.emplace_back(node_name(n), v.state);
  }
  std::sort(use.live_nodes.begin(), use.live_nodes.end());
  for (uint32_t sub : view_.pool(p).descendants)
    if (!pool_removed(view_.pool(sub).name)) use.subpools.push_back(view_.pool(sub).name);
  return use;
}

void Scheduler::run_ready_removals() {
  std::vector<JobId> ready;
  std::vector<JobId> others;
  for (JobId id : operations_ready_) {
    auto it = operations_.find(id);
    (it != operations_.end() && it->second.kind == OperationKind::remove_pool ? ready : others).push_back(id);
  }
  if (ready.empty()) return;
  operations_ready_ = std::move(others);
  for (JobId id : ready) {
    Operation op = operations_.at(id);
    Status outcome;
    auto p = view_.find_pool(op.pool);
    if (pool_removed(op.pool))
      outcome = make_error(Errc::wrong_state, "pool " + op.pool + " was removed already");
    else
      outcome = check_pool_unused(op.pool, pool_use(*p));
    if (outcome) {
      removed_pools_.insert(op.pool);
      shape_counts_.clear();
      if (config_.journal) journal_.pools_removed.push_back(op.pool);
    }
    ended_operations_.push_back(OperationEnd{id, std::move(op), std::move(outcome)});
    // Its locks go on; whoever they go to is granted now (another removal
    // joins operations_ready_ and waits for the next pass).
    finish_operation(id);
  }
}

}  // namespace claimsched::core
