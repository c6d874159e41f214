// One engine: `claimsched policy eval` (evaluate) and the live pipeline make
// the same decisions. A scheduler is driven over real NodeLedgers to a state
// (a cluster full of batch work, then a starving production job, a
// fixed_share service and a reservation arrive); the policy's snapshot of that
// state goes to evaluate(), and the live scheduler takes its next step
// (ranks, a placement pass, a policy cycle). Both must place the same tasks on
// the same nodes, hold the same room for the same victims, and take away the
// same tasks. Then the live cluster carries the step out and the invariants
// hold: the reservation has a whole machine, the allotment held.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "core/policy/policy.hpp"
#include "core/policy/stage.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::res;
using testing::SimCluster;

SchedulerConfig classes_config() {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"default"};
  auto batch = ClassConfig::named("batch", 0, 1);
  auto prod = ClassConfig::named("prod", 0, 3);
  auto svc = ClassConfig::named("svc", 10);
  svc.policy = ClassPolicy::fixed_share;
  svc.allotment = *Limits::parse("memory=16Gi");
  auto res_class = ClassConfig::named("res", 20);
  res_class.policy = ClassPolicy::reserve;
  c.classes = {batch, prod, svc, res_class};
  c.default_class = "batch";
  c.unpark_interval = ms(5);
  return c;
}

policy::PolicyConfig policy_config() {
  policy::PolicyConfig p;
  p.pools.push_back(policy::PoolSpec{"default", "", {}, {}});
  p.settings.preemption.fair_share_starvation_timeout = std::chrono::seconds(10);
  p.settings.preemption.fair_share_starvation_tolerance = 1.0;
  p.settings.preemption.preemptive_scheduling_backoff = Duration{0};
  return p;
}

using PlacementKey = std::tuple<uint64_t, uint32_t, uint32_t, std::vector<TaskRef>>;  // job, node, count, waits

class OneEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t n = 1; n <= 6; ++n)
      cluster.add_node(NodeBuilder(n).capacity(n == 6 ? "cpu=8,memory=32Gi" : "cpu=8,memory=16Gi").build());
    s = cluster.add_scheduler(classes_config());
    // Batch fills the cluster, a task a second.
    ASSERT_TRUE(cluster.submit(s, JobBuilder(1).user("ann").count(40).resources("cpu=1,memory=2Gi").build()));
    ASSERT_TRUE(cluster.submit(s, JobBuilder(2).user("ann").count(8).resources("cpu=1,memory=4Gi").build()));
    cluster.run();
    ASSERT_EQ(cluster.check_all(), "");
    cluster.advance_by(std::chrono::seconds(60));
    cluster.run();
  }
  Scheduler& sched() { return cluster.scheduler(s); }

  SimCluster cluster;
  size_t s = 0;
};

TEST_F(OneEngineTest, PolicyEvalOfTheSnapshotIsWhatThePipelineDoesNext) {
  // Arrivals the scheduler has not placed yet (as an actor between messages).
  TimePoint now = cluster.now();
  ASSERT_TRUE(sched().submit(JobBuilder(10).user("bob").job_class("prod").count(12).resources("cpu=2,memory=2Gi")
                                 .submitted(now).build(), now));
  ASSERT_TRUE(sched().submit(JobBuilder(11).user("ops").job_class("svc").count(2).resources("cpu=1,memory=4Gi")
                                 .submitted(now).build(), now));
  ASSERT_TRUE(sched().submit(JobBuilder(12).user("ops").job_class("svc").count(2).resources("cpu=1,memory=8Gi")
                                 .submitted(now).build(), now));
  ASSERT_TRUE(sched().submit(JobBuilder(13).user("dee").job_class("res").resources("cpu=1,memory=32Gi")
                                 .submitted(now).build(), now));
  policy::PolicyStage stage(policy_config());
  // prod has been below its fair share for a minute: it starves.
  policy::PolicyState state;
  state.job_below_fair_share_since = {{JobId{10}, now - std::chrono::seconds(60)}};
  stage.set_state(state);

  // policy eval, on the snapshot of this state.
  policy::Snapshot snapshot = stage.snapshot_of(sched(), now);
  auto evaluated = policy::evaluate(snapshot, state);
  ASSERT_TRUE(evaluated) << evaluated.error().message;

  // The live pipeline's next step.
  ASSERT_TRUE(stage.rank(sched(), now));
  Outbox out;
  sched().schedule(now, out);
  auto summary = stage.cycle(sched(), now, out);
  ASSERT_TRUE(summary) << summary.error().message;

  std::set<PlacementKey> live, eval;
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> claimed;
  for (const auto& c : out.claims) claimed[{c.job.value, c.node.value}] += static_cast<uint32_t>(c.tasks.size());
  for (const auto& [key, count] : claimed) live.insert({key.first, key.second, count, {}});
  for (const auto& [job, hold] : sched().reservations().all())
    for (const auto& part : hold.parts)
      live.insert({job.value, sched().view().node(part.node).id.value, part.tasks, part.waiting_for});
  for (const auto& p : evaluated->plan.placements) {
    auto waits = p.waits_for;
    std::sort(waits.begin(), waits.end());
    eval.insert({p.job.value, p.node.value, p.count, waits});
  }
  EXPECT_EQ(live, eval);
  std::set<std::pair<TaskRef, uint32_t>> live_removed, eval_removed;
  for (const auto& r : stage.last()->plan.removals) live_removed.insert({r.task, r.node.value});
  for (const auto& r : evaluated->plan.removals) eval_removed.insert({r.task, r.node.value});
  EXPECT_EQ(live_removed, eval_removed);

  // Not vacuous: every stage had something to do.
  std::set<policy::Stage> stages;
  for (const auto& p : evaluated->plan.placements) stages.insert(p.stage);
  EXPECT_TRUE(stages.count(policy::Stage::non_preemptible)) << policy::render_text(*evaluated);
  EXPECT_TRUE(stages.count(policy::Stage::preemptive) || stages.count(policy::Stage::regular))
      << policy::render_text(*evaluated);
  EXPECT_FALSE(eval_removed.empty()) << policy::render_text(*evaluated);
  EXPECT_EQ(summary->preemptions, live_removed.size());

  // The live cluster carries it out: victims freed, holds claimed.
  for (int round = 0; round < 20; ++round) {
    for (auto& r : out.releases) cluster.send_to_node(s, r.node.value - 1, r);
    for (auto& c : out.claims) cluster.send_to_node(s, c.node.value - 1, c);
    out.clear();
    cluster.run();
    cluster.advance_by(ms(10));
    cluster.run();
  }
  EXPECT_EQ(cluster.check_all(), "");
  // The reservation runs alone on the one machine of its size, whole.
  const auto& machine = cluster.ledger(5);
  ASSERT_EQ(machine.allocations().size(), 1u);
  EXPECT_EQ(machine.allocations()[0].task.job, JobId{13});
  EXPECT_EQ(machine.allocations()[0].resources, machine.capacity());
  // svc's allotment (16Gi per user) admits job 11 (8Gi), not job 12 too (16Gi more).
  EXPECT_EQ(sched().job(JobId{11})->count_in(TaskState::running), 2u);
  EXPECT_EQ(sched().job(JobId{12})->count_in(TaskState::running), 0u);
  EXPECT_NE(sched().explain(JobId{12}).find("allotment"), std::string::npos) << sched().explain(JobId{12});
}

}  // namespace
}  // namespace claimsched::core
