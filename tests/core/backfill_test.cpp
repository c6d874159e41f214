// Backfilling (issue 14, core/pipeline/backfill.hpp): hand-made schedules on
// the simulated cluster, each with its right answer worked out in a comment.
// Every task runs exactly its max_run_time (runtime == max_run_time), so the
// reservations computed from max_run_time are the true end times.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/duration.hpp"
#include "core/pipeline/backfill.hpp"
#include "core/random.hpp"
#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using namespace std::chrono_literals;
using testing::JobBuilder;
using testing::NodeBuilder;
using testing::res;
using testing::SimCluster;

constexpr TimePoint at(std::chrono::seconds s) { return std::chrono::duration_cast<TimePoint>(s); }

SchedulerConfig config_with(BackfillMode mode) {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.epoch = 1;
  c.pools = {"default"};
  ClassConfig hpc = ClassConfig::named("hpc");
  hpc.backfill = mode;
  c.classes = {hpc};
  c.default_class = "hpc";
  // Every pass looks at every waiting job: the cluster delivers a node's
  // news after the tick of advance_to, and a rate-limited unpark would
  // leave the job for the actor's next wakeup, which this harness has not.
  c.unpark_interval = Duration{0};
  return c;
}

/// One task of `cpu` cpus that runs exactly `run` (its max_run_time).
JobSpec task(uint64_t id, std::string_view cpu, Duration run) {
  return JobBuilder(id).resources("cpu=" + std::string(cpu)).max_run_time(run).runtime(run).build();
}

/// A gang of `count` tasks of `cpu` cpus that runs exactly `run`.
JobSpec gang(uint64_t id, uint32_t count, std::string_view cpu, Duration run) {
  return JobBuilder(id).count(count).resources("cpu=" + std::string(cpu)).gang().max_run_time(run).runtime(run).build();
}

class BackfillTest : public ::testing::Test {
 protected:
  void add_node(std::string_view capacity) {
    cluster.add_node(NodeBuilder(static_cast<uint32_t>(cluster.node_count() + 1)).capacity(capacity).build());
  }
  void start(BackfillMode mode) { s = cluster.add_scheduler(config_with(mode)); }
  Scheduler& sched() { return cluster.scheduler(s); }
  const JobRecord& job(uint64_t id) { return *sched().job(JobId{id}); }
  void submit(JobSpec spec) {
    ASSERT_TRUE(cluster.submit(s, std::move(spec)));
    run();
  }
  void run() {
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  void advance_to(TimePoint t) {
    cluster.advance_to(t);
    run();
  }
  bool running(uint64_t id) { return job(id).count_in(TaskState::running) == job(id).spec.count; }
  bool waits(uint64_t id) { return job(id).pending() == job(id).spec.count; }
  /// When its tasks started (all at once for these jobs).
  TimePoint started(uint64_t id) { return job(id).first_running; }
  std::string why(uint64_t id) { return sched().explain(JobId{id}); }
  void TearDown() override {
    EXPECT_EQ(cluster.check_all(), "");
    for (const auto& v : cluster.violations()) ADD_FAILURE() << v;
    EXPECT_TRUE(sched().check_accounting());
  }

  /// Nodes 1 and 2 of cpu=4 and node 3 of cpu=2, then
  ///   job 1: cpu=4 for 100s -> node 1 (full until 100s)
  ///   job 2: cpu=2 for  50s -> node 2 (2 free until 50s)
  ///   job 3: a gang of 2 x cpu=4 for 100s: no room now.
  /// Its earliest start: at 50s node 2 is empty (one task fits), at 100s
  /// node 1 too (two): T = 100s on nodes 1 and 2. Node 3 (cpu=2) can never
  /// hold a task of it. On node 2 it needs all 4 cpus at T, of which 2 are
  /// free now: a later job that runs past T must leave those 2 alone.
  void wide_job_waits(BackfillMode mode) {
    add_node("cpu=4");
    add_node("cpu=4");
    add_node("cpu=2");
    start(mode);
    submit(task(1, "4", 100s));
    submit(task(2, "2", 50s));
    submit(gang(3, 2, "4", 100s));
    ASSERT_TRUE(running(1));
    ASSERT_TRUE(running(2));
    ASSERT_TRUE(waits(3));
  }
  /// (3): the same schedule under easy and conservative.
  void second_waiting_job(BackfillMode mode);
  SimCluster cluster;
  size_t s = 0;
};

// (1) backfill = "none" is today's behaviour: jobs behind the wide one take
// whatever room there is, the wide one gets no reservation.
TEST_F(BackfillTest, NoneLetsAnyLaterJobTakeTheRoom) {
  wide_job_waits(BackfillMode::none);
  submit(task(4, "2", 200s));  // node 2's free 2 (fill-first): would delay job 3, nothing is reserved
  submit(task(5, "2", 200s));  // node 3
  EXPECT_TRUE(running(4));
  EXPECT_TRUE(running(5));
  EXPECT_TRUE(sched().future_starts().empty());
  EXPECT_EQ(why(3).find("reserved"), std::string::npos) << why(3);
  // At 100s node 1 frees, but node 2 is held by job 5 until 200s: job 3
  // waits for it (this is what backfilling is for).
  advance_to(at(100s));
  EXPECT_TRUE(waits(3));
  advance_to(at(200s));
  EXPECT_TRUE(running(3));
  EXPECT_EQ(started(3), at(200s));
}

// (2) easy: the wide gang gets T = 100s on nodes 1 and 2; later jobs
//   job 4: cpu=2 for 200s fits on node 3, which T does not need -> starts;
//   job 5: cpu=2 for 200s fits only in node 2's free 2, runs past T -> kept;
//   job 6: cpu=2 for  90s ends at 90s <= T -> starts on node 2.
// Job 3 then starts exactly at 100s, when job 1 ends (job 2 ended at 50s,
// job 6 at 90s), and job 5 waits behind it all along.
TEST_F(BackfillTest, EasyReservesTheWideJobAndBackfillsOnlyWhatDoesNotDelayIt) {
  wide_job_waits(BackfillMode::easy);
  ASSERT_EQ(sched().future_starts().size(), 1u);
  const FutureStart& fs = sched().future_starts()[0];
  EXPECT_EQ(fs.job, JobId{3});
  EXPECT_EQ(fs.at, at(100s));
  ASSERT_EQ(fs.parts.size(), 2u);
  EXPECT_EQ(fs.parts[0].node, 0u);
  EXPECT_EQ(fs.parts[1].node, 1u);
  EXPECT_EQ(fs.parts[0].tasks + fs.parts[1].tasks, 2u);

  submit(task(4, "2", 200s));
  EXPECT_TRUE(running(4));
  EXPECT_EQ(job(4).tasks[0].node, NodeIndex{2});
  submit(task(5, "2", 200s));
  EXPECT_TRUE(waits(5));
  submit(task(6, "2", 90s));
  EXPECT_TRUE(running(6));
  EXPECT_EQ(job(6).tasks[0].node, NodeIndex{1});

  advance_to(at(50s));  // job 2 ends: room grows on node 2, not enough for job 3
  EXPECT_TRUE(waits(3));
  EXPECT_TRUE(waits(5));
  advance_to(at(90s));  // job 6 ends: node 2 empty, kept for job 3
  EXPECT_TRUE(waits(3));
  EXPECT_TRUE(waits(5)) << why(5);
  advance_to(at(99s));
  EXPECT_TRUE(waits(3));
  advance_to(at(100s));  // job 1 ends
  EXPECT_TRUE(running(3)) << why(3);
  EXPECT_EQ(started(3), at(100s));
  EXPECT_TRUE(waits(5)) << "nodes 1 and 2 are job 3's now, node 3 job 4's";
  EXPECT_TRUE(sched().future_starts().empty() || sched().future_starts()[0].job == JobId{5});
  advance_to(at(200s));  // jobs 3 and 4 end
  EXPECT_TRUE(running(5));
}

// (5) The words, for each case of (2).
TEST_F(BackfillTest, ExplainSaysWhoIsReservedBackfilledOrKept) {
  wide_job_waits(BackfillMode::easy);
  submit(task(4, "2", 200s));
  submit(task(5, "2", 200s));
  EXPECT_EQ(why(5),
            "kept from starting: it would delay the reservation at 100s (job 3, on nodes 1, 2): it would run "
            "until 200s");
  EXPECT_EQ(sched().notes(JobId{5})->waits, WaitCause::reservation);
  EXPECT_EQ(sched().explanation(JobId{5})->verdict, WaitVerdict::unschedulable);
  submit(task(6, "2", 90s));  // node 2's free 2 now: job 5 waits for room like any job
  EXPECT_EQ(why(5).rfind("waiting for capacity", 0), 0u) << why(5);
  EXPECT_EQ(why(3).rfind("reserved to start at 100s on nodes 1, 2 (backfill easy): a gang of 2 tasks waits", 0), 0u)
      << why(3);
  auto e = sched().explanation(JobId{3});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reserved_start, at(100s));
  EXPECT_EQ(e->reserved_nodes, (std::vector<NodeId>{NodeId{1}, NodeId{2}}));
  EXPECT_EQ(why(4), "all tasks placed; backfilled: uses room the reservation at 100s (job 3) does not need");
  EXPECT_EQ(why(6), "all tasks placed; backfilled: ends before the reservation at 100s (job 3)");
  EXPECT_EQ(why(1), "all tasks placed") << "started before any reservation";
}

// (3) easy and conservative differ. Nodes 1 and 2 of cpu=4:
//   job 1: cpu=4 for 200s -> node 1;  job 2: cpu=2 for 50s -> node 2;
//   job 3: a gang of 2 x cpu=4 for 100s: T3 = 200s on nodes 1, 2 (node 2
//          empties at 50s, node 1 at 200s);
//   job 4: cpu=4 for 100s, also waiting: easy gives it nothing (job 3 is
//          the class's first); conservative gives it T4 = 50s on node 2
//          (job 3's room from 200s does not overlap [50s, 150s));
//   job 5: cpu=2 for 100s, fits in node 2's free 2 now, ends at 100s.
// easy: job 5 ends before T3 -> starts; job 4 then finds node 2 half taken
//   at 50s and starts at 100s (it ends at 200s <= T3, so it may); job 3 at 200s.
// conservative: job 5 would delay T4 -> kept; job 4 starts at 50s; job 5
//   then fits at 150s but would run past T3 -> kept until job 3 ends (300s);
//   job 3 at 200s.
void BackfillTest::second_waiting_job(BackfillMode mode) {
  {
    add_node("cpu=4");
    add_node("cpu=4");
    start(mode);
    submit(task(1, "4", 200s));
    submit(task(2, "2", 50s));
    submit(gang(3, 2, "4", 100s));
    submit(task(4, "4", 100s));
    submit(task(5, "2", 100s));
    bool easy = mode == BackfillMode::easy;
    ASSERT_EQ(sched().future_starts().size(), easy ? 1u : 3u);
    EXPECT_EQ(sched().future_starts()[0].at, at(200s));
    if (!easy) {
      EXPECT_EQ(sched().future_starts()[1].job, JobId{4});
      EXPECT_EQ(sched().future_starts()[1].at, at(50s));
      // Job 5, kept, waits too: its own start comes after job 4's run
      // ([50s, 150s) on node 2) and job 3's ([200s, 300s) on both): 300s.
      EXPECT_EQ(sched().future_starts()[2].job, JobId{5});
      EXPECT_EQ(sched().future_starts()[2].at, at(300s));
      EXPECT_EQ(why(4).rfind("reserved to start at 50s on node 2 (backfill conservative)", 0), 0u) << why(4);
      EXPECT_EQ(why(5),
                "reserved to start at 5m on node 1 (backfill conservative); kept from starting: it would delay the "
                "reservation at 50s (job 4, on node 2): it would run until 100s");
    }
    EXPECT_EQ(running(5), easy);
    advance_to(at(50s));
    EXPECT_EQ(running(4), !easy);
    advance_to(at(100s));
    EXPECT_TRUE(running(4)) << why(3) << " / " << why(4) << " / " << why(5);
    EXPECT_EQ(started(4), easy ? at(100s) : at(50s));
    if (easy) {
      EXPECT_EQ(why(4), "all tasks placed; backfilled: ends before the reservation at 200s (job 3)");
    }
    advance_to(at(150s));
    if (easy)
      EXPECT_EQ(started(5), at(0s)) << "it ran from 0s to 100s";
    else
      EXPECT_TRUE(waits(5)) << why(5);
    advance_to(at(200s));
    EXPECT_TRUE(running(3)) << why(3);
    EXPECT_EQ(started(3), at(200s));
    if (!easy) {
      EXPECT_TRUE(waits(5));
      advance_to(at(300s));
      EXPECT_TRUE(running(5));
      EXPECT_EQ(started(5), at(300s));
    }
  }
}

TEST_F(BackfillTest, EasyBackfillsAJobThatEndsBeforeTheFirstReservation) { second_waiting_job(BackfillMode::easy); }

TEST_F(BackfillTest, ConservativeKeepsItForTheSecondWaitingJobsReservation) {
  second_waiting_job(BackfillMode::conservative);
}

// (4) Room held by a task without max_run_time never frees as far as the
// scheduler knows: no finite T, so no reservation; the job says so and
// later jobs run as without backfilling.
//   job 1: cpu=4, no max_run_time -> node 1;  job 2: cpu=2 for 50s -> node 2;
//   job 3: a gang of 2 x cpu=4: needs node 1 -> no finite T;
//   job 4: cpu=2 for 200s -> node 2's free 2 (nothing reserved).
TEST_F(BackfillTest, NoFiniteReservationBehindTasksWithoutMaxRunTime) {
  add_node("cpu=4");
  add_node("cpu=4");
  start(BackfillMode::easy);
  submit(JobBuilder(1).resources("cpu=4").build());
  submit(task(2, "2", 50s));
  submit(gang(3, 2, "4", 100s));
  EXPECT_TRUE(sched().future_starts().empty());
  EXPECT_NE(why(3).find("; no reservation (backfill easy): it fits only once tasks without a max_run_time end"),
            std::string::npos)
      << why(3);
  submit(task(4, "2", 200s));
  EXPECT_TRUE(running(4));
  EXPECT_EQ(why(4), "all tasks placed");
}

// A job without max_run_time behind a reservation can only use room the
// reservation does not need: it never ends before T.
TEST_F(BackfillTest, AJobWithoutMaxRunTimeIsKeptOffReservedRoom) {
  wide_job_waits(BackfillMode::easy);
  submit(JobBuilder(4).resources("cpu=2").build());  // node 3: not needed
  submit(JobBuilder(5).resources("cpu=2").build());  // only node 2's free 2: kept
  EXPECT_TRUE(running(4));
  EXPECT_TRUE(waits(5));
  EXPECT_EQ(why(5),
            "kept from starting: it would delay the reservation at 100s (job 3, on nodes 1, 2): it has no "
            "max_run_time");
}

// A job of a class that does not backfill still respects the reservations
// of jobs ahead of it in the queue (the rule binds any later job).
TEST_F(BackfillTest, LaterJobsOfOtherClassesRespectTheReservation) {
  add_node("cpu=4");
  add_node("cpu=4");
  SchedulerConfig c = config_with(BackfillMode::easy);
  c.classes.push_back(ClassConfig::named("plain"));
  s = cluster.add_scheduler(c);
  submit(task(1, "4", 100s));
  submit(task(2, "2", 50s));
  submit(gang(3, 2, "4", 100s));  // T = 100s on nodes 1, 2
  submit(JobBuilder(4).job_class("plain").resources("cpu=2").max_run_time(200s).runtime(200s).build());
  EXPECT_TRUE(waits(4)) << why(4);
  EXPECT_EQ(sched().notes(JobId{4})->waits, WaitCause::reservation);
}

// Backfilling's promise, on random traces: a job never starts later than
// the first reservation it was given. Every job is a gang whose tasks run
// exactly their max_run_time, submitted in order (nothing ahead of a job in
// the queue arrives after it): conservative holds it for every waiting job,
// easy for the class's first one (which stays first until it starts).
// Checked with seeds 1-12 while writing; three here keep the suite quick.
class BackfillProperty : public ::testing::TestWithParam<std::tuple<BackfillMode, uint64_t>> {};

TEST_P(BackfillProperty, NoJobStartsLaterThanItsFirstReservation) {
  auto [mode, seed] = GetParam();
  SimCluster cluster;
  const uint32_t nodes = 8, jobs = 120;
  for (uint32_t n = 1; n <= nodes; ++n) cluster.add_node(NodeBuilder(n).capacity("cpu=8").build());
  size_t s = cluster.add_scheduler(config_with(mode));
  Scheduler& sched = cluster.scheduler(s);
  Rng rng(seed);
  std::map<uint64_t, TimePoint> first;  // job -> its first reservation
  uint64_t next = 1;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t second = 0; second < 4000; ++second) {
    cluster.advance_to(at(std::chrono::seconds(second)));
    cluster.run();
    // A few jobs a second at first: wide and narrow gangs, long and short.
    while (next <= jobs && rng.chance(0.3)) {
      uint32_t width = rng.chance(0.2) ? 20 + static_cast<uint32_t>(rng.below(40))  // wide
                                       : 1 + static_cast<uint32_t>(rng.below(8));
      auto run = std::chrono::seconds(5 + rng.below(rng.chance(0.3) ? 200 : 40));
      JobSpec j = gang(next, width, "1", run);
      j.submit_time = at(std::chrono::seconds(second));
      ASSERT_TRUE(cluster.submit(s, j));
      cluster.run();
      ++next;
    }
    for (const auto& fs : sched.future_starts()) first.try_emplace(fs.job.value, fs.at);
    ASSERT_EQ(cluster.check_all(), "");
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("wall_seconds", std::to_string(seconds));
  size_t checked = 0;
  for (uint64_t id = 1; id < next; ++id) {
    const JobRecord* j = sched.job(JobId{id});
    ASSERT_TRUE(j->finished()) << "job " << id << ": " << sched.explain(JobId{id});
    auto f = first.find(id);
    if (f == first.end()) continue;
    ++checked;
    EXPECT_LE(j->first_running, f->second) << "job " << id << " was reserved for " << format_duration(f->second);
  }
  if (mode == BackfillMode::conservative) {
    EXPECT_GT(checked, jobs / 4) << "the trace makes jobs wait";
  }
  for (const auto& v : cluster.violations()) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Seeds, BackfillProperty,
                         ::testing::Combine(::testing::Values(BackfillMode::easy, BackfillMode::conservative),
                                            ::testing::Values(1, 2, 3)));

// Not a test: how long passes take at replay's scale (a 100-node machine of
// 8 cpus, 600 gangs of 1-463 one-cpu tasks queued at once, run to the end
// one simulated second at a time). Run with --gtest_also_run_disabled_tests;
// BACKFILL_SCALE_MODE=none|easy|conservative runs one mode,
// BACKFILL_SCALE_SECONDS stops early. On the shared two-core machine:
// none 3.8 s, easy 9.2 s, conservative 148 s for about 70,000 passes each
// (makespans 46,602 s, 40,684 s and 38,789 s).
TEST(BackfillScale, DISABLED_HundredNodesSixHundredJobs) {
  std::vector<BackfillMode> modes{BackfillMode::none, BackfillMode::easy, BackfillMode::conservative};
  if (const char* only = std::getenv("BACKFILL_SCALE_MODE")) modes = {*parse_backfill_mode(only)};
  for (BackfillMode mode : modes) {
    SimCluster cluster;
    for (uint32_t n = 1; n <= 100; ++n) cluster.add_node(NodeBuilder(n).capacity("cpu=8").build());
    size_t s = cluster.add_scheduler(config_with(mode));
    Rng rng(7);
    auto t0 = std::chrono::steady_clock::now();
    size_t messages = 0;
    for (uint64_t id = 1; id <= 600; ++id) {
      uint32_t width = rng.chance(0.2) ? 64 + static_cast<uint32_t>(rng.below(400))  // wide
                                       : 1 + static_cast<uint32_t>(rng.below(32));
      auto run = std::chrono::seconds(30 + rng.below(rng.chance(0.3) ? 3000 : 300));
      ASSERT_TRUE(cluster.submit(s, gang(id, width, "1", run)));
    }
    messages += cluster.run();
    int64_t second = 0, last = 400000;
    if (const char* l = std::getenv("BACKFILL_SCALE_SECONDS")) last = std::atoll(l);
    for (; second < last && cluster.finished_jobs(s).size() < 600; second += 1) {
      cluster.advance_to(at(std::chrono::seconds(second)));
      messages += cluster.run();
      if (second % 2000 == 0)
        std::fprintf(stderr, "  %s t=%llds finished %zu, %.1f s wall\n", std::string(to_string(mode)).c_str(),
                     static_cast<long long>(second), cluster.finished_jobs(s).size(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %lld s simulated, %zu messages (about one pass each), %.2f s wall, %.1f us per message\n",
                std::string(to_string(mode)).c_str(), static_cast<long long>(second), messages, wall,
                1e6 * wall / static_cast<double>(messages));
    EXPECT_EQ(cluster.check_all(), "");
  }
}

// The search on its own: when room frees, and how a reservation made before
// holds its room over a later one's run.
TEST(BackfillProfile, EarliestTimeFromEndsAndEarlierStarts) {
  // Two nodes of cpu=4: node 0 frees 4 at 10s, node 1 has 1 free now and
  // frees 3 at 30s. Two tasks of cpu=4: T = 30s, one on each.
  BackfillProfile p;
  p.add_end(at(10s), 0, res("cpu=4"));
  p.add_end(at(30s), 1, res("cpu=3"));
  p.add_end(kNever, 1, res("cpu=4"));  // never ends: not recorded
  EXPECT_EQ(p.size(), 2u);
  std::vector<NodeRoom> nodes{{0, Resources{}}, {1, res("cpu=1")}};
  auto two = p.earliest(nodes, res("cpu=4"), 2, 20s, at(0s), {});
  ASSERT_TRUE(two);
  EXPECT_EQ(two->at, at(30s));
  ASSERT_EQ(two->parts.size(), 2u);
  EXPECT_EQ(two->parts[0].node, 0u);
  EXPECT_EQ(two->parts[1].node, 1u);
  // One task: node 0 at 10s.
  auto one = p.earliest(nodes, res("cpu=4"), 1, 20s, at(0s), {});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->at, at(10s));
  EXPECT_EQ(one->parts[0].node, 0u);
  // With `two` booked (both nodes from 30s to 50s), a task of 25s cannot
  // start at 10s (it would run into 30s), nor at 30s: T = 50s. A task of
  // 20s fits at 10s (it ends at 30s).
  two->job = JobId{9};
  auto longer = p.earliest(nodes, res("cpu=4"), 1, 25s, at(0s), {&*two});
  ASSERT_TRUE(longer);
  EXPECT_EQ(longer->at, at(50s));
  auto shorter = p.earliest(nodes, res("cpu=4"), 1, 20s, at(0s), {&*two});
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter->at, at(10s));
  // The least room of node 1 over a stretch: 1 cpu until 30s, then 1 + 3
  // freed - 4 held by `two` until 50s, then 4.
  EXPECT_EQ(p.least_room(1, res("cpu=1"), at(0s), at(30s), {&*two}), res("cpu=1"));
  EXPECT_EQ(p.least_room(1, res("cpu=1"), at(0s), at(40s), {&*two}), Resources{});
  EXPECT_EQ(p.least_room(1, res("cpu=1"), at(0s), at(40s), {}), res("cpu=1"));
  EXPECT_EQ(p.least_room(1, res("cpu=1"), at(35s), kNever, {}), res("cpu=4")) << "an end past counts as now";
  // Without a run time it holds the room for ever; with `two` holding its
  // room for ever too, a task without one has no finite T.
  two->run = Duration{0};
  EXPECT_FALSE(p.earliest(nodes, res("cpu=4"), 1, Duration{0}, at(0s), {&*two}));
  // Three tasks never fit on two nodes of cpu=4.
  EXPECT_FALSE(p.earliest(nodes, res("cpu=4"), 3, 20s, at(0s), {}));
  // Ends in the past count as now.
  auto late = p.earliest(nodes, res("cpu=4"), 1, 20s, at(15s), {});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->at, at(15s));
}

// earliest_again answers from the last search only when the start cannot
// have moved: over random profiles and random changes between searches
// (claims that take room, tasks that end early or on time, room that comes
// and goes now, the clock, other starts), it always says what a fresh
// search says, and it does answer from the last one often.
TEST(BackfillProfile, SearchingAgainFindsWhatAFreshSearchFinds) {
  uint64_t hits = 0, asked = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    const uint32_t node_count = 2 + static_cast<uint32_t>(rng.below(7));
    const int64_t cap = 1 + static_cast<int64_t>(rng.below(4));  // cpus per node
    struct End {
      NodeIndex node;
      int64_t at;  // seconds
      int64_t cpus;
    };
    std::vector<End> ends;
    std::vector<int64_t> free(node_count, 0);
    for (NodeIndex n = 0; n < node_count; ++n) {
      int64_t left = cap;
      while (left > 0 && rng.chance(0.8)) {
        int64_t c = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(left)));
        ends.push_back({n, static_cast<int64_t>(rng.below(100)), c});
        left -= c;
      }
      free[n] = left;
    }
    const Resources per_task = Resources::cpu_memory(1000 * (1 + static_cast<int64_t>(rng.below(2))), 0);
    const uint32_t tasks = 1 + static_cast<uint32_t>(rng.below(node_count));
    const Duration run = rng.chance(0.1) ? Duration{0} : std::chrono::seconds(1 + rng.below(60));
    // Another start booked ahead, the same in every search (or none).
    std::vector<FutureStart> ahead;
    if (rng.chance(0.5)) {
      FutureStart fs;
      fs.job = JobId{99};
      fs.at = at(std::chrono::seconds(rng.below(80)));
      fs.run = std::chrono::seconds(1 + rng.below(40));
      fs.per_task = res("cpu=1");
      fs.parts.push_back({static_cast<NodeIndex>(rng.below(node_count)), 1});
      ahead.push_back(fs);
    }
    std::vector<const FutureStart*> starts;
    for (const auto& fs : ahead) starts.push_back(&fs);
    StartSearch last;
    int64_t now = 0;
    for (int round = 0; round < 40; ++round) {
      BackfillProfile p;
      for (const auto& e : ends)
        p.add_end(at(std::chrono::seconds(e.at)), e.node, Resources::cpu_memory(1000 * e.cpus, 0));
      std::vector<NodeRoom> nodes;
      for (NodeIndex n = 0; n < node_count; ++n) nodes.push_back({n, Resources::cpu_memory(1000 * free[n], 0)});
      TimePoint t = at(std::chrono::seconds(now));
      auto fresh = p.earliest(nodes, per_task, tasks, run, t, starts);
      TimePoint searched = last.now;
      bool valid = last.valid;
      auto again = p.earliest_again(last, nodes, per_task, tasks, run, t, starts);
      ++asked;
      if (valid && last.now == searched && searched < t) ++hits;
      ASSERT_EQ(again, fresh) << "seed " << seed << " round " << round;
      // A random change before the next search.
      switch (rng.below(6)) {
        case 0: {  // a claim takes room now, freed at now + its run
          NodeIndex n = static_cast<NodeIndex>(rng.below(node_count));
          if (free[n] > 0) {
            int64_t c = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(free[n])));
            free[n] -= c;
            ends.push_back({n, now + 1 + static_cast<int64_t>(rng.below(120)), c});
          }
          break;
        }
        case 1:  // a task ends early: its room is free now
        case 2:  // or on time (at or before now), as the clock reaches it
          if (!ends.empty()) {
            size_t k = rng.below(ends.size());
            if (ends[k].at <= now || rng.chance(0.5)) {
              free[ends[k].node] += ends[k].cpus;
              ends.erase(ends.begin() + static_cast<std::ptrdiff_t>(k));
            }
          }
          break;
        case 3:  // room that was withheld or claimed elsewhere comes or goes
        {
          NodeIndex n = static_cast<NodeIndex>(rng.below(node_count));
          if (rng.chance(0.5) && free[n] > 0)
            --free[n];
          else if (free[n] < cap)
            ++free[n];
        } break;
        default:  // the clock
          now += static_cast<int64_t>(rng.below(15));
          break;
      }
    }
  }
  EXPECT_GT(hits, asked / 10) << hits << " of " << asked << " answered from the last search";
}

}  // namespace
}  // namespace claimsched::core
