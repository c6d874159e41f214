// Who owns a partition among several server members: even spread with few
// moves, the log-history rule that spots a deposed owner's extra writes, and
// the election that keeps every acknowledged write.

#include "core/ownership.hpp"

#include <gtest/gtest.h>

#include <random>

namespace claimsched::core {
namespace {

std::vector<PartitionId> partitions(uint32_t n) {
  std::vector<PartitionId> out;
  for (uint32_t p = 1; p <= n; ++p) out.emplace_back(p);
  return out;
}

std::map<std::string, size_t> counts(const std::map<PartitionId, std::string>& owners) {
  std::map<std::string, size_t> c;
  for (const auto& [p, m] : owners) ++c[m];
  return c;
}

TEST(BalancePartitions, SpreadsEvenlyOverLiveMembers) {
  auto owners = balance_partitions(partitions(7), {"c", "a", "b"}, {});
  ASSERT_EQ(owners.size(), 7u);
  EXPECT_EQ(counts(owners), (std::map<std::string, size_t>{{"a", 3}, {"b", 2}, {"c", 2}}));
  EXPECT_TRUE(balance_partitions(partitions(3), {}, {}).empty());
}

TEST(BalancePartitions, AJoiningMemberTakesOnlyItsShare) {
  auto before = balance_partitions(partitions(6), {"a", "b"}, {});
  auto after = balance_partitions(partitions(6), {"a", "b", "c"}, before);
  EXPECT_EQ(counts(after), (std::map<std::string, size_t>{{"a", 2}, {"b", 2}, {"c", 2}}));
  size_t moved = 0;
  for (const auto& [p, m] : after) moved += before.at(p) != m;
  EXPECT_EQ(moved, 2u) << "only the newcomer's share moves";
}

TEST(BalancePartitions, AJoiningMemberDoesNotTakeARemainderFromItsHolder) {
  // One partition, owned by b: a member joining (a, first by name) takes
  // nothing; the remainder stays where it is.
  std::map<PartitionId, std::string> current{{PartitionId{1}, "b"}};
  EXPECT_EQ(balance_partitions(partitions(1), {"a", "b", "c"}, current).at(PartitionId{1}), "b");
  // Four over three: b holds 3, gets to keep 2 (the remainder's extra one).
  std::map<PartitionId, std::string> four{
      {PartitionId{1}, "b"}, {PartitionId{2}, "b"}, {PartitionId{3}, "b"}, {PartitionId{4}, "c"}};
  auto after = balance_partitions(partitions(4), {"a", "b", "c"}, four);
  EXPECT_EQ(counts(after), (std::map<std::string, size_t>{{"a", 1}, {"b", 2}, {"c", 1}}));
}

TEST(BalancePartitions, ALeavingMembersPartitionsGoToTheOthers) {
  auto before = balance_partitions(partitions(6), {"a", "b", "c"}, {});
  auto after = balance_partitions(partitions(6), {"a", "c"}, before);
  EXPECT_EQ(counts(after), (std::map<std::string, size_t>{{"a", 3}, {"c", 3}}));
  for (const auto& [p, m] : before) {
    if (m != "b") {
      EXPECT_EQ(after.at(p), m) << "partition " << p.value << " of a live member stayed";
    }
  }
}

TEST(BalancePartitions, IsStableAndEvenUnderRandomChurn) {
  std::mt19937 rng(7);
  std::vector<std::string> all{"m1", "m2", "m3", "m4", "m5"};
  std::map<PartitionId, std::string> owners;
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> live;
    for (const auto& m : all)
      if (rng() % 3 != 0) live.push_back(m);
    if (live.empty()) live.push_back(all[rng() % all.size()]);
    auto next = balance_partitions(partitions(11), live, owners);
    ASSERT_EQ(next.size(), 11u);
    auto c = counts(next);
    size_t lo = 11 / live.size(), hi = lo + (11 % live.size() ? 1 : 0);
    for (const auto& m : live) {
      EXPECT_GE(c[m], lo);
      EXPECT_LE(c[m], hi);
    }
    EXPECT_EQ(next, balance_partitions(partitions(11), live, owners)) << "deterministic";
    owners = next;
  }
}

TEST(History, AStoreBehindEveryLaterEpochIsAPrefix) {
  std::vector<EpochStart> h{{5, 1}, {6, 100}, {7, 150}};
  EXPECT_TRUE(consistent_with_history(h, 5, 99)) << "epoch 5's first 99 changes are in 6's log";
  EXPECT_FALSE(consistent_with_history(h, 5, 100)) << "the deposed owner of 5 wrote at 100; 6 wrote there too";
  EXPECT_TRUE(consistent_with_history(h, 6, 149));
  EXPECT_FALSE(consistent_with_history(h, 6, 150));
  EXPECT_TRUE(consistent_with_history(h, 7, 10'000)) << "the current epoch: any length";
  EXPECT_TRUE(consistent_with_history({}, 0, 42)) << "no owner yet";
}

TEST(ChooseOwner, TheFurthestConsistentCopyWins) {
  std::vector<EpochStart> h{{5, 1}, {6, 1001}};
  // b holds an acknowledged write (1005) that c does not; a is the deposed
  // owner of epoch 5 with writes nobody acknowledged (1001-1010 of epoch 5).
  std::vector<OwnerCandidate> c{{"a", 1010, 5}, {"b", 1005, 6}, {"c", 1002, 6}};
  EXPECT_EQ(choose_owner(c, h, "c"), "b");
  std::vector<OwnerCandidate> only_diverged{{"a", 1010, 5}};
  EXPECT_EQ(choose_owner(only_diverged, h, "a"), std::nullopt);
  // An owner whose disk failed bids (nobody waits for it) and never wins.
  std::vector<OwnerCandidate> broken{{"b", 1005, 6, false}, {"c", 1002, 6}};
  EXPECT_EQ(choose_owner(broken, h, "b"), "c");
}

TEST(ChooseOwner, TiesGoToThePreferredMemberThenByName) {
  std::vector<OwnerCandidate> c{{"b", 7, 1}, {"c", 7, 1}, {"a", 3, 1}};
  EXPECT_EQ(choose_owner(c, {}, "c"), "c");
  EXPECT_EQ(choose_owner(c, {}, "z"), "b");
  EXPECT_EQ(choose_owner({}, {}, "a"), std::nullopt);
}

}  // namespace
}  // namespace claimsched::core
