// [tls] files are checked when a member starts (actors/tls.hpp): each
// problem is named with its file, before any connection is made. The nonces
// of proofs (actors/peer_proof.hpp) are single-use and expire.

#include "actors/tls.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>
#include <string>

#include "actors/peer_proof.hpp"

namespace claimsched::actors {
namespace {

class TlsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/claimsched-tlsconf-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string script = std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh";
    ASSERT_EQ(std::system((script + " local " + dir_ + " 1 >/dev/null 2>&1").c_str()), 0);
    ASSERT_EQ(std::system((script + " local " + dir_ + "/other 1 >/dev/null 2>&1").c_str()), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TlsConfig files(const std::string& name, const std::string& ca_dir = "") const {
    return {(ca_dir.empty() ? dir_ : ca_dir) + "/ca.pem", dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  }
  std::string problem(const TlsConfig& c, std::optional<PeerRole> role) const {
    auto r = check_tls_config(c, role);
    return r ? "" : r.error().message;
  }

  std::string dir_;
};

TEST_F(TlsConfigTest, AGoodSetNamesItsRoleAndName) {
  auto id = check_tls_config(files("agent-1"), PeerRole::agent);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->role, PeerRole::agent);
  EXPECT_EQ(id->cn, "agent-1");
}

TEST_F(TlsConfigTest, EachProblemIsNamedWithItsFile) {
  auto missing = files("server");
  missing.key = dir_ + "/nope.key";
  EXPECT_NE(problem(missing, PeerRole::server).find("key: cannot read '" + dir_ + "/nope.key'"), std::string::npos);
  auto partial = files("server");
  partial.ca.clear();
  EXPECT_NE(problem(partial, std::nullopt).find("ca is missing"), std::string::npos);
  auto mismatched = files("server");
  mismatched.key = dir_ + "/client.key";
  EXPECT_NE(problem(mismatched, PeerRole::server).find("is not the key of the certificate"), std::string::npos);
  EXPECT_NE(problem(files("server", dir_ + "/other"), PeerRole::server).find("is not signed by the CA"),
            std::string::npos);
  EXPECT_NE(problem(files("client"), PeerRole::server)
                .find("of role client ('client'); this process needs one of role server"),
            std::string::npos);
  auto not_pem = files("server");
  not_pem.ca = dir_ + "/server.key";
  EXPECT_NE(problem(not_pem, PeerRole::server).find("ca: '"), std::string::npos);
}

// A proof (registration or login) names a nonce: each counts once, within
// its time, and a flood of challenges keeps only the newest.
TEST(ChallengesTest, ANonceIsGoodOnceAndOnlyWithinItsTime) {
  using namespace std::chrono_literals;
  Challenges c;
  core::TimePoint t0{1'000'000'000};
  auto a = c.issue(t0);
  auto b = c.issue(t0);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(c.use(a, t0 + 1s));
  EXPECT_FALSE(c.use(a, t0 + 1s)) << "a nonce used twice";
  EXPECT_FALSE(c.use("0123456789abcdef0123456789abcdef", t0)) << "a nonce never issued";
  EXPECT_FALSE(c.use(b, t0 + Challenges::kChallengeTtl + 1ns)) << "an expired nonce";
  EXPECT_EQ(c.size(), 0u);
  std::string first = c.issue(t0);
  for (size_t i = 0; i < Challenges::kMaxChallenges + 10; ++i) c.issue(t0 + std::chrono::nanoseconds(i + 1));
  EXPECT_EQ(c.size(), Challenges::kMaxChallenges);
  EXPECT_FALSE(c.use(first, t0 + 1s)) << "the oldest nonce went first";
  // A login proof needs TLS on: it says so, and names no certificate.
  LoginProofs logins;
  auto nonce = logins.challenge(t0);
  auto refused = logins.prove("", login_message(nonce, "server"), "", t0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("TLS is off on this server"), std::string::npos) << refused.error().message;
  auto garbage = logins.prove("", "not a proof", "", t0);
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().message, "not a login proof");
}

TEST(TlsLoopbackTest, OnlyLoopbackAddressesAreLoopback) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("example.org"));
}

}  // namespace
}  // namespace claimsched::actors
