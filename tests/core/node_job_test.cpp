// Node labels and selectors, node states, and job validation.

#include <gtest/gtest.h>

#include "core/job.hpp"
#include "core/limits.hpp"
#include "core/node.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::JobBuilder;

TEST(LabelSelector, PresenceValueAndAbsence) {
  const std::vector<std::string> labels{"ssd", "os=linux", "zone=a"};
  EXPECT_TRUE(label_selector_matches("ssd", labels));
  EXPECT_TRUE(label_selector_matches("os", labels));  // a key matches any value
  EXPECT_TRUE(label_selector_matches("os=linux", labels));
  EXPECT_FALSE(label_selector_matches("os=windows", labels));
  EXPECT_FALSE(label_selector_matches("gpu", labels));
  EXPECT_TRUE(label_selector_matches("!gpu", labels));
  EXPECT_FALSE(label_selector_matches("!ssd", labels));
  EXPECT_FALSE(label_selector_matches("!os", labels));
  EXPECT_FALSE(label_selector_matches("ss", labels));  // whole keys only
  EXPECT_TRUE(label_selectors_match({}, labels));
  EXPECT_TRUE(label_selectors_match({"ssd", "zone=a", "!gpu"}, labels));
  EXPECT_FALSE(label_selectors_match({"ssd", "zone=b"}, labels));
  EXPECT_TRUE(label_selector_matches("!gpu", {}));
  EXPECT_FALSE(label_selector_matches("ssd", {}));
}

TEST(LabelSelector, ValidationNamesTheSelector) {
  for (const char* ok : {"ssd", "os=linux", "!gpu", "a.b/c=d-e"})
    EXPECT_TRUE(validate_label_selector(ok)) << ok;
  for (const char* bad : {"", "!", "=linux", "!os=linux", "ssd,nvme", "has space"}) {
    auto st = validate_label_selector(bad);
    ASSERT_FALSE(st) << "'" << bad << "' was accepted";
    EXPECT_EQ(st.error().code, Errc::invalid_argument);
    EXPECT_NE(st.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << st.error().message;
  }
}

TEST(NodeState, NamesRoundTrip) {
  for (NodeState s : {NodeState::up, NodeState::draining, NodeState::down})
    EXPECT_EQ(*parse_node_state(to_string(s)), s);
  auto bad = parse_node_state("sleeping");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'sleeping'"), std::string::npos);
}

TEST(TaskStates, FinalStates) {
  EXPECT_FALSE(is_final(TaskState::pending));
  EXPECT_FALSE(is_final(TaskState::claimed));
  EXPECT_FALSE(is_final(TaskState::running));
  for (TaskState s : {TaskState::succeeded, TaskState::failed, TaskState::preempted,
                      TaskState::evicted, TaskState::lost, TaskState::cancelled}) {
    EXPECT_TRUE(is_final(s)) << to_string(s);
    EXPECT_NE(to_string(s), "unknown");
  }
}

TEST(JobValidation, AcceptsAnOrdinaryJob) {
  auto st = validate(JobBuilder().count(10).cpu("500m").memory("1Gi").pool("p").build());
  EXPECT_TRUE(st) << st.error().to_string();
}

TEST(JobValidation, EachProblemNamesItsField) {
  struct Case {
    JobSpec job;
    const char* field;
  };
  std::vector<Case> cases{
      {JobBuilder().count(0).build(), "'count'"},
      {JobBuilder().count(kMaxTasksPerJob + 1).build(), "'count'"},
      {JobBuilder().resources("").build(), "'resources'"},
      {JobBuilder().resources(testing::res("cpu=1") - testing::res("memory=1")).build(),
       "'resources'"},
      {JobBuilder()
           .count(1'000'000)
           .resources(Resources::of({{dim::memory, int64_t{1} << 50}}))
           .build(),
       "'resources'"},
      {JobBuilder().pool("").build(), "'pool'"},
      {JobBuilder().user("").build(), "'user'"},
      {JobBuilder().constraint("!os=linux").build(), "'constraints'"},
      {JobBuilder().max_run_time(Duration{-1}).build(), "'max_run_time'"},
      {JobBuilder().runtime(Duration{-1}).build(), "'simulated_runtime'"},
  };
  for (const auto& c : cases) {
    auto st = validate(c.job);
    ASSERT_FALSE(st) << c.field;
    EXPECT_EQ(st.error().code, Errc::invalid_argument);
    EXPECT_NE(st.error().message.find(c.field), std::string::npos) << st.error().message;
  }
}

TEST(JobValidation, AppliesTheLimitsEveryDecoderApplies) {
  // A job accepted here is one the server's decoder accepts (core/limits.hpp):
  // otherwise the server would drop it without an answer.
  auto with = [](auto change) {
    JobSpec j = JobBuilder().count(1).cpu("1").pool("p").build();
    change(j);
    return validate(j);
  };
  struct Case {
    Status st;
    const char* says;
  };
  std::vector<Case> cases{
      {with([](JobSpec& j) { j.constraints.assign(kMaxLabels + 1, "ssd"); }), "(kMaxLabels)"},
      {with([](JobSpec& j) { j.command.assign(kMaxArguments + 1, "x"); }), "(kMaxArguments)"},
      {with([](JobSpec& j) { j.env.assign(kMaxEnvironment + 1, {"A", "1"}); }), "(kMaxEnvironment)"},
      {with([](JobSpec& j) { j.command = {"/bin/echo", std::string(kMaxJobTextBytes, 'x')}; }),
       "(kMaxJobTextBytes)"},
      {with([](JobSpec& j) { j.max_run_time = kMaxDuration + Duration{1}; }), "(kMaxDuration)"},
      {with([](JobSpec& j) { j.simulated_runtime = kMaxDuration + Duration{1}; }), "(kMaxDuration)"},
  };
  for (const auto& c : cases) {
    ASSERT_FALSE(c.st) << c.says;
    EXPECT_NE(c.st.error().message.find(c.says), std::string::npos) << c.st.error().message;
  }
  EXPECT_TRUE(with([](JobSpec& j) { j.command.assign(kMaxArguments, "x"); }));
}

}  // namespace
}  // namespace claimsched::core
