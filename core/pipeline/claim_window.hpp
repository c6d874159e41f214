#pragma once

// The claim window: what this scheduler has asked nodes to do and not heard
// back about (DESIGN.md, "The claim protocol").
//   claims:   sent -> accepted (gang members wait for their gang) -> confirming
//             -> confirmed (gang members wait for the whole gang) -> running;
//             a reject, a timeout or a failed confirm sends the tasks back.
//   gangs:    all members accepted -> confirm all; all confirmed -> running;
//             any failure -> release what was granted, requeue the gang whole.
//   releases: allocations taken away (preemption, eviction) or an aborted
//             gang's confirmed claim: their tasks may run again only once the
//             node says they are freed (else a task could be allocated twice),
//             and the release is resent until answered.
// The window holds state and answers questions; the scheduler applies what
// follows to the task table, the queue and the journal.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/protocol.hpp"

namespace claimsched::core {

using GangId = StrongId<struct GangIdTag, uint64_t>;

/// Claim ids are the owner's epoch followed by a counter of this many bits.
inline constexpr int kClaimCounterBits = 40;
inline constexpr Epoch kMaxEpoch = Epoch{1} << (64 - kClaimCounterBits);

enum class ClaimPhase : uint8_t {
  /// Sent; no answer yet.
  sent = 0,
  /// Accepted; a gang member waiting for the rest of its gang.
  accepted,
  /// Confirm sent; no answer yet.
  confirming,
  /// Confirmed; a gang member waiting for the rest of its gang to be confirmed.
  confirmed,
};

std::string_view to_string(ClaimPhase p);

struct Claim {
  ClaimRequest request;
  NodeIndex node = 0;
  /// When its last message was sent (claim or confirm).
  TimePoint sent_at{0};
  ClaimPhase phase = ClaimPhase::sent;
  std::optional<GangId> gang;
};

struct Gang {
  JobId job;
  /// Members whose current step (claim or confirm) is unanswered.
  uint32_t outstanding = 0;
  /// Every member was accepted and confirms are out.
  bool confirming = false;
  /// Set once a member failed: the gang is released and requeued whole.
  std::optional<std::string> failure;
  std::vector<ClaimId> claims;
};

struct Release {
  enum class Why : uint8_t {
    /// An allocation taken away (preempted or evicted): its task runs again.
    removal = 0,
    /// An aborted gang's confirmed claim: its tasks go back to the queue.
    aborted_gang,
  };
  ReleaseRequest request;
  NodeIndex node = 0;
  TimePoint sent_at{0};
  Why why = Why::removal;
  /// removal: the job the room is for (looked at first once it is free).
  std::optional<JobId> for_job;
};

class ClaimWindow {
 public:
  ClaimWindow(PartitionId partition, Epoch epoch) : partition_(partition), epoch_(epoch) {}

  /// A fresh claim id. The epoch is in the high bits: a new owner of the
  /// partition never reuses an id of the owner it replaced (a node would take
  /// the new owner's confirm for the old owner's claim).
  ClaimId next_id() { return ClaimId{(epoch_ << kClaimCounterBits) | next_claim_++}; }

  Claim& add(ClaimRequest request, NodeIndex node, std::optional<GangId> gang, TimePoint now);
  Claim* find(ClaimId id);
  void erase(ClaimId id) { claims_.erase(id); }
  size_t size() const { return claims_.size(); }
  const std::map<ClaimId, Claim>& claims() const { return claims_; }
  /// Claims sent to node n that have no answer yet, in id order.
  std::vector<ClaimId> unanswered_on(NodeIndex n) const;
  /// Claims whose last message is older than `timeout`, in id order.
  std::vector<ClaimId> overdue(TimePoint now, Duration timeout) const;

  GangId open_gang(JobId job);
  Gang& gang(GangId id) { return gangs_.at(id); }
  void close_gang(GangId id) { gangs_.erase(id); }

  Release& add_release(ReleaseRequest request, NodeIndex node, Release::Why why, TimePoint now,
                       std::optional<JobId> for_job = std::nullopt);
  Release* find_release(ClaimId id);
  void erase_release(ClaimId id) { releases_.erase(id); }
  const std::map<ClaimId, Release>& releases() const { return releases_; }
  std::map<ClaimId, Release>& releases() { return releases_; }
  /// The release that frees task t of job, if one is in flight.
  bool releasing(TaskRef t) const;

  /// A release request under this partition's epoch of `claim` (or none)
  /// and/or tasks of `job` on `node`.
  ReleaseRequest release_request(NodeId node, JobId job, std::optional<ClaimId> claim,
                                 std::vector<TaskIndex> tasks = {},
                                 TaskState reason = TaskState::cancelled) const;
  ConfirmRequest confirm_request(const ClaimRequest& claim) const;

 private:
  PartitionId partition_;
  Epoch epoch_;
  uint64_t next_claim_ = 1;
  uint64_t next_gang_ = 1;
  std::map<ClaimId, Claim> claims_;
  std::map<GangId, Gang> gangs_;
  std::map<ClaimId, Release> releases_;
};

}  // namespace claimsched::core
