// `--map` rules: how a trace's users, groups, queues and partitions become
// classes and pools.

#include "core/replay/mapping.hpp"

#include <gtest/gtest.h>

// Built in one unity file with the other tests of replay_tests: the helpers
// live in their own namespace so no name can meet another file's.
namespace claimsched::core::replay::mapping_test {
namespace {

MapRule rule(std::string_view text) {
  auto parsed = parse_map_rule(text);
  EXPECT_TRUE(parsed) << text << ": " << parsed.error().to_string();
  return parsed ? *parsed : MapRule{};
}

TraceJob job_with(std::string queue, std::string partition = "", std::string user = "") {
  TraceJob job;
  job.queue = std::move(queue);
  job.partition = std::move(partition);
  job.user = std::move(user);
  return job;
}

TEST(MapRuleParse, FieldValueAndTargets) {
  MapRule one = rule("queue=1:class=prod");
  EXPECT_EQ(one.field, "queue");
  EXPECT_EQ(one.value, "1");
  EXPECT_EQ(one.job_class, "prod");
  EXPECT_EQ(one.pool, "");

  MapRule both = rule(" partition = 2 : pool = gpu , class = batch ");
  EXPECT_EQ(both.field, "partition");
  EXPECT_EQ(both.value, "2");
  EXPECT_EQ(both.pool, "gpu");
  EXPECT_EQ(both.job_class, "batch");

  for (std::string_view field : {"user", "group", "queue", "partition", "executable"})
    EXPECT_EQ(rule(std::string(field) + "=*:pool=p").field, field);

  MapRule colon_in_value = rule("executable=C:/bin/sim:class=batch");
  EXPECT_EQ(colon_in_value.value, "C:/bin/sim") << "the last ':' separates the targets";
  EXPECT_EQ(colon_in_value.job_class, "batch");
}

TEST(MapRuleParse, ErrorsNameWhatIsWrong) {
  struct Case {
    std::string_view text;
    std::string_view names;
  };
  for (const Case& c : {
           Case{"queue=1", "missing ':'"},
           Case{"host=1:class=prod", "unknown field 'host'"},
           Case{"queue:class=prod", "expected FIELD=VALUE"},
           Case{"queue=:class=prod", "no value for queue"},
           Case{"queue=1:klass=prod", "unknown target 'klass'"},
           Case{"queue=1:class=", "empty name for class"},
           Case{"queue=1:pool=  ,class=a", "empty name for pool"},
           Case{"queue=1:", "no target"},
           Case{"queue=1:class", "expected TARGET=NAME"},
           Case{"queue=1:class=a,class=b", "class is set twice"},
       }) {
    auto parsed = parse_map_rule(c.text);
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().code, Errc::parse_error);
    EXPECT_NE(parsed.error().message.find(c.names), std::string::npos) << c.text << " -> " << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(c.text), std::string::npos)
        << "the rule is quoted: " << parsed.error().message;
  }
}

TEST(MapJob, FirstMatchingRuleWinsForEachTarget) {
  std::vector<MapRule> rules = {
      rule("queue=1:class=prod"),
      rule("queue=1:class=batch,pool=cpu"),  // its class comes too late, its pool does not
      rule("partition=2:pool=gpu"),
  };
  JobTarget target = map_job(rules, job_with("1", "2"));
  EXPECT_EQ(target.job_class, "prod");
  EXPECT_EQ(target.pool, "cpu");

  JobTarget other_queue = map_job(rules, job_with("3", "2"));
  EXPECT_EQ(other_queue.job_class, "");
  EXPECT_EQ(other_queue.pool, "gpu");

  EXPECT_EQ(map_job(rules, job_with("10", "20")).job_class, "") << "values match whole, not by prefix";
}

TEST(MapJob, StarMatchesAnyValueIncludingUnknown) {
  std::vector<MapRule> rules = {rule("user=17:class=vip"), rule("user=*:class=rest")};
  EXPECT_EQ(map_job(rules, job_with("", "", "17")).job_class, "vip");
  EXPECT_EQ(map_job(rules, job_with("", "", "18")).job_class, "rest");
  EXPECT_EQ(map_job(rules, job_with("", "", "")).job_class, "rest") << "an unknown user matches '*'";
}

TEST(MapJob, WithoutAMatchTheTracesOwnClassAndPoolThenNothing) {
  TraceJob named = job_with("1");
  named.job_class = "from-csv";
  named.pool = "csv-pool";
  std::vector<MapRule> rules = {rule("queue=1:pool=mapped")};
  JobTarget target = map_job(rules, named);
  EXPECT_EQ(target.job_class, "from-csv") << "no rule sets the class";
  EXPECT_EQ(target.pool, "mapped") << "a rule overrides the trace";

  JobTarget unnamed = map_job({}, job_with("1"));
  EXPECT_EQ(unnamed.job_class, "");
  EXPECT_EQ(unnamed.pool, "");
}

}  // namespace
}  // namespace claimsched::core::replay::mapping_test
