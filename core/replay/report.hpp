#pragma once

// The figures of a schedule, replayed or recorded (`claimsched replay`'s
// report): waits, bounded slowdown, utilisation, fairness across users,
// preemptions. Pure: a list of job outcomes in, numbers out.
//
// Definitions the figures share:
// - wait = start - submit, run = end - start (a negative difference, from an
//   inconsistent recorded trace, counts as 0).
// - A job "ran" when it has a start_s. One with a start but no end_s (the
//   replay stopped while it ran) counts in the waits but not in the bounded
//   slowdowns nor the time series: its run is unknown (`unfinished`).
// - Percentiles are nearest-rank on the ascending values: the p-quantile of
//   n values is the ⌈p·n⌉-th smallest (the smallest for p = 0); the median is
//   the same rule at 0.5 (the lower middle value for an even count). 0 when
//   there is no value.
// - Users (and classes) with an empty name are reported as kUnnamed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace claimsched::core::replay {

/// The key that sums every user outside the top `ReportOptions::top_users`
/// (a user of that name is not told apart from them).
inline constexpr const char* kOthers = "others";
/// The name reported for an outcome whose user or class is empty (an empty
/// column header would break the plot's data files).
inline constexpr const char* kUnnamed = "(unknown)";

/// How one job went, in seconds of the trace's clock.
struct JobOutcome {
  uint64_t number = 0;
  std::string user;
  std::string job_class;
  std::string pool;
  uint32_t tasks = 1;
  /// CPUs per task (cores, fractional allowed): what utilisation counts.
  double cpus_per_task = 1;
  int64_t submit_s = 0;
  /// When its first task started; nullopt if it never ran (the replay ended
  /// first, or it was refused).
  std::optional<int64_t> start_s;
  /// When its last task ended.
  std::optional<int64_t> end_s;
  /// Killed at its requested time limit.
  bool killed_at_limit = false;
  /// Tasks taken away by preemption or eviction, and the task-seconds of
  /// work they had done that was lost with them.
  uint32_t preemptions = 0;
  double lost_cpu_s = 0;
  /// CPU-seconds of every run of every task (lost runs included): what the
  /// machine spent on this job.
  double busy_cpu_s = 0;
};

struct ReportOptions {
  /// Bounded slowdown's threshold τ: max(1, (wait + run) / max(run, τ)).
  double slowdown_tau_s = 10;
  /// Width of a bucket of the time series (utilisation, per-user share);
  /// 0: about 200 buckets over the makespan (makespan / 200 rounded up to a
  /// whole second, at least 1 s).
  int64_t bucket_s = 0;
  /// Users named in `user_share` and the per-user share series, the largest
  /// by busy CPU-seconds (ties: by name); the rest are summed as kOthers.
  size_t top_users = 8;
};

/// Waits and bounded slowdowns of a group of jobs (every job, one user's,
/// one class's).
struct WaitFigures {
  /// Jobs of the group that started; the wait figures are over them.
  uint64_t jobs = 0;
  double mean_s = 0;
  double median_s = 0;
  double p95_s = 0;
  double p99_s = 0;
  /// Over the jobs that started and ended (τ: ReportOptions::slowdown_tau_s).
  double bounded_slowdown_mean = 0;
  double bounded_slowdown_p95 = 0;
};

struct SeriesPoint {
  int64_t t_s = 0;
  double value = 0;
};

struct ScheduleFigures {
  /// Jobs that ran (an outcome without start_s counts in `never_started`).
  uint64_t jobs = 0;
  uint64_t never_started = 0;
  /// Jobs that started but have no end_s (counted in `jobs` too).
  uint64_t unfinished = 0;
  /// From the first submit to the last end, over the jobs that ran (0 when
  /// none ended).
  int64_t makespan_s = 0;
  /// Σ busy_cpu_s (every outcome's, lost runs included) over
  /// capacity × makespan; 0 when either is 0.
  double utilisation = 0;
  WaitFigures wait;
  /// Jain's fairness index over users of their mean bounded slowdown:
  /// (Σx)² / (n·Σx²), 1 when every user waited alike. Users with no
  /// finished job take no part; it tends to 1/n as one user of n bears all
  /// the waiting.
  double jain_users = 1;
  uint64_t preemptions = 0;
  double lost_cpu_s = 0;
  uint64_t killed_at_limit = 0;
  /// Every user (class) of the outcomes, those none of whose jobs started
  /// included (with jobs = 0).
  std::map<std::string, WaitFigures> per_user;
  std::map<std::string, WaitFigures> per_class;
  /// Share of the busy CPU-seconds, per top user and kOthers (present only
  /// when some user was folded into it), over the whole schedule; sums to 1
  /// (every share 0 when nothing was used).
  std::map<std::string, double> user_share;
  /// Bucket width of the series below (0 when there is no series).
  int64_t bucket_s = 0;
  /// Busy fraction of the capacity per bucket. Buckets tile [first submit,
  /// last end) on the trace's clock (t_s: the bucket's start); the last one
  /// may be shorter and is divided by its own width. Each job's
  /// cpus_per_task × tasks is integrated exactly over [start, end); runs lost
  /// to preemption are not in it (the outcome keeps only their total).
  std::vector<SeriesPoint> utilisation_series;
  /// Per bucket, each key of `user_share`'s share of the CPU-seconds used in
  /// that bucket (same intervals as above); every share is 0 in an empty bucket.
  std::map<std::string, std::vector<SeriesPoint>> user_share_series;
  /// Waits of the jobs that ran, ascending, for a CDF.
  std::vector<int64_t> waits_sorted;
};

/// The figures of `jobs` on a machine of `capacity_cpus` cores.
ScheduleFigures figures_of(const std::vector<JobOutcome>& jobs, double capacity_cpus,
                           const ReportOptions& options = {});

/// Bounded slowdown of one job: max(1, (wait + run) / max(run, τ)); 1 when
/// run and τ are both 0 (nothing to measure against).
double bounded_slowdown(double wait_s, double run_s, double tau_s);
/// Jain's fairness index of `values`: (Σx)² / (n·Σx²); 1 for an empty or all-zero list.
double jain_index(const std::vector<double>& values);
/// The nearest-rank `fraction`-quantile (0..1) of `ascending`: its
/// ⌈fraction·n⌉-th value (the first for 0); 0 for an empty list.
double nearest_rank(const std::vector<double>& ascending, double fraction);

}  // namespace claimsched::core::replay
