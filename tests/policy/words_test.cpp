// What the policy says in words must be true of the numbers it decided on.

#include <gtest/gtest.h>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

// Bug 4 of issue 13: a preemption read "usage 0.6667 < fair share 0.7500 x
// tolerance 0.80", false as written. Here job 2 starves (its usage 0 is below
// 1/2 x 0.7 when the cycle starts), the regular stage gives it the 3 free
// cpus (usage 3/8 = 0.375, above 0.35), then the preemptive stage takes one
// of job 1's 5 tasks for it. The reason must state the numbers the status
// was computed on.
TEST(PolicyWords, APreemptionStatesTheInequalityItWasDecidedOn) {
  SnapshotBuilder s;
  s.preemption().fair_share_starvation_tolerance = 0.7;
  s.now(sec(100)).pool("root").cls("batch", "root").node(1, "root", "cpu=4").node(2, "root", "cpu=4");
  auto a = s.job(1, "a", "batch");
  for (int i = 0; i < 4; ++i) a.running(1, sec(i));
  a.running(2, sec(4));
  s.job(2, "b", "batch").pending(6);
  PolicyState below;
  below.job_below_fair_share_since.emplace_back(JobId{2}, sec(0));
  auto r = run(s.build(), below);
  ASSERT_EQ(job(r, 2).starvation, StarvationStatus::starving);
  ASSERT_EQ(r.plan.removals.size(), 1u);
  const std::string& d = r.plan.removals[0].detail;
  EXPECT_NE(d.find("usage 0.0000 < fair share 0.5000 x tolerance 0.70"), std::string::npos) << d;
  EXPECT_EQ(d.find("usage 0.3750 <"), std::string::npos) << d;
}

}  // namespace
}  // namespace claimsched::core::policy
