// Mutual TLS between members (issue 19, actors/tls.hpp) over real processes:
// a TLS cluster runs a job end to end, and a member with no certificate,
// with one from another CA, or with the wrong role is refused with a clear
// error on the refused side while the server keeps serving the good ones;
// with [auth], a client certificate logs in as its user, without a token.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

const std::string kCerts = std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/tls-certs.sh";

/// A CA with a server, agent-1, client (and extra) certificates under `dir`.
void make_certs(const std::string& dir) { ASSERT_EQ(run_command(kCerts + " local " + dir + " 1 2>&1").exit_code, 0); }

/// The flags that give a member `name`'s certificate from `dir`, trusting `ca`.
std::vector<std::string> tls_flags(const std::string& dir, const std::string& name, const std::string& ca = "") {
  return {"--tls-ca",  ca.empty() ? dir + "/ca.pem" : ca, "--tls-cert", dir + "/" + name + ".pem",
          "--tls-key", dir + "/" + name + ".key"};
}

/// A client command with the TLS environment `env` ("" : none).
ProcessResult client_with(const std::string& env, const std::string& args, const LocalCluster& c) {
  return run_command("env -u CLAIMSCHED_TLS_CA -u CLAIMSCHED_TLS_CERT -u CLAIMSCHED_TLS_KEY " + env + " " +
                     CLAIMSCHED_BINARY + " " + args + " --server " + c.address() + " 2>&1");
}

std::string client_env(const std::string& dir, const std::string& name, const std::string& ca = "") {
  return "CLAIMSCHED_TLS_CA=" + (ca.empty() ? dir + "/ca.pem" : ca) + " CLAIMSCHED_TLS_CERT=" + dir + "/" + name +
         ".pem CLAIMSCHED_TLS_KEY=" + dir + "/" + name + ".key";
}

/// The server of `c` with [tls] from `dir`, and agent-1 with its certificate;
/// the client's environment is set for the cluster helpers (started after
/// the server, so the server keeps its own files).
class TlsCluster {
 public:
  /// `extra`: more of the server's config (e.g. an [auth] section).
  explicit TlsCluster(const std::string& extra = "")
      : certs(cluster_dir() + "/certs"), cluster(config(certs) + extra) {}
  ~TlsCluster() {
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(std::filesystem::path(certs).parent_path());
    unsetenv("CLAIMSCHED_TLS_CA");
    unsetenv("CLAIMSCHED_TLS_CERT");
    unsetenv("CLAIMSCHED_TLS_KEY");
  }

  void start() {
    cluster.start_server();
    cluster.start_agent("agent-1", "cpu=4,memory=4Gi", tls_flags(certs, "agent-1"));
    setenv("CLAIMSCHED_TLS_CA", (certs + "/ca.pem").c_str(), 1);
    setenv("CLAIMSCHED_TLS_CERT", (certs + "/client.pem").c_str(), 1);
    setenv("CLAIMSCHED_TLS_KEY", (certs + "/client.key").c_str(), 1);
  }

  std::string certs;
  LocalCluster cluster;

 private:
  static std::string cluster_dir() {
    char tmpl[] = "/tmp/claimsched-tls-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    return dir;
  }
  static std::string config(const std::string& certs) {
    make_certs(certs);
    return "[tls]\nca = \"" + certs + "/ca.pem\"\ncert = \"" + certs + "/server.pem\"\nkey = \"" + certs +
           "/server.key\"\n";
  }
};

TEST(TlsTest, AClusterOverTlsRunsAJobEndToEnd) {
  TlsCluster t;
  t.start();
  ASSERT_TRUE(t.cluster.wait_for_alive_nodes(1)) << LocalCluster::read_file(t.cluster.server_log());
  std::string why;
  auto job = t.cluster.submit("--count 2", "/bin/echo over-tls", &why);
  ASSERT_NE(job, 0u) << why;
  EXPECT_EQ(t.cluster.wait_for_job(job).value("state", ""), "succeeded");
  auto log = LocalCluster::read_file(t.cluster.server_log());
  EXPECT_NE(log.find("tls: accepted agent 'agent-1'"), std::string::npos) << log;
  EXPECT_NE(log.find("tls: accepted client 'client'"), std::string::npos) << log;
}

TEST(TlsTest, MembersWithoutTheClusterCertificateOrRoleAreRefusedAndTheServerKeepsServing) {
  TlsCluster t;
  t.start();
  auto& c = t.cluster;
  ASSERT_TRUE(c.wait_for_alive_nodes(1)) << LocalCluster::read_file(c.server_log());
  const std::string other = c.dir() + "/other";
  make_certs(other);

  // No certificate (plain TCP): the client says the server closed the
  // handshake and asks for TLS; the server names a peer that speaks no TLS.
  auto plain = client_with("", "nodes", c);
  EXPECT_EQ(plain.exit_code, 3) << plain.out;
  EXPECT_NE(plain.out.find("requires TLS"), std::string::npos) << plain.out;
  // A certificate from another CA (trusting that CA): the client refuses
  // the server's certificate.
  auto foreign = client_with(client_env(other, "client"), "nodes", c);
  EXPECT_EQ(foreign.exit_code, 3) << foreign.out;
  EXPECT_NE(foreign.out.find("is not from the cluster CA"), std::string::npos) << foreign.out;
  // ... and the server refuses such a certificate even from a peer that
  // trusts the cluster CA (openssl's own client: ours refuses to start so).
  run_command("echo | timeout 10 openssl s_client -connect " + c.address() + " -CAfile " + t.certs + "/ca.pem -cert " +
              other + "/client.pem -key " + other + "/client.key >/dev/null 2>&1");
  // A certificate of the cluster CA that names no role.
  run_command("cd " + t.certs +
              " && openssl req -new -key client.key -subj /O=claimsched/CN=nobody -out n.csr && "
              "openssl x509 -req -in n.csr -CA ca.pem -CAkey ca.key -days 2 -out nobody.pem 2>/dev/null && "
              "echo | timeout 10 openssl s_client -connect " +
              c.address() +
              " -CAfile ca.pem -cert nobody.pem "
              "-key client.key >/dev/null 2>&1");
  // The wrong role: an agent with a client's certificate does not start.
  auto wrong = run_command(std::string(CLAIMSCHED_BINARY) + " agent --server " + c.address() +
                           " --name x --resources cpu=1,memory=1Gi --state-dir " + c.dir() + "/x --tls-ca " + t.certs +
                           "/ca.pem --tls-cert " + t.certs + "/client.pem --tls-key " + t.certs + "/client.key 2>&1");
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("needs one of role agent"), std::string::npos) << wrong.out;
  // ... and whoever answers with a certificate that is not a server's
  // (here openssl's server with agent-1's) is refused by the member that
  // connects: an agent's certificate cannot act as a server.
  // -www: it answers by itself and reads no stdin.
  const std::string fake_address = "127.0.0.1:" + std::to_string(20000 + ::getpid() % 10000);
  BackgroundProcess fake({"/usr/bin/openssl", "s_server", "-www", "-accept", fake_address, "-cert",
                          t.certs + "/agent-1.pem", "-key", t.certs + "/agent-1.key", "-CAfile", t.certs + "/ca.pem"},
                         c.dir() + "/fake.log");
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] { return LocalCluster::read_file(c.dir() + "/fake.log").find("ACCEPT") != std::string::npos; },
      std::chrono::seconds(10)));
  auto impostor = run_command("env " + client_env(t.certs, "client") + " " + CLAIMSCHED_BINARY + " nodes --server " +
                              fake_address + " 2>&1");
  EXPECT_EQ(impostor.exit_code, 3) << impostor.out;
  EXPECT_NE(impostor.out.find("presents a certificate of role agent ('agent-1'), not of role server"),
            std::string::npos)
      << impostor.out;
  fake.kill();

  auto log = LocalCluster::read_file(c.server_log());
  EXPECT_NE(log.find("the peer does not speak TLS"), std::string::npos) << log;
  EXPECT_NE(log.find("refused a peer from 127.0.0.1"), std::string::npos) << log;
  EXPECT_NE(log.find("certificate 'client' is not from the cluster CA"), std::string::npos) << log;
  EXPECT_NE(log.find("certificate 'nobody' names no role"), std::string::npos) << log;

  // The good members never noticed.
  EXPECT_EQ(c.alive_nodes(), 1);
  std::string why;
  auto job = c.submit("--count 1", "/bin/echo still-serving", &why);
  ASSERT_NE(job, 0u) << why;
  EXPECT_EQ(c.wait_for_job(job).value("state", ""), "succeeded");
}

TEST(TlsTest, TheHttpEndpointServesHttpsWithTheMembersCertificate) {
  // An operator who turns TLS on expects the metrics, the API and its
  // bearer tokens off the wire in clear too.
  TlsCluster t("[http]\nlisten = \"127.0.0.1:0\"\n");
  t.start();
  auto& c = t.cluster;
  std::string address = LocalCluster::printed_address(c.server_log(), "claimsched server http on ");
  ASSERT_NE(address, "") << LocalCluster::read_file(c.server_log());
  EXPECT_NE(LocalCluster::read_file(c.server_log()).find(address + " (HTTPS"), std::string::npos);

  auto secure =
      run_command("curl -sS --max-time 10 --cacert " + t.certs + "/ca.pem https://" + address + "/metrics 2>&1");
  EXPECT_EQ(secure.exit_code, 0) << secure.out;
  EXPECT_NE(secure.out.find("# TYPE claimsched_"), std::string::npos) << secure.out;
  // In clear: no metrics come back.
  auto plain = run_command("curl -sS --max-time 10 http://" + address + "/metrics 2>&1");
  EXPECT_EQ(plain.out.find("# TYPE"), std::string::npos) << plain.out;
  // A client trusting another CA refuses the server's certificate.
  const std::string other = c.dir() + "/other";
  make_certs(other);
  auto foreign =
      run_command("curl -sS --max-time 10 --cacert " + other + "/ca.pem https://" + address + "/metrics 2>&1");
  EXPECT_NE(foreign.exit_code, 0) << foreign.out;
  EXPECT_EQ(foreign.out.find("# TYPE"), std::string::npos) << foreign.out;
}

/// `args` (shell words; the job's command after `--` if any) as the holder
/// of certificate `name` of `dir`, with no token unless `token`.
ProcessResult as_certificate(const TlsCluster& t, const std::string& name, const std::string& args,
                             const std::string& token = "") {
  std::string words = args;
  auto dashes = words.find(" -- ");
  std::string server = " --server " + t.cluster.address();
  words.insert(dashes == std::string::npos ? words.size() : dashes, server);
  return run_command("env -u CLAIMSCHED_TLS_CA -u CLAIMSCHED_TLS_CERT -u CLAIMSCHED_TLS_KEY -u CLAIMSCHED_TOKEN " +
                     std::string(token.empty() ? "" : "CLAIMSCHED_TOKEN=" + token + " ") + client_env(t.certs, name) +
                     " " + CLAIMSCHED_BINARY + " " + words + " 2>&1");
}

/// Whether `audit_log` has a refused line for `user` ("" : nobody logged
/// in) doing `action` whose reason holds `reason`.
bool refusal_audited(const std::string& audit_log, const std::string& user, const std::string& action,
                     const std::string& reason) {
  std::stringstream lines(LocalCluster::read_file(audit_log));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    bool who = user.empty() ? j["user"].is_null() : j["user"] == user;
    if (who && j.value("action", "") == action && j.value("outcome", "") == "refused" &&
        j.value("reason", "").find(reason) != std::string::npos)
      return true;
  }
  return false;
}

// [tls] and [auth]: alice's and bob's client certificates (deploy/tls-certs.sh
// user) log them in without a token, as themselves (their `-` lines in the
// tokens file); the fixture's own certificate ("client") is an operator's.
TEST(TlsTest, AClientCertificateLogsInAsItsUserWithoutAToken) {
  constexpr const char* kOpsToken = "ops-0123456789abcdef01";
  TlsCluster t("[auth]\ntokens_file = \"tokens\"\naudit_log = \"audit.log\"\n");
  auto& c = t.cluster;
  std::ofstream(c.dir() + "/tokens") << "- alice\n- bob\n- client operator\n" << kOpsToken << " ops operator\n";
  for (const char* user : {"alice", "bob", "mallory"})
    ASSERT_EQ(run_command(kCerts + " user " + t.certs + " " + user + " 2>&1").exit_code, 0) << user;
  t.start();
  ASSERT_TRUE(c.wait_for_alive_nodes(1)) << LocalCluster::read_file(c.server_log());
  const std::string audit_log = c.dir() + "/audit.log";

  // alice submits with no token: the job is hers.
  auto submitted = as_certificate(t, "alice", "submit --json -- sleep 60");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  uint64_t alices = nlohmann::json::parse(submitted.out)["job"].get<uint64_t>();
  auto status = as_certificate(t, "alice", "status --json " + std::to_string(alices));
  ASSERT_EQ(status.exit_code, 0) << status.out;
  EXPECT_EQ(nlohmann::json::parse(status.out)["user"], "alice");
  // ... naming another user is refused as with a token.
  auto as_bob = as_certificate(t, "alice", "submit --user bob -- true");
  EXPECT_EQ(as_bob.exit_code, 1) << as_bob.out;
  EXPECT_NE(as_bob.out.find("user alice may not submit a job: it names user bob"), std::string::npos) << as_bob.out;

  // bob's job: alice's certificate cannot cancel it (nor read it); bob's can.
  auto bobs_submit = as_certificate(t, "bob", "submit --json -- sleep 60");
  ASSERT_EQ(bobs_submit.exit_code, 0) << bobs_submit.out;
  uint64_t bobs = nlohmann::json::parse(bobs_submit.out)["job"].get<uint64_t>();
  auto cancel = as_certificate(t, "alice", "cancel " + std::to_string(bobs));
  EXPECT_EQ(cancel.exit_code, 1) << cancel.out;
  EXPECT_NE(cancel.out.find("user alice may not cancel job " + std::to_string(bobs) + ": it belongs to user bob"),
            std::string::npos)
      << cancel.out;
  EXPECT_TRUE(refusal_audited(audit_log, "alice", "cancel", "it belongs to user bob"));
  EXPECT_NE(c.status(bobs)->value("state", ""), "cancelled");
  EXPECT_EQ(as_certificate(t, "bob", "cancel " + std::to_string(bobs)).exit_code, 0);

  // A token, when given, decides: alice's certificate with ops' token is ops.
  auto with_token = as_certificate(t, "alice", "submit --json -- true", kOpsToken);
  ASSERT_EQ(with_token.exit_code, 0) << with_token.out;
  uint64_t ops_job = nlohmann::json::parse(with_token.out)["job"].get<uint64_t>();
  EXPECT_EQ(c.status(ops_job)->value("user", ""), "ops");

  // A client certificate of a user the tokens file does not name: refused,
  // saying how to let it in, and audited.
  auto stranger = as_certificate(t, "mallory", "nodes");
  EXPECT_EQ(stranger.exit_code, 1) << stranger.out;
  EXPECT_NE(stranger.out.find("the certificate's user 'mallory' is not a user of this server"), std::string::npos)
      << stranger.out;
  EXPECT_TRUE(refusal_audited(audit_log, "", "login", "'mallory' is not a user of this server"));
  // An agent's certificate is no client's: the client refuses to use it
  // (tls_register_test.cpp shows the server refusing such a login, audited).
  auto agent = as_certificate(t, "agent-1", "nodes");
  EXPECT_EQ(agent.exit_code, 2) << agent.out;
  EXPECT_NE(agent.out.find("is a certificate of role agent ('agent-1'); this process needs one of role client"),
            std::string::npos)
      << agent.out;
  EXPECT_EQ(as_certificate(t, "alice", "cancel " + std::to_string(alices)).exit_code, 0);
}

}  // namespace
}  // namespace claimsched::testing
