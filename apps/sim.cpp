#include "apps/sim.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/clock.hpp"
#include "actors/load_generator.hpp"
#include "actors/node_actor.hpp"
#include "actors/router_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "apps/process_stats.hpp"
#include "core/invariants.hpp"
#include "core/synthetic.hpp"
#include "messages/caf_types.hpp"

namespace claimsched::apps {

namespace {

using namespace std::chrono_literals;

struct Totals {
  core::SchedulerStats stats;
  uint64_t queued = 0;
  uint64_t parked = 0;
  uint64_t backing_off = 0;
  uint64_t in_flight = 0;
  uint64_t pending = 0;
  uint64_t running = 0;
  uint64_t jobs_finished = 0;
  bool fenced = false;
  std::string accounting_error;
  core::TimePoint last_placement{0};
};

Totals collect(caf::scoped_actor& self, const std::vector<actors::scheduler_actor>& schedulers,
               bool audit = false) {
  Totals t;
  for (const auto& s : schedulers) {
    auto request = audit ? self->request(s, caf::infinite, actors::audit_atom::value)
                         : self->request(s, caf::infinite, actors::status_atom::value);
    std::move(request)
        .receive(
            [&](actors::SchedulerStatus& st) {
              t.stats.merge(st.stats);
              t.queued += st.queued_jobs;
              t.parked += st.parked_jobs;
              t.backing_off += st.backing_off_jobs;
              t.in_flight += st.claims_in_flight;
              t.pending += st.pending_tasks;
              t.running += st.running_tasks;
              t.jobs_finished += st.jobs_finished;
              t.fenced |= st.fenced;
              if (t.accounting_error.empty()) t.accounting_error = st.accounting_error;
              t.last_placement = std::max(t.last_placement, st.last_placement);
            },
            [&](caf::error& err) {
              t.accounting_error = "status request failed: " + self->system().render(err);
            });
  }
  return t;
}

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / b; }

std::string thousands(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

core::Status SimOptions::validate() const {
  auto bad = [](const std::string& what) { return core::make_error(core::Errc::invalid_argument, what); };
  if (nodes == 0) return bad("--nodes must be at least 1");
  if (partitions == 0) return bad("--partitions must be at least 1");
  if (!overlap && partitions > nodes) return bad("--partitions must not exceed --nodes");
  if (tasks == 0) return bad("--tasks must be at least 1");
  if (tasks_per_job == 0) return bad("--tasks-per-job must be at least 1");
  if (!(utilization > 0.0 && utilization <= 1.0)) return bad("--utilization must be in (0, 1]");
  if (cas != "fit" && cas != "strict") return bad("--cas must be 'fit' or 'strict'");
  if (scorer != "fill_first" && scorer != "spread") return bad("--scorer must be 'fill_first' or 'spread'");
  if (waves == 0) return bad("--waves must be at least 1");
  if (churn && task_runtime.count() <= 0) return bad("--task-runtime must be positive with --churn");
  if (gang_fraction < 0 || gang_fraction > 1) return bad("--gang-fraction must be in [0, 1]");
  if (window == 0) return bad("--window must be at least 1");
  if (max_tasks_per_claim == 0) return bad("--max-tasks-per-claim must be at least 1");
  if (claim_ttl.count() <= 0) return bad("--claim-ttl must be positive");
  return core::Status::ok();
}

int run_sim(const SimOptions& opt) {
  if (auto st = opt.validate(); !st) {
    std::fprintf(stderr, "claimsched sim: %s\n", st.error().message.c_str());
    return 2;
  }
  auto progress = [&](const std::string& line) {
    if (!opt.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };

  caf::actor_system_config cfg;
  messages::register_types(cfg);
  uint32_t threads = opt.threads != 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  cfg.set("scheduler.max-throughput", static_cast<size_t>(opt.max_throughput));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  // -- the cluster -----------------------------------------------------------
  std::vector<std::string> pools;
  if (opt.overlap) {
    pools.push_back("shared");
  } else {
    for (uint32_t p = 0; p < opt.partitions; ++p) pools.push_back("pool-" + std::to_string(p));
  }
  core::SyntheticClusterConfig cluster;
  cluster.nodes = opt.nodes;
  cluster.pools = pools;
  cluster.heterogeneous = opt.heterogeneous;
  cluster.max_starting = opt.max_starting;
  cluster.seed = opt.seed;
  auto specs = core::make_nodes(cluster);
  core::Resources capacity;
  for (const auto& s : specs) capacity += s.capacity;

  auto scorer = core::parse_scorer(opt.scorer);
  std::vector<actors::scheduler_actor> schedulers;
  actors::RouterConfig routes;
  for (uint32_t k = 0; k < opt.partitions; ++k) {
    actors::SchedulerActorConfig sc;
    sc.start_immediately = false;
    sc.scheduler.partition = core::PartitionId{k + 1};
    sc.scheduler.epoch = 1;
    sc.scheduler.scheduler_index = k;
    sc.scheduler.pools = {opt.overlap ? pools[0] : pools[k]};
    sc.scheduler.classes[0].placement.scorers = {{*scorer, 1.0}};
    sc.scheduler.max_claims_in_flight = opt.window;
    sc.scheduler.max_tasks_per_claim = opt.max_tasks_per_claim;
    sc.scheduler.strict_cas = opt.cas == "strict";
    // Overlapping schedulers start filling at evenly spaced nodes, so they
    // meet only where one's share spills into another's; --same-start makes
    // them all fill from the first node (a pure race).
    sc.scheduler.rotation =
        opt.overlap && !opt.same_start ? static_cast<size_t>(k) * opt.nodes / opt.partitions : 0;
    auto s = sys.spawn(actors::scheduler, sc);
    schedulers.push_back(s);
    routes.pools[sc.scheduler.pools[0]].push_back(s);
  }
  auto router = sys.spawn(actors::router, routes);

  uint64_t heap_before_nodes = heap_in_use();
  std::vector<actors::node_actor> nodes;
  nodes.reserve(specs.size());
  core::LedgerConfig ledger;
  ledger.claim_ttl = opt.claim_ttl;
  for (auto& spec : specs) nodes.push_back(sys.spawn(actors::node, actors::NodeActorConfig{spec, ledger}));
  uint64_t bytes_per_node_actor = (heap_in_use() - heap_before_nodes) / opt.nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (opt.overlap) {
      for (auto& s : schedulers) self->send(s, actors::register_atom::value, nodes[i]);
      continue;
    }
    for (uint32_t p = 0; p < pools.size(); ++p)
      if (pools[p] == specs[i].pool) self->send(schedulers[p], actors::register_atom::value, nodes[i]);
  }
  specs.clear();
  specs.shrink_to_fit();
  uint64_t expected_views = opt.overlap ? uint64_t{opt.nodes} * opt.partitions : opt.nodes;
  for (;;) {
    uint64_t views = 0;
    for (const auto& s : schedulers)
      self->request(s, caf::infinite, actors::status_atom::value)
          .receive([&](actors::SchedulerStatus& st) { views += st.nodes; }, [&](caf::error&) {});
    if (views >= expected_views) break;
    std::this_thread::sleep_for(5ms);
  }
  uint64_t bytes_per_node = (heap_in_use() - heap_before_nodes) / opt.nodes;
  progress("claimsched sim: " + thousands(opt.nodes) + " nodes registered with " +
           std::to_string(opt.partitions) + (opt.overlap ? " overlapping" : "") + " scheduler(s)");

  // -- the load (queued while schedulers hold) ----------------------------------
  core::SyntheticLoadConfig load;
  load.tasks = opt.tasks;
  load.tasks_per_job = opt.tasks_per_job;
  load.utilization = opt.utilization;
  load.waves = opt.churn ? opt.waves : 1;
  load.runtime = opt.churn ? opt.task_runtime : core::Duration{0};
  load.gang_fraction = opt.gang_fraction;
  load.pools = pools;
  load.seed = opt.seed;
  uint64_t heap_before_jobs = heap_in_use();
  auto generator = sys.spawn(actors::load_generator,
                             actors::LoadGeneratorConfig{load, capacity, router, 1024});
  actors::LoadResult submitted;
  self->request(generator, caf::infinite, actors::start_atom::value)
      .receive([&](actors::LoadResult& r) { submitted = r; },
               [&](caf::error& err) { submitted.first_error = sys.render(err); });
  int64_t heap_jobs = static_cast<int64_t>(heap_in_use()) - static_cast<int64_t>(heap_before_jobs);
  double bytes_per_pending_task =
      submitted.tasks_accepted == 0 ? 0.0 : static_cast<double>(std::max<int64_t>(heap_jobs, 0)) /
                                                static_cast<double>(submitted.tasks_accepted);
  progress("claimsched sim: " + thousands(submitted.accepted) + " jobs (" +
           thousands(submitted.tasks_accepted) + " tasks) queued" +
           (submitted.rejected ? ", " + thousands(submitted.rejected) + " rejected: " + submitted.first_error
                               : std::string()));

  // -- place -------------------------------------------------------------------
  auto started = actors::now(sys);
  for (auto& s : schedulers) self->send(s, actors::start_atom::value);
  Totals totals;
  bool timed_out = false;
  int quiet_polls = 0;
  auto next_report = started + std::chrono::seconds(1);
  for (;;) {
    std::this_thread::sleep_for(20ms);
    totals = collect(self, schedulers);
    auto t = actors::now(sys);
    bool done;
    if (opt.churn) {
      done = totals.jobs_finished >= submitted.accepted;
    } else {
      done = totals.pending == 0 && totals.in_flight == 0;
    }
    // Stuck: nothing in flight or queued, only jobs waiting for capacity that
    // will not come (or, with churn, nothing left running to free it).
    bool idle = totals.in_flight == 0 && totals.queued == 0 && totals.backing_off == 0 &&
                (!opt.churn || totals.running == 0);
    quiet_polls = idle ? quiet_polls + 1 : 0;
    if (done || quiet_polls >= 10) break;
    if (opt.timeout.count() > 0 && t - started > opt.timeout) {
      timed_out = true;
      break;
    }
    if (t >= next_report) {
      next_report += std::chrono::seconds(1);
      double secs = std::chrono::duration<double>(t - started).count();
      char line[256];
      std::snprintf(line, sizeof line,
                    "[%6.1fs] placed %s/%s (%.0f/s)  in flight %s  queued %s  parked %s  rejects %s",
                    secs, thousands(totals.stats.placements).c_str(),
                    thousands(submitted.tasks_accepted).c_str(),
                    static_cast<double>(totals.stats.placements) / std::max(secs, 1e-9),
                    thousands(totals.in_flight).c_str(), thousands(totals.queued).c_str(),
                    thousands(totals.parked).c_str(), thousands(totals.stats.rejected()).c_str());
      progress(line);
    }
  }

  // -- check ---------------------------------------------------------------------
  std::vector<core::NodeReport> reports;
  reports.reserve(nodes.size());
  std::string report_error;
  for (const auto& n : nodes)
    self->request(n, caf::infinite, actors::report_atom::value)
        .receive([&](core::NodeReport& r) { reports.push_back(std::move(r)); },
                 [&](caf::error& err) { report_error = sys.render(err); });
  totals = collect(self, schedulers, true);
  core::ClusterTotals cluster_totals;
  auto node_check = core::check_cluster_invariants(reports, cluster_totals);
  std::vector<std::string> failures;
  if (!report_error.empty()) failures.push_back("a node did not report: " + report_error);
  if (!node_check) failures.push_back(node_check.error().message);
  if (!totals.accounting_error.empty()) failures.push_back(totals.accounting_error);
  if (totals.stats.jobs_submitted != submitted.accepted)
    failures.push_back("schedulers hold " + std::to_string(totals.stats.jobs_submitted) +
                       " jobs but " + std::to_string(submitted.accepted) + " were acknowledged");
  if (totals.running != cluster_totals.allocations)
    failures.push_back("schedulers count " + std::to_string(totals.running) +
                       " running tasks, nodes hold " + std::to_string(cluster_totals.allocations));
  if (totals.stats.placements != totals.running + totals.stats.tasks_finished)
    failures.push_back("placements (" + std::to_string(totals.stats.placements) +
                       ") != running + finished (" +
                       std::to_string(totals.running + totals.stats.tasks_finished) +
                       "): a task was placed twice or lost");
  if (timed_out) failures.push_back("the run did not finish within --timeout");
  bool invariants_ok = failures.empty();

  // -- report --------------------------------------------------------------------
  double elapsed = std::chrono::duration<double>(std::max(totals.last_placement, started) - started).count();
  uint64_t placements = totals.stats.placements;
  double rate = elapsed > 0 ? static_cast<double>(placements) / elapsed : 0.0;
  uint64_t conflicts = totals.stats.rejected_conflict + totals.stats.rejected_insufficient;
  double util_cpu = ratio(static_cast<uint64_t>(cluster_totals.allocated[core::dim::cpu]),
                          static_cast<uint64_t>(cluster_totals.capacity[core::dim::cpu]));
  double util_mem = ratio(static_cast<uint64_t>(cluster_totals.allocated[core::dim::memory]),
                          static_cast<uint64_t>(cluster_totals.capacity[core::dim::memory]));
  auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  uint64_t unplaced = submitted.tasks_accepted - std::min(submitted.tasks_accepted, placements);

  nlohmann::json j;
  j["nodes"] = opt.nodes;
  j["partitions"] = opt.partitions;
  j["overlap"] = opt.overlap;
  j["same_start"] = opt.same_start;
  j["cas"] = opt.cas;
  j["churn"] = opt.churn;
  j["seed"] = opt.seed;
  j["tasks"] = submitted.tasks_accepted;
  j["jobs"] = submitted.accepted;
  j["jobs_rejected"] = submitted.rejected;
  j["placements"] = placements;
  j["unplaced"] = unplaced;
  j["elapsed_s"] = elapsed;
  j["placements_per_sec"] = rate;
  j["claims"] = totals.stats.claims_sent;
  j["claims_per_placement"] = ratio(totals.stats.claims_sent, placements);
  j["conflicts"] = conflicts;
  j["conflicts_per_placement"] = ratio(conflicts, placements);
  j["rejected_conflict"] = totals.stats.rejected_conflict;
  j["rejected_insufficient"] = totals.stats.rejected_insufficient;
  j["backoffs"] = totals.stats.backoffs;
  j["latency_p50_ms"] = ms(totals.stats.placement_latency.quantile(0.5));
  j["latency_p99_ms"] = ms(totals.stats.placement_latency.quantile(0.99));
  j["latency_max_ms"] = ms(totals.stats.placement_latency.max());
  j["utilization"] = (util_cpu + util_mem) / 2;
  j["utilization_cpu"] = util_cpu;
  j["utilization_memory"] = util_mem;
  j["peak_rss_bytes"] = peak_rss();
  j["bytes_per_node"] = bytes_per_node;
  j["bytes_per_node_actor"] = bytes_per_node_actor;
  j["bytes_per_pending_task"] = bytes_per_pending_task;
  j["invariants_ok"] = invariants_ok;
  j["invariant_failures"] = failures;

  if (opt.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("claimsched sim: %s nodes, %u partition(s)%s, %s tasks (%s jobs), target utilization %.2f, cas %s, seed %llu\n",
                thousands(opt.nodes).c_str(), opt.partitions, opt.overlap ? " overlapping" : "",
                thousands(submitted.tasks_accepted).c_str(), thousands(submitted.accepted).c_str(),
                opt.utilization, opt.cas.c_str(), static_cast<unsigned long long>(opt.seed));
    std::printf("  placed        %s tasks in %.2f s: %s placements/s%s\n", thousands(placements).c_str(),
                elapsed, thousands(static_cast<uint64_t>(rate)).c_str(),
                unplaced ? (", " + thousands(unplaced) + " not placed").c_str() : "");
    std::printf("  claims        %.4f per placement; conflicts %.4f per placement (%s conflict, %s insufficient)\n",
                ratio(totals.stats.claims_sent, placements), ratio(conflicts, placements),
                thousands(totals.stats.rejected_conflict).c_str(),
                thousands(totals.stats.rejected_insufficient).c_str());
    std::printf("  latency       submit to confirmed p50 %.1f ms, p99 %.1f ms\n",
                ms(totals.stats.placement_latency.quantile(0.5)),
                ms(totals.stats.placement_latency.quantile(0.99)));
    std::printf("  utilization   cpu %.3f, memory %.3f\n", util_cpu, util_mem);
    std::printf("  memory        peak RSS %.1f MiB; %s bytes per node (%s in the node actor, the rest in\n"
                "                scheduler views and indexes); %.1f bytes per pending task\n",
                static_cast<double>(peak_rss()) / (1 << 20), thousands(bytes_per_node).c_str(),
                thousands(bytes_per_node_actor).c_str(), bytes_per_pending_task);
    if (invariants_ok) {
      std::printf("  invariants    ok: no node over capacity, every task placed at most once, every job accounted for\n");
    } else {
      std::printf("  invariants    FAILED:\n");
      for (const auto& f : failures) std::printf("    - %s\n", f.c_str());
    }
  }
  std::fflush(stdout);

  for (auto& n : nodes) self->send_exit(n, caf::exit_reason::user_shutdown);
  for (auto& s : schedulers) self->send_exit(s, caf::exit_reason::user_shutdown);
  self->send_exit(router, caf::exit_reason::user_shutdown);
  self->send_exit(generator, caf::exit_reason::user_shutdown);
  return invariants_ok ? 0 : 1;
}

}  // namespace claimsched::apps
