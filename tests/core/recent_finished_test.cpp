// A node's ring of recent task ends (NodeLedger::recent_finished) as a durable
// node stores it: each end once, with its sequence and slot, and restored
// from what was stored the ring reports the same ends, so a restarted agent
// still tells its scheduler how the tasks it ran ended.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/node_ledger.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::ClaimBuilder;
using testing::confirm_of;
using testing::ms;
using testing::res;

LedgerConfig ring_of(uint32_t size) {
  LedgerConfig c;
  c.claim_ttl = std::chrono::seconds(10);
  c.recent_finished = size;
  return c;
}

/// Runs `count` one-task jobs (ids first..) to their end on `ledger`.
void run_and_end(NodeLedger& ledger, uint64_t first, int count) {
  for (int i = 0; i < count; ++i) {
    auto c = ClaimBuilder().id(first + i).job(first + i).tasks({0}).build();
    ASSERT_EQ(ledger.claim(c, ms(0)).outcome, ClaimOutcome::accepted);
    ASSERT_EQ(ledger.confirm(confirm_of(c), ms(0)).outcome, ConfirmOutcome::confirmed);
    std::vector<NodeEvent> events;
    ASSERT_TRUE(ledger.finish_task(TaskRef{JobId{first + i}, 0}, TaskState::succeeded, 0, events));
  }
}

std::vector<uint64_t> jobs_of(const std::vector<NodeEvent>& events) {
  std::vector<uint64_t> out;
  for (const auto& e : events) out.push_back(e.task.job.value);
  return out;
}

TEST(RecentFinished, EachEndIsHandedOnceToBeStoredWithItsSequenceAndSlot) {
  NodeLedger ledger{NodeId{1}, res("cpu=4,memory=8Gi"), ring_of(4)};
  run_and_end(ledger, 1, 3);
  auto first = ledger.take_unsaved_finished();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[2].sequence, 2u);
  EXPECT_EQ(first[2].slot, 2u);
  EXPECT_EQ(first[2].event.task.job.value, 3u);
  EXPECT_TRUE(ledger.take_unsaved_finished().empty()) << "handed once";
  run_and_end(ledger, 4, 3);  // the ring goes round: 5 and 6 take slots 0 and 1
  auto second = ledger.take_unsaved_finished();
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[2].sequence, 5u);
  EXPECT_EQ(second[2].slot, 1u);
  EXPECT_EQ(jobs_of(ledger.recent_finished()), (std::vector<uint64_t>{3, 4, 5, 6}));
}

TEST(RecentFinished, ARestoredRingReportsTheSameEndsAndGoesOnFromThem) {
  NodeLedger before{NodeId{1}, res("cpu=4,memory=8Gi"), ring_of(4)};
  run_and_end(before, 1, 6);
  std::vector<NodeLedger::FinishedRecord> stored;
  for (auto& f : before.take_unsaved_finished()) stored.push_back(f);
  // What a store keyed by slot keeps: the newest record of each slot.
  std::map<uint32_t, NodeLedger::FinishedRecord> by_slot;
  for (auto& f : stored) by_slot[f.slot] = f;
  NodeLedger after{NodeId{1}, res("cpu=4,memory=8Gi"), ring_of(4)};
  std::vector<NodeLedger::FinishedRecord> sorted;
  for (auto& [slot, f] : by_slot) sorted.push_back(f);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  for (auto& f : sorted) after.restore_finished(f.sequence, f.event);
  EXPECT_EQ(jobs_of(after.recent_finished()), jobs_of(before.recent_finished()));
  EXPECT_TRUE(after.take_unsaved_finished().empty()) << "restored ends are stored already";
  run_and_end(after, 7, 1);
  auto next = after.take_unsaved_finished();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].sequence, 6u) << "numbering goes on";
  EXPECT_EQ(next[0].slot, 2u) << "over the oldest end (job 3)";
  EXPECT_EQ(jobs_of(after.recent_finished()), (std::vector<uint64_t>{4, 5, 6, 7}));
}

TEST(RecentFinished, AGapInWhatWasStoredIsSkippedNotReportedAsAnEnd) {
  NodeLedger ledger{NodeId{1}, res("cpu=4,memory=8Gi"), ring_of(8)};
  NodeEvent ev;
  ev.kind = NodeEvent::Kind::task_finished;
  ev.task = TaskRef{JobId{10}, 0};
  ledger.restore_finished(0, ev);
  ev.task = TaskRef{JobId{12}, 0};
  ledger.restore_finished(2, ev);  // sequence 1 was lost
  EXPECT_EQ(jobs_of(ledger.recent_finished()), (std::vector<uint64_t>{10, 12}));
  ev.task = TaskRef{JobId{20}, 0};
  ledger.restore_finished(11, ev);  // a turn of the ring later: 10 and 12 are too old
  EXPECT_EQ(jobs_of(ledger.recent_finished()), (std::vector<uint64_t>{20}));
}

}  // namespace
}  // namespace claimsched::core
