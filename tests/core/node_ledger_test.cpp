// The node-side claim state machine, rule by rule as DESIGN.md ("The claim
// protocol") states it, then a randomized check of its accounting and of the
// "one generation per change" contract against a model.

#include "core/node_ledger.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/random.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::ClaimBuilder;
using testing::confirm_of;
using testing::ms;
using testing::release_claim;
using testing::release_tasks;
using testing::res;

class NodeLedgerTest : public ::testing::Test {
 protected:
  static LedgerConfig config(Duration start_delay = Duration{0}) {
    LedgerConfig c;
    c.claim_ttl = std::chrono::seconds(10);
    c.start_delay = start_delay;
    return c;
  }

  ClaimReply claim(const ClaimRequest& r, TimePoint now = ms(0)) { return ledger.claim(r, now); }
  ConfirmReply confirm(const ClaimRequest& r, TimePoint now = ms(0)) {
    return ledger.confirm(confirm_of(r), now);
  }

  NodeLedger ledger{NodeId{1}, res("cpu=4,memory=8Gi"), config()};
};

// --- acceptance ------------------------------------------------------------

TEST_F(NodeLedgerTest, AcceptRecordsTheClaimBumpsGenerationByOneAndReducesFree) {
  auto c = ClaimBuilder().task_count(2).per_task("cpu=1,memory=1Gi").build();
  auto reply = claim(c, ms(500));
  EXPECT_EQ(reply.outcome, ClaimOutcome::accepted);
  EXPECT_EQ(reply.claim_id, c.claim_id);
  EXPECT_EQ(reply.snapshot.generation, 1u);
  EXPECT_EQ(reply.snapshot.free, res("cpu=2,memory=6Gi"));
  EXPECT_EQ(reply.snapshot.starting, 2u);
  EXPECT_EQ(reply.snapshot, ledger.snapshot());
  EXPECT_EQ(ledger.claimed(), res("cpu=2,memory=2Gi"));
  EXPECT_TRUE(ledger.allocated().is_zero());
  ASSERT_EQ(ledger.claims().size(), 1u);
  EXPECT_EQ(ledger.claims()[0].expires, ms(500) + std::chrono::seconds(10));
  EXPECT_EQ(ledger.claims()[0].tasks, c.tasks);
}

TEST_F(NodeLedgerTest, SeveralTasksPerClaimUpToExactlyFull) {
  auto full = ClaimBuilder().task_count(4).per_task("cpu=1,memory=2Gi").build();
  ASSERT_EQ(claim(full).outcome, ClaimOutcome::accepted);
  EXPECT_TRUE(ledger.free().is_zero());
  EXPECT_EQ(ledger.generation(), 1u);  // one claim, one generation, however many tasks
  auto one_more = ClaimBuilder().id(2).tasks({4}).per_task("cpu=1m").build();
  auto reply = claim(one_more);
  EXPECT_EQ(reply.outcome, ClaimOutcome::insufficient);
  EXPECT_TRUE(reply.snapshot.free.is_zero());
}

TEST_F(NodeLedgerTest, ZeroGenerationsForRejectsOneForEachAccept) {
  Generation g = ledger.generation();
  for (uint64_t i = 1; i <= 4; ++i) {
    ASSERT_EQ(claim(ClaimBuilder().id(i).tasks({TaskIndex(i)}).build()).outcome,
              ClaimOutcome::accepted);
    EXPECT_EQ(ledger.generation(), g + i);
  }
  EXPECT_EQ(claim(ClaimBuilder().id(9).tasks({9}).build()).outcome, ClaimOutcome::insufficient);
  EXPECT_EQ(ledger.generation(), g + 4);
}

// --- rule 1: epoch fence ---------------------------------------------------

TEST_F(NodeLedgerTest, StaleEpochIsRejectedWithSnapshot) {
  ASSERT_EQ(claim(ClaimBuilder().epoch(2).build()).outcome, ClaimOutcome::accepted);
  auto reply = claim(ClaimBuilder().id(2).epoch(1).tasks({1}).build());
  EXPECT_EQ(reply.outcome, ClaimOutcome::stale_epoch);
  EXPECT_EQ(reply.snapshot, ledger.snapshot());
  EXPECT_EQ(reply.snapshot.generation, 1u);
  EXPECT_EQ(ledger.claims().size(), 1u);
  EXPECT_EQ(ledger.highest_epoch(PartitionId{1}), 2u);
  // The same epoch as the highest is fine.
  EXPECT_EQ(claim(ClaimBuilder().id(3).epoch(2).tasks({2}).build()).outcome,
            ClaimOutcome::accepted);
}

TEST_F(NodeLedgerTest, AnyMessageOfANewerEpochFencesOlderOnes) {
  // A claim that is itself rejected (it does not fit) still raises the fence.
  auto big = ClaimBuilder().epoch(5).per_task("cpu=100").build();
  EXPECT_EQ(claim(big).outcome, ClaimOutcome::insufficient);
  EXPECT_EQ(ledger.highest_epoch(PartitionId{1}), 5u);
  EXPECT_EQ(claim(ClaimBuilder().id(2).epoch(4).build()).outcome, ClaimOutcome::stale_epoch);

  // So does a confirm of a claim the node never saw...
  ConfirmRequest confirm6 = confirm_of(ClaimBuilder().id(77).epoch(6).build());
  EXPECT_EQ(ledger.confirm(confirm6, ms(0)).outcome, ConfirmOutcome::unknown_claim);
  EXPECT_EQ(claim(ClaimBuilder().id(3).epoch(5).build()).outcome, ClaimOutcome::stale_epoch);

  // ... and a release that frees nothing.
  auto r = release_claim(ClaimBuilder().id(78).epoch(7).build());
  EXPECT_FALSE(ledger.release(r, ms(0)).stale_epoch);
  EXPECT_EQ(ledger.highest_epoch(PartitionId{1}), 7u);
  EXPECT_EQ(claim(ClaimBuilder().id(4).epoch(6).build()).outcome, ClaimOutcome::stale_epoch);

  // Epochs are per partition.
  EXPECT_EQ(ledger.highest_epoch(PartitionId{2}), 0u);
  EXPECT_EQ(claim(ClaimBuilder().id(5).partition(2).epoch(1).build()).outcome,
            ClaimOutcome::accepted);
}

TEST_F(NodeLedgerTest, ConfirmAndReleaseOfAFencedEpochAreRefused) {
  auto old = ClaimBuilder().epoch(1).build();
  ASSERT_EQ(claim(old).outcome, ClaimOutcome::accepted);
  // The new owner's first message reaches the node before the old owner's confirm.
  ASSERT_EQ(claim(ClaimBuilder().id(2).epoch(2).tasks({1}).job(2).build()).outcome,
            ClaimOutcome::accepted);
  Generation g = ledger.generation();
  auto reply = confirm(old);
  EXPECT_EQ(reply.outcome, ConfirmOutcome::stale_epoch);
  EXPECT_EQ(reply.snapshot, ledger.snapshot());
  EXPECT_TRUE(ledger.allocations().empty());
  auto rel = ledger.release(release_claim(old), ms(0));
  EXPECT_TRUE(rel.stale_epoch);
  EXPECT_EQ(rel.released, 0u);
  EXPECT_EQ(ledger.generation(), g);
  // The fenced owner's claim is not leaked: it expires.
  std::vector<NodeEvent> events;
  EXPECT_TRUE(ledger.advance(std::chrono::seconds(10), events));
  EXPECT_TRUE(ledger.claims().empty());
}

// --- rule 2: strict CAS ----------------------------------------------------

TEST_F(NodeLedgerTest, StrictCasRejectsAnyOtherGenerationWithSnapshot) {
  ASSERT_EQ(claim(ClaimBuilder().expect(0).build()).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(ledger.generation(), 1u);
  // Fits easily, but the node moved on since the scheduler looked.
  auto reply = claim(ClaimBuilder().id(2).tasks({1}).expect(0).build());
  EXPECT_EQ(reply.outcome, ClaimOutcome::conflict);
  EXPECT_EQ(reply.snapshot.generation, 1u);
  EXPECT_EQ(reply.snapshot.free, res("cpu=3,memory=8Gi"));
  EXPECT_EQ(ledger.claims().size(), 1u);
  // A generation from the future is as wrong as one from the past.
  EXPECT_EQ(claim(ClaimBuilder().id(3).tasks({1}).expect(2).build()).outcome,
            ClaimOutcome::conflict);
  // Retried with the snapshot's generation, it is accepted.
  EXPECT_EQ(
      claim(ClaimBuilder().id(4).tasks({1}).expect(reply.snapshot.generation).build()).outcome,
      ClaimOutcome::accepted);
  EXPECT_EQ(ledger.generation(), 2u);
}

TEST_F(NodeLedgerTest, StrictCasStillChecksFit) {
  auto reply = claim(ClaimBuilder().expect(0).per_task("cpu=5").build());
  EXPECT_EQ(reply.outcome, ClaimOutcome::insufficient);
}

// --- rule 3: fit check -----------------------------------------------------

TEST_F(NodeLedgerTest, InsufficientCarriesTheSnapshotAndChangesNothing) {
  ASSERT_EQ(claim(ClaimBuilder().task_count(3).build()).outcome, ClaimOutcome::accepted);
  auto before = ledger.snapshot();
  auto reply = claim(ClaimBuilder().id(2).tasks({3, 4}).build());  // 2 cpus, 1 free
  EXPECT_EQ(reply.outcome, ClaimOutcome::insufficient);
  EXPECT_EQ(reply.snapshot, before);
  EXPECT_EQ(reply.snapshot.free, res("cpu=1,memory=8Gi"));
  EXPECT_EQ(reply.snapshot.generation, 1u);
  EXPECT_EQ(ledger.snapshot(), before);
  // Any dimension can be the short one.
  EXPECT_EQ(claim(ClaimBuilder().id(3).tasks({5}).per_task("cpu=1m,memory=9Gi").build()).outcome,
            ClaimOutcome::insufficient);
  EXPECT_EQ(claim(ClaimBuilder().id(4).tasks({6}).per_task("gpu=1").build()).outcome,
            ClaimOutcome::insufficient);
}

TEST_F(NodeLedgerTest, AllocationsAndClaimsBothCountAgainstCapacity) {
  auto a = ClaimBuilder().task_count(2).build();
  ASSERT_EQ(claim(a).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(a).outcome, ConfirmOutcome::confirmed);
  ASSERT_EQ(claim(ClaimBuilder().id(2).tasks({2}).build()).outcome, ClaimOutcome::accepted);
  // 2 allocated + 1 claimed of 4.
  EXPECT_EQ(claim(ClaimBuilder().id(3).tasks({3, 4}).build()).outcome, ClaimOutcome::insufficient);
  EXPECT_EQ(claim(ClaimBuilder().id(4).tasks({3}).build()).outcome, ClaimOutcome::accepted);
  EXPECT_TRUE(ledger.free().fits_in(res("memory=8Gi")));
  EXPECT_EQ(ledger.free()[dim::cpu], 0);
}

TEST_F(NodeLedgerTest, HugeClaimsAreInsufficientNotOverflowed) {
  ClaimRequest c = ClaimBuilder().task_count(4).build();
  c.per_task = Resources::of({{dim::cpu, std::numeric_limits<int64_t>::max() / 2}});
  auto reply = claim(c);
  EXPECT_EQ(reply.outcome, ClaimOutcome::insufficient);
  EXPECT_TRUE(ledger.claims().empty());
}

// --- every reject carries the snapshot --------------------------------------

TEST_F(NodeLedgerTest, EveryRejectCarriesTheCurrentSnapshot) {
  auto first = ClaimBuilder().epoch(3).task_count(2).build();
  ASSERT_EQ(claim(first).outcome, ClaimOutcome::accepted);
  std::vector<std::pair<ClaimOutcome, ClaimRequest>> rejects{
      {ClaimOutcome::stale_epoch, ClaimBuilder().id(2).epoch(2).tasks({5}).build()},
      {ClaimOutcome::conflict, ClaimBuilder().id(3).epoch(3).tasks({5}).expect(0).build()},
      {ClaimOutcome::insufficient,
       ClaimBuilder().id(4).epoch(3).tasks({5}).per_task("cpu=3").build()},
      {ClaimOutcome::invalid, ClaimBuilder().id(5).epoch(3).tasks({0}).build()},  // task 0 held
      {ClaimOutcome::invalid, ClaimBuilder().id(6).epoch(3).node(2).tasks({5}).build()},
  };
  for (const auto& [expected, request] : rejects) {
    auto reply = claim(request);
    EXPECT_EQ(reply.outcome, expected) << "claim " << request.claim_id.value;
    EXPECT_EQ(reply.claim_id, request.claim_id);
    EXPECT_EQ(reply.snapshot, ledger.snapshot()) << "claim " << request.claim_id.value;
    EXPECT_EQ(reply.snapshot.generation, 1u);
    EXPECT_EQ(reply.snapshot.free, res("cpu=2,memory=8Gi"));
  }
  ASSERT_TRUE(ledger.set_state(NodeState::draining));
  auto reply = claim(ClaimBuilder().id(7).epoch(3).tasks({5}).build());
  EXPECT_EQ(reply.outcome, ClaimOutcome::not_schedulable);
  EXPECT_EQ(reply.snapshot, ledger.snapshot());
  EXPECT_EQ(reply.snapshot.state, NodeState::draining);
}

// --- confirm ---------------------------------------------------------------

TEST_F(NodeLedgerTest, ConfirmTurnsTheClaimIntoRunningAllocations) {
  auto c = ClaimBuilder().id(7).task_count(2).per_task("cpu=1,memory=1Gi").build();
  ASSERT_EQ(claim(c, ms(100)).outcome, ClaimOutcome::accepted);
  auto reply = confirm(c, ms(200));
  EXPECT_EQ(reply.outcome, ConfirmOutcome::confirmed);
  EXPECT_EQ(reply.snapshot.generation, 2u);
  EXPECT_EQ(reply.snapshot.free, res("cpu=2,memory=6Gi"));  // unchanged by the confirm
  EXPECT_EQ(reply.snapshot.starting, 0u);                   // no start delay: running
  EXPECT_TRUE(ledger.claims().empty());
  EXPECT_TRUE(ledger.claimed().is_zero());
  EXPECT_EQ(ledger.allocated(), res("cpu=2,memory=2Gi"));
  ASSERT_EQ(ledger.allocations().size(), 2u);
  std::set<TaskIndex> tasks;
  for (const auto& a : ledger.allocations()) {
    EXPECT_EQ(a.task.job, c.job);
    EXPECT_EQ(a.partition, c.partition);
    EXPECT_EQ(a.claim_id, c.claim_id);
    EXPECT_EQ(a.resources, c.per_task);
    EXPECT_TRUE(a.running);
    EXPECT_EQ(a.confirmed_at, ms(200));
    EXPECT_EQ(a.finishes_at, kNever);
    tasks.insert(a.task.index);
  }
  EXPECT_EQ(tasks, (std::set<TaskIndex>{0, 1}));
  // An allocation does not expire.
  std::vector<NodeEvent> events;
  ledger.advance(std::chrono::hours(1), events);
  EXPECT_EQ(ledger.allocations().size(), 2u);
  EXPECT_TRUE(events.empty());
}

TEST_F(NodeLedgerTest, ConfirmOfAnUnknownClaimChangesNothing) {
  auto reply = ledger.confirm(confirm_of(ClaimBuilder().id(42).build()), ms(0));
  EXPECT_EQ(reply.outcome, ConfirmOutcome::unknown_claim);
  EXPECT_EQ(reply.claim_id, ClaimId{42});
  EXPECT_EQ(reply.snapshot, ledger.snapshot());
  EXPECT_EQ(ledger.generation(), 0u);
}

TEST_F(NodeLedgerTest, ConfirmOfAnExpiredClaimIsUnknown) {
  auto c = ClaimBuilder().build();
  ASSERT_EQ(claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  std::vector<NodeEvent> events;
  ASSERT_TRUE(ledger.advance(std::chrono::seconds(10), events));
  auto reply = confirm(c, std::chrono::seconds(10));
  EXPECT_EQ(reply.outcome, ConfirmOutcome::unknown_claim);
  EXPECT_TRUE(ledger.allocations().empty());
  EXPECT_EQ(reply.snapshot.free, res("cpu=4,memory=8Gi"));
}

TEST_F(NodeLedgerTest, ConfirmOfAReleasedClaimIsUnknown) {
  auto c = ClaimBuilder().build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(ledger.release(release_claim(c), ms(0)).released, 1u);
  EXPECT_EQ(confirm(c).outcome, ConfirmOutcome::unknown_claim);
  EXPECT_TRUE(ledger.allocations().empty());
}

TEST_F(NodeLedgerTest, ConfirmIsIdempotent) {
  auto c = ClaimBuilder().task_count(2).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  auto after_first = ledger.snapshot();
  auto allocations = ledger.allocations();
  // The reply was lost; the scheduler asks again.
  auto again = confirm(c, ms(50));
  EXPECT_EQ(again.outcome, ConfirmOutcome::confirmed);
  EXPECT_EQ(again.snapshot, after_first);
  EXPECT_EQ(ledger.generation(), after_first.generation);
  EXPECT_EQ(ledger.allocations(), allocations);
}

TEST_F(NodeLedgerTest, ConfirmFromAnotherPartitionDoesNotTakeTheClaim) {
  auto c = ClaimBuilder().partition(1).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ConfirmRequest other = confirm_of(c);
  other.partition = PartitionId{2};
  EXPECT_EQ(ledger.confirm(other, ms(0)).outcome, ConfirmOutcome::unknown_claim);
  EXPECT_EQ(ledger.claims().size(), 1u);
  EXPECT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  // ... nor answers "confirmed" for the other partition's allocations.
  EXPECT_EQ(ledger.confirm(other, ms(0)).outcome, ConfirmOutcome::unknown_claim);
}

// --- release ---------------------------------------------------------------

TEST_F(NodeLedgerTest, ReleaseOfAClaimFreesItOnce) {
  auto c = ClaimBuilder().task_count(3).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  auto reply = ledger.release(release_claim(c), ms(0));
  EXPECT_EQ(reply.released, 3u);
  EXPECT_FALSE(reply.stale_epoch);
  EXPECT_EQ(reply.claim_id, c.claim_id);
  EXPECT_EQ(reply.snapshot.generation, 2u);
  EXPECT_EQ(reply.snapshot.free, res("cpu=4,memory=8Gi"));
  EXPECT_EQ(reply.snapshot.starting, 0u);
  EXPECT_TRUE(ledger.claims().empty());
  auto again = ledger.release(release_claim(c), ms(0));
  EXPECT_EQ(again.released, 0u);
  EXPECT_EQ(again.snapshot.generation, 2u);  // nothing changed, no new generation
}

TEST_F(NodeLedgerTest, ReleaseOfAllocationsAllOrSome) {
  auto c = ClaimBuilder().task_count(3).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  auto one = ledger.release(release_tasks(c, {1}), ms(0));
  EXPECT_EQ(one.released, 1u);
  EXPECT_EQ(one.snapshot.generation, 3u);
  EXPECT_EQ(ledger.allocated(), res("cpu=2"));
  // Releasing by claim id does not touch allocations; tasks do.
  EXPECT_EQ(ledger.release(release_claim(c), ms(0)).released, 0u);
  auto rest = ledger.release(release_tasks(c), ms(0));  // 0, 1, 2: 1 is already gone
  EXPECT_EQ(rest.released, 2u);
  EXPECT_EQ(rest.snapshot.generation, 4u);  // one generation for the whole release
  EXPECT_TRUE(ledger.allocations().empty());
  EXPECT_TRUE(ledger.allocated().is_zero());
}

TEST_F(NodeLedgerTest, ReleaseFromAnotherPartitionOrEpochFreesNothing) {
  auto c = ClaimBuilder().epoch(2).task_count(2).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  ReleaseRequest other = release_tasks(c);
  other.partition = PartitionId{2};
  EXPECT_EQ(ledger.release(other, ms(0)).released, 0u);
  ReleaseRequest stale = release_tasks(c);
  stale.epoch = 1;
  auto reply = ledger.release(stale, ms(0));
  EXPECT_TRUE(reply.stale_epoch);
  EXPECT_EQ(reply.released, 0u);
  EXPECT_EQ(ledger.allocations().size(), 2u);
}

// --- expiry and time -------------------------------------------------------

TEST_F(NodeLedgerTest, UnconfirmedClaimExpiresAfterTtl) {
  auto c = ClaimBuilder().id(5).partition(3).tasks({4, 2}).build();
  ASSERT_EQ(claim(c, ms(1000)).outcome, ClaimOutcome::accepted);
  EXPECT_EQ(ledger.next_deadline(), ms(11'000));
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.advance(ms(10'999), events));
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(ledger.claims().size(), 1u);
  Generation g = ledger.generation();
  EXPECT_TRUE(ledger.advance(ms(11'000), events));
  EXPECT_EQ(ledger.generation(), g + 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, NodeEvent::Kind::claim_expired);
  EXPECT_EQ(events[0].claim_id, c.claim_id);
  EXPECT_EQ(events[0].partition, c.partition);
  EXPECT_EQ(events[0].task.job, c.job);
  EXPECT_TRUE(ledger.claims().empty());
  EXPECT_EQ(ledger.free(), ledger.capacity());
  EXPECT_EQ(ledger.snapshot().starting, 0u);
  EXPECT_EQ(ledger.next_deadline(), kNever);
  // Nothing left to do: no change, no generation.
  EXPECT_FALSE(ledger.advance(ms(20'000), events));
  EXPECT_EQ(ledger.generation(), g + 1);
}

TEST_F(NodeLedgerTest, ClaimsExpireEachAtItsOwnDeadline) {
  ASSERT_EQ(claim(ClaimBuilder().id(1).tasks({0}).build(), ms(0)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(claim(ClaimBuilder().id(2).tasks({1}).build(), ms(3000)).outcome,
            ClaimOutcome::accepted);
  ASSERT_EQ(claim(ClaimBuilder().id(3).tasks({2}).build(), ms(3000)).outcome,
            ClaimOutcome::accepted);
  std::vector<NodeEvent> events;
  EXPECT_TRUE(ledger.advance(ms(12'000), events));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].claim_id, ClaimId{1});
  EXPECT_EQ(ledger.next_deadline(), ms(13'000));
  Generation g = ledger.generation();
  events.clear();
  EXPECT_TRUE(ledger.advance(ms(13'500), events));
  EXPECT_EQ(events.size(), 2u);
  EXPECT_EQ(ledger.generation(), g + 1);  // two expiries, one change
  EXPECT_TRUE(ledger.claims().empty());
}

TEST_F(NodeLedgerTest, ConfirmedClaimDoesNotExpire) {
  auto c = ClaimBuilder().build();
  ASSERT_EQ(claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c, ms(9'999)).outcome, ConfirmOutcome::confirmed);
  std::vector<NodeEvent> events;
  Generation g = ledger.generation();
  EXPECT_FALSE(ledger.advance(ms(30'000), events));  // the stale deadline fires, nothing changes
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(ledger.generation(), g);
  EXPECT_EQ(ledger.allocations().size(), 1u);
}

TEST_F(NodeLedgerTest, SimulatedRuntimeFinishesTasks) {
  auto c = ClaimBuilder().task_count(2).runtime(std::chrono::seconds(5)).build();
  ASSERT_EQ(claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c, ms(1000)).outcome, ConfirmOutcome::confirmed);
  for (const auto& a : ledger.allocations()) EXPECT_EQ(a.finishes_at, ms(6000));
  EXPECT_EQ(ledger.next_deadline(), ms(6000));
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.advance(ms(5999), events));
  Generation g = ledger.generation();
  EXPECT_TRUE(ledger.advance(ms(6000), events));
  EXPECT_EQ(ledger.generation(), g + 1);
  ASSERT_EQ(events.size(), 2u);
  std::set<TaskIndex> finished;
  for (const auto& ev : events) {
    EXPECT_EQ(ev.kind, NodeEvent::Kind::task_finished);
    EXPECT_EQ(ev.final_state, TaskState::succeeded);
    EXPECT_EQ(ev.exit_code, 0);
    EXPECT_EQ(ev.partition, c.partition);
    EXPECT_EQ(ev.claim_id, c.claim_id);
    EXPECT_EQ(ev.task.job, c.job);
    finished.insert(ev.task.index);
  }
  EXPECT_EQ(finished, (std::set<TaskIndex>{0, 1}));
  EXPECT_TRUE(ledger.allocations().empty());
  EXPECT_EQ(ledger.free(), ledger.capacity());
}

TEST(NodeLedgerStartDelay, ConfirmedTasksStartAfterTheDelay) {
  LedgerConfig config;
  config.start_delay = std::chrono::seconds(2);
  NodeLedger ledger(NodeId{1}, res("cpu=4"), config);
  auto c = ClaimBuilder().task_count(3).runtime(std::chrono::seconds(3)).build();
  ASSERT_EQ(ledger.claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  EXPECT_EQ(ledger.snapshot().starting, 3u);
  auto reply = ledger.confirm(confirm_of(c), ms(1000));
  ASSERT_EQ(reply.outcome, ConfirmOutcome::confirmed);
  EXPECT_EQ(reply.snapshot.starting, 3u);  // confirmed, not yet running
  for (const auto& a : ledger.allocations()) {
    EXPECT_FALSE(a.running);
    EXPECT_EQ(a.finishes_at, ms(6000));  // confirmed + delay + runtime
  }
  EXPECT_EQ(ledger.next_deadline(), ms(3000));
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.advance(ms(2999), events));
  EXPECT_TRUE(ledger.advance(ms(3000), events));
  ASSERT_EQ(events.size(), 3u);
  for (const auto& ev : events) EXPECT_EQ(ev.kind, NodeEvent::Kind::task_started);
  EXPECT_EQ(ledger.snapshot().starting, 0u);
  for (const auto& a : ledger.allocations()) EXPECT_TRUE(a.running);
  EXPECT_EQ(ledger.free(), res("cpu=1"));  // running tasks still hold their resources
  events.clear();
  EXPECT_TRUE(ledger.advance(ms(6000), events));
  ASSERT_EQ(events.size(), 3u);
  for (const auto& ev : events) EXPECT_EQ(ev.kind, NodeEvent::Kind::task_finished);
  EXPECT_EQ(ledger.free(), res("cpu=4"));
}

TEST(NodeLedgerStartDelay, ReleasingAStartingTaskFreesItsStartingSlot) {
  LedgerConfig config;
  config.start_delay = std::chrono::seconds(2);
  NodeLedger ledger(NodeId{1}, res("cpu=4"), config);
  auto c = ClaimBuilder().task_count(2).build();
  ASSERT_EQ(ledger.claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(ledger.confirm(confirm_of(c), ms(0)).outcome, ConfirmOutcome::confirmed);
  EXPECT_EQ(ledger.release(release_tasks(c, {0}), ms(0)).snapshot.starting, 1u);
  std::vector<NodeEvent> events;
  EXPECT_TRUE(ledger.finish_task(TaskRef{c.job, 1}, TaskState::failed, 1, events));
  EXPECT_EQ(ledger.snapshot().starting, 0u);
  EXPECT_TRUE(ledger.allocations().empty());
}

TEST_F(NodeLedgerTest, FinishTaskReportsTheExitAndFreesResources) {
  auto c = ClaimBuilder().task_count(2).build();
  ASSERT_EQ(claim(c).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.finish_task(TaskRef{c.job, 9}, TaskState::failed, 1, events));
  EXPECT_FALSE(ledger.finish_task(TaskRef{JobId{2}, 0}, TaskState::failed, 1, events));
  EXPECT_TRUE(events.empty());
  Generation g = ledger.generation();
  EXPECT_TRUE(ledger.finish_task(TaskRef{c.job, 1}, TaskState::failed, 137, events));
  EXPECT_EQ(ledger.generation(), g + 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, NodeEvent::Kind::task_finished);
  EXPECT_EQ(events[0].final_state, TaskState::failed);
  EXPECT_EQ(events[0].exit_code, 137);
  EXPECT_EQ((events[0].task), (TaskRef{c.job, 1}));
  EXPECT_EQ(ledger.allocated(), res("cpu=1"));
  // A claimed (unconfirmed) task cannot finish.
  auto pending = ClaimBuilder().id(2).tasks({5}).build();
  ASSERT_EQ(claim(pending).outcome, ClaimOutcome::accepted);
  EXPECT_FALSE(ledger.finish_task(TaskRef{pending.job, 5}, TaskState::failed, 1, events));
}

TEST_F(NodeLedgerTest, TheEndOfAnOlderRunDoesNotEndTheTasksNewRunHere) {
  // Task 0 runs under claim 1, is released (its process is being killed) and
  // placed here again under claim 2 before the old process has exited.
  auto first = ClaimBuilder().id(1).tasks({0}).build();
  ASSERT_EQ(claim(first).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(first).outcome, ConfirmOutcome::confirmed);
  ASSERT_EQ(ledger.release(release_tasks(first, {0}), ms(0)).released, 1u);
  auto again = ClaimBuilder().id(2).tasks({0}).build();
  ASSERT_EQ(claim(again).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(again).outcome, ConfirmOutcome::confirmed);
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.finish_task(TaskRef{first.job, 0}, TaskState::failed, 143, events, {}, ClaimId{1}))
      << "the killed old process's end finds nothing";
  EXPECT_TRUE(events.empty());
  ASSERT_EQ(ledger.allocations().size(), 1u);
  EXPECT_TRUE(ledger.finish_task(TaskRef{first.job, 0}, TaskState::succeeded, 0, events, {}, ClaimId{2}));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].claim_id, ClaimId{2});
}

// --- node state ------------------------------------------------------------

TEST_F(NodeLedgerTest, DrainingAndDownNodesAcceptNoClaims) {
  auto running = ClaimBuilder().build();
  ASSERT_EQ(claim(running).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(confirm(running).outcome, ConfirmOutcome::confirmed);
  for (NodeState s : {NodeState::draining, NodeState::down}) {
    Generation g = ledger.generation();
    EXPECT_TRUE(ledger.set_state(s));
    EXPECT_EQ(ledger.generation(), g + 1);
    EXPECT_FALSE(ledger.set_state(s));  // no change, no generation
    EXPECT_EQ(ledger.generation(), g + 1);
    auto reply = claim(ClaimBuilder().id(10 + static_cast<uint64_t>(s)).tasks({7}).build());
    EXPECT_EQ(reply.outcome, ClaimOutcome::not_schedulable) << to_string(s);
    EXPECT_EQ(reply.snapshot.state, s);
    EXPECT_EQ(reply.snapshot.generation, g + 1);
    EXPECT_EQ(ledger.allocations().size(), 1u) << "what runs is kept";
  }
  EXPECT_TRUE(ledger.set_state(NodeState::up));
  EXPECT_EQ(claim(ClaimBuilder().id(20).tasks({7}).build()).outcome, ClaimOutcome::accepted);
}

// --- retransmissions and malformed claims -----------------------------------

TEST_F(NodeLedgerTest, RetransmittedClaimIsAnsweredAgainNotDoubled) {
  auto c = ClaimBuilder().task_count(2).build();
  ASSERT_EQ(claim(c, ms(0)).outcome, ClaimOutcome::accepted);
  auto again = claim(c, ms(10));
  EXPECT_EQ(again.outcome, ClaimOutcome::accepted);
  EXPECT_EQ(again.snapshot.generation, 1u);
  EXPECT_EQ(ledger.claims().size(), 1u);
  EXPECT_EQ(ledger.claimed(), res("cpu=2"));
  EXPECT_EQ(ledger.claims()[0].expires, ms(10'000));  // the ttl is not extended
  // The same id with other content is a different claim: malformed.
  EXPECT_EQ(claim(ClaimBuilder().tasks({0, 1, 2}).build()).outcome, ClaimOutcome::invalid);
  EXPECT_EQ(claim(ClaimBuilder().task_count(2).job(2).build()).outcome, ClaimOutcome::invalid);
  // Once confirmed, a late copy of the claim finds the tasks held.
  ASSERT_EQ(confirm(c).outcome, ConfirmOutcome::confirmed);
  Generation g = ledger.generation();
  EXPECT_EQ(claim(c).outcome, ClaimOutcome::invalid);
  EXPECT_EQ(ledger.generation(), g);
  EXPECT_EQ(ledger.allocations().size(), 2u);
}

TEST_F(NodeLedgerTest, ATaskIsHeldAtMostOnce) {
  EXPECT_EQ(claim(ClaimBuilder().tasks({3, 3}).build()).outcome, ClaimOutcome::invalid);
  auto first = ClaimBuilder().id(2).tasks({3, 4}).build();
  ASSERT_EQ(claim(first).outcome, ClaimOutcome::accepted);
  // Held by a live claim...
  EXPECT_EQ(claim(ClaimBuilder().id(3).tasks({4, 5}).build()).outcome, ClaimOutcome::invalid);
  ASSERT_EQ(confirm(first).outcome, ConfirmOutcome::confirmed);
  // ... or by an allocation.
  EXPECT_EQ(claim(ClaimBuilder().id(4).tasks({3}).build()).outcome, ClaimOutcome::invalid);
  // The same index of another job is another task.
  EXPECT_EQ(claim(ClaimBuilder().id(5).job(2).tasks({3}).build()).outcome, ClaimOutcome::accepted);
  EXPECT_EQ(ledger.generation(), 3u);
}

TEST_F(NodeLedgerTest, MalformedClaimsAreInvalid) {
  EXPECT_EQ(claim(ClaimBuilder().tasks({}).build()).outcome, ClaimOutcome::invalid);
  EXPECT_EQ(claim(ClaimBuilder().id(2).node(9).build()).outcome, ClaimOutcome::invalid);
  ClaimRequest negative = ClaimBuilder().id(3).build();
  negative.per_task = res("cpu=1") - res("memory=1Gi");
  EXPECT_EQ(claim(negative).outcome, ClaimOutcome::invalid);
  EXPECT_EQ(ledger.generation(), 0u);
  EXPECT_EQ(ledger.free(), ledger.capacity());
}

// --- several partitions ----------------------------------------------------

TEST_F(NodeLedgerTest, ClaimsFromSeveralPartitionsShareTheNode) {
  // Each partition's scheduler numbers its claims itself: ids may coincide.
  auto p1 = ClaimBuilder().id(1).partition(1).epoch(4).job(10).task_count(2).build();
  auto p2 = ClaimBuilder().id(1).partition(2).epoch(1).job(20).task_count(2).build();
  ASSERT_EQ(claim(p1).outcome, ClaimOutcome::accepted);
  auto r2 = claim(p2);
  ASSERT_EQ(r2.outcome, ClaimOutcome::accepted);
  EXPECT_EQ(r2.snapshot.free, res("memory=8Gi"));
  EXPECT_EQ(ledger.claims().size(), 2u);
  // Fences are per partition: partition 2 at epoch 1 is not stale.
  EXPECT_EQ(ledger.highest_epoch(PartitionId{1}), 4u);
  EXPECT_EQ(ledger.highest_epoch(PartitionId{2}), 1u);
  // Full now, for everyone.
  EXPECT_EQ(claim(ClaimBuilder().id(2).partition(1).epoch(4).job(11).build()).outcome,
            ClaimOutcome::insufficient);
  // Each confirm takes only its own partition's claim.
  ASSERT_EQ(confirm(p2).outcome, ConfirmOutcome::confirmed);
  ASSERT_EQ(ledger.claims().size(), 1u);
  EXPECT_EQ(ledger.claims()[0].partition, PartitionId{1});
  for (const auto& a : ledger.allocations()) EXPECT_EQ(a.partition, PartitionId{2});
  // A release names its partition: partition 1 cannot free partition 2's tasks.
  ReleaseRequest wrong = release_tasks(p2);
  wrong.partition = PartitionId{1};
  wrong.epoch = 4;
  EXPECT_EQ(ledger.release(wrong, ms(0)).released, 0u);
  EXPECT_EQ(ledger.release(release_claim(p1), ms(0)).released, 2u);
  EXPECT_EQ(ledger.allocations().size(), 2u);
  EXPECT_EQ(ledger.release(release_tasks(p2), ms(0)).released, 2u);
  EXPECT_EQ(ledger.free(), ledger.capacity());
}

// --- restore (restart) -----------------------------------------------------

TEST_F(NodeLedgerTest, RestoreRebuildsStateWithoutDoubling) {
  ledger.restore_generation(41);
  ledger.restore_generation(7);  // never backwards
  EXPECT_EQ(ledger.generation(), 41u);
  Allocation a;
  a.task = TaskRef{JobId{1}, 0};
  a.partition = PartitionId{1};
  a.running = true;
  a.resources = res("cpu=1");
  EXPECT_TRUE(ledger.restore_allocation(a));
  EXPECT_FALSE(ledger.restore_allocation(a));
  LiveClaim c;
  c.id = ClaimId{9};
  c.partition = PartitionId{1};
  c.expires = ms(5000);
  c.job = JobId{1};
  c.per_task = res("cpu=1");
  c.tasks = {0};
  EXPECT_FALSE(ledger.restore_claim(c));  // task 0 is allocated
  c.tasks = {1, 2};
  EXPECT_TRUE(ledger.restore_claim(c));
  ledger.restore_epoch(PartitionId{1}, 3);
  EXPECT_EQ(ledger.free(), res("cpu=1,memory=8Gi"));
  EXPECT_EQ(claim(ClaimBuilder().id(10).epoch(2).tasks({5}).build()).outcome,
            ClaimOutcome::stale_epoch);
  std::vector<NodeEvent> events;
  EXPECT_TRUE(ledger.advance(ms(5000), events));  // the restored claim expires on time
  EXPECT_EQ(ledger.free(), res("cpu=3,memory=8Gi"));
}

// --- randomized: accounting and generations against a model ----------------

// Everything a subscriber could observe, in a canonical order.
struct Observable {
  NodeState state;
  std::vector<std::tuple<uint64_t, uint32_t, uint64_t, std::vector<TaskIndex>, int64_t>> claims;
  std::vector<std::tuple<uint64_t, uint32_t, uint32_t, bool, int64_t>> allocations;
  bool operator==(const Observable&) const = default;
};

Observable observe(const NodeLedger& l) {
  Observable o;
  o.state = l.state();
  for (const auto& c : l.claims())
    o.claims.emplace_back(c.id.value, c.partition.value, c.job.value, c.tasks,
                          c.per_task[dim::cpu]);
  for (const auto& a : l.allocations())
    o.allocations.emplace_back(a.task.job.value, a.task.index, a.partition.value, a.running,
                               a.resources[dim::cpu]);
  std::sort(o.claims.begin(), o.claims.end());
  std::sort(o.allocations.begin(), o.allocations.end());
  return o;
}

// Returns the first broken invariant, or "".
std::string check(const NodeLedger& l, TimePoint now, bool just_advanced) {
  Resources claimed, allocated;
  uint32_t starting = 0;
  std::set<TaskRef> held;
  for (const auto& c : l.claims()) {
    claimed += c.total();
    starting += static_cast<uint32_t>(c.tasks.size());
    if (just_advanced && c.expires <= now) return "claim survived its ttl";
    for (auto t : c.tasks)
      if (!held.insert(TaskRef{c.job, t}).second) return "task held twice";
  }
  for (const auto& a : l.allocations()) {
    allocated += a.resources;
    if (!a.running) ++starting;
    if (!held.insert(a.task).second) return "task held twice";
  }
  if (!(l.free() == l.capacity() - allocated - claimed)) return "free() disagrees with the claims and allocations";
  if (!(claimed + allocated).fits_in(l.capacity())) return "allocated + claimed > capacity";
  if (l.free().any_negative()) return "negative free";
  if (l.snapshot().starting != starting) return "starting count is off";
  return "";
}

TEST(NodeLedgerRandomized, AccountingFenceAndOneGenerationPerChange) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Rng rng(seed);
    LedgerConfig config;
    config.claim_ttl = ms(100 + static_cast<int64_t>(rng.below(400)));
    config.start_delay = ms(static_cast<int64_t>(rng.below(3)) * 20);
    NodeLedger l(NodeId{1}, Resources::of({{dim::cpu, 8}, {dim::memory, 8}}), config);
    TimePoint now{0};
    std::map<uint32_t, Epoch> highest_sent;  // by partition
    std::vector<ClaimRequest> sent;
    uint64_t next_id = 1;
    for (int step = 0; step < 3000; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
      Observable before = observe(l);
      Generation g = l.generation();
      bool advanced = false;
      std::vector<NodeEvent> events;
      switch (rng.below(8)) {
        case 0:
        case 1:
        case 2: {
          ClaimRequest c;
          bool resend = !sent.empty() && rng.chance(0.1);
          if (resend) {
            c = sent[rng.below(sent.size())];
          } else {
            c.claim_id = ClaimId{next_id++};
            c.partition = PartitionId{static_cast<uint32_t>(1 + rng.below(2))};
            c.epoch = 1 + rng.below(4);
            c.node = NodeId{rng.chance(0.97) ? 1u : 2u};
            c.job = JobId{1 + rng.below(3)};
            c.per_task = Resources::of({{dim::cpu, static_cast<int64_t>(1 + rng.below(3))},
                                        {dim::memory, static_cast<int64_t>(rng.below(3))}});
            for (uint64_t n = 1 + rng.below(3); n > 0; --n)
              c.tasks.push_back(static_cast<TaskIndex>(rng.below(8)));
            if (rng.chance(0.2)) c.expected_generation = l.generation() - rng.below(2);
            c.simulated_runtime =
                rng.chance(0.5) ? ms(static_cast<int64_t>(rng.below(300))) : Duration{0};
            sent.push_back(c);
          }
          Epoch fence = highest_sent[c.partition.value];
          auto reply = l.claim(c, now);
          highest_sent[c.partition.value] = std::max(fence, c.epoch);
          ASSERT_EQ(reply.snapshot, l.snapshot());
          if (reply.outcome == ClaimOutcome::accepted) {
            ASSERT_GE(c.epoch, fence) << "a fenced epoch got a claim accepted";
          } else {
            ASSERT_EQ(observe(l), before) << "a rejected claim changed the node";
          }
          break;
        }
        case 3: {
          if (sent.empty()) break;
          ConfirmRequest r = testing::confirm_of(sent[rng.below(sent.size())]);
          if (rng.chance(0.1)) r.epoch = 1 + rng.below(4);
          Epoch fence = highest_sent[r.partition.value];
          auto reply = l.confirm(r, now);
          highest_sent[r.partition.value] = std::max(fence, r.epoch);
          ASSERT_EQ(reply.snapshot, l.snapshot());
          if (l.generation() != g) {
            ASSERT_GE(r.epoch, fence) << "a fenced epoch confirmed a claim";
          }
          break;
        }
        case 4: {
          if (sent.empty()) break;
          const auto& c = sent[rng.below(sent.size())];
          ReleaseRequest r =
              rng.chance(0.5) ? testing::release_claim(c) : testing::release_tasks(c);
          Epoch fence = highest_sent[r.partition.value];
          auto reply = l.release(r, now);
          highest_sent[r.partition.value] = std::max(fence, r.epoch);
          ASSERT_EQ(reply.released > 0, l.generation() != g);
          if (reply.released > 0) {
            ASSERT_GE(r.epoch, fence);
          }
          break;
        }
        case 5: {
          if (l.allocations().empty()) break;
          TaskRef t = l.allocations()[rng.below(l.allocations().size())].task;
          ASSERT_TRUE(l.finish_task(t, TaskState::failed, 1, events));
          ASSERT_EQ(events.size(), 1u);
          break;
        }
        case 6:
          if (rng.chance(0.2)) l.set_state(static_cast<NodeState>(rng.below(3)));
          break;
        default: {
          now += rng.chance(0.3) && l.next_deadline() != kNever && l.next_deadline() > now
                     ? l.next_deadline() - now
                     : ms(static_cast<int64_t>(rng.below(120)));
          bool changed = l.advance(now, events);
          advanced = true;
          ASSERT_EQ(changed, !events.empty());
          ASSERT_TRUE(l.next_deadline() > now) << "advance left a due deadline";
          break;
        }
      }
      Observable after = observe(l);
      if (after == before)
        ASSERT_EQ(l.generation(), g) << "the generation moved without a change";
      else
        ASSERT_EQ(l.generation(), g + 1) << "a change must move the generation by exactly one";
      std::string broken = check(l, now, advanced);
      ASSERT_EQ(broken, "");
    }
  }
}

}  // namespace
}  // namespace claimsched::core

namespace claimsched::core {
namespace {

// A task released (killed) and allocated here again before its old process
// exited: that exit names the old run's claim and ends nothing (it once ended
// the new run as lost, and the task ran twice).
TEST(NodeLedgerRuns, AnEarlierRunsExitDoesNotEndALaterRun) {
  NodeLedger ledger(NodeId{1}, testing::res("cpu=4"));
  auto first = testing::ClaimBuilder().id(1).task_count(1).build();
  ASSERT_EQ(ledger.claim(first, testing::ms(0)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(ledger.confirm(testing::confirm_of(first), testing::ms(0)).outcome, ConfirmOutcome::confirmed);
  ASSERT_EQ(ledger.release(testing::release_tasks(first, {0}), testing::ms(1)).released, 1u);
  auto second = testing::ClaimBuilder().id(2).task_count(1).build();
  ASSERT_EQ(ledger.claim(second, testing::ms(2)).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(ledger.confirm(testing::confirm_of(second), testing::ms(2)).outcome, ConfirmOutcome::confirmed);
  std::vector<NodeEvent> events;
  EXPECT_FALSE(ledger.finish_task(TaskRef{first.job, 0}, TaskState::lost, 143, events, {}, first.claim_id));
  EXPECT_TRUE(events.empty());
  ASSERT_EQ(ledger.allocations().size(), 1u);
  EXPECT_TRUE(ledger.finish_task(TaskRef{second.job, 0}, TaskState::succeeded, 0, events, {}, second.claim_id));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].claim_id, second.claim_id);
}

}  // namespace
}  // namespace claimsched::core
