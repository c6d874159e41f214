// With TLS, registering a node needs an agent's certificate, proven at
// registration (actors/peer_proof.hpp): a peer that holds only a client's
// certificate (here this test process, talking CAF to a real server) is
// refused, with an error and a line in the server's log, and the server keeps
// serving its real agent. Its own binary: TLS is process-wide.

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <string>

#include "actors/actors.hpp"
#include "actors/connect.hpp"
#include "actors/peer_proof.hpp"
#include "actors/registration.hpp"
#include "actors/tls.hpp"
#include "messages/errors.hpp"
#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

TEST(TlsRegisterTest, AClientCertificateCannotRegisterANode) {
  char tmpl[] = "/tmp/claimsched-tlsreg-XXXXXX";
  const std::string certs = std::string(mkdtemp(tmpl));
  ASSERT_EQ(
      run_command(std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh local " + certs + " 1 2>&1").exit_code, 0);
  LocalCluster c("[tls]\nca = \"" + certs + "/ca.pem\"\ncert = \"" + certs + "/server.pem\"\nkey = \"" + certs +
                 "/server.key\"\n");
  c.start_server();
  auto hp = actors::split_address(c.address());
  ASSERT_TRUE(hp);

  auto on =
      actors::enable_tls({certs + "/ca.pem", certs + "/client.pem", certs + "/client.key"}, actors::PeerRole::client);
  ASSERT_TRUE(on) << on.error().message;
  caf::actor_system_config cfg;
  actors::configure(cfg);
  caf::actor_system sys{cfg};
  {
    caf::scoped_actor self{sys};
    auto gw = actors::connect_gateway(sys, hp->first, hp->second, std::chrono::seconds(10));
    ASSERT_TRUE(gw) << sys.render(gw.error());
    auto dummy = sys.spawn([]() -> caf::behavior { return {[](int) {}}; });
    auto node = caf::actor_cast<actors::node_actor>(dummy);
    core::NodeSpec spec;
    spec.id = core::NodeId{4242};
    spec.name = "mallory";
    spec.pool = "default";
    spec.capacity = *core::Resources::parse("cpu=64,memory=64Gi");
    auto register_error = [&] {
      std::string out = "no error";
      self->request(*gw, std::chrono::seconds(10), actors::register_atom::value, spec, node)
          .receive([&](uint64_t) { out = "accepted"; },
                   [&](caf::error& err) { out = messages::from_caf_error(err, &sys).message; });
      return out;
    };
    auto prove_error = [&](const std::string& message, const std::string& signature) {
      std::string out = "no error";
      self->request(*gw, std::chrono::seconds(10), actors::prove_atom::value, actors::own_certificate_pem(), message,
                    signature)
          .receive([&](std::string&) { out = "accepted"; },
                   [&](caf::error& err) { out = messages::from_caf_error(err, &sys).message; });
      return out;
    };
    // Straight to registration: no proof.
    auto plain = register_error();
    EXPECT_NE(plain.find("no agent certificate proved this registration"), std::string::npos) << plain;
    // A proof signed by a client's certificate.
    std::string nonce, cn;
    self->request(*gw, std::chrono::seconds(10), actors::challenge_atom::value)
        .receive(
            [&](std::string& n, std::string& s) {
              nonce = n;
              cn = s;
            },
            [&](caf::error& err) { FAIL() << sys.render(err); });
    ASSERT_EQ(cn, "server");
    auto message = actors::registration_message(nonce, cn, {{caf::to_string(node.address()), "mallory"}});
    auto signature = actors::sign_with_own_key(message);
    ASSERT_TRUE(signature);
    auto proof = prove_error(message, *signature);
    EXPECT_NE(proof.find("is of role client, not agent"), std::string::npos) << proof;
    // ... and the same nonce once more (replay) is no challenge any more.
    auto replay = prove_error(message, *signature);
    EXPECT_NE(replay.find("names no challenge of this server"), std::string::npos) << replay;
    auto again = register_error();
    EXPECT_NE(again.find("no agent certificate proved"), std::string::npos) << again;
    self->send_exit(dummy, caf::exit_reason::user_shutdown);
    actors::stop_network_helpers(sys, *self);
  }
  auto log = LocalCluster::read_file(c.server_log());
  EXPECT_NE(log.find("refusing node mallory"), std::string::npos) << log;
  EXPECT_NE(log.find("refusing an agent's proof"), std::string::npos) << log;

  // A real agent, with an agent's certificate, still registers.
  c.start_agent(
      "agent-1", "cpu=2,memory=2Gi",
      {"--tls-ca", certs + "/ca.pem", "--tls-cert", certs + "/agent-1.pem", "--tls-key", certs + "/agent-1.key"});
  EXPECT_TRUE(LocalCluster::wait_until(
      [&] { return LocalCluster::read_file(c.server_log()).find("node agent-1 (cpu=2") != std::string::npos; },
      std::chrono::seconds(20)));
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(certs);
}

}  // namespace
}  // namespace claimsched::testing
