// The JSON API under /api/v1/ on a running server ([http] listen): each
// answer is what the CLI prints with --json, lists page newest first and
// can be followed cheaply (ETag, since), and a bad request is a 4xx JSON
// error that says what was wrong, never a crash.

#include <httplib.h>

#include <set>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using nlohmann::json;

/// A server with [http] on a free port, one agent, and an HTTP client.
class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    http = LocalCluster::printed_address(cluster.server_log(), "claimsched server http on ");
    ASSERT_NE(http, "") << LocalCluster::read_file(cluster.server_log());
    cluster.start_agent("a1", "cpu=4,memory=4Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
    client = std::make_unique<httplib::Client>("http://" + http);
  }

  /// GET `path`: the status and the body as JSON (null if it is not JSON).
  std::pair<int, json> get(const std::string& path, const httplib::Headers& headers = {}) {
    auto res = client->Get(path, headers);
    if (!res) return {-1, nullptr};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  /// What the CLI prints for `args` --json, as JSON.
  json cli(const std::string& args) {
    auto r = cluster.client(args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return json::parse(r.out, nullptr, false);
  }

  LocalCluster cluster{"[http]\nlisten = \"127.0.0.1:0\"\n"};
  std::string http;
  std::unique_ptr<httplib::Client> client;
};

/// `j` with the values that move between two asks (time since a heartbeat,
/// time below the fair share) replaced by their type: two answers a moment
/// apart compare equal on everything else, wall-clock times included.
json without_clock(json j) {
  static const std::set<std::string> kMoving{"silent_ms", "below_fair_share_for_s"};
  if (j.is_array())
    for (auto& e : j) e = without_clock(std::move(e));
  if (j.is_object())
    for (auto& [key, value] : j.items())
      value = kMoving.contains(key) ? json(value.type_name()) : without_clock(std::move(value));
  return j;
}

std::vector<uint64_t> ids_of(const json& jobs) {
  std::vector<uint64_t> ids;
  for (const auto& j : jobs) ids.push_back(j.value("job", uint64_t{0}));
  return ids;
}

TEST_F(ApiTest, AnswersExactlyWhatTheCliPrintsWithJson) {
  for (const char* command : {"/bin/true", "/bin/false"}) cluster.client_before_command("submit --wait", command);
  std::string why;
  uint64_t held = cluster.submit("--resources cpu=8 --hold", "/bin/true", &why);
  ASSERT_NE(held, 0u) << why;
  std::string id = std::to_string(held);

  auto same = [&](const std::string& path, const std::string& args) {
    auto [status, body] = get(path);
    EXPECT_EQ(status, 200) << path;
    EXPECT_EQ(without_clock(body), without_clock(cli(args))) << path;
    return body;
  };
  same("/api/v1/jobs", "jobs");
  EXPECT_EQ(same("/api/v1/jobs?limit=0", "jobs --limit 0").size(), 3u);
  EXPECT_EQ(same("/api/v1/jobs?state=failed", "jobs --state failed").size(), 1u);
  same("/api/v1/queue", "queue");
  EXPECT_EQ(same("/api/v1/jobs/1", "status 1")["tasks"].size(), 1u);
  same("/api/v1/jobs/" + id + "/explain", "explain " + id);
  same("/api/v1/pools", "pools");
  same("/api/v1/partitions", "status");
  auto nodes = same("/api/v1/nodes", "nodes");
  ASSERT_EQ(nodes.size(), 1u) << nodes;
  EXPECT_EQ(nodes[0]["name"], "a1");

  // The queue says why the held job waits.
  auto queue = get("/api/v1/queue").second;
  ASSERT_EQ(queue.size(), 1u) << queue;
  EXPECT_EQ(queue[0]["job"], held);
  EXPECT_NE(queue[0].value("waiting", ""), "") << queue;
}

TEST_F(ApiTest, PagesJobsNewestFirstAndSaysWhenNothingChanged) {
  auto r = cluster.client_before_command("submit --repeat 5", "/bin/true");
  ASSERT_EQ(r.exit_code, 0) << r.out;

  auto first = client->Get("/api/v1/jobs?limit=2");
  ASSERT_TRUE(first);
  EXPECT_EQ(ids_of(json::parse(first->body)), (std::vector<uint64_t>{5, 4}));
  EXPECT_EQ(first->get_header_value("Link"), "</api/v1/jobs?limit=2&after=4>; rel=\"next\"");
  EXPECT_EQ(ids_of(get("/api/v1/jobs?limit=2&after=4").second), (std::vector<uint64_t>{3, 2}));
  auto last = client->Get("/api/v1/jobs?limit=2&after=2");
  ASSERT_TRUE(last);
  EXPECT_EQ(ids_of(json::parse(last->body)), (std::vector<uint64_t>{1}));
  EXPECT_FALSE(last->has_header("Link")) << "the last page has no next";

  // Wait until the jobs have ended, so nothing is written meanwhile.
  ASSERT_TRUE(LocalCluster::wait_until([&] { return cli("queue").empty(); }, std::chrono::seconds(20)));
  // The CLI pages the same way (compared once the jobs no longer change
  // between the two reads).
  EXPECT_EQ(without_clock(get("/api/v1/jobs?limit=2&after=4").second), without_clock(cli("jobs --limit 2 --after 4")));
  auto all = client->Get("/api/v1/jobs");
  ASSERT_TRUE(all);
  std::string etag = all->get_header_value("ETag");
  std::string changes = all->get_header_value("X-Claimsched-Changes");
  ASSERT_NE(etag, "");
  ASSERT_NE(changes, "");
  auto same = client->Get("/api/v1/jobs", {{"If-None-Match", etag}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 304);
  EXPECT_EQ(same->body, "");
  auto unchanged = client->Get("/api/v1/jobs?since=" + changes);
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->status, 304);

  // A new job moves both: the next poll gets the list with it.
  r = cluster.client_before_command("submit --wait", "/bin/true");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto changed = client->Get("/api/v1/jobs?since=" + changes, {{"If-None-Match", etag}});
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->status, 200);
  EXPECT_EQ(ids_of(json::parse(changed->body)).front(), 6u);
  EXPECT_NE(changed->get_header_value("X-Claimsched-Changes"), changes);
  EXPECT_NE(changed->get_header_value("ETag"), etag);
}

TEST_F(ApiTest, TheDashboardIsServedFromTheBinaryAndAsksOnlyThisServer) {
  auto page = client->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_TRUE(page->get_header_value("Content-Type").starts_with("text/html")) << page->get_header_value("Content-Type");
  EXPECT_NE(page->body.find("<script src=\"/app.js\">"), std::string::npos) << page->body;
  for (const char* path : {"/app.js", "/style.css"}) {
    auto res = client->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    // Nothing from the internet: no absolute URL in what the browser loads.
    EXPECT_EQ(res->body.find("http://"), std::string::npos) << path;
    EXPECT_EQ(res->body.find("https://"), std::string::npos) << path;
  }
  EXPECT_NE(client->Get("/app.js")->body.find("/api/v1/queue"), std::string::npos);
  EXPECT_EQ(client->Get("/nothing.js")->status, 404);
}

TEST_F(ApiTest, BadRequestsAreJsonErrorsThatSayWhatWasWrong) {
  struct Case {
    std::string path;
    int status;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {"/api/v1/nothing", 404, "no such path: /api/v1/nothing"},
           {"/api/v2/jobs", 404, "the API is under /api/v1/"},
           {"/api/v1/jobs?limit=abc", 400, "limit: 'abc' is not a page size"},
           {"/api/v1/jobs?limit=-1", 400, "limit: '-1'"},
           {"/api/v1/jobs?after=0", 400, "after: job ids start at 1"},
           {"/api/v1/jobs?limt=3", 400, "unknown parameter 'limt'"},
           {"/api/v1/jobs?state=sleeping", 400, "state: "},
           {"/api/v1/jobs?since=soon", 400, "since: 'soon' is not a change counter"},
           {"/api/v1/jobs/abc", 400, "'abc' is not a job id"},
           {"/api/v1/jobs/999", 404, "999"},
           {"/api/v1/jobs/999/explain", 404, "999"},
           {"/api/v1/nodes?x=1", 400, "unknown parameter 'x'"},
       }) {
    auto [status, body] = get(c.path);
    EXPECT_EQ(status, c.status) << c.path << ": " << body;
    ASSERT_TRUE(body.is_object()) << c.path;
    EXPECT_EQ(body["error"]["status"], c.status) << c.path;
    std::string message = body["error"].value("message", "");
    EXPECT_NE(message.find(c.says), std::string::npos) << c.path << ": " << message;
  }
  // Read-only: another method is refused, in JSON too.
  auto post = client->Post("/api/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
  EXPECT_NE(post->body.find("the API is read-only"), std::string::npos) << post->body;
  auto elsewhere = client->Get("/nowhere");
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->status, 404);
  EXPECT_NE(elsewhere->body.find("the dashboard is at /"), std::string::npos) << elsewhere->body;
  // Still serving.
  EXPECT_EQ(get("/api/v1/jobs").first, 200);
  EXPECT_TRUE(cluster.server().running());
}

}  // namespace
}  // namespace claimsched::testing
