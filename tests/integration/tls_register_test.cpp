// With TLS, registering a node needs an agent's certificate, proven at
// registration (actors/peer_proof.hpp): a peer that holds only a client's
// certificate (here this test process, talking CAF to a real server) is
// refused, with an error and a line in the server's log, and the server keeps
// serving its real agent. Likewise, with [auth], an agent's certificate cannot
// log in as a client (actors/peer_proof.hpp): refused, with a line in the
// audit log. Its own binary: TLS is process-wide (ctest runs each test in a
// process of its own; run together, the second test skips).

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

/// A fresh directory with a CA and a server, agent-1 and client certificates.
std::string make_certs() {
  char tmpl[] = "/tmp/claimsched-tlsreg-XXXXXX";
  const std::string certs = std::string(mkdtemp(tmpl));
  EXPECT_EQ(
      run_command(std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh local " + certs + " 1 2>&1").exit_code, 0);
  return certs;
}

/// The server's [tls] section for the certificates of `certs`.
std::string server_tls(const std::string& certs) {
  return "[tls]\nca = \"" + certs + "/ca.pem\"\ncert = \"" + certs + "/server.pem\"\nkey = \"" + certs +
         "/server.key\"\n";
}

TEST(TlsRegisterTest, AClientCertificateCannotRegisterANode) {
  const std::string certs = make_certs();
  ASSERT_FALSE(::testing::Test::HasFailure());
  LocalCluster c(server_tls(certs));
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

TEST(TlsRegisterTest, AnAgentCertificateCannotLogInAsAClientAndTheRefusalIsAudited) {
  if (auto own = actors::own_identity(); own && own->role != actors::PeerRole::agent)
    GTEST_SKIP() << "this process already speaks TLS as " << actors::to_string(own->role) << " (run it alone)";
  const std::string certs = make_certs();
  ASSERT_FALSE(::testing::Test::HasFailure());
  LocalCluster c(server_tls(certs) + "[auth]\ntokens_file = \"tokens\"\naudit_log = \"audit.log\"\n");
  // agent-1 is even named as a user: the certificate's role decides.
  std::ofstream(c.dir() + "/tokens") << "- client\n- agent-1\n";
  c.start_server();
  auto hp = actors::split_address(c.address());
  ASSERT_TRUE(hp);

  auto on =
      actors::enable_tls({certs + "/ca.pem", certs + "/agent-1.pem", certs + "/agent-1.key"}, actors::PeerRole::agent);
  ASSERT_TRUE(on) << on.error().message;
  caf::actor_system_config cfg;
  actors::configure(cfg);
  caf::actor_system sys{cfg};
  {
    caf::scoped_actor self{sys};
    auto gw = actors::connect_gateway(sys, hp->first, hp->second, std::chrono::seconds(10));
    ASSERT_TRUE(gw) << sys.render(gw.error());
    auto challenge = [&] {
      std::string nonce;
      self->request(*gw, std::chrono::seconds(10), actors::challenge_atom::value, actors::login_atom::value)
          .receive(
              [&](std::string& n, std::string& cn) {
                nonce = n;
                EXPECT_EQ(cn, "server");
              },
              [&](caf::error& err) { ADD_FAILURE() << sys.render(err); });
      return nonce;
    };
    auto login_error = [&](const std::string& pem, const std::string& message, const std::string& signature) {
      std::string out = "no error";
      self->request(*gw, std::chrono::seconds(10), actors::login_atom::value, pem, message, signature)
          .receive([&](caf::actor&, std::string& user) { out = "logged in as " + user; },
                   [&](caf::error& err) { out = messages::from_caf_error(err, &sys).message; });
      return out;
    };
    // Its own (agent) certificate, properly signed: the role is wrong.
    auto message = actors::login_message(challenge(), "server");
    auto signature = actors::sign_with_own_key(message);
    ASSERT_TRUE(signature);
    auto agent = login_error(actors::own_certificate_pem(), message, *signature);
    EXPECT_NE(agent.find("login by certificate: certificate 'agent-1' is of role agent, not client"), std::string::npos)
        << agent;
    // A client's certificate (public, so anyone may send it) signed with the
    // agent's key: not its holder.
    std::ifstream client_pem(certs + "/client.pem");
    std::string client((std::istreambuf_iterator<char>(client_pem)), std::istreambuf_iterator<char>());
    message = actors::login_message(challenge(), "server");
    signature = actors::sign_with_own_key(message);
    ASSERT_TRUE(signature);
    auto borrowed = login_error(client, message, *signature);
    EXPECT_NE(borrowed.find("the signature is not by the key of certificate 'client'"), std::string::npos) << borrowed;
    // ... and a proof used once is no challenge any more.
    auto replay = login_error(client, message, *signature);
    EXPECT_NE(replay.find("names no challenge of this server"), std::string::npos) << replay;
    actors::stop_network_helpers(sys, *self);
  }
  // Each refusal is a login refused for nobody, its reason in the audit log.
  std::vector<std::string> reasons;
  std::stringstream lines(LocalCluster::read_file(c.dir() + "/audit.log"));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j["user"].is_null() && j.value("action", "") == "login" &&
        j.value("outcome", "") == "refused" && j.value("door", "") == "cli")
      reasons.push_back(j.value("reason", ""));
  }
  ASSERT_EQ(reasons.size(), 3u) << LocalCluster::read_file(c.dir() + "/audit.log");
  EXPECT_NE(reasons[0].find("certificate 'agent-1' is of role agent, not client"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[1].find("not by the key of certificate 'client'"), std::string::npos) << reasons[1];
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(certs);
}

}  // namespace
}  // namespace claimsched::testing
