// The fair-share policy running inside a scheduler actor, on CAF's test
// coordinator with a virtual clock: a class that arrives when the cluster is
// full starves, then takes its fair share back by preemption within a bounded
// number of policy cycles, with about one preemption per task it reclaims.

#include "actors/node_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
constexpr int64_t kGi = int64_t{1} << 30;

core::policy::PolicyConfig two_classes() {
  core::policy::PolicyConfig p;
  p.pools.push_back(core::policy::PoolSpec{"p", "", {}, {}});
  core::policy::ClassSpec batch;
  batch.name = "batch";
  batch.pool = "p";
  core::policy::ClassSpec prod = batch;
  prod.name = "prod";
  p.classes = {batch, prod};
  p.settings.default_class = "batch";
  p.settings.preemption.fair_share_starvation_timeout = 2s;
  // YTsaurus's default tolerance (0.8) stops preempting at 80% of the fair
  // share; this test asks for 90%.
  p.settings.preemption.fair_share_starvation_tolerance = 0.95;
  p.settings.preemption.preemptive_scheduling_backoff = 200ms;
  p.interval = 500ms;
  return p;
}

core::JobSpec job(uint64_t id, std::string cls, uint32_t count) {
  core::JobSpec j;
  j.id = core::JobId{id};
  j.user = cls + "-user";
  j.job_class = std::move(cls);
  j.pool = "p";
  j.count = count;
  j.per_task = core::Resources::cpu_memory(1000, kGi);
  return j;
}

class FairShareTest : public ActorTest {};

TEST_F(FairShareTest, AStarvingClassTakesItsFairShareBackByPreemption) {
  actors::SchedulerActorConfig sc;
  sc.scheduler.partition = core::PartitionId{1};
  sc.scheduler.pools = {"p"};
  sc.scheduler.classes = {core::ClassConfig::named("batch"), core::ClassConfig::named("prod")};
  sc.scheduler.default_class = "batch";
  sc.tick_interval = 100ms;
  sc.policy = two_classes();
  auto s = spawn(actors::scheduler, sc);
  std::vector<actors::node_actor> nodes;
  for (uint32_t i = 1; i <= 4; ++i) {
    core::NodeSpec spec;
    spec.id = core::NodeId{i};
    spec.name = "node-" + std::to_string(i);
    spec.pool = "p";
    spec.capacity = core::Resources::cpu_memory(8000, 32 * kGi);
    actors::NodeActorConfig nc;
    nc.spec = spec;
    nodes.push_back(track(actors::spawn_node(sys(), std::move(nc))));
    caf::anon_send(s, actors::register_atom::value, nodes.back());
  }
  run();

  // batch fills the cluster (32 of 32 cores) and keeps it.
  ASSERT_TRUE(ask<core::JobId>(s, job(1, "batch", 40)).has_value());
  advance(100ms);
  auto running = [&](uint64_t id) {
    uint32_t n = 0;
    for (auto& node : nodes) {
      auto r = ask<core::NodeReport>(node, actors::report_atom::value);
      for (const auto& a : r->allocations) n += a.task.job.value == id;
    }
    return n;
  };
  ASSERT_EQ(running(1), 32u);

  // prod arrives wanting 32 cores: its fair share is half the cluster, 16.
  ASSERT_TRUE(ask<core::JobId>(s, job(2, "prod", 32)).has_value());
  const uint32_t fair = 16;
  const uint32_t target = (fair * 9 + 9) / 10;  // 90% of the fair share, rounded up
  int steps = 0;
  for (; steps < 200 && running(2) < target; ++steps) advance(100ms);
  auto elapsed = std::chrono::milliseconds(steps * 100);
  auto st = ask<actors::SchedulerStatus>(s, actors::audit_atom::value);
  ASSERT_TRUE(st.has_value());
  uint32_t reclaimed = running(2);
  ASSERT_GE(reclaimed, target) << "after " << elapsed.count() << " ms";
  // Nothing happens before the starvation timeout (2s); after it, a bounded
  // number of cycles (500ms each; at most one new task per node per stage).
  EXPECT_GE(elapsed, 2s);
  EXPECT_LE(elapsed, 2s + 10 * 500ms) << "policy cycles: " << st->policy_cycles;
  uint64_t preemptions = st->stats.preemptions;
  EXPECT_GT(preemptions, 0u);
  EXPECT_LE(static_cast<double>(preemptions), 1.1 * reclaimed)
      << preemptions << " preemptions for " << reclaimed << " tasks";
  EXPECT_EQ(st->stats.evictions, 0u) << "taking back a fair share is preemption, not eviction";
  EXPECT_TRUE(st->accounting_error.empty()) << st->accounting_error;
  // The batch job says why it lost tasks, and for whom.
  auto why = ask<std::string>(s, actors::explain_atom::value, core::JobId{1});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("preempted"), std::string::npos) << *why;
  EXPECT_NE(why->find("job 2"), std::string::npos) << *why;
  auto table = ask<std::string>(s, actors::pools_atom::value);
  ASSERT_TRUE(table.has_value());
  EXPECT_NE(table->find("prod"), std::string::npos) << *table;
  std::printf("prod reached %u of %u tasks (90%% of its fair share) %lld ms after arriving, "
              "%llu preemptions\n",
              reclaimed, fair, static_cast<long long>(elapsed.count()),
              static_cast<unsigned long long>(preemptions));
}

}  // namespace
}  // namespace claimsched::testing
