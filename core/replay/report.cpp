#include "core/replay/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <numeric>

namespace claimsched::core::replay {

double bounded_slowdown(double wait_s, double run_s, double tau_s) {
  const double floor_s = std::max(run_s, tau_s);
  if (floor_s <= 0) return 1;
  return std::max(1.0, (wait_s + run_s) / floor_s);
}

double jain_index(const std::vector<double>& values) {
  double sum = 0;
  double sum_of_squares = 0;
  for (double v : values) {
    sum += v;
    sum_of_squares += v * v;
  }
  if (values.empty() || sum_of_squares == 0) return 1;
  return sum * sum / (static_cast<double>(values.size()) * sum_of_squares);
}

namespace {

/// The 0-based index of the nearest-rank `fraction`-quantile of n > 0 values.
size_t nearest_rank_index(size_t n, double fraction) {
  // The epsilon keeps a product that lands a hair above a whole number, from
  // a fraction binary cannot hold exactly, on that number's rank.
  const double rank = std::ceil(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(n) - 1e-9);
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return std::min(index, n - 1);
}

}  // namespace

double nearest_rank(const std::vector<double>& ascending, double fraction) {
  if (ascending.empty()) return 0;
  return ascending[nearest_rank_index(ascending.size(), fraction)];
}

namespace {

/// The waits and slowdowns of one group of jobs, before they are summarised.
struct GroupSamples {
  std::vector<double> waits;
  std::vector<double> slowdowns;
};

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

/// The nearest-rank quantiles at the ascending `fractions`, by selection
/// rather than a sort (the report's time went to sorting): each
/// nth_element works only above the previous quantile. Reorders `values`.
std::vector<double> select_quantiles(std::vector<double>& values, std::initializer_list<double> fractions) {
  std::vector<double> out;
  auto from = values.begin();
  for (double fraction : fractions) {
    if (values.empty()) {
      out.push_back(0);
      continue;
    }
    const auto at = values.begin() + static_cast<std::ptrdiff_t>(nearest_rank_index(values.size(), fraction));
    if (at >= from) {
      std::nth_element(from, at, values.end());
      from = at;
    }
    out.push_back(*at);
  }
  return out;
}

WaitFigures summarise(GroupSamples& samples) {
  WaitFigures f;
  f.jobs = samples.waits.size();
  f.mean_s = mean_of(samples.waits);
  const std::vector<double> waits = select_quantiles(samples.waits, {0.5, 0.95, 0.99});
  f.median_s = waits[0];
  f.p95_s = waits[1];
  f.p99_s = waits[2];
  f.bounded_slowdown_mean = mean_of(samples.slowdowns);
  f.bounded_slowdown_p95 = select_quantiles(samples.slowdowns, {0.95})[0];
  return f;
}

const std::string& named(const std::string& name) {
  static const std::string unnamed = kUnnamed;
  return name.empty() ? unnamed : name;
}

/// The distinct names of one field of the outcomes, in name order, and each
/// outcome's index into them: one map look-up per outcome, vectors after.
struct NameIndex {
  std::vector<std::string> names;
  std::vector<size_t> of_job;
};

NameIndex index_names(const std::vector<JobOutcome>& jobs, std::string JobOutcome::*field) {
  // Numbered in order of appearance first, renumbered in name order after.
  std::map<std::string, size_t> first_seen;
  std::vector<size_t> seen_of_job;
  seen_of_job.reserve(jobs.size());
  for (const JobOutcome& job : jobs) {
    seen_of_job.push_back(first_seen.try_emplace(named(job.*field), first_seen.size()).first->second);
  }
  NameIndex index;
  std::vector<size_t> ordered(first_seen.size());
  for (const auto& [name, seen] : first_seen) {
    ordered[seen] = index.names.size();
    index.names.push_back(name);
  }
  index.of_job.reserve(jobs.size());
  for (size_t seen : seen_of_job) index.of_job.push_back(ordered[seen]);
  return index;
}

/// Equal buckets tiling [origin, end); the last one may be shorter.
struct BucketGrid {
  int64_t origin = 0;
  int64_t end = 0;
  int64_t width = 1;

  size_t count() const { return end > origin ? static_cast<size_t>((end - origin + width - 1) / width) : 0; }
  int64_t start_of(size_t bucket) const { return origin + static_cast<int64_t>(bucket) * width; }
  int64_t width_of(size_t bucket) const { return std::min(start_of(bucket) + width, end) - start_of(bucket); }
  size_t bucket_of(int64_t t) const { return static_cast<size_t>((t - origin) / width); }
};

/// The exact integral of constant rates over intervals, per bucket. An
/// interval costs O(1) whatever its length: its two partial end buckets are
/// added directly, the full buckets between through a difference array of
/// rates that `cpu_seconds` sweeps once. The difference array counts
/// micro-cores in integers: in doubles, fractional rates added and taken
/// away again would leave a residue in buckets where nothing ran.
class BucketIntegral {
 public:
  explicit BucketIntegral(const BucketGrid& grid)
      : grid_(grid), partial_(grid.count(), 0.0), micro_rate_steps_(grid.count() + 1, 0) {}

  void add(int64_t from, int64_t to, double rate) {
    from = std::max(from, grid_.origin);
    to = std::min(to, grid_.end);
    if (to <= from || rate == 0) return;
    const size_t first = grid_.bucket_of(from);
    const size_t last = grid_.bucket_of(to - 1);
    if (first == last) {
      partial_[first] += rate * static_cast<double>(to - from);
      return;
    }
    partial_[first] += rate * static_cast<double>(grid_.start_of(first) + grid_.width - from);
    partial_[last] += rate * static_cast<double>(to - grid_.start_of(last));
    const auto micro_rate = static_cast<int64_t>(std::llround(rate * kMicro));
    micro_rate_steps_[first + 1] += micro_rate;
    micro_rate_steps_[last] -= micro_rate;
  }

  std::vector<double> cpu_seconds() const {
    std::vector<double> out(partial_);
    int64_t micro_rate = 0;
    for (size_t b = 0; b < out.size(); ++b) {
      micro_rate += micro_rate_steps_[b];
      out[b] += static_cast<double>(micro_rate) / kMicro * static_cast<double>(grid_.width_of(b));
    }
    return out;
  }

 private:
  static constexpr double kMicro = 1e6;
  BucketGrid grid_;
  std::vector<double> partial_;
  std::vector<int64_t> micro_rate_steps_;
};

int64_t default_bucket_s(int64_t makespan_s) {
  constexpr int64_t kBuckets = 200;
  return std::max<int64_t>(1, (makespan_s + kBuckets - 1) / kBuckets);
}

void add_share_figures(const std::vector<JobOutcome>& jobs, const NameIndex& users, const ReportOptions& options,
                       const BucketGrid& grid, double capacity_cpus, ScheduleFigures& figures) {
  std::vector<double> busy_by_user(users.names.size(), 0.0);
  for (size_t j = 0; j < jobs.size(); ++j) busy_by_user[users.of_job[j]] += jobs[j].busy_cpu_s;

  // The named users: the largest by busy CPU-seconds, ties in name order (the
  // index's order) so the choice never depends on the outcomes' order.
  std::vector<size_t> ranked(users.names.size());
  std::iota(ranked.begin(), ranked.end(), 0);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return busy_by_user[a] > busy_by_user[b]; });
  const size_t named_count = std::min(options.top_users, ranked.size());
  std::vector<std::string> keys;
  for (size_t i = 0; i < named_count; ++i) keys.push_back(users.names[ranked[i]]);
  if (named_count < ranked.size()) keys.emplace_back(kOthers);
  // Each user's key: its rank among the named, or "others" after them.
  std::vector<size_t> key_of_user(users.names.size());
  for (size_t i = 0; i < ranked.size(); ++i) key_of_user[ranked[i]] = std::min(i, named_count);

  double total_busy = 0;
  std::vector<double> busy_by_key(keys.size(), 0.0);
  for (size_t u = 0; u < busy_by_user.size(); ++u) {
    busy_by_key[key_of_user[u]] += busy_by_user[u];
    total_busy += busy_by_user[u];
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    figures.user_share[keys[k]] = total_busy > 0 ? busy_by_key[k] / total_busy : 0;
  }

  // The series count only the final run of each job: an outcome keeps the
  // CPU-seconds of runs lost to preemption as a total, not when they ran.
  std::vector<BucketIntegral> per_key(keys.size(), BucketIntegral(grid));
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobOutcome& job = jobs[j];
    if (!job.start_s || !job.end_s) continue;
    const double rate = job.cpus_per_task * job.tasks;
    per_key[key_of_user[users.of_job[j]]].add(*job.start_s, *job.end_s, rate);
  }
  std::vector<std::vector<double>> used_by_key;
  for (const BucketIntegral& integral : per_key) used_by_key.push_back(integral.cpu_seconds());

  const size_t buckets = grid.count();
  std::vector<double> used(buckets, 0.0);
  for (const auto& series : used_by_key) {
    for (size_t b = 0; b < buckets; ++b) used[b] += series[b];
  }
  for (size_t b = 0; b < buckets; ++b) {
    const double available = capacity_cpus * static_cast<double>(grid.width_of(b));
    figures.utilisation_series.push_back({grid.start_of(b), available > 0 ? used[b] / available : 0});
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    std::vector<SeriesPoint>& series = figures.user_share_series[keys[k]];
    series.reserve(buckets);
    for (size_t b = 0; b < buckets; ++b) {
      series.push_back({grid.start_of(b), used[b] > 0 ? used_by_key[k][b] / used[b] : 0});
    }
  }
}

}  // namespace

ScheduleFigures figures_of(const std::vector<JobOutcome>& jobs, double capacity_cpus,
                           const ReportOptions& options) {
  ScheduleFigures figures;
  const NameIndex users = index_names(jobs, &JobOutcome::user);
  const NameIndex classes = index_names(jobs, &JobOutcome::job_class);
  GroupSamples all;
  std::vector<GroupSamples> by_user(users.names.size());
  std::vector<GroupSamples> by_class(classes.names.size());
  std::optional<int64_t> first_submit;
  std::optional<int64_t> last_end;
  double busy_cpu_s = 0;

  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobOutcome& job = jobs[j];
    figures.preemptions += job.preemptions;
    figures.lost_cpu_s += job.lost_cpu_s;
    figures.killed_at_limit += job.killed_at_limit ? 1 : 0;
    busy_cpu_s += job.busy_cpu_s;
    GroupSamples& user = by_user[users.of_job[j]];
    GroupSamples& job_class = by_class[classes.of_job[j]];
    if (!job.start_s) {
      ++figures.never_started;
      continue;
    }
    ++figures.jobs;
    const int64_t wait_s = std::max<int64_t>(0, *job.start_s - job.submit_s);
    figures.waits_sorted.push_back(wait_s);
    for (GroupSamples* group : {&all, &user, &job_class}) group->waits.push_back(static_cast<double>(wait_s));
    first_submit = std::min(first_submit.value_or(job.submit_s), job.submit_s);
    if (!job.end_s) {
      ++figures.unfinished;
      continue;
    }
    last_end = std::max(last_end.value_or(*job.end_s), *job.end_s);
    const int64_t run_s = std::max<int64_t>(0, *job.end_s - *job.start_s);
    const double slowdown =
        bounded_slowdown(static_cast<double>(wait_s), static_cast<double>(run_s), options.slowdown_tau_s);
    for (GroupSamples* group : {&all, &user, &job_class}) group->slowdowns.push_back(slowdown);
  }
  std::sort(figures.waits_sorted.begin(), figures.waits_sorted.end());

  std::vector<double> mean_slowdown_by_user;
  for (size_t u = 0; u < by_user.size(); ++u) {
    if (!by_user[u].slowdowns.empty()) mean_slowdown_by_user.push_back(mean_of(by_user[u].slowdowns));
    figures.per_user[users.names[u]] = summarise(by_user[u]);
  }
  figures.jain_users = jain_index(mean_slowdown_by_user);
  for (size_t c = 0; c < by_class.size(); ++c) figures.per_class[classes.names[c]] = summarise(by_class[c]);
  figures.wait = summarise(all);

  BucketGrid grid;
  if (first_submit && last_end && *last_end > *first_submit) {
    figures.makespan_s = *last_end - *first_submit;
    grid = {*first_submit, *last_end, options.bucket_s > 0 ? options.bucket_s : default_bucket_s(figures.makespan_s)};
  }
  figures.bucket_s = grid.count() > 0 ? grid.width : 0;
  if (figures.makespan_s > 0 && capacity_cpus > 0) {
    figures.utilisation = busy_cpu_s / (capacity_cpus * static_cast<double>(figures.makespan_s));
  }
  add_share_figures(jobs, users, options, grid, capacity_cpus, figures);
  return figures;
}

}  // namespace claimsched::core::replay
