// Who may do what ([auth], issue 19) over real processes: a client acts as
// the user its token names and no other, reads and cancels only its own
// jobs unless it holds `operator`, drains nodes only with `admin`; the
// HTTP API applies the same rules to a bearer token; every refusal (and
// every privileged action let through) is a line in the audit log; a bad
// tokens file stops the server with the line it trips on.

#include <httplib.h>
#include <stdlib.h>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using nlohmann::json;

constexpr const char* kAlice = "alice-0123456789abcdef";
constexpr const char* kBob = "bob-0123456789abcdef01";
constexpr const char* kOps = "ops-0123456789abcdef01";
constexpr const char* kRoot = "root-0123456789abcdef0";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(cluster.dir() + "/tokens") << "# token user roles\n"
                                             << kAlice << " alice\n"
                                             << kBob << " bob\n"
                                             << kOps << " ops operator\n"
                                             << kRoot << " root admin\n";
    for (auto [name, token] : {std::pair{"alice", kAlice}, {"bob", kBob}, {"ops", kOps}, {"root", kRoot}})
      std::ofstream(token_file(name)) << token << "\n";
    // The fixture's helpers (nodes, status) ask as the operator.
    ::setenv("CLAIMSCHED_TOKEN", kOps, 1);
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    http = LocalCluster::printed_address(cluster.server_log(), kHttpSaid);
    ASSERT_NE(http, "") << LocalCluster::read_file(cluster.server_log());
    cluster.start_agent("n1", "cpu=4,memory=4Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
  }
  void TearDown() override { ::unsetenv("CLAIMSCHED_TOKEN"); }

  std::string token_file(const std::string& user) const { return cluster.dir() + "/" + user + ".token"; }

  /// `args` as `user` (its --token-file).
  ProcessResult as(const std::string& user, const std::string& args) const {
    return cluster.client(args + " --token-file " + token_file(user));
  }

  /// Every line of the audit log, parsed.
  std::vector<json> audit() const {
    std::vector<json> out;
    std::stringstream lines(LocalCluster::read_file(cluster.dir() + "/audit.log"));
    for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line, nullptr, false));
    return out;
  }

  /// Whether the audit log has a line with these values (user "" : null).
  bool audited(const std::string& user, const std::string& action, const std::string& object,
               const std::string& outcome, const std::string& door = "cli") const {
    for (const auto& line : audit()) {
      if (!line.is_object()) continue;
      bool who = user.empty() ? line["user"].is_null() : (line["user"].is_string() && line["user"] == user);
      if (who && line.value("action", "") == action && line.value("object", "") == object &&
          line.value("outcome", "") == outcome && line.value("door", "") == door && !line.value("time", "").empty())
        return true;
    }
    return false;
  }

  static constexpr const char* kHttpSaid = "claimsched server http on ";
  LocalCluster cluster{
      "[auth]\ntokens_file = \"tokens\"\naudit_log = \"audit.log\"\n[http]\nlisten = \"127.0.0.1:0\"\n"};
  std::string http;
};

TEST_F(AuthTest, AClientActsAsItsTokensUserAndOnlyOnItsOwnJobs) {
  // No token, or one the server does not know: refused.
  auto anonymous = run_command("env -u CLAIMSCHED_TOKEN " + std::string(CLAIMSCHED_BINARY) + " submit --server " +
                               cluster.address() + " -- true 2>&1");
  EXPECT_EQ(anonymous.exit_code, 1) << anonymous.out;
  EXPECT_NE(anonymous.out.find("requires authentication"), std::string::npos) << anonymous.out;
  EXPECT_TRUE(audited("", "submit", "a job", "refused"));
  std::ofstream(cluster.dir() + "/wrong.token") << "wrong-0123456789abcdef\n";
  auto wrong = cluster.client("nodes --token-file " + cluster.dir() + "/wrong.token");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("the token is not known to this server"), std::string::npos) << wrong.out;
  EXPECT_EQ(wrong.out.find("wrong-0123456789abcdef"), std::string::npos) << "a token is never echoed";
  EXPECT_TRUE(audited("", "login", "the cluster", "refused"));
  auto unreadable = cluster.client("nodes --token-file " + cluster.dir() + "/none.token");
  EXPECT_EQ(unreadable.exit_code, 2) << unreadable.out;
  EXPECT_NE(unreadable.out.find("--token-file: cannot read the token file"), std::string::npos) << unreadable.out;

  // alice's job is alice's, whoever runs the client; naming bob is refused.
  uint64_t job = cluster.submit("--token-file " + token_file("alice"), "sleep 60");
  ASSERT_NE(job, 0u);
  std::string object = "job " + std::to_string(job);
  auto mine = as("alice", "status --json " + std::to_string(job));
  ASSERT_EQ(mine.exit_code, 0) << mine.out;
  EXPECT_EQ(json::parse(mine.out)["user"], "alice");
  auto as_bob = cluster.client_before_command("submit --user bob --token-file " + token_file("alice"), "true");
  EXPECT_EQ(as_bob.exit_code, 1) << as_bob.out;
  EXPECT_NE(as_bob.out.find("user alice may not submit a job: it names user bob"), std::string::npos) << as_bob.out;
  EXPECT_TRUE(audited("alice", "submit", "a job", "refused"));

  // bob neither reads nor cancels it, nor sees it in his lists.
  for (const auto& [command, action] :
       {std::pair{"status", "read"}, {"explain", "read"}, {"logs", "read"}, {"cancel", "cancel"}}) {
    auto r = as("bob", std::string(command) + " " + std::to_string(job));
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.out;
    EXPECT_NE(r.out.find("it belongs to user alice; another user's jobs need the operator role"), std::string::npos)
        << command << ": " << r.out;
    EXPECT_TRUE(audited("bob", action, object, "refused")) << command;
  }
  auto bobs = as("bob", "jobs --json");
  ASSERT_EQ(bobs.exit_code, 0) << bobs.out;
  EXPECT_EQ(bobs.out.find("\"alice\""), std::string::npos) << bobs.out;
  auto queue = as("bob", "queue --json");
  ASSERT_EQ(queue.exit_code, 0) << queue.out;
  EXPECT_EQ(queue.out.find("\"alice\""), std::string::npos) << queue.out;
  EXPECT_EQ(as("bob", "jobs --user alice").exit_code, 1);
  EXPECT_TRUE(audited("bob", "list", "jobs of user alice", "refused"));
  EXPECT_EQ(as("bob", "nodes").exit_code, 0);  // the cluster is everyone's to see

  // The operator reads it and cancels it; that cancel is audited.
  EXPECT_EQ(as("ops", "status " + std::to_string(job)).exit_code, 0);
  auto cancelled = as("ops", "cancel " + std::to_string(job));
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.out;
  EXPECT_EQ(cluster.wait_for_job(job).value("state", ""), "cancelled");
  EXPECT_TRUE(audited("ops", "cancel", object, "allowed"));
  EXPECT_NE(as("alice", "jobs --json").out.find(std::to_string(job)), std::string::npos);
}

TEST_F(AuthTest, OnlyAnAdminDrainsANode) {
  for (const char* user : {"alice", "ops"}) {
    auto r = as(user, "node drain n1");
    EXPECT_EQ(r.exit_code, 1) << user << ": " << r.out;
    EXPECT_NE(r.out.find("may not drain node n1: this needs the admin role"), std::string::npos) << r.out;
    EXPECT_TRUE(audited(user, "drain", "node n1", "refused")) << user;
  }
  EXPECT_EQ(as("alice", "pool remove default").exit_code, 1);
  EXPECT_TRUE(audited("alice", "remove_pool", "pool default", "refused"));
  auto drained = as("root", "node drain n1 --wait");
  EXPECT_EQ(drained.exit_code, 0) << drained.out;
  EXPECT_TRUE(audited("root", "drain", "node n1", "allowed"));
  auto nodes = json::parse(as("root", "nodes --json").out, nullptr, false);
  ASSERT_TRUE(nodes.is_array() && nodes.size() == 1) << nodes;
  EXPECT_EQ(nodes[0].value("state", ""), "draining");

  // A session lives as long as its client's connection: none piles up.
  auto count = [&](const std::string& what) {
    std::string log = LocalCluster::read_file(cluster.server_log());
    size_t n = 0;
    for (auto at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_GE(count("logged in"), 6u);
  EXPECT_TRUE(LocalCluster::wait_until(
      [&] { return count("ended with its client's connection") == count("logged in"); }, std::chrono::seconds(10)))
      << count("logged in") << " logins, " << count("ended with its client's connection") << " sessions ended";
}

TEST_F(AuthTest, TheHttpApiWantsABearerTokenAndAppliesTheSameRules) {
  uint64_t job = cluster.submit("--token-file " + token_file("alice"), "true");
  ASSERT_NE(job, 0u);
  std::string path = "/api/v1/jobs/" + std::to_string(job);
  httplib::Client client("http://" + http);
  auto bearer = [](const char* token) { return httplib::Headers{{"Authorization", std::string("Bearer ") + token}}; };
  auto none = client.Get(path);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401) << none->body;
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"claimsched\"");
  EXPECT_TRUE(audited("", "login", "GET " + path, "refused", "http"));
  auto bob = client.Get(path, bearer(kBob));
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 403) << bob->body;
  EXPECT_TRUE(audited("bob", "read", "job " + std::to_string(job), "refused", "http"));
  auto bobs_list = client.Get("/api/v1/jobs", bearer(kBob));
  ASSERT_TRUE(bobs_list);
  EXPECT_EQ(bobs_list->status, 200);
  EXPECT_EQ(bobs_list->body.find("\"alice\""), std::string::npos) << bobs_list->body;
  for (const char* token : {kAlice, kOps}) {
    auto r = client.Get(path, bearer(token));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body, nullptr, false).value("user", ""), "alice");
  }
  // Metrics stay open to scrapers.
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST_F(AuthTest, ACampaignIsItsSubmittersToReadAndCancel) {
  std::string path = cluster.dir() + "/sweep.toml";
  std::ofstream(path) << "name = \"sweep\"\ncommand = [\"/bin/sh\", \"-c\", \"sleep 30\"]\nrange = \"1..2\"\n"
                      << "resources = \"cpu=1,memory=100Mi\"\npools = [\"default\"]\n";
  auto submitted = as("alice", "campaign submit " + path);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = std::to_string(std::stoull(submitted.out));
  auto mine = as("alice", "campaign status --json " + id);
  ASSERT_EQ(mine.exit_code, 0) << mine.out;
  EXPECT_EQ(json::parse(mine.out, nullptr, false).value("user", ""), "alice") << mine.out;
  for (const auto& [verb, action] : {std::pair{"status", "read"}, {"explain", "read"}, {"cancel", "cancel"}}) {
    auto r = as("bob", std::string("campaign ") + verb + " " + id);
    EXPECT_EQ(r.exit_code, 1) << verb << ": " << r.out;
    EXPECT_NE(r.out.find("it belongs to user alice"), std::string::npos) << verb << ": " << r.out;
    EXPECT_TRUE(audited("bob", action, "campaign " + id, "refused")) << verb;
  }
  auto bobs = as("bob", "campaign list --json");
  ASSERT_EQ(bobs.exit_code, 0) << bobs.out;
  EXPECT_EQ(bobs.out.find("\"alice\""), std::string::npos) << bobs.out;
  std::ofstream(path, std::ios::app) << "user = \"bob\"\n";
  auto as_bob = as("alice", "campaign submit " + path);
  EXPECT_EQ(as_bob.exit_code, 1) << as_bob.out;
  EXPECT_NE(as_bob.out.find("it names user bob"), std::string::npos) << as_bob.out;
  auto cancelled = as("ops", "campaign cancel " + id);
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.out;
  EXPECT_TRUE(audited("ops", "cancel", "campaign " + id, "allowed"));
}

TEST(AuthStartup, AGarbledTokensFileStopsTheServerNamingTheLine) {
  LocalCluster cluster("[auth]\ntokens_file = \"tokens\"\n");
  std::ofstream(cluster.dir() + "/tokens") << "# ok so far\n"
                                           << "good-0123456789abcdef alice\n"
                                           << "secret-0123456789abcdef bob superuser\n";
  auto r = run_command("timeout 30 " + std::string(CLAIMSCHED_BINARY) + " server --config " + cluster.dir() +
                       "/cluster.toml 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("tokens file " + cluster.dir() + "/tokens line 3: unknown role 'superuser'"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("secret-0123456789abcdef"), std::string::npos) << "a token is never echoed";
}

TEST(AuthStartup, WithoutAuthTheServerSaysOnceThatItIsOff) {
  LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  std::string log = LocalCluster::read_file(cluster.server_log());
  auto at = log.find("authentication is off");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find("authentication is off", at + 1), std::string::npos);
  // As before: any client may submit, as the user it says.
  EXPECT_NE(cluster.submit("--user someone", "true"), 0u);
}

}  // namespace
}  // namespace claimsched::testing
