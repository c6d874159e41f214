// The cluster configuration file: defaults, the example in deploy/, every kind
// of problem reported with its line, several problems at once, and input that
// is not TOML at all (never a crash).

#include "apps/cluster_config.hpp"
#include "apps/config_command.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

namespace claimsched::apps {
namespace {

using namespace std::chrono_literals;
using core::policy::ClassPolicy;

std::string example_path() { return std::string(CLAIMSCHED_SOURCE_DIR) + "/deploy/cluster.toml"; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string all(const std::vector<ConfigProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.to_string("t.toml") + "\n";
  return out;
}

std::vector<std::string> pool_names(const ClusterConfig& c) {
  std::vector<std::string> out;
  for (const auto& p : c.policy.pools) out.push_back(p.name);
  return out;
}

TEST(ClusterConfig, EmptyFileGivesTheDefaults) {
  for (std::string text : {"", "\n", "# only a comment\n"}) {
    auto report = analyze_cluster_config(text, "empty.toml");
    ASSERT_TRUE(report.ok()) << all(report.problems);
    const ClusterConfig& c = report.config;
    const ClusterConfig d;
    EXPECT_EQ(c.cluster_id, "claimsched");
    EXPECT_EQ(c.listen.host, "127.0.0.1");
    EXPECT_EQ(c.listen.port, 7070);
    EXPECT_EQ(c.storage.data_dir, "/var/lib/claimsched");
    EXPECT_EQ(c.storage.sync, "batch");
    EXPECT_EQ(c.timeouts.heartbeat_interval, 1s);
    EXPECT_EQ(c.timeouts.node_grace, 10s);
    EXPECT_EQ(c.timeouts.claim_ttl, 10s);
    EXPECT_EQ(c.timeouts.reply_timeout, 5s);
    EXPECT_EQ(c.timeouts.recovery_grace, 30s);
    EXPECT_EQ(c.timeouts.link_heartbeat, 250ms);
    EXPECT_EQ(c.timeouts.link_timeout, 2s);
    EXPECT_EQ(pool_names(c), std::vector<std::string>{"default"});
    ASSERT_EQ(c.partitions.size(), 1u);
    EXPECT_EQ(c.partitions[0].id, core::PartitionId{1});
    EXPECT_EQ(c.partitions[0].pools, std::vector<std::string>{"default"});
    ASSERT_EQ(c.policy.classes.size(), 1u);
    EXPECT_EQ(c.policy.classes[0].name, "batch");
    EXPECT_EQ(c.policy.classes[0].pool, "default");
    EXPECT_EQ(c.policy.classes[0].policy, ClassPolicy::fair_share);
    EXPECT_EQ(c.policy.settings.default_class, "batch");
    EXPECT_EQ(c.class_scorers, (std::vector<std::pair<std::string, std::string>>{{"batch", "fill_first"}}));
    EXPECT_FALSE(c.preemption);
    EXPECT_EQ(c.policy.interval, 1s);
    EXPECT_EQ(c.agent.pool, "default");
    EXPECT_EQ(c.agent.server, "127.0.0.1:7070");
    EXPECT_EQ(c.max_claims_in_flight, 512u);
    EXPECT_EQ(c.default_max_lost_retries, 3u);
    // The struct's own defaults are the empty file's.
    EXPECT_EQ(pool_names(d), pool_names(c));
    EXPECT_EQ(d.partitions[0].pools, c.partitions[0].pools);
    EXPECT_EQ(d.policy.classes[0].name, c.policy.classes[0].name);
    EXPECT_EQ(d.policy.settings.default_class, c.policy.settings.default_class);
    EXPECT_EQ(d.class_scorers, c.class_scorers);
    EXPECT_TRUE(d.policy.validate());
  }
}

TEST(ClusterConfig, DefaultsFollowWhatIsGiven) {
  // Pools without partitions or classes: one partition owns every leaf, the
  // default class binds to the first root pool.
  auto r = analyze_cluster_config(R"(
[[pools]]
name = "top"
[[pools]]
name = "a"
parent = "top"
[[pools]]
name = "b"
parent = "top"
)",
                                  "t.toml");
  ASSERT_TRUE(r.ok()) << all(r.problems);
  ASSERT_EQ(r.config.partitions.size(), 1u);
  EXPECT_EQ(r.config.partitions[0].pools, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(r.config.policy.classes.size(), 1u);
  EXPECT_EQ(r.config.policy.classes[0].pool, "top");
  // Classes without [settings].default_class: the first class is the default.
  r = analyze_cluster_config(
      "[[classes]]\nname = \"x\"\npool = \"default\"\n[[classes]]\nname = \"y\"\n"
      "pool = \"default\"\n",
      "t.toml");
  ASSERT_TRUE(r.ok()) << all(r.problems);
  EXPECT_EQ(r.config.policy.settings.default_class, "x");
  EXPECT_EQ(r.config.class_scorers,
            (std::vector<std::pair<std::string, std::string>>{{"x", "fill_first"}, {"y", "fill_first"}}));
  // An explicitly empty default class: jobs must name theirs.
  r = analyze_cluster_config("[settings]\ndefault_class = \"\"\n", "t.toml");
  ASSERT_TRUE(r.ok()) << all(r.problems);
  EXPECT_EQ(r.config.policy.settings.default_class, "");
}

TEST(ClusterConfig, TheExampleParses) {
  auto c = load_cluster_config(example_path());
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->cluster_id, "example");
  EXPECT_EQ(c->listen.host, "0.0.0.0");
  EXPECT_EQ(c->listen.port, 7070);
  EXPECT_EQ(c->storage.sync, "batch");
  EXPECT_EQ(c->timeouts.link_heartbeat, 250ms);
  EXPECT_EQ(pool_names(*c), (std::vector<std::string>{"root", "cpu", "gpu"}));
  EXPECT_EQ(c->policy.pools[2].overrides.fair_share_starvation_timeout, 10s);
  ASSERT_EQ(c->partitions.size(), 2u);
  EXPECT_EQ(c->partitions[0].id, core::PartitionId{1});
  EXPECT_EQ(c->partitions[0].pools, std::vector<std::string>{"cpu"});
  EXPECT_EQ(c->partitions[1].id, core::PartitionId{2});
  EXPECT_EQ(c->partitions[1].pools, std::vector<std::string>{"gpu"});
  ASSERT_EQ(c->policy.classes.size(), 2u);
  EXPECT_EQ(c->policy.classes[0].name, "prod");
  EXPECT_EQ(c->policy.classes[0].priority, 10);
  EXPECT_EQ(c->policy.classes[0].weight, 3u);
  EXPECT_EQ(c->policy.classes[1].name, "batch");
  EXPECT_EQ(c->policy.classes[1].priority, 0);
  EXPECT_EQ(c->class_scorers,
            (std::vector<std::pair<std::string, std::string>>{{"prod", "spread"}, {"batch", "fill_first"}}));
  EXPECT_EQ(c->policy.settings.default_class, "batch");
  ASSERT_EQ(c->policy.users.size(), 1u);
  EXPECT_TRUE(c->preemption);
  EXPECT_EQ(c->policy.interval, 1s);
  EXPECT_EQ(c->policy.settings.preemption.fair_share_starvation_timeout, 30s);
  EXPECT_EQ(c->agent.name, "gpu-01");
  EXPECT_EQ(c->agent.pool, "gpu");
  EXPECT_EQ(c->agent.resources, "cpu=32,memory=256Gi,gpu=4");
  EXPECT_EQ(c->agent.labels, (std::vector<std::string>{"ssd", "cuda=12"}));
  EXPECT_EQ(c->agent.max_starting, 4u);
  EXPECT_EQ(c->agent.server, "10.0.0.1:7070");
}

struct Case {
  const char* name;
  std::string text;
  uint32_t line;
  std::string field;
  std::string message;  // a substring
};

// One problem per file, with its line and field.
std::vector<Case> cases() {
  const std::string pools = "[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n";  // lines 1-4
  return {
      {"typo", "[timeouts]\nheartbeat_intreval = \"2s\"\n", 2, "timeouts.heartbeat_intreval",
       "unknown key; did you mean 'heartbeat_interval'?"},
      {"unknown section", "\n[listne]\nport = 1\n", 2, "listne", "did you mean 'listen'"},
      {"unknown key, no near one", "colour = \"blue\"\n", 1, "colour", "unknown key (known: cluster_id"},
      {"default_class at the top", "default_class = \"batch\"\n", 1, "default_class", "in [settings]"},
      {"wrong type", "[listen]\nport = \"7070\"\n", 2, "listen.port", "expected an integer"},
      {"out of range", "[listen]\n\nport = 70000\n", 3, "listen.port", "must be in [0, 65535], got 70000"},
      {"negative", "max_claims_in_flight = -1\n", 1, "max_claims_in_flight", "must be in [1, 1000000]"},
      {"not a table", "listen = 5\n", 1, "listen", "expected a table"},
      {"bad duration", "[timeouts]\nnode_grace = \"10\"\n", 2, "timeouts.node_grace", "needs a unit"},
      {"duration as number", "[timeouts]\nclaim_ttl = 10\n", 2, "timeouts.claim_ttl", "expected a string"},
      {"zero duration", "[timeouts]\nreply_timeout = \"0s\"\n", 2, "timeouts.reply_timeout",
       "longer than 0s"},
      {"grace below heartbeat", "[timeouts]\nheartbeat_interval = \"5s\"\nnode_grace = \"3s\"\n", 3,
       "timeouts.node_grace", "longer than heartbeat_interval (5s)"},
      {"ttl below reply timeout", "[timeouts]\nreply_timeout = \"20s\"\n", 1, "timeouts.claim_ttl",
       "longer than reply_timeout (20s)"},
      {"bad sync", "[storage]\nsync = \"sometimes\"\n", 2, "storage.sync",
       "must be one of always, batch, none, got 'sometimes'"},
      {"empty data dir", "[storage]\ndata_dir = \"\"\n", 2, "storage.data_dir", "must not be empty"},
      {"bad cluster id", "cluster_id = \"my cluster\"\n", 1, "cluster_id", "letters, digits"},
      {"policy interval", "[policy]\nenabled = \"yes\"\n", 2, "policy.enabled", "expected true or false"},
      {"pool name missing", "[[pools]]\nparent = \"x\"\n", 1, "pools[0].name", "is required"},
      {"duplicate pool", pools + "[[pools]]\nname = \"a\"\n", 6, "pools[2].name",
       "pool 'a' is defined twice (first at line 2)"},
      {"unknown parent", pools + "[[pools]]\nname = \"c\"\nparent = \"z\"\n", 7, "pools[2].parent",
       "'z' is not a pool"},
      {"parent cycle", "[[pools]]\nname = \"a\"\nparent = \"a\"\n", 3, "pools[0].parent", "cycle (a -> a)"},
      {"pool tolerance", "[[pools]]\nname = \"a\"\nfair_share_starvation_tolerance = 1.5\n", 3,
       "pools[0].fair_share_starvation_tolerance", "must be in [0, 1]"},
      {"leaf pool in no partition", pools + "[[partitions]]\nid = 1\npools = [\"a\"]\n", 4, "pools[1].name",
       "leaf pool 'b' is in no partition"},
      {"pool in two partitions",
       pools + "[[partitions]]\nid = 1\npools = [\"a\", \"b\"]\n[[partitions]]\nid = 2\npools = [\"b\"]\n",
       10, "partitions[1].pools", "'b' is already owned by partition 1 (line 7)"},
      {"duplicate partition id",
       pools + "[[partitions]]\nid = 1\npools = [\"a\"]\n[[partitions]]\nid = 1\npools = [\"b\"]\n", 9,
       "partitions[1].id", "partition 1 is defined twice (first at line 6)"},
      {"partition id zero", "[[partitions]]\nid = 0\npools = [\"default\"]\n", 2, "partitions[0].id",
       "must be in [1, 4294967295]"},
      {"partition pool unknown", "[[partitions]]\nid = 1\npools = [\"default\",\n  \"gpu\"]\n", 4,
       "partitions[0].pools", "'gpu' is not a pool (without [[pools]], the only pool is 'default')"},
      {"partition pool not a leaf",
       "[[pools]]\nname = \"r\"\n[[pools]]\nname = \"a\"\nparent = \"r\"\n[[partitions]]\nid = 1\npools = "
       "[\"r\", "
       "\"a\"]\n",
       8, "partitions[0].pools", "'r' is not a leaf pool (its subpools: a)"},
      {"partition without pools", "[[partitions]]\nid = 1\n", 1, "partitions[0].pools", "is required"},
      {"partition cas", "[[partitions]]\nid = 1\npools = [\"default\"]\ncas = \"maybe\"\n", 4,
       "partitions[0].cas", "must be \"fit\" or \"strict\""},
      {"policies mixed in a priority",
       "[[classes]]\nname = \"x\"\npool = \"default\"\n[[classes]]\nname = \"y\"\npool = \"default\"\n"
       "policy = \"fixed_share\"\n",
       7, "classes[1].policy", "classes of one priority must share one policy"},
      {"no pools at all", "pools = []\n", 1, "pools", "needs at least one pool"},
      {"unknown default class", "[settings]\ndefault_class = \"bench\"\n", 2, "settings.default_class",
       "'bench' is not a class"},
      {"class on unknown pool", "[[classes]]\nname = \"x\"\npool = \"gpu\"\n", 3, "classes[0].pool",
       "'gpu' is not a pool"},
      {"class without pool", "[[classes]]\nname = \"x\"\n", 1, "classes[0].pool", "is required"},
      {"duplicate class",
       "[[classes]]\nname = \"x\"\npool = \"default\"\n[[classes]]\nname = \"x\"\npool = \"default\"\n", 5,
       "classes[1].name", "class 'x' is defined twice (first at line 2)"},
      {"bad class policy", "[[classes]]\nname = \"x\"\npool = \"default\"\npolicy = \"fifo\"\n", 4,
       "classes[0].policy", "fifo"},
      {"bad scorer", "[[classes]]\nname = \"x\"\npool = \"default\"\nscorer = \"random\"\n", 4,
       "classes[0].scorer", "must be one of fill_first, spread, got 'random'"},
      {"bad backfill", "[[classes]]\nname = \"x\"\npool = \"default\"\nbackfill = \"sometimes\"\n", 4,
       "classes[0].backfill", "expected \"none\", \"easy\" or \"conservative\", got \"sometimes\""},
      {"backfill not a string", "[[classes]]\nname = \"x\"\npool = \"default\"\n\nbackfill = true\n", 5,
       "classes[0].backfill", "expected a string"},
      {"class weight", "[[classes]]\nname = \"x\"\npool = \"default\"\nweight = 0\n", 4, "classes[0].weight",
       "must be in [1, 1000000]"},
      {"duplicate user", "[[users]]\nname = \"u\"\n[[users]]\nname = \"u\"\n", 4, "users[1].name",
       "user 'u' is defined twice"},
      {"preemption thresholds", "\n[preemption]\npreemption_satisfaction_threshold = 0.1\n", 2, "preemption",
       "must not exceed preemption_satisfaction_threshold"},
      {"settings quantum", "[settings]\nquantum = -5\n", 2, "settings.quantum", "must not be negative"},
      {"agent pool", "[agent]\npool = \"gpu\"\n", 2, "agent.pool", "'gpu' is not a pool"},
      {"agent pool not a leaf",
       "[[pools]]\nname = \"r\"\n[[pools]]\nname = \"a\"\nparent = \"r\"\n[agent]\npool = \"r\"\n", 7,
       "agent.pool", "not a leaf pool"},
      {"agent resources", "[agent]\nresources = \"cpu=four\"\n", 2, "agent.resources", "resource 'cpu'"},
      {"agent labels", "[agent]\nlabels = [\"ssd\", \"has space\"]\n", 2, "agent.labels",
       "'has space' is not a label"},
      {"agent labels type", "[agent]\nlabels = \"ssd\"\n", 2, "agent.labels", "expected an array of strings"},
      {"agent server", "[agent]\nserver = \"10.0.0.1\"\n", 2, "agent.server", "expected host:port"},
      {"agent server port", "[agent]\nserver = \"h:99999\"\n", 2, "agent.server", "in [1, 65535]"},
      {"agent max_starting", "[agent]\nmax_starting = 1.5\n", 2, "agent.max_starting", "expected an integer"},
      {"tls without a key", "[tls]\nca = \"ca.pem\"\ncert = \"s.pem\"\n", 1, "tls.key", "needs ca, cert and key"},
      {"tls unknown key", "[tls]\nca = \"a\"\ncert = \"b\"\nkey = \"c\"\ncafile = \"d\"\n", 5, "tls.cafile",
       "unknown"},
  };
}

TEST(ClusterConfig, EachProblemIsReportedWithItsLineAndField) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    auto problems = check_cluster_config(c.text);
    ASSERT_EQ(problems.size(), 1u) << all(problems);
    EXPECT_EQ(problems[0].line, c.line) << all(problems);
    EXPECT_EQ(problems[0].field, c.field) << all(problems);
    EXPECT_NE(problems[0].message.find(c.message), std::string::npos) << all(problems);
  }
}

TEST(ClusterConfig, MisspeltNamesGetASuggestion) {
  // The misspelt pool and the pool it leaves without a partition, both.
  auto problems = check_cluster_config(
      "[[pools]]\nname = \"cpu\"\n[[pools]]\nname = \"gpu-a100\"\n[[partitions]]\nid = 1\n"
      "pools = [\"cpu\", \"gpu-a10\"]\n[[classes]]\nname = \"batch\"\npool = \"cpuu\"\n"
      "[settings]\ndefault_class = \"bacth\"\n");
  ASSERT_EQ(problems.size(), 4u) << all(problems);
  EXPECT_EQ(problems[0].to_string("t.toml"),
            "t.toml:4: pools[1].name: leaf pool 'gpu-a100' is in no partition (add it to the pools of one "
            "[[partitions]])");
  EXPECT_EQ(problems[1].to_string("t.toml"),
            "t.toml:7: partitions[0].pools: 'gpu-a10' is not a pool; did you mean 'gpu-a100'?");
  EXPECT_EQ(problems[2].to_string("t.toml"),
            "t.toml:10: classes[0].pool: 'cpuu' is not a pool; did you mean 'cpu'?");
  EXPECT_EQ(problems[3].to_string("t.toml"),
            "t.toml:12: settings.default_class: 'bacth' is not a class; did you mean 'batch'?");
}

TEST(ClusterConfig, ValidVariantsPass) {
  for (std::string text : {
           "[agent]\nserver = \"[::1]:7070\"\n",
           "[listen]\nport = 0\n",
           "[tls]\nca = \"ca.pem\"\ncert = \"server.pem\"\nkey = \"server.key\"\n",
           "[storage]\nsync = \"always\"\n",
           "[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n[[partitions]]\nid = 7\npools = [\"b\", "
           "\"a\"]\n",
           "[[classes]]\nname = \"x\"\npool = \"default\"\nscorer = \"spread\"\npolicy = \"fixed_share\"\n"
           "allotment = \"memory=8Gi\"\n",
           "[[classes]]\nname = \"x\"\npool = \"default\"\nbackfill = \"conservative\"\n"
           "[[classes]]\nname = \"y\"\npool = \"default\"\npriority = 1\nbackfill = \"easy\"\n",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(all(check_cluster_config(text)), "");
  }
}

TEST(ClusterConfig, EveryProblemOfAFileIsReportedInLineOrder) {
  const std::string text = R"(cluster_id = "ok"
max_claims_in_flight = 0

[listen]
port = "http"

[timeouts]
heartbeat_intreval = "2s"
node_grace = "forever"

[[pools]]
name = "cpu"
[[pools]]
name = "gpu"

[[partitions]]
id = 1
pools = ["cpu", "cpu2"]

[[classes]]
name = "batch"
pool = "cpu"
scorer = "best"

[settings]
default_class = "prod"
)";
  auto problems = check_cluster_config(text);
  std::vector<std::pair<uint32_t, std::string>> got;
  for (const auto& p : problems) got.emplace_back(p.line, p.field);
  std::vector<std::pair<uint32_t, std::string>> want{
      {2, "max_claims_in_flight"}, {5, "listen.port"},        {8, "timeouts.heartbeat_intreval"},
      {9, "timeouts.node_grace"},  {14, "pools[1].name"},  // gpu is in no partition
      {18, "partitions[0].pools"}, {23, "classes[0].scorer"}, {26, "settings.default_class"},
  };
  EXPECT_EQ(got, want) << all(problems);
  // parse_cluster_config: the same problems, one per line, with the file name.
  auto parsed = parse_cluster_config(text, "cluster.toml");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, core::Errc::parse_error);
  std::vector<std::string> lines;
  std::istringstream in(parsed.error().message);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), want.size()) << parsed.error().message;
  EXPECT_EQ(lines[0], "cluster.toml:2: max_claims_in_flight: must be in [1, 1000000], got 0");
  EXPECT_EQ(lines[2].rfind("cluster.toml:8: timeouts.heartbeat_intreval: unknown key", 0), 0u) << lines[2];
}

TEST(ClusterConfig, AnHttpSectionTurnsMetricsOnAndABadAddressIsNamed) {
  auto off = parse_cluster_config("", "c.toml");
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->http.enabled);
  auto on = parse_cluster_config("[http]\nlisten = \"[::1]:9090\"\n", "c.toml");
  ASSERT_TRUE(on.has_value()) << on.error().message;
  EXPECT_TRUE(on->http.enabled);
  EXPECT_EQ(on->http.host, "::1");
  EXPECT_EQ(on->http.port, 9090);
  EXPECT_FALSE(on->http.plain) << "with [tls], HTTPS unless asked otherwise";
  auto plain = parse_cluster_config("[http]\nlisten = \"127.0.0.1:0\"\nplain = true\n", "c.toml");
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_TRUE(plain->http.plain);
  auto not_bool = parse_cluster_config("[http]\nlisten = \"127.0.0.1:0\"\nplain = \"yes\"\n", "c.toml");
  ASSERT_FALSE(not_bool.has_value());
  EXPECT_NE(not_bool.error().message.find("http.plain"), std::string::npos) << not_bool.error().message;
  auto empty = parse_cluster_config("[http]\n", "c.toml");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("http.listen"), std::string::npos) << empty.error().message;
  for (const char* bad : {"9090", "host:", ":9090", "h:99999", "h:x1"}) {
    auto parsed = parse_cluster_config(std::string("[http]\nlisten = \"") + bad + "\"\n", "c.toml");
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().message.find("c.toml:2: http.listen: must be HOST:PORT"), std::string::npos)
        << parsed.error().message;
  }
}

TEST(ClusterConfig, AnHaSectionMakesAMemberAndItsMistakesAreNamed) {
  auto parsed = parse_cluster_config(
      "[agent]\nserver = \"10.0.0.1:7070,10.0.0.2:7070\"\n"
      "[ha]\netcd = [\"http://10.0.0.1:2379\", \"http://10.0.0.2:2379\"]\nname = \"m1\"\nlease_ttl = \"2s\"\n"
      "ack = \"all\"\nadvertise = \"10.0.0.1:7070\"\n",
      "t.toml");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  ASSERT_TRUE(parsed->ha.has_value());
  EXPECT_EQ(parsed->ha->etcd.size(), 2u);
  EXPECT_EQ(parsed->ha->name, "m1");
  EXPECT_EQ(parsed->ha->lease_ttl, 2s);
  EXPECT_EQ(parsed->ha->ack, "all");
  EXPECT_EQ(parsed->agent.server, "10.0.0.1:7070,10.0.0.2:7070");
  EXPECT_FALSE(parse_cluster_config("", "t.toml")->ha.has_value()) << "no [ha]: a single server";
  auto defaults = parse_cluster_config("[ha]\n", "t.toml");
  ASSERT_TRUE(defaults.has_value());
  EXPECT_EQ(defaults->ha->ack, "one") << "RPO 0 unless said otherwise";
  EXPECT_EQ(defaults->ha->lease_ttl, 1s);

  auto problems = check_cluster_config(
      "[ha]\netcd = [\"127.0.0.1:2379\"]\nname = \"a/b\"\nlease_ttl = \"1500ms\"\nack = \"two\"\n"
      "advertise = \"nohost\"\npoll = \"1s\"\n");
  ASSERT_EQ(problems.size(), 6u) << all(problems);
  EXPECT_NE(all(problems).find("ha.poll: unknown key"), std::string::npos) << all(problems);
  EXPECT_NE(all(problems).find("ha.etcd: '127.0.0.1:2379': expected http://host:port"), std::string::npos)
      << all(problems);
  EXPECT_NE(all(problems).find("ha.name"), std::string::npos);
  EXPECT_NE(all(problems).find("ha.lease_ttl: must be whole seconds"), std::string::npos) << all(problems);
  EXPECT_NE(all(problems).find("ha.ack: must be one of owner, one, all, got 'two'"), std::string::npos)
      << all(problems);
  EXPECT_NE(all(problems).find("ha.advertise"), std::string::npos);
}

TEST(ClusterConfig, AnAuthSectionNamesItsTokensFileAndItsMistakesAreNamed) {
  EXPECT_FALSE(parse_cluster_config("", "t.toml")->auth.has_value()) << "no [auth]: authentication is off";
  auto parsed = parse_cluster_config("[auth]\ntokens_file = \"/etc/claimsched/tokens\"\n", "t.toml");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  ASSERT_TRUE(parsed->auth.has_value());
  EXPECT_EQ(parsed->auth->tokens_file, "/etc/claimsched/tokens");
  EXPECT_EQ(parsed->auth->audit_log, "") << "default: audit.log in data_dir";

  std::string summary = summarize_cluster_config(*parsed, "t.toml");
  std::replace(summary.begin(), summary.end(), '\n', ' ');
  EXPECT_NE(summary.find("clients present a token from /etc/claimsched/tokens"), std::string::npos) << summary;

  auto problems = check_cluster_config("[auth]\naudit_log = \"\"\ntoken = \"x\"\n");
  ASSERT_EQ(problems.size(), 3u) << all(problems);
  EXPECT_NE(all(problems).find("auth.tokens_file: is required"), std::string::npos) << all(problems);
  EXPECT_NE(all(problems).find("auth.audit_log: must not be empty"), std::string::npos) << all(problems);
  EXPECT_NE(all(problems).find("auth.token: unknown key"), std::string::npos) << all(problems);
}

TEST(ClusterConfig, ProblemsPrintAsFileLineFieldMessage) {
  EXPECT_EQ((ConfigProblem{12, "storage.sync", "bad"}).to_string("c.toml"), "c.toml:12: storage.sync: bad");
  EXPECT_EQ((ConfigProblem{0, "", "whole file"}).to_string("c.toml"), "c.toml: whole file");
  EXPECT_EQ((ConfigProblem{3, "", "syntax"}).to_string("c.toml"), "c.toml:3: syntax");
}

TEST(ClusterConfig, GarbageIsAParseErrorWithALine) {
  auto problems = check_cluster_config("cluster_id = \"a\"\nthis is not toml {{{\n");
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_EQ(problems[0].line, 2u);
  EXPECT_FALSE(problems[0].message.empty());
  problems = check_cluster_config("[listen]\nport = 1\n[listen]\nport = 2\n");  // a table defined twice
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_EQ(problems[0].line, 3u);
  problems = check_cluster_config(std::string("\x7f\x45\x4c\x46\x02\x01\x01\0\0\xff\xfe", 11));
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_GE(problems[0].line, 1u);
}

TEST(ClusterConfig, LoadReportsUnreadableFiles) {
  auto c = load_cluster_config("/nonexistent/cluster.toml");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, core::Errc::io_error);
  EXPECT_NE(c.error().message.find("/nonexistent/cluster.toml"), std::string::npos);
}

/// Problems of text that is not a configuration are still well formed.
void expect_sane(const std::string& text) {
  auto report = analyze_cluster_config(text, "fuzz.toml");
  auto lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n') + 1);
  for (const auto& p : report.problems) {
    ASSERT_FALSE(p.message.empty());
    ASSERT_LE(p.line, lines + 1) << p.to_string("fuzz.toml");
  }
  ASSERT_TRUE(std::is_sorted(report.problems.begin(), report.problems.end(),
                             [](const ConfigProblem& a, const ConfigProblem& b) { return a.line < b.line; }));
}

TEST(ClusterConfigFuzz, TruncationsOfTheExampleNeverCrash) {
  const std::string example = read(example_path());
  ASSERT_GT(example.size(), 1000u);
  for (size_t n = 0; n <= example.size(); n += 3) expect_sane(example.substr(0, n));
}

TEST(ClusterConfigFuzz, MutationsOfTheExampleNeverCrash) {
  const std::string example = read(example_path());
  std::mt19937_64 rng(42);
  const std::string alphabet = "[]{}=\"'#,.\n 0123456789-abcxyz\\\t";
  for (int round = 0; round < 1500; ++round) {
    std::string text = example;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1 + rng() % 8);
          break;
        default:
          text.insert(at, 1, static_cast<char>(rng() % 256));
          break;
      }
    }
    expect_sane(text);
  }
}

TEST(ClusterConfigFuzz, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    std::string text(rng() % 512, '\0');
    for (auto& ch : text) ch = static_cast<char>(rng() % 256);
    expect_sane(text);
  }
  // Mostly TOML-ish tokens: gets past the first line more often.
  const char* tokens[] = {"[", "]",     "[[",   "]]",          "=",          "\"", "\n",   "pools",
                          "a", "name",  "1",    "true",        "\"10s\"",    "{",  "}",    ",",
                          ".", "agent", "port", "[[pools]]\n", "partitions", "-1", "1e99", "'x'"};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) text += tokens[rng() % std::size(tokens)];
    expect_sane(text);
  }
}

}  // namespace
}  // namespace claimsched::apps
