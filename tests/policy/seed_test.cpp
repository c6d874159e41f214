// Rules of the two source documents (../shared/seeds/) that the scenario
// tests do not pin by their own examples, each checked through the pipeline
// `policy eval` runs (evaluate). core/README.md maps every seed rule to its test.

#include <gtest/gtest.h>

#include "tests/policy/policy_builders.hpp"

namespace claimsched::core::policy {
namespace {

using namespace testing;

// DUCC, "Priority vs Weight": "It is possible to have multiple job classes of
// the same priority ... resources are allocated for the set of job classes
// from the same set of resources at the same time, usually under weighted
// fair-share." Weights divide a priority for fair_share classes and
// allotments cap the others; a priority that mixes the two has no defined
// division, so the configuration is refused, naming both classes.
TEST(DuccSeed, ClassesOfOnePriorityShareOnePolicy) {
  SnapshotBuilder s;
  s.pool("root").node(1, "root", "cpu=4");
  s.cls("batch", "root", 5).cls("svc", "root", 5, 1, ClassPolicy::fixed_share);
  auto r = evaluate(s.build());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("class 'svc' (fixed_share) has priority 5 like class 'batch' (fair_share)"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("must share one policy"), std::string::npos);
  // Non-preemptible classes of one priority share one policy too.
  auto& classes = s.snapshot().classes;
  classes[0].policy = ClassPolicy::reserve;
  EXPECT_FALSE(validate_classes(classes));
  classes[1].priority = 6;
  EXPECT_TRUE(validate_classes(classes));
}

// DUCC, "Prediction": new processes take a long time initializing, and the
// scheduler avoids "wasteful preemption". Victims waste the least work: among
// allocations of one class on a node, a task still initializing goes before
// one that has been processing, even if it started earlier (otherwise the
// newest goes: YTsaurus considers allocations "from later to earlier").
// Job 1 runs 4 tasks on a 4-cpu node with a fair share of 2: its 3rd and 4th
// by start are preemptible. The 3rd (started at 100s) is still initializing,
// the 4th (at 1h) processes. Starving job 2 needs one cpu: the 3rd goes.
TEST(DuccSeed, AVictimStillInitializingGoesBeforeOneProcessing) {
  SnapshotBuilder s;
  s.now(sec(7200)).pool("root").cls("batch", "root").node(1, "root", "cpu=4");
  s.job(1, "a", "batch")
      .running(1, sec(0))
      .running(1, sec(1))
      .running(1, sec(100), false, /*initialized=*/false)
      .running(1, sec(3600), false, /*initialized=*/true);
  s.job(2, "b", "batch").pending(2);
  PolicyState starving{{{JobId{2}, sec(0)}}, {}, {}};
  auto r = run(s.build(), starving);
  EXPECT_EQ(classes_of(r, 1)[2], AllocationClass::preemptible);
  EXPECT_EQ(classes_of(r, 1)[3], AllocationClass::preemptible);
  ASSERT_EQ(r.plan.removals.size(), 1u) << render_text(r);
  EXPECT_EQ(r.plan.removals[0].task, (TaskRef{JobId{1}, 2}));
  // Both processing: the newest goes.
  s.job_info(1).allocations[2].initialized = true;
  auto r2 = run(s.build(), starving);
  ASSERT_EQ(r2.plan.removals.size(), 1u);
  EXPECT_EQ(r2.plan.removals[0].task, (TaskRef{JobId{1}, 3}));
}

// Fair share is a vector over every resource (DRF, as DUCC's shares of a
// quantum generalise to several resources): demands that saturate different
// resources each get their dominant share, and every resource is divided in
// full. 2 nodes of cpu=16,memory=16Gi (32 cpu, 32Gi). Class c runs cpu-heavy
// tasks (cpu=4, 1Gi), class m memory-heavy ones (cpu=1, 4Gi), equal weights:
// both reach the dominant share 0.8 (6.4 tasks each: c takes 25.6 cpu and
// 6.4Gi, m 6.4 cpu and 25.6Gi), so cpu and memory are both fully shared out.
// (Where the tasks go is placement's: fill-first packs c's first tasks onto
// node 1, and the shortfall that leaves m is for starvation to correct.)
TEST(DrfSeed, FairShareIsAVectorOverEveryResource) {
  SnapshotBuilder s;
  s.pool("root").nodes(1, 2, "root", "cpu=16,memory=16Gi");
  s.cls("c", "root").cls("m", "root");
  s.job(1, "u1", "c").per_task("cpu=4,memory=1Gi").pending(100);
  s.job(2, "u2", "m").per_task("cpu=1,memory=4Gi").pending(100);
  auto r = run(s.build());
  const auto& c = job(r, 1);
  const auto& m = job(r, 2);
  EXPECT_EQ(c.fair_share_share, share(4, 5));
  EXPECT_EQ(m.fair_share_share, share(4, 5));
  EXPECT_NEAR(c.fair_tasks, 6.4, 1e-9);
  EXPECT_NEAR(m.fair_tasks, 6.4, 1e-9);
  // Per resource: c's vector is cpu-heavy, m's memory-heavy, and together
  // they divide each resource in full (to the unit).
  EXPECT_NEAR(static_cast<double>(c.fair_share[dim::cpu]), 25600.0, 1.0);
  EXPECT_NEAR(static_cast<double>(m.fair_share[dim::memory]), 25.6 * (1LL << 30), 1.0);
  for (DimensionId d : {dim::cpu, dim::memory})
    EXPECT_NEAR(static_cast<double>(c.fair_share[d] + m.fair_share[d]), static_cast<double>(r.pools[0].scope[d]),
                2.0);
  // The pool's vector is the sum of its work's, in every dimension.
  EXPECT_EQ(r.pools[0].fair_share, c.fair_share + m.fair_share);
  // The queue places each job up to its whole fair share first.
  EXPECT_GE(placed(r, 1), 6u);
  EXPECT_GT(placed(r, 2), 0u);
}

}  // namespace
}  // namespace claimsched::core::policy
