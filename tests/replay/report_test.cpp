// The replay report's figures, against answers worked out by hand: bounded
// slowdown, Jain's index, nearest-rank percentiles, a five-job schedule,
// the exact bucket integration of the time series and the user shares.

#include "core/replay/report.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <numeric>

// A namespace of its own: replay_tests is a unity build, and the other files
// of the binary have job builders too.
namespace claimsched::core::replay::report_test {
namespace {

/// A job that ran once, start to end, on `tasks` × `cpus` cores.
JobOutcome ran(const std::string& user, const std::string& job_class, uint32_t tasks, double cpus,
               int64_t submit, int64_t start, int64_t end) {
  JobOutcome job;
  job.user = user;
  job.job_class = job_class;
  job.tasks = tasks;
  job.cpus_per_task = cpus;
  job.submit_s = submit;
  job.start_s = start;
  job.end_s = end;
  job.busy_cpu_s = tasks * cpus * static_cast<double>(end - start);
  return job;
}

JobOutcome never_ran(const std::string& user, const std::string& job_class, int64_t submit) {
  JobOutcome job;
  job.user = user;
  job.job_class = job_class;
  job.submit_s = submit;
  return job;
}

std::vector<double> values_of(const std::vector<SeriesPoint>& series) {
  std::vector<double> out;
  for (const SeriesPoint& p : series) out.push_back(p.value);
  return out;
}

std::vector<int64_t> times_of(const std::vector<SeriesPoint>& series) {
  std::vector<int64_t> out;
  for (const SeriesPoint& p : series) out.push_back(p.t_s);
  return out;
}

// On 4 cores:
//   job  user   class  cores      submit start end   wait run  busy  bounded slowdown
//   1    alice  batch  2 × 1      0      0     100   0    100  200   100/100 = 1
//   2    alice  batch  1 × 2      10     50    250   40   200  400   240/200 = 1.2
//   3    bob    short  1 × 1      20     120   125   100  5    5     105/max(5,10) = 10.5
//   4    bob    batch  4 × 0.5    30     250   400   220  150  300   370/150 = 37/15
//   5    carol  short  -          40     never
std::vector<JobOutcome> five_jobs() {
  return {ran("alice", "batch", 2, 1, 0, 0, 100), ran("alice", "batch", 1, 2, 10, 50, 250),
          ran("bob", "short", 1, 1, 20, 120, 125), ran("bob", "batch", 4, 0.5, 30, 250, 400),
          never_ran("carol", "short", 40)};
}

TEST(BoundedSlowdown, IsTurnaroundOverRun) {
  EXPECT_DOUBLE_EQ(bounded_slowdown(100, 100, 10), 2);
  EXPECT_DOUBLE_EQ(bounded_slowdown(0, 100, 10), 1);
}

TEST(BoundedSlowdown, TauBoundsShortJobs) {
  // A 5 s job that waited 95 s: 100 / max(5, 10) = 10, not 100 / 5 = 20.
  EXPECT_DOUBLE_EQ(bounded_slowdown(95, 5, 10), 10);
  // A 2 s job that did not wait: 2 / 10 = 0.2, raised to 1.
  EXPECT_DOUBLE_EQ(bounded_slowdown(0, 2, 10), 1);
  EXPECT_DOUBLE_EQ(bounded_slowdown(0, 0, 0), 1);
}

TEST(JainIndex, EqualValuesAreFair) {
  EXPECT_DOUBLE_EQ(jain_index({3, 3, 3}), 1);
  EXPECT_DOUBLE_EQ(jain_index({}), 1);
  EXPECT_DOUBLE_EQ(jain_index({0, 0}), 1);
}

TEST(JainIndex, OneUserFarWorse) {
  // Σx = 13, Σx² = 4 + 81 = 85: 13² / (5 × 85) = 169 / 425 ≈ 0.3976.
  EXPECT_DOUBLE_EQ(jain_index({1, 1, 1, 1, 9}), 169.0 / 425.0);
}

TEST(ReportPercentiles, NearestRank) {
  std::vector<double> one_to_twenty(20);
  std::iota(one_to_twenty.begin(), one_to_twenty.end(), 1.0);
  EXPECT_EQ(nearest_rank(one_to_twenty, 0), 1);
  EXPECT_EQ(nearest_rank(one_to_twenty, 0.5), 10);   // ⌈10⌉
  EXPECT_EQ(nearest_rank(one_to_twenty, 0.95), 19);  // ⌈19⌉
  EXPECT_EQ(nearest_rank(one_to_twenty, 0.99), 20);  // ⌈19.8⌉
  EXPECT_EQ(nearest_rank({5, 7, 8, 9}, 0.5), 7);     // the lower middle value
  EXPECT_EQ(nearest_rank({}, 0.5), 0);
  // 0.07 × 100 is 7.000000000000001 in binary: still the 7th, not the 8th.
  std::vector<double> one_to_hundred(100);
  std::iota(one_to_hundred.begin(), one_to_hundred.end(), 1.0);
  EXPECT_EQ(nearest_rank(one_to_hundred, 0.07), 7);
}

TEST(FiguresOf, HandMadeSchedule) {
  ScheduleFigures f = figures_of(five_jobs(), 4);
  EXPECT_EQ(f.jobs, 4u);
  EXPECT_EQ(f.never_started, 1u);
  EXPECT_EQ(f.unfinished, 0u);
  // First submit 0, last end 400.
  EXPECT_EQ(f.makespan_s, 400);
  // (200 + 400 + 5 + 300) / (4 × 400) = 905 / 1600.
  EXPECT_DOUBLE_EQ(f.utilisation, 905.0 / 1600.0);
  EXPECT_EQ(f.waits_sorted, (std::vector<int64_t>{0, 40, 100, 220}));

  // Waits 0 40 100 220: mean 90; median the 2nd (⌈0.5 × 4⌉); p95, p99 the 4th.
  EXPECT_EQ(f.wait.jobs, 4u);
  EXPECT_DOUBLE_EQ(f.wait.mean_s, 90);
  EXPECT_DOUBLE_EQ(f.wait.median_s, 40);
  EXPECT_DOUBLE_EQ(f.wait.p95_s, 220);
  EXPECT_DOUBLE_EQ(f.wait.p99_s, 220);
  // Slowdowns 1, 1.2, 37/15, 10.5: mean (12.7 + 37/15) / 4 = 91/24; p95 the largest.
  EXPECT_DOUBLE_EQ(f.wait.bounded_slowdown_mean, 91.0 / 24.0);
  EXPECT_DOUBLE_EQ(f.wait.bounded_slowdown_p95, 10.5);

  ASSERT_EQ(f.per_user.size(), 3u);
  const WaitFigures& alice = f.per_user.at("alice");
  EXPECT_EQ(alice.jobs, 2u);
  EXPECT_DOUBLE_EQ(alice.mean_s, 20);
  EXPECT_DOUBLE_EQ(alice.median_s, 0);  // ⌈0.5 × 2⌉ = the 1st
  EXPECT_DOUBLE_EQ(alice.p95_s, 40);
  EXPECT_DOUBLE_EQ(alice.bounded_slowdown_mean, 1.1);
  const WaitFigures& bob = f.per_user.at("bob");
  EXPECT_EQ(bob.jobs, 2u);
  EXPECT_DOUBLE_EQ(bob.mean_s, 160);
  EXPECT_DOUBLE_EQ(bob.median_s, 100);
  // (10.5 + 37/15) / 2 = 389/60.
  EXPECT_DOUBLE_EQ(bob.bounded_slowdown_mean, 389.0 / 60.0);
  EXPECT_EQ(f.per_user.at("carol").jobs, 0u);

  ASSERT_EQ(f.per_class.size(), 2u);
  const WaitFigures& batch = f.per_class.at("batch");
  EXPECT_EQ(batch.jobs, 3u);
  EXPECT_DOUBLE_EQ(batch.mean_s, 260.0 / 3.0);
  EXPECT_DOUBLE_EQ(batch.median_s, 40);  // ⌈1.5⌉ = the 2nd of 0 40 220
  EXPECT_DOUBLE_EQ(batch.p99_s, 220);
  const WaitFigures& short_class = f.per_class.at("short");
  EXPECT_EQ(short_class.jobs, 1u);  // job 5 never started
  EXPECT_DOUBLE_EQ(short_class.mean_s, 100);
  EXPECT_DOUBLE_EQ(short_class.bounded_slowdown_mean, 10.5);

  // Jain over alice's 1.1 = 66/60 and bob's 389/60 (carol finished nothing):
  // 455² / (2 × (66² + 389²)) = 207025 / 311354.
  EXPECT_DOUBLE_EQ(f.jain_users, 207025.0 / 311354.0);
}

TEST(FiguresOf, CountsPreemptionsKillsAndLostWork) {
  std::vector<JobOutcome> jobs = five_jobs();
  jobs[0].preemptions = 2;
  jobs[0].lost_cpu_s = 30;
  jobs[3].preemptions = 1;
  jobs[3].lost_cpu_s = 12.5;
  jobs[3].killed_at_limit = true;
  ScheduleFigures f = figures_of(jobs, 4);
  EXPECT_EQ(f.preemptions, 3u);
  EXPECT_DOUBLE_EQ(f.lost_cpu_s, 42.5);
  EXPECT_EQ(f.killed_at_limit, 1u);
}

TEST(FiguresOf, UtilisationSeriesOfWholeBuckets) {
  // Buckets of 100 s; cores busy per bucket (capacity 4 × 100 = 400):
  //   [0,100)   job 1: 2 × 100, job 2: 2 × 50                  = 300 → 0.75
  //   [100,200) job 2: 2 × 100, job 3: 1 × 5                   = 205 → 0.5125
  //   [200,300) job 2: 2 × 50, job 4: 2 × 50                   = 200 → 0.5
  //   [300,400) job 4: 2 × 100                                 = 200 → 0.5
  ScheduleFigures f = figures_of(five_jobs(), 4, {.bucket_s = 100});
  EXPECT_EQ(f.bucket_s, 100);
  EXPECT_EQ(times_of(f.utilisation_series), (std::vector<int64_t>{0, 100, 200, 300}));
  EXPECT_EQ(values_of(f.utilisation_series), (std::vector<double>{0.75, 0.5125, 0.5, 0.5}));
}

TEST(FiguresOf, UtilisationSeriesIntegratesPartialBuckets) {
  // 2 cores, buckets of 10 s over [0, 55): the last bucket is 5 s wide.
  // Job a runs 3..47 (a sample at each bucket's start would miss its first 7 s
  // and see its last 7 s as nothing), job b 0..55.
  //   [0,10)  a 7 + b 10 = 17 / 20 = 0.85
  //   [10,20) [20,30) [30,40): 20 / 20 = 1
  //   [40,50) a 7 + b 10 = 17 / 20 = 0.85
  //   [50,55) b 5 / (2 × 5) = 0.5
  std::vector<JobOutcome> jobs = {ran("a", "x", 1, 1, 0, 3, 47), ran("b", "x", 1, 1, 0, 0, 55)};
  ScheduleFigures f = figures_of(jobs, 2, {.bucket_s = 10});
  EXPECT_EQ(times_of(f.utilisation_series), (std::vector<int64_t>{0, 10, 20, 30, 40, 50}));
  EXPECT_EQ(values_of(f.utilisation_series), (std::vector<double>{0.85, 1, 1, 1, 0.85, 0.5}));

  // Buckets of 150 s over the five jobs' [0, 400): the last is 100 s wide.
  //   [0,150)   job 1 200 + job 2 2 × 100 + job 3 5 = 405 / 600
  //   [150,300) job 2 2 × 100 + job 4 2 × 50      = 300 / 600
  //   [300,400) job 4 2 × 100                     = 200 / 400
  f = figures_of(five_jobs(), 4, {.bucket_s = 150});
  EXPECT_EQ(values_of(f.utilisation_series), (std::vector<double>{405.0 / 600.0, 0.5, 0.5}));
}

TEST(FiguresOf, FractionalCoresLeaveNoResidueInEmptyBuckets) {
  // User a runs 0.1 cores over [0, 45) and 0.2 over [5, 35); nothing runs in
  // [50, 70). Summed in doubles, 0.1 + 0.2 - 0.2 - 0.1 leaves about 3e-17
  // cores running from 40 on, and gives a a share of 1 of nothing.
  std::vector<JobOutcome> jobs = {ran("a", "x", 1, 0.1, 0, 0, 45), ran("a", "x", 1, 0.2, 0, 5, 35),
                                  ran("c", "x", 1, 1, 0, 70, 80)};
  ScheduleFigures f = figures_of(jobs, 1, {.bucket_s = 10});
  ASSERT_EQ(f.utilisation_series.size(), 8u);
  for (size_t empty : {5u, 6u}) {
    EXPECT_EQ(f.utilisation_series[empty].value, 0) << empty;
    EXPECT_EQ(f.user_share_series.at("a")[empty].value, 0) << empty;
  }
  // [30,40): 0.1 × 10 + 0.2 × 5 = 2 CPU-seconds of 10.
  EXPECT_NEAR(f.utilisation_series[3].value, 0.2, 1e-12);
  EXPECT_EQ(f.user_share_series.at("a")[3].value, 1);
}

TEST(FiguresOf, DefaultBucketsAreAbout200) {
  // Makespan 400: ⌈400 / 200⌉ = 2 s, 200 buckets.
  ScheduleFigures f = figures_of(five_jobs(), 4);
  EXPECT_EQ(f.bucket_s, 2);
  EXPECT_EQ(f.utilisation_series.size(), 200u);
  // Makespan 401: 3 s, ⌈401 / 3⌉ = 134 buckets; makespan 50: at least 1 s.
  f = figures_of({ran("a", "x", 1, 1, 0, 0, 401)}, 1);
  EXPECT_EQ(f.bucket_s, 3);
  EXPECT_EQ(f.utilisation_series.size(), 134u);
  f = figures_of({ran("a", "x", 1, 1, 0, 0, 50)}, 1);
  EXPECT_EQ(f.bucket_s, 1);
  EXPECT_EQ(f.utilisation_series.size(), 50u);
}

TEST(FiguresOf, NeverStartedJobsCountedApart) {
  std::vector<JobOutcome> jobs = {never_ran("carol", "short", 0), never_ran("dave", "batch", 5)};
  ScheduleFigures f = figures_of(jobs, 4);
  EXPECT_EQ(f.jobs, 0u);
  EXPECT_EQ(f.never_started, 2u);
  EXPECT_TRUE(f.waits_sorted.empty());
  EXPECT_EQ(f.wait.jobs, 0u);
  EXPECT_EQ(f.wait.mean_s, 0);
  EXPECT_EQ(f.makespan_s, 0);
  EXPECT_EQ(f.utilisation, 0);
  EXPECT_TRUE(f.utilisation_series.empty());
  EXPECT_EQ(f.jain_users, 1);
  EXPECT_EQ(f.per_user.at("dave").jobs, 0u);

  // A job that started but has no end counts in the waits, not the slowdowns.
  JobOutcome running = never_ran("eve", "batch", 100);
  running.start_s = 160;
  jobs.push_back(running);
  jobs.push_back(ran("eve", "batch", 1, 1, 100, 130, 150));  // wait 30, slowdown 50 / 20
  f = figures_of(jobs, 4);
  EXPECT_EQ(f.jobs, 2u);
  EXPECT_EQ(f.never_started, 2u);
  EXPECT_EQ(f.unfinished, 1u);
  EXPECT_EQ(f.waits_sorted, (std::vector<int64_t>{30, 60}));
  EXPECT_DOUBLE_EQ(f.wait.mean_s, 45);
  EXPECT_DOUBLE_EQ(f.wait.bounded_slowdown_mean, 2.5);
  EXPECT_EQ(f.makespan_s, 50);  // 100 .. 150
}

TEST(FiguresOf, InconsistentRecordedTimesCountAsZero) {
  // A recorded start before the submit: wait 0, not -5; slowdown 10 / 10.
  ScheduleFigures f = figures_of({ran("a", "x", 1, 1, 20, 15, 25)}, 1);
  EXPECT_EQ(f.waits_sorted, (std::vector<int64_t>{0}));
  EXPECT_EQ(f.wait.mean_s, 0);
  EXPECT_DOUBLE_EQ(f.wait.bounded_slowdown_mean, 1);
}

TEST(FiguresOf, UserShareSumsToOne) {
  // alice used 600 CPU-seconds, bob 305, carol none (of 905).
  ScheduleFigures f = figures_of(five_jobs(), 4, {.bucket_s = 100});
  ASSERT_EQ(f.user_share.size(), 3u);  // nobody folded: no "others"
  EXPECT_DOUBLE_EQ(f.user_share.at("alice"), 600.0 / 905.0);
  EXPECT_DOUBLE_EQ(f.user_share.at("bob"), 305.0 / 905.0);
  EXPECT_EQ(f.user_share.at("carol"), 0);
  double total = 0;
  for (const auto& [user, share] : f.user_share) total += share;
  EXPECT_DOUBLE_EQ(total, 1);

  // Per bucket (used: 300, 205, 200, 200): alice 300, 200, 100, 0; bob 0, 5, 100, 200.
  EXPECT_EQ(values_of(f.user_share_series.at("alice")), (std::vector<double>{1, 200.0 / 205.0, 0.5, 0}));
  EXPECT_EQ(values_of(f.user_share_series.at("bob")), (std::vector<double>{0, 5.0 / 205.0, 0.5, 1}));
  EXPECT_EQ(values_of(f.user_share_series.at("carol")), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(times_of(f.user_share_series.at("bob")), (std::vector<int64_t>{0, 100, 200, 300}));

  // A gap: nothing runs in [10, 30), so both shares are 0 there.
  f = figures_of({ran("a", "x", 1, 1, 0, 0, 10), ran("b", "x", 1, 1, 0, 30, 40)}, 1, {.bucket_s = 10});
  EXPECT_EQ(values_of(f.utilisation_series), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(values_of(f.user_share_series.at("a")), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(values_of(f.user_share_series.at("b")), (std::vector<double>{0, 0, 0, 1}));
}

TEST(FiguresOf, TopUsersFoldIntoOthers) {
  // Only alice (600) is named; bob (305) and carol (0) become "others".
  ScheduleFigures f = figures_of(five_jobs(), 4, {.bucket_s = 100, .top_users = 1});
  ASSERT_EQ(f.user_share.size(), 2u);
  EXPECT_DOUBLE_EQ(f.user_share.at("alice"), 600.0 / 905.0);
  EXPECT_DOUBLE_EQ(f.user_share.at(kOthers), 305.0 / 905.0);
  ASSERT_EQ(f.user_share_series.size(), 2u);
  EXPECT_EQ(values_of(f.user_share_series.at(kOthers)), (std::vector<double>{0, 5.0 / 205.0, 0.5, 1}));
  EXPECT_EQ(f.per_user.size(), 3u);  // the wait figures still name everyone

  // Ties go by name, whatever the input order; an empty user is kUnnamed.
  std::vector<JobOutcome> tied = {ran("zoe", "x", 1, 1, 0, 0, 10), ran("abe", "x", 1, 1, 0, 0, 10),
                                  ran("", "", 1, 1, 0, 0, 5)};
  f = figures_of(tied, 4, {.top_users = 1});
  EXPECT_EQ(f.user_share.count("abe"), 1u);
  EXPECT_EQ(f.user_share.count("zoe"), 0u);
  EXPECT_DOUBLE_EQ(f.user_share.at(kOthers), 15.0 / 25.0);
  EXPECT_EQ(f.per_user.count(kUnnamed), 1u);
  EXPECT_EQ(f.per_class.count(kUnnamed), 1u);
}

TEST(FiguresOf, ThirtyThousandJobsAreFast) {
  // A deterministic spread of 30,000 jobs over about a month on 1,000 cores.
  std::vector<JobOutcome> jobs;
  uint64_t state = 12345;
  auto next = [&state](uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  for (int i = 0; i < 30000; ++i) {
    const auto submit = static_cast<int64_t>(next(30 * 86400));
    const auto start = submit + static_cast<int64_t>(next(7200));
    const auto end = start + 1 + static_cast<int64_t>(next(86400));
    jobs.push_back(ran("u" + std::to_string(next(300)), "c" + std::to_string(next(5)),
                       static_cast<uint32_t>(1 + next(8)), 1, submit, start, end));
  }
  const auto began = std::chrono::steady_clock::now();
  ScheduleFigures f = figures_of(jobs, 1000);
  const auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began);
  std::printf("figures_of(30,000 jobs): %.1f ms\n", took.count());
  EXPECT_EQ(f.jobs, 30000u);
  EXPECT_EQ(f.utilisation_series.size(), 200u);
  // The quantiles, taken by selection in a shuffled order, match the sorted waits.
  const std::vector<double> waits(f.waits_sorted.begin(), f.waits_sorted.end());
  EXPECT_EQ(f.wait.median_s, nearest_rank(waits, 0.5));
  EXPECT_EQ(f.wait.p95_s, nearest_rank(waits, 0.95));
  EXPECT_EQ(f.wait.p99_s, nearest_rank(waits, 0.99));
  EXPECT_LT(f.wait.median_s, f.wait.p95_s);
  EXPECT_LT(f.wait.p95_s, f.wait.p99_s);
  // Every job ended by the last end, so the series holds every busy CPU-second.
  double series_cpu_s = 0;
  for (const SeriesPoint& p : f.utilisation_series) series_cpu_s += p.value * 1000 * static_cast<double>(f.bucket_s);
  const double last_bucket_overhang = f.bucket_s * 200.0 - static_cast<double>(f.makespan_s);
  EXPECT_NEAR(series_cpu_s - f.utilisation_series.back().value * 1000 * last_bucket_overhang,
              f.utilisation * 1000 * static_cast<double>(f.makespan_s), 1e-6 * series_cpu_s);
  // Generous against a loaded machine or a sanitizer build; a quiet Release
  // build takes a few milliseconds.
  EXPECT_LT(took.count(), 500);
}

}  // namespace
}  // namespace claimsched::core::replay::report_test
