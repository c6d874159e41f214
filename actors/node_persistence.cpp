#include "actors/node_persistence.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace claimsched::actors {

// Not written (see the header): a claim's records were half of a node's
// writes, and a claim lost in a crash is one the node does not know, which
// any confirm of it already handles.
void NodeChanges::claim_added(const core::LiveClaim&) {}

void NodeChanges::claim_removed(core::ClaimId claim) { batch_.erase_claim(node_, claim); }

namespace {
core::Allocation to_stored(const core::Allocation& allocation, const ClockMapping& clock) {
  core::Allocation stored = allocation;
  stored.confirmed_at = clock.to_wall(allocation.confirmed_at);
  stored.finishes_at = clock.to_wall(allocation.finishes_at);
  return stored;
}
}  // namespace

void NodeChanges::allocation_set(const core::Allocation& allocation) {
  if (allocation.claim_id.value == 0) return batch_.put_allocation(node_, to_stored(allocation, clock_));
  claims_changed_.push_back(allocation.claim_id);
}

void NodeChanges::allocation_removed(core::TaskRef task, core::ClaimId claim) {
  if (claim.value == 0) return batch_.erase_allocation(node_, task);
  claims_changed_.push_back(claim);
}

void NodeChanges::events(const core::NodeLedger& ledger, const std::vector<core::NodeEvent>& events) {
  for (const auto& ev : events) {
    switch (ev.kind) {
      case core::NodeEvent::Kind::claim_expired:
        claim_removed(ev.claim_id);
        break;
      case core::NodeEvent::Kind::task_finished:
        allocation_removed(ev.task, ev.claim_id);
        break;
      case core::NodeEvent::Kind::task_started:
        for (const auto& a : ledger.allocations())
          if (a.task == ev.task) allocation_set(a);
        break;
      case core::NodeEvent::Kind::task_exited:
        break;  // the allocation was freed at its release
    }
  }
}

void NodeChanges::commit(core::NodeLedger& ledger) {
  // Whichever operation ended them: the ends the ledger remembered since the
  // last commit.
  for (const auto& f : ledger.take_unsaved_finished()) batch_.put_finished(node_, f.slot, f.sequence, f.event);
  if (!claims_changed_.empty()) {
    std::sort(claims_changed_.begin(), claims_changed_.end());
    claims_changed_.erase(std::unique(claims_changed_.begin(), claims_changed_.end()), claims_changed_.end());
    // Reused: a confirm would grow a new vector to the claim's size every time.
    thread_local std::vector<core::Allocation> held;
    for (auto claim : claims_changed_) {
      held.clear();
      for (const auto& a : ledger.allocations())
        if (a.claim_id == claim) held.push_back(to_stored(a, clock_));
      batch_.put_allocations(node_, claim, held);
    }
    held.clear();
    claims_changed_.clear();
  }
  if (header_) {
    storage::StoredNodeHeader header;
    header.spec = std::move(*header_);
    header.spec.capacity = ledger.capacity();
    header.state = ledger.state();
    header.generation = ledger.generation();
    header.epochs = ledger.epochs();
    batch_.put_header(header);
  }
  if (batch_.empty()) return;
  store_.submit(std::move(batch_), [node = node_](core::Status st) {
    if (!st) spdlog::error("node {}: writing its state failed: {}", node.value, st.error().to_string());
  });
}

core::NodeLedger restore_ledger(const storage::LoadedNode& stored, const core::LedgerConfig& config,
                                ClockMapping clock) {
  core::NodeLedger ledger(stored.header.spec.id, stored.header.spec.capacity, config);
  for (const auto& [partition, epoch] : stored.header.epochs) ledger.restore_epoch(partition, epoch);
  for (auto a : stored.allocations) {
    a.confirmed_at = clock.to_actor(a.confirmed_at);
    a.finishes_at = clock.to_actor(a.finishes_at);
    if (!ledger.restore_allocation(a))
      spdlog::warn("node {}: stored allocation of task {}.{} is held twice; kept once",
                   stored.header.spec.name, a.task.job.value, a.task.index);
  }
  for (auto c : stored.claims) {
    c.expires = clock.to_actor(c.expires);
    // A stored claim is only worth keeping if it would still fit; else it
    // would over-commit the restored node.
    if (!c.total().fits_in(ledger.free()) || !ledger.restore_claim(c))
      spdlog::warn("node {}: stored claim {} does not fit any more; dropped", stored.header.spec.name,
                   c.id.value);
  }
  auto finished = stored.finished;
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [sequence, ev] : finished) ledger.restore_finished(sequence, ev);
  if (stored.header.state != core::NodeState::up) (void)ledger.set_state(stored.header.state);
  // Subscribers never see the generation go back.
  ledger.restore_generation(stored.header.generation + 1);
  return ledger;
}

}  // namespace claimsched::actors
