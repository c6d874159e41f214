// e2e_submit --server HOST:PORT --jobs N [--rate R] [-- COMMAND...]: submits N
// one-task jobs pipelined (closed loop: as fast as they are acknowledged) or,
// with --rate, R jobs per second (open loop: the load a steady stream of
// users offers, where latency means something), waits until every one
// ended, and prints one JSON object:
//   {"jobs":N,"succeeded":...,"submit_per_sec":...,"complete_per_sec":...,
//    "latency_p50_ms":...,"latency_p99_ms":...,"placement_p50_ms":...,
//    "placement_p99_ms":...} (with --rate, also "offered_per_sec")
// Rates and latencies come from the server's own clock: submit, the first
// task running, the last task ended. (Before issue 13 this was
// `claimsched submit --repeat N --wait`; a user's --wait now waits for a job.)

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "apps/client_session.hpp"

using namespace claimsched;

namespace {

double ms_between(core::TimePoint a, core::TimePoint b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

/// Submits `jobs` copies of `job`, each at its due time at `rate` per second
/// (those due together go in one pipelined batch).
apps::ClientResult<std::vector<core::JobId>> submit_at_rate(apps::ClientSession& s, const core::JobSpec& job,
                                                              uint32_t jobs, double rate) {
  std::vector<core::JobId> ids;
  ids.reserve(jobs);
  auto start = std::chrono::steady_clock::now();
  while (ids.size() < jobs) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto due = std::min<uint64_t>(jobs, static_cast<uint64_t>(elapsed * rate) + 1);
    if (due <= ids.size()) {
      auto next = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(static_cast<double>(ids.size()) / rate));
      std::this_thread::sleep_until(next);
      continue;
    }
    auto batch = s.submit_many(job, static_cast<uint32_t>(due - ids.size()));
    if (!batch) return batch.error();
    ids.insert(ids.end(), batch->begin(), batch->end());
  }
  return ids;
}

int usage() {
  std::fprintf(stderr, "usage: e2e_submit --server HOST:PORT --jobs N [--rate JOBS_PER_SEC] [-- COMMAND...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server;
  uint32_t jobs = 1000;
  double rate = 0;  // 0: closed loop
  core::JobSpec job;
  job.user = "bench";
  job.pool = "default";
  job.per_task = *core::Resources::parse("cpu=1,memory=1Gi");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--server" && i + 1 < argc) {
      server = argv[++i];
    } else if (a == "--jobs" && i + 1 < argc) {
      jobs = static_cast<uint32_t>(std::stoul(argv[++i]));
    } else if (a == "--rate" && i + 1 < argc) {
      rate = std::stod(argv[++i]);
      if (!(rate > 0)) return usage();
    } else if (a == "--") {
      for (++i; i < argc; ++i) job.command.emplace_back(argv[i]);
    } else {
      return usage();
    }
  }
  if (server.empty() || jobs == 0) return usage();
  if (job.command.empty()) job.command = {"/bin/true"};

  auto session = apps::ClientSession::connect(server, std::chrono::seconds(30));
  if (!session) {
    std::fprintf(stderr, "e2e_submit: %s\n", session.error().message.c_str());
    return session.error().exit_code;
  }
  auto& s = **session;
  auto started = std::chrono::steady_clock::now();
  auto ids = rate > 0 ? submit_at_rate(s, job, jobs, rate) : s.submit_many(job, jobs);
  if (!ids) {
    std::fprintf(stderr, "e2e_submit: %s\n", ids.error().message.c_str());
    return ids.error().exit_code;
  }
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The server answers each wait as jobs end (its job events): waiting
  // costs it nothing between them, where polling the queue made it build a
  // view of every waiting job 20 times a second.
  std::vector<core::JobId> waiting = *ids;
  std::sort(ids->begin(), ids->end());
  while (!waiting.empty()) {
    auto answered = s.wait_ended(waiting);
    if (!answered) {
      std::fprintf(stderr, "e2e_submit: %s\n", answered.error().message.c_str());
      return answered.error().exit_code;
    }
    if (!answered->has_value()) {
      std::fprintf(stderr, "e2e_submit: the server cannot be asked to wait for jobs (older than this client)\n");
      return 1;
    }
    std::vector<core::JobId> ended;
    for (const auto& v : **answered) ended.push_back(v.spec.id);
    std::sort(ended.begin(), ended.end());
    std::erase_if(waiting, [&](core::JobId id) { return std::binary_search(ended.begin(), ended.end(), id); });
  }
  core::JobFilter all;
  all.user = job.user;
  auto views = s.history(all);
  if (!views) {
    std::fprintf(stderr, "e2e_submit: %s\n", views.error().message.c_str());
    return views.error().exit_code;
  }
  std::vector<double> placement, completion;
  core::TimePoint first_submit = core::kNever, last_end{0};
  uint64_t succeeded = 0;
  for (const auto& v : *views) {
    if (!std::binary_search(ids->begin(), ids->end(), v.spec.id)) continue;
    succeeded += v.state == core::JobState::succeeded;
    first_submit = std::min(first_submit, v.spec.submit_time);
    if (v.started_at != core::kNever) placement.push_back(ms_between(v.spec.submit_time, v.started_at));
    if (v.finished_at != core::kNever) {
      completion.push_back(ms_between(v.spec.submit_time, v.finished_at));
      last_end = std::max(last_end, v.finished_at);
    }
  }
  double complete_s = std::chrono::duration<double>(last_end - first_submit).count();
  nlohmann::json j{{"jobs", ids->size()},
                   {"succeeded", succeeded},
                   {"submit_per_sec", submit_s > 0 ? static_cast<double>(ids->size()) / submit_s : 0.0},
                   {"complete_per_sec", complete_s > 0 ? static_cast<double>(ids->size()) / complete_s : 0.0},
                   {"latency_p50_ms", quantile(completion, 0.5)},
                   {"latency_p99_ms", quantile(completion, 0.99)},
                   {"placement_p50_ms", quantile(placement, 0.5)},
                   {"placement_p99_ms", quantile(placement, 0.99)}};
  if (rate > 0) j["offered_per_sec"] = rate;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
