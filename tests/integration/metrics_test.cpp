// GET /metrics on a running server ([http] listen) and agent (--http): after
// a known workload their counters say what happened, and every line parses
// as Prometheus' text format (one HELP and TYPE per family, a family's
// samples together). `sim --http` serves the same families, and they add
// up to what the sim reports.

#include <httplib.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

/// Problems with `text` as Prometheus' text format 0.0.4 (empty: none), and
/// its samples by name with labels ("name{labels}" -> value).
std::string check_exposition(const std::string& text, std::map<std::string, std::string>& samples) {
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (\S+)$)");
  static const std::regex kComment(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$)");
  std::set<std::string> typed, closed;
  std::string current;
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    std::smatch m;
    if (std::regex_match(line, m, kComment)) {
      std::string family = m[2];
      if (m[1] == "TYPE") {
        if (!typed.insert(family).second) return "line " + std::to_string(n) + ": a second TYPE for " + family;
        static const std::set<std::string> kTypes{"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kTypes.contains(m[3])) return "line " + std::to_string(n) + ": unknown type " + std::string(m[3]);
      }
      if (family != current) {
        if (closed.contains(family)) return "line " + std::to_string(n) + ": family " + family + " comes back";
        if (!current.empty()) closed.insert(current);
        current = family;
      }
      continue;
    }
    if (!std::regex_match(line, m, kSample)) return "line " + std::to_string(n) + " does not parse: " + line;
    std::string name = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!typed.contains(name) && name.ends_with(suffix) && typed.contains(name.substr(0, name.size() - std::strlen(suffix))))
        name = name.substr(0, name.size() - std::strlen(suffix));
    if (name != current) return "line " + std::to_string(n) + ": sample of " + name + " outside its family";
    samples[line.substr(0, line.rfind(' '))] = m[5];
  }
  return "";
}

TEST(Metrics, AScrapeCountsWhatTheClusterDidInPrometheusFormat) {
  LocalCluster cluster("[http]\nlisten = \"127.0.0.1:0\"\n");
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  std::string http = LocalCluster::printed_address(cluster.server_log(), "claimsched server http on ");
  ASSERT_NE(http, "") << LocalCluster::read_file(cluster.server_log());
  cluster.start_agent("a1", "cpu=4,memory=4Gi", {"--http", "127.0.0.1:0"});
  ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
  for (const char* command : {"/bin/true", "/bin/true", "/bin/true", "/bin/false"})
    cluster.client_before_command("submit --wait", command);

  httplib::Client client("http://" + http);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << "no answer from " << http;
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(res->get_header_value("Content-Type").starts_with("text/plain; version=0.0.4")) << res->get_header_value("Content-Type");
  std::map<std::string, std::string> samples;
  EXPECT_EQ(check_exposition(res->body, samples), "") << res->body;
  EXPECT_EQ(samples["claimsched_jobs_submitted_total{partition=\"1\"}"], "4") << res->body;
  EXPECT_EQ(samples["claimsched_placements_total{partition=\"1\"}"], "4");
  EXPECT_EQ(samples["claimsched_tasks_finished_total{partition=\"1\"}"], "4");
  EXPECT_EQ(samples["claimsched_tasks_running{partition=\"1\"}"], "0");
  EXPECT_EQ(samples["claimsched_placement_latency_seconds_count{partition=\"1\"}"], "4");
  EXPECT_EQ(samples["claimsched_placement_latency_seconds_bucket{partition=\"1\",le=\"+Inf\"}"], "4");
  EXPECT_EQ(samples["claimsched_jobs_ended_total{partition=\"1\",outcome=\"succeeded\"}"], "3");
  EXPECT_EQ(samples["claimsched_jobs_ended_total{partition=\"1\",outcome=\"failed\"}"], "1");
  EXPECT_EQ(samples["claimsched_jobs_ended_total{partition=\"1\",outcome=\"cancelled\"}"], "0");
  // One claim per job: each was answered, and each answer timed.
  EXPECT_EQ(samples["claimsched_claim_round_trip_seconds_count{partition=\"1\"}"], samples["claimsched_claims_sent_total{partition=\"1\"}"]);
  EXPECT_EQ(samples["claimsched_claims_sent_total{partition=\"1\"}"], "4");
  EXPECT_EQ(samples["claimsched_nodes{state=\"up\"}"], "1");
  EXPECT_EQ(samples["claimsched_partition_nodes{partition=\"1\",state=\"up\"}"], "1");
  EXPECT_EQ(samples["claimsched_partition_nodes{partition=\"1\",state=\"draining\"}"], "0");
  EXPECT_EQ(samples["claimsched_partition_nodes{partition=\"1\",state=\"down\"}"], "0");
  EXPECT_EQ(samples["claimsched_partition_owned_here{partition=\"1\"}"], "1");
  // The partition store's group commits: each job's record and each task's
  // placement and end went through them (at least 3 records per job), one
  // latency and one size observation per write.
  const std::string commits = "claimsched_group_commit_seconds_count{partition=\"1\"}";
  ASSERT_TRUE(samples.contains(commits)) << res->body;
  EXPECT_GT(std::stoull(samples[commits]), 0u);
  EXPECT_EQ(samples["claimsched_group_commit_batch_records_count{partition=\"1\"}"], samples[commits]);
  EXPECT_EQ(samples["claimsched_group_commit_seconds_bucket{partition=\"1\",le=\"+Inf\"}"], samples[commits]);
  EXPECT_GE(std::stod(samples["claimsched_group_commit_batch_records_sum{partition=\"1\"}"]), 12.0);
  EXPECT_GT(std::stod(samples["claimsched_group_commit_seconds_sum{partition=\"1\"}"]), 0.0);
  EXPECT_EQ(client.Get("/elsewhere")->status, 404);

  std::string agent_http = LocalCluster::printed_address(cluster.dir() + "/a1.log", "claimsched agent http on ");
  ASSERT_NE(agent_http, "") << LocalCluster::read_file(cluster.dir() + "/a1.log");
  auto agent_res = httplib::Client("http://" + agent_http).Get("/metrics");
  ASSERT_TRUE(agent_res) << "no answer from " << agent_http;
  std::map<std::string, std::string> agent;
  EXPECT_EQ(check_exposition(agent_res->body, agent), "") << agent_res->body;
  EXPECT_EQ(agent["claimsched_agent_task_starts_total"], "4") << agent_res->body;
  EXPECT_EQ(agent["claimsched_agent_task_exits_total{outcome=\"succeeded\"}"], "3");
  EXPECT_EQ(agent["claimsched_agent_task_exits_total{outcome=\"failed\"}"], "1");
  EXPECT_EQ(agent["claimsched_agent_tasks_running"], "0");
  EXPECT_EQ(agent["claimsched_agent_task_start_seconds_count"], "4");
  // Each confirm and each end of the four tasks changed the node's ledger:
  // records of the agent's node store, written in group commits.
  ASSERT_TRUE(agent.contains("claimsched_agent_group_commit_seconds_count")) << agent_res->body;
  EXPECT_GT(std::stoull(agent["claimsched_agent_group_commit_seconds_count"]), 0u);
  EXPECT_EQ(agent["claimsched_agent_group_commit_batch_records_count"],
            agent["claimsched_agent_group_commit_seconds_count"]);
  EXPECT_GE(std::stod(agent["claimsched_agent_group_commit_batch_records_sum"]), 8.0);
}

// What waits, per pool and class, and each pool's shares from the last
// policy cycle: a job too wide for the node's free room waits in pool
// default, class batch, behind one that fills the node.
TEST(Metrics, TheQueueAndThePoolsSharesArePerPoolAndClass) {
  using namespace std::chrono_literals;
  LocalCluster cluster("[http]\nlisten = \"127.0.0.1:0\"\n[policy]\nenabled = true\ninterval = \"100ms\"\n");
  ASSERT_NO_FATAL_FAILURE(cluster.start_server());
  std::string http = LocalCluster::printed_address(cluster.server_log(), "claimsched server http on ");
  ASSERT_NE(http, "") << LocalCluster::read_file(cluster.server_log());
  cluster.start_agent("a1", "cpu=4,memory=4Gi");
  ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
  std::string why;
  uint64_t filling = cluster.submit("--count 4", "/bin/sleep 60", &why);
  ASSERT_NE(filling, 0u) << why;
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] { return cluster.status(filling)->at("tasks_by_state").value("running", 0) == 4; }, 20s));
  uint64_t waiting = cluster.submit("--count 3", "/bin/true", &why);
  ASSERT_NE(waiting, 0u) << why;
  httplib::Client client("http://" + http);
  std::map<std::string, std::string> samples;
  const std::string where = "{partition=\"1\",pool=\"default\",class=\"batch\"}";
  // The policy's shares are the last cycle's: wait for one that saw the node full.
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] {
        auto res = client.Get("/metrics");
        if (!res) return false;
        samples.clear();
        EXPECT_EQ(check_exposition(res->body, samples), "") << res->body;
        return samples["claimsched_queue_jobs" + where] == "1" &&
               samples["claimsched_pool_usage_ratio{partition=\"1\",pool=\"default\"}"] == "1";
      },
      20s));
  EXPECT_EQ(samples["claimsched_queue_tasks" + where], "3");
  EXPECT_GT(std::stod(samples["claimsched_queue_oldest_wait_seconds" + where]), 0.0);
  EXPECT_EQ(samples["claimsched_pool_fair_share_ratio{partition=\"1\",pool=\"default\"}"], "1");
  cluster.client("cancel " + std::to_string(waiting));
  cluster.client("cancel " + std::to_string(filling));
}

TEST(Metrics, ABadHttpAddressIsRefusedAtStart) {
  LocalCluster cluster("[http]\nlisten = \"9090\"\n");
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " server --config " + cluster.dir() + "/cluster.toml 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("http.listen: must be HOST:PORT"), std::string::npos) << r.out;
}

/// The sum over partitions of a family's samples ("name{partition=...}").
double sum_over_partitions_d(const std::map<std::string, std::string>& samples, const std::string& name) {
  double sum = 0;
  for (const auto& [key, value] : samples)
    if (key.starts_with(name + "{partition=")) sum += std::stod(value);
  return sum;
}
uint64_t sum_over_partitions(const std::map<std::string, std::string>& samples, const std::string& name) {
  return static_cast<uint64_t>(sum_over_partitions_d(samples, name));
}

/// A sim with --http, scraped once its report (the JSON line on stdout,
/// printed before the linger) is out.
struct ScrapedSim {
  nlohmann::json report;
  std::string metrics;  // the /metrics body
  std::map<std::string, std::string> samples;
};

/// Runs `claimsched sim --json --quiet ARGS` serving /metrics, logging into
/// `dir`; scrapes it after the report, checks the exposition format, stops it.
void run_and_scrape_sim(const std::string& dir, const std::vector<std::string>& args, ScrapedSim& out) {
  std::string log = dir + "/sim.log";
  std::vector<std::string> argv{CLAIMSCHED_BINARY, "sim", "--json", "--quiet"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--http", "127.0.0.1:0", "--http-linger", "60s"});
  BackgroundProcess sim(argv, log);
  ASSERT_TRUE(sim.started());
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] {
        std::istringstream lines(LocalCluster::read_file(log));
        for (std::string line; std::getline(lines, line);)
          if (line.starts_with("{")) out.report = nlohmann::json::parse(line, nullptr, false);
        return out.report.is_object();
      },
      std::chrono::seconds(120)))
      << LocalCluster::read_file(log);
  std::string http = LocalCluster::printed_address(log, "claimsched sim http on ");
  ASSERT_NE(http, "") << LocalCluster::read_file(log);
  auto res = httplib::Client("http://" + http).Get("/metrics");
  ASSERT_TRUE(res) << "no answer from " << http;
  EXPECT_EQ(res->status, 200);
  out.metrics = res->body;
  EXPECT_EQ(check_exposition(out.metrics, out.samples), "") << out.metrics;
  EXPECT_TRUE(out.report["invariants_ok"].get<bool>()) << out.report.dump(2);
  sim.kill(SIGTERM);
}

TEST(Metrics, SimServesTheCountersItReports) {
  LocalCluster scratch;  // for its directory only
  ScrapedSim sim;
  // Overlapping schedulers on one fill order: conflicts to count as well.
  ASSERT_NO_FATAL_FAILURE(run_and_scrape_sim(scratch.dir(),
                                             {"--nodes", "100", "--partitions", "4", "--overlap", "--same-start",
                                              "--tasks", "10000", "--seed", "2"},
                                             sim));
  const auto& report = sim.report;
  const auto& samples = sim.samples;
  EXPECT_EQ(sum_over_partitions(samples, "claimsched_placements_total"), report["placements"].get<uint64_t>())
      << sim.metrics;
  EXPECT_EQ(sum_over_partitions(samples, "claimsched_jobs_submitted_total"), report["jobs"].get<uint64_t>());
  EXPECT_EQ(sum_over_partitions(samples, "claimsched_claims_sent_total"), report["claims"].get<uint64_t>());
  EXPECT_EQ(sum_over_partitions(samples, "claimsched_rejected_conflict_total") +
                sum_over_partitions(samples, "claimsched_rejected_insufficient_total"),
            report["conflicts"].get<uint64_t>());
  EXPECT_GT(report["conflicts"].get<uint64_t>(), 0u) << "schedulers on one fill order must collide";
  EXPECT_FALSE(samples.contains("claimsched_group_commit_seconds_count{partition=\"1\"}"))
      << "an in-memory partition has no group commits";
  for (int p = 1; p <= 4; ++p)
    EXPECT_TRUE(samples.contains("claimsched_placement_latency_seconds_count{partition=\"" + std::to_string(p) + "\"}"))
        << "partition " << p << " missing:\n" << sim.metrics;
}

// A durable sim's group commits: every acknowledged job and every accepted
// claim (its tasks' placements: one record) is a record of some partition's
// group commit, so the records counted are at least jobs + claims accepted;
// an in-memory partition shows none.
TEST(Metrics, DurableSimCountsItsGroupCommits) {
  LocalCluster scratch;  // for its directory only
  ScrapedSim sim;
  ASSERT_NO_FATAL_FAILURE(run_and_scrape_sim(scratch.dir(),
                                             {"--nodes", "100", "--partitions", "2", "--tasks", "5000", "--seed", "3",
                                              "--data-dir", scratch.dir() + "/data", "--sync", "batch"},
                                             sim));
  const auto& report = sim.report;
  const auto& samples = sim.samples;
  EXPECT_GE(sum_over_partitions_d(samples, "claimsched_group_commit_batch_records_sum"),
            static_cast<double>(report["jobs"].get<uint64_t>() + report["claims_accepted"].get<uint64_t>()))
      << sim.metrics;
  auto commits = sum_over_partitions(samples, "claimsched_group_commit_seconds_count");
  EXPECT_GT(commits, 0u);
  EXPECT_EQ(sum_over_partitions(samples, "claimsched_group_commit_batch_records_count"), commits);
  for (int p = 1; p <= 2; ++p)
    EXPECT_TRUE(samples.contains("claimsched_group_commit_seconds_bucket{partition=\"" + std::to_string(p) +
                                 "\",le=\"0.001\"}"))
        << sim.metrics;
}

TEST(Metrics, SimRefusesABadHttpAddress) {
  auto r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --quiet --nodes 8 --tasks 10 --http 9090 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--http: must be HOST:PORT"), std::string::npos) << r.out;
  // The starvation scenario has schedulers of its own, which --http would not show.
  r = run_command(std::string(CLAIMSCHED_BINARY) + " sim --scenario starvation --http 127.0.0.1:0 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not a --scenario"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace claimsched::testing
