// The etcd client against real etcd members on loopback: leases expire unless
// kept alive, a transaction on a key's create revision elects exactly one
// owner, and a client keeps working while one member of three is gone.

#include "etcd/etcd_client.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "tests/integration/etcd_cluster.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

etcd::Client client_of(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout = 500ms) {
  auto c = etcd::Client::make({endpoints, timeout});
  EXPECT_TRUE(c.has_value()) << c.error().to_string();
  return std::move(*c);
}

TEST(EtcdClient, RejectsEndpointsItCannotUse) {
  EXPECT_FALSE(etcd::Client::make({{}, 500ms}).has_value());
  auto bad = etcd::Client::make({{"127.0.0.1:2379"}, 500ms});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("http://HOST:PORT"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(etcd::Client::make({{"https://127.0.0.1:2379"}, 500ms}).has_value());
}

TEST(EtcdClient, SaysWhichEndpointsAreUnreachable) {
  auto c = client_of({"http://127.0.0.1:" + std::to_string(free_port())}, 200ms);
  auto r = c.grant(1s);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, core::Errc::unavailable);
  EXPECT_NE(r.error().message.find("127.0.0.1"), std::string::npos) << r.error().message;
}

TEST(EtcdClient, KeysOnALeaseVanishWhenItIsNotKeptAlive) {
  EtcdCluster etcd;
  auto c = client_of(etcd.endpoints());
  auto lease = c.grant(1s);
  ASSERT_TRUE(lease.has_value()) << lease.error().to_string();
  EXPECT_EQ(lease->ttl, 1s) << "the lowered election timeout lets a 1 s TTL through";
  ASSERT_TRUE(c.put("/t/owner", "member-a", lease->id).has_value());
  // Kept alive past its TTL: still there.
  for (int i = 0; i < 6; ++i) {
    auto ttl = c.keep_alive(lease->id);
    ASSERT_TRUE(ttl.has_value()) << ttl.error().to_string();
    EXPECT_EQ(*ttl, 1s);
    std::this_thread::sleep_for(250ms);
  }
  auto got = c.get("/t/owner");
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "member-a");
  EXPECT_EQ(got->kvs[0].lease, lease->id);
  // Left alone: gone within TTL + etcd's expiry check (500 ms).
  std::this_thread::sleep_for(1800ms);
  got = c.get("/t/owner");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->kvs.empty());
  auto ttl = c.keep_alive(lease->id);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(*ttl, 0s) << "an expired lease reports no TTL";
}

TEST(EtcdClient, RevokingALeaseDeletesItsKeysAtOnce) {
  EtcdCluster etcd;
  auto c = client_of(etcd.endpoints());
  auto lease = c.grant(10s);
  ASSERT_TRUE(lease.has_value());
  ASSERT_TRUE(c.put("/t/a", std::string("bytes\0with\xffodd", 14), lease->id).has_value());
  auto got = c.get("/t/a");
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, std::string("bytes\0with\xffodd", 14)) << "values are bytes";
  ASSERT_TRUE(c.revoke(lease->id));
  EXPECT_TRUE(c.get("/t/a")->kvs.empty());
  EXPECT_TRUE(c.revoke(lease->id)) << "revoking twice is done, not an error";
}

TEST(EtcdClient, ATransactionOnCreateRevisionElectsOneOwner) {
  EtcdCluster etcd;
  auto a = client_of(etcd.endpoints());
  auto b = client_of(etcd.endpoints());
  auto claim = [](etcd::Client& c, const std::string& who) {
    return c.txn({etcd::Compare::absent("/t/p1")}, {etcd::Operation::put("/t/p1", who)},
                 {etcd::Operation::get("/t/p1")});
  };
  auto first = claim(a, "a");
  auto second = claim(b, "b");
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_TRUE(first->succeeded);
  EXPECT_FALSE(second->succeeded);
  ASSERT_EQ(second->gets.size(), 1u);
  ASSERT_EQ(second->gets[0].size(), 1u);
  EXPECT_EQ(second->gets[0][0].value, "a") << "the loser learns who won";
  int64_t created = second->gets[0][0].create_revision;
  EXPECT_GT(created, 0);
  // Only the incarnation that was elected may resign.
  auto stale = b.txn({etcd::Compare::created_at("/t/p1", created + 100)}, {etcd::Operation::erase("/t/p1")});
  ASSERT_TRUE(stale.has_value());
  EXPECT_FALSE(stale->succeeded);
  auto resign = a.txn({etcd::Compare::created_at("/t/p1", created)}, {etcd::Operation::erase("/t/p1")});
  ASSERT_TRUE(resign.has_value());
  EXPECT_TRUE(resign->succeeded);
  auto again = claim(b, "b");
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->succeeded);
  auto now = b.get("/t/p1");
  ASSERT_EQ(now->kvs.size(), 1u);
  EXPECT_GT(now->kvs[0].create_revision, created) << "a later owner's key is created later: a fencing order";
}

TEST(EtcdClient, PrefixReadsSeeEveryKeyUnderThePrefixOnly) {
  EtcdCluster etcd;
  auto c = client_of(etcd.endpoints());
  for (const auto* k : {"/cs/a/members/m1", "/cs/a/members/m2", "/cs/a/owner/1", "/cs/b/members/m1"})
    ASSERT_TRUE(c.put(k, "x").has_value());
  auto r = c.get_prefix("/cs/a/members/");
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->kvs.size(), 2u);
  EXPECT_EQ(r->kvs[0].key, "/cs/a/members/m1");
  EXPECT_EQ(r->kvs[1].key, "/cs/a/members/m2");
  EXPECT_GT(r->revision, 0);
  EXPECT_EQ(etcd::prefix_end("/a/"), "/a0");
}

TEST(EtcdClient, KeepsWorkingWhenOneMemberOfThreeIsGone) {
  EtcdCluster etcd(3);
  auto c = client_of(etcd.endpoints(), 1000ms);
  ASSERT_TRUE(c.put("/t/k", "1").has_value());
  etcd.signal(0, SIGKILL);
  // The first endpoint is gone: the call moves on to the next.
  auto lease = c.grant(5s);
  ASSERT_TRUE(lease.has_value()) << lease.error().to_string();
  auto r = c.get("/t/k");
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(r->kvs.at(0).value, "1");
  EXPECT_NE(c.endpoint(), etcd.endpoints()[0]);
  etcd.restart(0);
  std::this_thread::sleep_for(1s);
  // A paused member (it accepts connections and never answers) is skipped too.
  size_t current = c.endpoint() == etcd.endpoints()[1] ? 1 : 2;
  etcd.signal(current, SIGSTOP);
  auto ttl = c.keep_alive(lease->id);
  etcd.signal(current, SIGCONT);
  ASSERT_TRUE(ttl.has_value()) << ttl.error().to_string();
  EXPECT_GT(ttl->count(), 0);
}

}  // namespace
}  // namespace claimsched::testing
