// What the HA members read back from etcd (etcd/ha_state.hpp), without etcd:
// a pin names the member an operator moved a partition to; a key that does
// not parse is named, never taken for something else.

#include "etcd/ha_state.hpp"

#include <gtest/gtest.h>

namespace claimsched::etcd {
namespace {

KeyValue kv(std::string key, std::string value, int64_t lease = 0) {
  KeyValue out;
  out.key = std::move(key);
  out.value = std::move(value);
  out.create_revision = 5;
  out.mod_revision = 7;
  out.lease = lease;
  return out;
}

TEST(HaState, APinNamesTheMemberAPartitionWasMovedTo) {
  HaKeys keys("/claimsched", "c1");
  Range r;
  r.kvs.push_back(kv(keys.pin(core::PartitionId{2}), HaKeys::pin_value("m3"), 42));
  r.kvs.push_back(kv(keys.owner(core::PartitionId{2}), HaKeys::owner_value("m1", 4), 41));
  auto st = keys.parse(r);
  EXPECT_TRUE(st.malformed.empty());
  EXPECT_EQ(st.partitions[core::PartitionId{2}].pinned_to, "m3");
  EXPECT_EQ(st.partitions[core::PartitionId{2}].owner->member, "m1");
  EXPECT_EQ(st.partitions[core::PartitionId{1}].pinned_to, "") << "no pin: balance decides";
}

TEST(HaState, APinWithoutAMemberIsMalformedAndIgnored) {
  HaKeys keys("/claimsched", "c1");
  Range r;
  r.kvs.push_back(kv(keys.pin(core::PartitionId{2}), "{}"));
  r.kvs.push_back(kv(keys.pin(core::PartitionId{3}), "not json"));
  auto st = keys.parse(r);
  EXPECT_EQ(st.malformed.size(), 2u);
  EXPECT_EQ(st.partitions[core::PartitionId{2}].pinned_to, "");
  EXPECT_EQ(st.partitions[core::PartitionId{3}].pinned_to, "");
}

}  // namespace
}  // namespace claimsched::etcd
