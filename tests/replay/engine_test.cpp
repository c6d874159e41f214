// The replay engine's virtual clock: hand-made traces whose schedule is
// worked out below, under FIFO (no policy) and under fair share.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/replay/engine.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core::replay {
namespace {

using std::chrono::seconds;
using testing::res;

ReplaySetup machine(uint32_t nodes, bool fair_share = false) {
  ReplaySetup s;
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"default"};
  s.partitions.push_back(c);
  for (uint32_t n = 1; n <= nodes; ++n) {
    NodeSpec spec;
    spec.id = NodeId{n};
    spec.name = "n" + std::to_string(n);
    spec.pool = "default";
    spec.capacity = res("cpu=1");
    s.nodes.push_back(spec);
  }
  if (fair_share) {
    policy::PolicyConfig p;
    p.pools.push_back(policy::PoolSpec{"default", "", {}, {}});
    // Starvation far beyond the test: fair share orders the queue, nothing is preempted.
    p.settings.preemption.fair_share_starvation_timeout = seconds(100'000);
    p.settings.preemption.fair_share_aggressive_starvation_timeout = seconds(200'000);
    p.interval = seconds(1);
    s.policy = p;
  }
  return s;
}

ReplayJob job(uint64_t id, const std::string& user, int64_t submit, uint32_t tasks, int64_t run, bool gang = true,
              int64_t limit = 0) {
  ReplayJob j;
  j.spec.id = JobId{id};
  j.spec.user = user;
  j.spec.pool = "default";
  j.spec.count = tasks;
  j.spec.per_task = res("cpu=1");
  j.spec.gang = gang && tasks > 1;
  j.spec.submit_time = seconds(submit);
  j.spec.max_run_time = seconds(limit);
  j.run = seconds(run);
  return j;
}

const JobOutcome& outcome(const ReplayResult& r, uint64_t number) {
  for (const auto& o : r.outcomes)
    if (o.number == number) return o;
  throw std::out_of_range("no outcome for job " + std::to_string(number));
}

int64_t wait_of(const ReplayResult& r, uint64_t number) {
  const auto& o = outcome(r, number);
  if (!o.start_s) throw std::logic_error("job " + std::to_string(number) + " never started");
  return *o.start_s - o.submit_s;
}

// Four one-CPU nodes, no backfill, no policy: the queue takes jobs in submit
// order and a job that does not fit waits while later ones that fit run.
//   t=0   J1 (2 wide, 100 s) starts on 2 nodes.
//   t=10  J2 (4 wide) does not fit: it waits.
//   t=20  J3 (2 wide, 200 s) fits on the 2 free nodes: starts, ends at 220.
//   t=30  J4, t=40 J5 (1 wide, 10 s): no room.
//   t=100 J1 ends: 2 nodes free; J2 still does not fit; J4 and J5 start, end at 110.
//   t=220 J3 ends: J2 starts, ends at 270.
TEST(ReplayEngine, AHandMadeTraceUnderFifoWaitsAsWorkedOut) {
  std::vector<ReplayJob> jobs{job(1, "a", 0, 2, 100), job(2, "a", 10, 4, 50), job(3, "b", 20, 2, 200),
                              job(4, "b", 30, 1, 10), job(5, "c", 40, 1, 10)};
  auto r = replay(machine(4), jobs);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->problem, "");
  EXPECT_EQ(wait_of(*r, 1), 0);
  EXPECT_EQ(wait_of(*r, 2), 210);
  EXPECT_EQ(wait_of(*r, 3), 0);
  EXPECT_EQ(wait_of(*r, 4), 70);
  EXPECT_EQ(wait_of(*r, 5), 60);
  EXPECT_EQ(outcome(*r, 2).end_s, 270);
  EXPECT_EQ(outcome(*r, 3).end_s, 220);
  EXPECT_EQ(r->unfinished, 0u);
  EXPECT_EQ(r->policy_cycles, 0u);
  // Every run was whole: 2·100 + 4·50 + 2·200 + 10 + 10 CPU-seconds.
  double busy = 0;
  for (const auto& o : r->outcomes) busy += o.busy_cpu_s;
  EXPECT_DOUBLE_EQ(busy, 820);
}

// Two one-CPU nodes. J1 (user a, 4 independent tasks of 100 s) takes both
// nodes at t=0; J2 (user b, 1 task) comes at t=10.
//   FIFO: J1's last two tasks go first at t=100; J2 waits until t=200.
//   Fair share: both jobs' share is one node. From the cycle after t=10, J1
//   (two running) is above its share and J2 below it, so J2 ranks first: at
//   t=100 J2 and J1's third task start; J1's fourth runs 200-300.
TEST(ReplayEngine, FairShareLetsTheSecondUserAheadOfTheFirstUsersBacklog) {
  std::vector<ReplayJob> jobs{job(1, "a", 0, 4, 100, false), job(2, "b", 10, 1, 100)};
  auto fifo = replay(machine(2), jobs);
  ASSERT_TRUE(fifo) << fifo.error().message;
  EXPECT_EQ(wait_of(*fifo, 2), 190);
  EXPECT_EQ(outcome(*fifo, 1).end_s, 200);

  auto fair = replay(machine(2, true), jobs);
  ASSERT_TRUE(fair) << fair.error().message;
  ASSERT_EQ(fair->problem, "");
  EXPECT_EQ(wait_of(*fair, 2), 90);
  EXPECT_EQ(outcome(*fair, 1).end_s, 300);
  EXPECT_GT(fair->policy_cycles, 0u);
  // A cycle on the ticks where its input changed (arrivals, starts, ends),
  // as the server runs them: not one a second for 300 s.
  EXPECT_LE(fair->policy_cycles, 12u);
  EXPECT_EQ(fair->outcomes[0].preemptions + fair->outcomes[1].preemptions, 0u);
}

TEST(ReplayEngine, ATaskOutlivingItsRequestedTimeIsKilledThere) {
  std::vector<ReplayJob> jobs{job(1, "a", 0, 1, 100, true, 40), job(2, "a", 5, 1, 10)};
  auto r = replay(machine(1), jobs);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(outcome(*r, 1).killed_at_limit);
  EXPECT_EQ(outcome(*r, 1).end_s, 40);
  EXPECT_DOUBLE_EQ(outcome(*r, 1).busy_cpu_s, 40);
  // Its room came back at the kill, not at the recorded run time.
  EXPECT_EQ(wait_of(*r, 2), 35);
  EXPECT_FALSE(outcome(*r, 2).killed_at_limit);
}

TEST(ReplayEngine, AJobWiderThanTheMachineIsRefusedAndCounted) {
  std::vector<ReplayJob> jobs{job(1, "a", 0, 3, 10), job(2, "a", 1, 1, 10)};
  auto r = replay(machine(2), jobs);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->outcomes.size(), 1u);
  EXPECT_EQ(r->outcomes[0].number, 2u);
  ASSERT_EQ(r->refusals.size(), 1u);
  EXPECT_EQ(r->refusals[0].job, JobId{1});
  uint64_t refused = 0;
  for (const auto& [reason, n] : r->refused) {
    refused += n;
    EXPECT_EQ(reason.find(' '), std::string::npos) << "a JSON key: " << reason;
  }
  EXPECT_EQ(refused, 1u);
}

TEST(ReplayEngine, TheSameTraceReplaysTheSameWay) {
  std::vector<ReplayJob> jobs;
  uint64_t x = 12345;
  for (uint64_t i = 1; i <= 300; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    jobs.push_back(job(i, "u" + std::to_string(x % 7), static_cast<int64_t>(i * 7), 1 + (x >> 33) % 6,
                       1 + static_cast<int64_t>((x >> 40) % 300), true, static_cast<int64_t>((x >> 20) % 400)));
  }
  auto a = replay(machine(8, true), jobs);
  auto b = replay(machine(8, true), jobs);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->problem, "");
  ASSERT_EQ(a->outcomes.size(), b->outcomes.size());
  for (size_t i = 0; i < a->outcomes.size(); ++i) {
    EXPECT_EQ(a->outcomes[i].start_s, b->outcomes[i].start_s) << "job " << a->outcomes[i].number;
    EXPECT_EQ(a->outcomes[i].end_s, b->outcomes[i].end_s) << "job " << a->outcomes[i].number;
  }
  EXPECT_EQ(a->unfinished, 0u);
}

TEST(ReplayEngine, UnsortedJobsAreAnError) {
  std::vector<ReplayJob> jobs{job(1, "a", 10, 1, 1), job(2, "a", 5, 1, 1)};
  auto r = replay(machine(1), jobs);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("sorted"), std::string::npos);
}

}  // namespace
}  // namespace claimsched::core::replay
