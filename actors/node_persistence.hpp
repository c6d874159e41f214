#pragma once

// What a node actor writes to its process's node store after each change of
// its ledger: the records that change touched, plus the header (the
// generation moved). Writes are asynchronous: the node answers without
// waiting for them, so after a crash a node may have lost its last few
// changes (a crash of the machine: the node store fsyncs at most every
// storage::kNodeStoreSyncInterval, so those of up to that long; a crash of
// the process only the batch being submitted); the owning scheduler's durable
// records decide (see core::Scheduler::reconcile_node), which never allocates
// a task twice.

#include <memory>
#include <optional>
#include <vector>

#include "actors/clock.hpp"
#include "core/node_ledger.hpp"
#include "storage/node_store.hpp"

namespace claimsched::actors {

/// Collects one ledger operation's changes into one batch.
class NodeChanges {
 public:
  NodeChanges(storage::NodeStore& store, core::NodeId node, ClockMapping clock)
      : store_(store), node_(node), clock_(clock), batch_(store.batch()) {}

  /// Writes nothing: an accepted claim is not stored. A claim lives until its
  /// confirm or its ttl; lost in a crash, the restarted node does not know it
  /// and refuses its confirm (the scheduler places the tasks again), exactly
  /// as when its write had not reached the disk yet, which replying without
  /// waiting always allowed. It halved the node store's batches (one per
  /// claim, at its confirm).
  void claim_added(const core::LiveClaim& claim);
  void claim_removed(core::ClaimId claim);
  /// An allocation of a claim changed (set, started): commit rewrites the
  /// claim's record from the ledger (one record per claim, not per task).
  void allocation_set(const core::Allocation& allocation);
  /// `claim` = the claim the removed allocation was held under (0 = none).
  void allocation_removed(core::TaskRef task, core::ClaimId claim);
  /// Records the changes a ledger's events describe (expiry, start, end).
  void events(const core::NodeLedger& ledger, const std::vector<core::NodeEvent>& events);
  /// The header (spec, state, epochs, generation) changed too; `spec` is the
  /// node's (commit writes the ledger's capacity).
  void header_changed(core::NodeSpec spec) { header_ = std::move(spec); }
  /// Submits; errors are logged (the store is then fail-stop: every later
  /// write fails too, and the log says so). The header is written only when
  /// it changed in substance: a restarted node's generation restarts above the
  /// stored one, and every subscriber re-subscribes after a restart (a
  /// subscription resets the generation it expects), so writing it on every
  /// operation would double the records for nothing.
  void commit(core::NodeLedger& ledger);

 private:
  storage::NodeStore& store_;
  core::NodeId node_;
  ClockMapping clock_;
  storage::NodeStore::Batch batch_;
  std::optional<core::NodeSpec> header_;
  /// Claims whose allocations changed: rewritten whole at commit.
  std::vector<core::ClaimId> claims_changed_;
};

/// A node's ledger rebuilt from what its store holds (times mapped back to
/// the actor clock; claims keep their remaining ttl).
core::NodeLedger restore_ledger(const storage::LoadedNode& stored, const core::LedgerConfig& config,
                                ClockMapping clock);

}  // namespace claimsched::actors
