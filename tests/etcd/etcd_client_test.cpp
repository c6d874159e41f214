// The etcd client against real etcd members on loopback: leases expire unless
// kept alive, a transaction on a key's create revision elects exactly one
// owner, and a client keeps working while one member of three is gone.

#include "etcd/etcd_client.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/integration/etcd_cluster.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

etcd::Client::Options options(std::vector<std::string> endpoints, std::chrono::milliseconds timeout,
                              std::string ca = "", std::string cert = "", std::string key = "") {
  etcd::Client::Options o;
  o.endpoints = std::move(endpoints);
  o.timeout = timeout;
  o.ca = std::move(ca);
  o.cert = std::move(cert);
  o.key = std::move(key);
  return o;
}

etcd::Client client_of(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout = 500ms) {
  auto c = etcd::Client::make(options(endpoints, timeout));
  EXPECT_TRUE(c.has_value()) << c.error().to_string();
  return std::move(*c);
}

TEST(EtcdClient, RejectsEndpointsItCannotUse) {
  EXPECT_FALSE(etcd::Client::make(options({}, 500ms)).has_value());
  auto bad = etcd::Client::make(options({"127.0.0.1:2379"}, 500ms));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("http://HOST:PORT"), std::string::npos) << bad.error().message;
  auto no_ca = etcd::Client::make(options({"https://127.0.0.1:2379"}, 500ms));
  ASSERT_FALSE(no_ca.has_value()) << "HTTPS without a CA to check etcd against";
  EXPECT_NE(no_ca.error().message.find("give the CA"), std::string::npos) << no_ca.error().message;
  EXPECT_FALSE(etcd::Client::make(options({"https://127.0.0.1:2379"}, 500ms, "ca.pem", "client.pem")).has_value())
      << "a certificate without its key";
  EXPECT_TRUE(etcd::Client::make(options({"https://127.0.0.1:2379"}, 500ms, "ca.pem")).has_value());
}

TEST(EtcdClient, SpeaksHttpsToAnEtcdThatAsksForClientCertificates) {
  // As the server does: a refused handshake must not end the process.
  ::signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/claimsched-etcd-tls-XXXXXX";
  const std::string certs = mkdtemp(tmpl);
  ASSERT_EQ(
      run_command(std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh local " + certs + " 1 2>&1").exit_code, 0);
  EtcdCluster etcd(1, {certs + "/ca.pem", certs + "/server.pem", certs + "/server.key"});
  ASSERT_EQ(etcd.endpoints().front().rfind("https://", 0), 0u);
  // A member with its certificate: every call works.
  auto c = etcd::Client::make(
      options(etcd.endpoints(), 2s, certs + "/ca.pem", certs + "/server.pem", certs + "/server.key"));
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  auto lease = c->grant(10s);
  ASSERT_TRUE(lease.has_value()) << lease.error().to_string();
  ASSERT_TRUE(c->put("/t/tls", "over-https", lease->id).has_value());
  auto got = c->get("/t/tls");
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "over-https");
  // Without a client certificate, etcd refuses the handshake.
  auto anonymous = etcd::Client::make(options(etcd.endpoints(), 2s, certs + "/ca.pem"));
  ASSERT_TRUE(anonymous.has_value());
  auto refused = anonymous->get("/t/tls");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, core::Errc::unavailable) << refused.error().to_string();
  // Trusting another CA, the client refuses etcd's certificate.
  const std::string other = certs + "/other";
  ASSERT_EQ(
      run_command(std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh local " + other + " 1 2>&1").exit_code, 0);
  auto foreign = etcd::Client::make(
      options(etcd.endpoints(), 2s, other + "/ca.pem", certs + "/server.pem", certs + "/server.key"));
  ASSERT_TRUE(foreign.has_value());
  auto unverified = foreign->get("/t/tls");
  ASSERT_FALSE(unverified.has_value());
  EXPECT_NE(unverified.error().message.find("SSL"), std::string::npos) << unverified.error().to_string();
  // Plain HTTP to it gets nothing.
  std::string plain = etcd.endpoints().front();
  plain.replace(0, 5, "http");
  auto clear = etcd::Client::make(options({plain}, 2s));
  ASSERT_TRUE(clear.has_value());
  EXPECT_FALSE(clear->get("/t/tls").has_value());
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(certs);
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
