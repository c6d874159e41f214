// The policy's input checks (validate): bad input is an error that names the
// entity and field, never a crash.

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

TEST(PolicyValidation, ErrorsNameTheOffendingField) {
  auto expect_error = [](const Snapshot& s, std::string_view text) {
    auto r = run_cycle(s);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
  };
  {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "root").node(1, "root", "cpu=1");
    s.job(1, "a", "nope");
    expect_error(s.build(), "job 1: class 'nope' is not a class");
  }
  {
    SnapshotBuilder s;
    s.pool("x", "y").pool("y", "x");
    expect_error(s.build(), "cycle");
  }
  {
    SnapshotBuilder s;
    s.preemption().aggressive_preemption_satisfaction_threshold = 0.9;
    s.preemption().preemption_satisfaction_threshold = 0.8;
    expect_error(s.build(), "aggressive_preemption_satisfaction_threshold (0.900000) must not exceed");
  }
  {
    SnapshotBuilder s;
    s.pool("root").cls("r", "root", 0, 1, ClassPolicy::reserve);
    s.job(1, "a", "r").per_task("memory=1Gi").pending(2);
    expect_error(s.build(), "exactly one machine per job");
  }
  {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "root").node(1, "root", "cpu=1");
    s.job(1, "a", "batch").running(7, sec(0));
    expect_error(s.build(), "job 1 allocation 0: node 7 is not a node");
  }
  {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "root").node(1, "root", "cpu=1").node(1, "root", "cpu=1");
    expect_error(s.build(), "node 1 is defined twice");
  }
  {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "elsewhere");
    expect_error(s.build(), "class 'batch': pool 'elsewhere' is not a pool");
  }
  // A task listed twice, among a few allocations and among many, in any order.
  for (int n : {3, 100}) {
    SnapshotBuilder s;
    s.pool("root").cls("batch", "root").node(1, "root", "cpu=1000");
    auto job = s.job(1, "a", "batch");
    for (int i = 0; i < n; ++i) job.running(1, sec(0));
    Snapshot snap = s.build();
    auto& allocations = snap.jobs[0].allocations;
    allocations.back().index = 1;
    std::reverse(allocations.begin(), allocations.end());
    expect_error(snap, "job 1 allocation 1 is listed twice");
    std::reverse(allocations.begin(), allocations.end());
    expect_error(snap, "job 1 allocation 1 is listed twice");
  }
}

}  // namespace
}  // namespace claimsched::core::policy
