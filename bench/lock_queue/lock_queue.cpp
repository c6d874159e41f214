// bench/lock_queue: the same arrivals under a fifo and a predictive queue
// (Ganeti's design, core/locks/lock_queue.hpp) at the same running limit, in
// virtual time. Jobs arrive faster than they can run, so the queue is never
// empty and jobs/s measures what the order lets through. Each job declares
// locks from a realistic mix (mostly shared and named-exclusive locks on a
// few hot nodes and instances, some unknown, a few big-lock jobs); an
// unknown lock turns into a concrete name when the job starts (as Ganeti's
// jobs learn theirs), the same name in both modes.
//
// Per mode, one JSON line: jobs_per_sec, waiting_transitions, the time from
// submit until a job holds all its locks (queue_wait_*: in line, then
// waiting on locks), and oldest_passed_over_ticks (the oldest job a younger
// one passed, in aging ticks: below aging_k when aging bounds starvation).
// Then the same for predictive over a sweep of aging_k.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <string>
#include <vector>

#include "core/locks/lock_queue.hpp"
#include "core/random.hpp"

using namespace claimsched::core;

namespace {

struct Options {
  size_t jobs = 3000;
  uint32_t running_limit = 16;
  /// Jobs per virtual second: above what 16 slots of ~10 s jobs run under
  /// this contention (about 0.6/s in fifo), so the queue never empties.
  double arrival_rate = 1.0;
  double mean_runtime_s = 10.0;
  double aging_tick_s = 30.0;
  uint32_t aging_k = claimsched::core::LockQueueSettings{}.aging_k;
  uint64_t seed = 42;
  bool json = false;
  std::vector<uint32_t> sweep{10, 20, 50, 100, 150, 500};
};

struct JobDef {
  JobId id;
  TimePoint arrival;
  Duration runtime;
  LockDeclaration locks;
};

/// A name from a few hot ones: Zipf-like over `n` names (index 0 hottest).
std::string hot(Rng& rng, const char* prefix, uint32_t n) {
  // Inverse of a power law: a few names get most of the picks.
  double u = rng.unit();
  auto i = static_cast<uint32_t>(std::floor(std::pow(static_cast<double>(n) + 1, u))) - 1;
  return prefix + std::to_string(std::min(i, n - 1));
}

LevelLock named(LockMode mode, std::vector<std::string> names) { return LevelLock::of(mode, std::move(names)); }

LockDeclaration lock_mix(Rng& rng) {
  LockDeclaration d;
  double r = rng.unit();
  if (r < 0.01) {  // cluster-wide operations
    d.bgl = true;
    return d;
  }
  d[LockLevel::group] = named(LockMode::shared, {hot(rng, "g", 4)});
  if (r < 0.40) {  // read or reboot an instance: shared instance and its nodes
    d[LockLevel::instance] = named(LockMode::shared, {hot(rng, "i", 64)});
    d[LockLevel::node] = named(LockMode::shared, {hot(rng, "n", 32), hot(rng, "n", 32)});
  } else if (r < 0.70) {  // modify an instance: exclusive instance, shared nodes, their resources
    d[LockLevel::instance] = named(LockMode::exclusive, {hot(rng, "i", 64)});
    d[LockLevel::node] = named(LockMode::shared, {hot(rng, "n", 32)});
    d[LockLevel::node_res] = named(LockMode::exclusive, {d[LockLevel::node].names[0]});
  } else if (r < 0.84) {  // node operations: a node exclusive
    auto node = hot(rng, "n", 32);
    d[LockLevel::node] = named(LockMode::exclusive, {node});
    d[LockLevel::node_res] = named(LockMode::exclusive, {node});
  } else if (r < 0.94) {  // opcodes whose locks are only known when they run
    d[LockLevel::instance] = LevelLock::of(rng.chance(0.5) ? LockMode::unknown_exclusive : LockMode::unknown_shared);
    d[LockLevel::node] = LevelLock::of(LockMode::unknown_shared);
  } else {  // network changes
    d[LockLevel::network] = named(LockMode::exclusive, {hot(rng, "net", 4)});
  }
  return d;
}

std::vector<JobDef> workload(const Options& o) {
  Rng rng(o.seed);
  std::vector<JobDef> jobs;
  double t = 0;
  for (size_t i = 0; i < o.jobs; ++i) {
    t += -std::log(1 - rng.unit()) / o.arrival_rate;
    double run = std::clamp(-std::log(1 - rng.unit()) * o.mean_runtime_s, 0.5, 12 * o.mean_runtime_s);
    jobs.push_back(JobDef{JobId(i + 1), std::chrono::duration_cast<Duration>(std::chrono::duration<double>(t)),
                          std::chrono::duration_cast<Duration>(std::chrono::duration<double>(run)), lock_mix(rng)});
  }
  return jobs;
}

/// What an unknown lock turns out to be when the job runs: one hot name,
/// drawn from the job's id (the same in every mode).
LockDeclaration resolve(uint64_t seed, JobId id, const LockDeclaration& d) {
  LockDeclaration out = d;
  for (LockLevel level : kAllLockLevels) {
    LevelLock& l = out[level];
    if (!is_unknown(l.mode)) continue;
    Rng rng(mix64(seed ^ (id.value * 8 + static_cast<uint64_t>(level))));
    const char* prefix = level == LockLevel::instance ? "i" : level == LockLevel::node ? "n" : "x";
    uint32_t n = level == LockLevel::instance ? 64 : 32;
    l = named(l.mode == LockMode::unknown_shared ? LockMode::shared : LockMode::exclusive, {hot(rng, prefix, n)});
  }
  return out;
}

struct Result {
  std::string mode;
  uint32_t aging_k = 0;
  double jobs_per_sec = 0;
  uint64_t waiting_transitions = 0;
  double wait_mean_ms = 0, wait_p99_ms = 0, wait_max_ms = 0;
  double lock_wait_mean_ms = 0;
  int64_t oldest_passed_over_ticks = 0;
  double decide_us_per_start = 0;  // wall clock spent choosing and starting
};

Result run(const Options& o, const std::vector<JobDef>& jobs, QueueOrder order, uint32_t aging_k) {
  LockQueueSettings s;
  s.order = order;
  s.running_limit = o.running_limit;
  s.aging_tick = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.aging_tick_s));
  s.aging_k = aging_k;
  LockQueue q({s});
  struct Event {
    TimePoint at;
    int kind;  // 0: a job ends, 1: a job arrives (ends first at equal times)
    size_t job;
    bool operator>(const Event& e) const { return std::tie(at, kind, job) > std::tie(e.at, e.kind, e.job); }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (size_t i = 0; i < jobs.size(); ++i) events.push({jobs[i].arrival, 1, i});
  std::vector<TimePoint> started_at(jobs.size()), running_at(jobs.size());
  auto resolver = [&](JobId id, const LockDeclaration& d) { return resolve(o.seed, id, d); };
  auto runs = [&](size_t i, TimePoint now) {
    running_at[i] = now;
    events.push({now + jobs[i].runtime, 0, i});
  };
  TimePoint last_end{0};
  double decide_s = 0;
  size_t starts = 0;
  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    auto t0 = std::chrono::steady_clock::now();
    if (e.kind == 1) {
      q.add(jobs[e.job].id, 0, jobs[e.job].arrival, e.at, jobs[e.job].locks);
    } else {
      last_end = std::max(last_end, e.at);
      for (JobId g : q.finish(jobs[e.job].id)) runs(g.value - 1, e.at);
    }
    for (const auto& st : q.start_ready(e.at, resolver)) {
      size_t i = st.job.value - 1;
      started_at[i] = e.at;
      ++starts;
      if (!st.block) runs(i, e.at);
    }
    decide_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Result r;
  r.mode = std::string(to_string(order));
  r.aging_k = aging_k;
  double span_s = std::chrono::duration<double>(last_end - jobs.front().arrival).count();
  r.jobs_per_sec = static_cast<double>(jobs.size()) / span_s;
  r.waiting_transitions = q.waiting_transitions();
  std::vector<double> waits;
  double lock_wait = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    waits.push_back(std::chrono::duration<double, std::milli>(running_at[i] - jobs[i].arrival).count());
    lock_wait += std::chrono::duration<double, std::milli>(running_at[i] - started_at[i]).count();
  }
  std::sort(waits.begin(), waits.end());
  double sum = 0;
  for (double w : waits) sum += w;
  r.wait_mean_ms = sum / static_cast<double>(waits.size());
  r.wait_p99_ms = waits[std::min(waits.size() - 1, static_cast<size_t>(std::ceil(0.99 * waits.size())) - 1)];
  r.wait_max_ms = waits.back();
  r.lock_wait_mean_ms = lock_wait / static_cast<double>(jobs.size());
  r.oldest_passed_over_ticks = q.oldest_passed_over_ticks();
  r.decide_us_per_start = starts ? decide_s * 1e6 / static_cast<double>(starts) : 0;
  return r;
}

void print(const Options& o, const Result& r, const char* sweep) {
  if (o.json) {
    std::printf(
        "{\"mode\":\"%s\",%s\"jobs\":%zu,\"running_limit\":%u,\"aging_k\":%u,\"aging_tick_s\":%g,"
        "\"jobs_per_sec\":%.4f,\"waiting_transitions\":%llu,\"queue_wait_mean_ms\":%.1f,"
        "\"queue_wait_p99_ms\":%.1f,\"queue_wait_max_ms\":%.1f,\"lock_wait_mean_ms\":%.1f,"
        "\"oldest_passed_over_ticks\":%lld,\"decide_us_per_start\":%.2f}\n",
        r.mode.c_str(), sweep, o.jobs, o.running_limit, r.aging_k, o.aging_tick_s, r.jobs_per_sec,
        static_cast<unsigned long long>(r.waiting_transitions), r.wait_mean_ms, r.wait_p99_ms, r.wait_max_ms,
        r.lock_wait_mean_ms, static_cast<long long>(r.oldest_passed_over_ticks), r.decide_us_per_start);
  }
  std::fprintf(stderr, "%-10s %-9s k=%-4u %8.3f jobs/s  waiting %6llu  wait mean %9.0f p99 %9.0f max %9.0f ms  "
               "lock wait %7.0f ms  passed-over %3lld ticks  %.1f us/start\n",
               r.mode.c_str(), sweep[0] ? "sweep" : "", r.aging_k, r.jobs_per_sec,
               static_cast<unsigned long long>(r.waiting_transitions), r.wait_mean_ms, r.wait_p99_ms, r.wait_max_ms,
               r.lock_wait_mean_ms, static_cast<long long>(r.oldest_passed_over_ticks), r.decide_us_per_start);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--json] [--jobs N] [--running-limit N] [--arrival-rate JOBS_PER_S] [--runtime S]\n"
               "          [--aging-tick S] [--aging-k K] [--sweep K,K,...] [--seed N]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--json") {
      o.json = true;
      continue;
    }
    if (!(v = value())) return usage(argv[0]);
    char* end = nullptr;
    if (a == "--jobs") o.jobs = std::strtoull(v, &end, 10);
    else if (a == "--running-limit") o.running_limit = static_cast<uint32_t>(std::strtoul(v, &end, 10));
    else if (a == "--arrival-rate") o.arrival_rate = std::strtod(v, &end);
    else if (a == "--runtime") o.mean_runtime_s = std::strtod(v, &end);
    else if (a == "--aging-tick") o.aging_tick_s = std::strtod(v, &end);
    else if (a == "--aging-k") o.aging_k = static_cast<uint32_t>(std::strtoul(v, &end, 10));
    else if (a == "--seed") o.seed = std::strtoull(v, &end, 10);
    else if (a == "--sweep") {
      o.sweep.clear();
      for (const char* p = v; *p;) {
        o.sweep.push_back(static_cast<uint32_t>(std::strtoul(p, &end, 10)));
        if (end == p) return usage(argv[0]);
        p = *end == ',' ? end + 1 : end;
      }
      end = const_cast<char*>(v) + std::strlen(v);
    } else return usage(argv[0]);
    if (!end || *end != '\0') return usage(argv[0]);
  }
  if (o.jobs == 0 || o.running_limit == 0 || o.arrival_rate <= 0 || o.mean_runtime_s <= 0 || o.aging_tick_s <= 0 ||
      o.aging_k == 0 || std::find(o.sweep.begin(), o.sweep.end(), 0u) != o.sweep.end())
    return usage(argv[0]);
  auto jobs = workload(o);
  Result fifo = run(o, jobs, QueueOrder::fifo, o.aging_k);
  Result pred = run(o, jobs, QueueOrder::predictive, o.aging_k);
  print(o, fifo, "");
  print(o, pred, "");
  std::fprintf(stderr, "predictive/fifo: %.2fx jobs/s, %.0f%% fewer transitions into waiting\n",
               pred.jobs_per_sec / fifo.jobs_per_sec,
               fifo.waiting_transitions ? 100.0 * (1.0 - static_cast<double>(pred.waiting_transitions) /
                                                             static_cast<double>(fifo.waiting_transitions))
                                        : 0.0);
  for (uint32_t k : o.sweep) print(o, run(o, jobs, QueueOrder::predictive, k), "\"sweep\":\"aging_k\",");
  return 0;
}
