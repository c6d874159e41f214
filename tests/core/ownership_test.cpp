// Who owns a partition among several server members: even spread with few
// moves, the log-history rule that spots a deposed owner's extra writes, and
// the election that keeps every acknowledged write.

#include "core/ownership.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(BalancePartitions, APinnedPartitionGoesToItsMemberAndTheOthersBalanceAroundIt) {
  // One partition on a, two on b; the operator moves 3 to a: a holds 3 and
  // its own 1 (the remainder goes to the member pinned to), b keeps 2.
  std::map<PartitionId, std::string> current{{PartitionId{1}, "a"}, {PartitionId{2}, "b"}, {PartitionId{3}, "b"}};
  auto after = balance_partitions(partitions(3), {"a", "b"}, current, {{PartitionId{3}, "a"}});
  EXPECT_EQ(after.at(PartitionId{3}), "a");
  EXPECT_EQ(after.at(PartitionId{1}), "a") << "a's own partition stays: a takes the remainder";
  EXPECT_EQ(after.at(PartitionId{2}), "b");
  // Pinned above its share: the member keeps every pinned partition, the
  // rest go to the others.
  std::map<PartitionId, std::string> all_on_c{{PartitionId{1}, "c"}, {PartitionId{2}, "c"}, {PartitionId{3}, "c"}};
  auto pinned = balance_partitions(partitions(4), {"a", "b", "c"}, {}, all_on_c);
  EXPECT_EQ(counts(pinned), (std::map<std::string, size_t>{{"a", 1}, {"c", 3}}));
}

TEST(BalancePartitions, APinToAMemberThatIsGoneIsIgnored) {
  auto before = balance_partitions(partitions(4), {"a", "b"}, {});
  auto after = balance_partitions(partitions(4), {"a", "b"}, before, {{PartitionId{1}, "z"}, {PartitionId{9}, "a"}});
  EXPECT_EQ(after, before);
}

TEST(BalancePartitions, PinsKeepEveryPartitionOwnedUnderRandomChurn) {
  std::mt19937 rng(11);
  std::vector<std::string> all{"m1", "m2", "m3", "m4"};
  std::map<PartitionId, std::string> owners;
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> live;
    for (const auto& m : all)
      if (rng() % 3 != 0) live.push_back(m);
    if (live.empty()) live.push_back(all[rng() % all.size()]);
    std::map<PartitionId, std::string> pins;
    for (uint32_t p = 1; p <= 9; ++p)
      if (rng() % 4 == 0) pins[PartitionId{p}] = all[rng() % all.size()];
    auto next = balance_partitions(partitions(9), live, owners, pins);
    ASSERT_EQ(next.size(), 9u);
    for (const auto& [p, m] : next)
      EXPECT_TRUE(std::find(live.begin(), live.end(), m) != live.end()) << "partition " << p.value << " on " << m;
    for (const auto& [p, m] : pins)
      if (std::find(live.begin(), live.end(), m) != live.end()) {
        EXPECT_EQ(next.at(p), m);
      }
    // Unpinned partitions never leave a member that is at or below its share.
    size_t lo = 9 / live.size();
    auto c = counts(next);
    for (const auto& m : live)
      if (!std::any_of(pins.begin(), pins.end(), [&](const auto& kv) { return kv.second == m; })) {
        EXPECT_LE(c[m], lo + 1);
      }
    owners = next;
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
