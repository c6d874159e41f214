#include "apps/sim.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "actors/clock.hpp"
#include "actors/load_generator.hpp"
#include "actors/node_actor.hpp"
#include "actors/node_persistence.hpp"
#include "actors/partition.hpp"
#include "actors/router_actor.hpp"
#include "apps/cluster_config.hpp"
#include "apps/process_stats.hpp"
#include "apps/progress.hpp"
#include "apps/sim_data_dir.hpp"
#include "apps/sim_http.hpp"
#include "apps/sim_policy.hpp"
#include "apps/sim_report.hpp"
#include "core/invariants.hpp"
#include "core/synthetic.hpp"
#include "messages/caf_types.hpp"
#include "storage/node_store.hpp"

namespace claimsched::apps {

namespace {

using namespace std::chrono_literals;

struct Totals {
  core::SchedulerStats stats;
  uint64_t nodes = 0;
  uint64_t queued = 0;
  uint64_t parked = 0;
  uint64_t backing_off = 0;
  uint64_t in_flight = 0;
  uint64_t pending = 0;
  uint64_t running = 0;
  uint64_t unverified = 0;
  uint64_t jobs_finished = 0;
  uint64_t store_writes = 0;
  uint64_t policy_cycles = 0;
  bool fenced = false;
  std::string problem;
  core::TimePoint last_placement{0};
};

/// Status of every scheduler, summed; with `audit`, each also checks its accounting.
Totals collect(caf::scoped_actor& self, const std::vector<actors::scheduler_actor>& schedulers,
               bool audit = false) {
  Totals t;
  for (const auto& s : schedulers) {
    auto request = audit ? self->request(s, caf::infinite, actors::audit_atom::value)
                         : self->request(s, caf::infinite, actors::status_atom::value);
    std::move(request).receive(
        [&](actors::SchedulerStatus& st) {
          t.stats.merge(st.stats);
          t.nodes += st.nodes;
          t.queued += st.queued_jobs;
          t.parked += st.parked_jobs;
          t.backing_off += st.backing_off_jobs;
          t.in_flight += st.claims_in_flight;
          t.pending += st.pending_tasks;
          t.running += st.running_tasks;
          t.unverified += st.unverified_tasks;
          t.jobs_finished += st.jobs_finished;
          t.store_writes += st.store_writes;
          t.policy_cycles += st.policy_cycles;
          t.fenced |= st.fenced;
          if (t.problem.empty() && !st.accounting_error.empty()) t.problem = st.accounting_error;
          if (t.problem.empty() && !st.store_error.empty()) t.problem = "store failed: " + st.store_error;
          t.last_placement = std::max(t.last_placement, st.last_placement);
        },
        [&](caf::error& err) { t.problem = "status request failed: " + self->system().render(err); });
  }
  return t;
}

double ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

storage::StoreOptions store_options(const SimOptions& opt);

/// Waits until every replica applied its primary's latest change, stops them,
/// and compares each replica's store with its primary's, record by record.
void check_replicas(caf::scoped_actor& self,
                    const std::vector<std::shared_ptr<storage::PartitionStore>>& primaries,
                    const std::vector<actors::replica_actor>& replicas, const SimDataDir& data,
                    const SimOptions& opt, SimReport& report) {
  report.replicated = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (size_t k = 0; k < replicas.size(); ++k) {
    actors::ReplicaStatus status;
    // The primary's last writes (the ends of the last tasks) may still be in
    // its group commit: compare only once its sequence has stood still for a
    // while and the replica has applied it (a loaded CI machine once compared
    // a moment too early).
    uint64_t target = primaries[k]->latest_sequence();
    auto steady_since = std::chrono::steady_clock::now();
    for (;;) {
      self->request(replicas[k], caf::infinite, actors::status_atom::value)
          .receive([&](actors::ReplicaStatus& s) { status = std::move(s); },
                   [&](caf::error& err) { status.error = self->system().render(err); });
      if (!status.error.empty()) break;
      if (uint64_t latest = primaries[k]->latest_sequence(); latest != target) {
        target = latest;
        steady_since = std::chrono::steady_clock::now();
      }
      if (status.applied >= target && std::chrono::steady_clock::now() - steady_since >= 300ms) break;
      if (std::chrono::steady_clock::now() > deadline) {
        status.error = "did not catch up within 60 s (applied " + std::to_string(status.applied) +
                       " of " + std::to_string(primaries[k]->latest_sequence()) + ")";
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    report.replica_lag_ms.merge(status.lag_ms);
    report.replica_max_sequence_lag = std::max(report.replica_max_sequence_lag, status.max_sequence_lag);
    report.replica_bootstraps += status.bootstraps;
    if (!status.error.empty()) {
      report.failures.push_back("replica of partition " + std::to_string(k + 1) + ": " + status.error);
      continue;
    }
    self->send_exit(replicas[k], caf::exit_reason::user_shutdown);
    self->wait_for(replicas[k]);
    auto options = store_options(opt);
    options.read_only = true;
    auto copy = storage::PartitionStore::open(data.replica_dir(static_cast<uint32_t>(k + 1)),
                                              {data.cluster_id(), core::PartitionId{static_cast<uint32_t>(k + 1)}},
                                              options);
    if (!copy) {
      report.failures.push_back(copy.error().to_string());
      continue;
    }
    auto diff = storage::compare_stores(primaries[k]->database(), (*copy)->database());
    if (!diff) {
      report.failures.push_back(diff.error().to_string());
    } else if (!diff->empty()) {
      const auto& d = diff->front();
      report.failures.push_back("replica of partition " + std::to_string(k + 1) + " differs from its primary in " +
                                std::to_string(diff->size()) + " record(s), e.g. " + d.column_family + " " +
                                d.key + ": " + d.what);
    }
  }
}

storage::StoreOptions store_options(const SimOptions& opt) {
  return actors::logged_store_options(*storage::parse_sync_mode(opt.sync));
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
  if (resume && data_dir.empty()) return bad("--resume needs --data-dir");
  if (replicas && data_dir.empty()) return bad("--replicas needs --data-dir");
  if (policy && overlap)
    return bad("--policy cannot be combined with --overlap: each partition enforces its allotments over its own "
               "pool, and overlapping partitions share one");
  if (policy && !scenario.empty()) return bad("--policy and --scenario are separate runs");
  if (policy_interval.count() <= 0) return bad("--policy-interval must be positive");
  if (!http.empty())
    if (auto address = parse_http_listen(http); !address) return bad("--http: " + address.error().message);
  if (http_linger.count() > 0 && http.empty()) return bad("--http-linger needs --http");
  if (!http.empty() && !scenario.empty()) return bad("--http serves the synthetic load's run, not a --scenario");
  if (auto s = storage::parse_sync_mode(sync); !s) return bad("--sync: " + s.error().message);
  if (node_sync_interval.count() < 0 || node_sync_interval > std::chrono::seconds(1))
    return bad("--node-sync-interval must be in [0s, 1s]");
  return core::Status::ok();
}

int run_sim(const SimOptions& cli) {
  SimOptions opt = cli;
  if (auto st = opt.validate(); !st) {
    std::fprintf(stderr, "claimsched sim: %s\n", st.error().message.c_str());
    return 2;
  }
  std::optional<SimDataDir> data;
  if (!opt.data_dir.empty()) {
    auto d = opt.resume ? SimDataDir::resume(opt) : SimDataDir::create(opt);
    if (!d) {
      std::fprintf(stderr, "claimsched sim: %s\n", d.error().to_string().c_str());
      return 2;
    }
    data = std::move(*d);
    if (auto st = opt.validate(); !st) {
      std::fprintf(stderr, "claimsched sim: %s/sim.json: %s\n", opt.data_dir.c_str(),
                   st.error().message.c_str());
      return 2;
    }
  }
  auto progress = [&](const std::string& line) {
    if (!opt.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };
  SimReport report;
  report.durable = data.has_value();
  report.resumed = opt.resume;
  auto recovery_started = std::chrono::steady_clock::now();

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
  std::map<std::string, core::Resources> per_pool;
  for (const auto& n : specs) per_pool[n.pool] += n.capacity;
  auto smallest = std::min_element(per_pool.begin(), per_pool.end(), [](const auto& a, const auto& b) {
    return a.second[core::dim::cpu] < b.second[core::dim::cpu];
  });
  std::optional<SimPolicy> policy;
  if (opt.policy) policy = make_sim_policy(smallest->second, opt.policy_interval);

  {
    core::SyntheticLoadConfig sized;
    sized.tasks = opt.tasks;
    sized.tasks_per_job = opt.tasks_per_job;
    sized.utilization = opt.utilization;
    sized.waves = opt.churn ? opt.waves : 1;
    // Tasks are whole millicores and MiBs: a load of more tasks than that
    // allows is rounded up past the cluster, and most of it could never run.
    if (double fill = core::SyntheticLoad(sized, capacity).expected_fill(capacity); fill > 1.0) {
      uint64_t most = core::SyntheticLoad::max_tasks_per_wave(capacity, opt.utilization) * sized.waves;
      std::fprintf(stderr,
                   "claimsched sim: --tasks %llu on %u node(s) makes tasks smaller than one cpu millicore or one "
                   "MiB; rounded up, they would fill %.1fx the cluster and most could never be placed. Use at most "
                   "%llu tasks, or more nodes.\n",
                   static_cast<unsigned long long>(opt.tasks), opt.nodes, fill, static_cast<unsigned long long>(most));
      return 2;
    }
    // Each pool gets an equal part of the load: the smallest must hold it.
    if (per_pool.size() > 1) {
      double fill = core::SyntheticLoad(sized, capacity).expected_fill(
          smallest->second.times(static_cast<int64_t>(per_pool.size())));
      if (fill > 1.0) {
        std::fprintf(stderr,
                     "claimsched sim: %u node(s) in %zu pools leave %s with %s for an equal share of the load: at "
                     "--utilization %.2f it would be filled %.2fx and some tasks could never be placed. Use a node "
                     "count divisible by --partitions, or a lower --utilization.\n",
                     opt.nodes, per_pool.size(), smallest->first.c_str(), smallest->second.to_string().c_str(),
                     opt.utilization, fill);
        return 2;
      }
    }
  }

  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "claimsched sim: %s\n", what.c_str());
    return 1;
  };

  // -- schedulers (recovered from their stores on --resume) --------------------
  auto scorer = core::parse_scorer(opt.scorer);
  std::vector<actors::scheduler_actor> schedulers;
  std::vector<actors::AssembledPartition> partitions;
  std::vector<std::shared_ptr<storage::PartitionStore>> primaries;
  actors::RouterConfig routes;
  for (uint32_t k = 0; k < opt.partitions; ++k) {
    actors::PartitionSetup setup;
    auto& sc = setup.actor;
    sc.start_immediately = false;
    sc.subscribe_timeout = core::Duration::max();  // its nodes are in this process
    sc.scheduler.partition = core::PartitionId{k + 1};
    sc.scheduler.epoch = 1;
    sc.scheduler.keep_node_names = false;
    sc.scheduler.pools = {opt.overlap ? pools[0] : pools[k]};
    if (policy) {
      policy->apply(sc.scheduler);
      sc.policy = policy->policy_for(sc.scheduler.pools.front());
    }
    for (auto& cls : sc.scheduler.classes) cls.placement.scorers = {{*scorer, 1.0}};
    sc.scheduler.max_claims_in_flight = opt.window;
    sc.scheduler.max_tasks_per_claim = opt.max_tasks_per_claim;
    sc.scheduler.strict_cas = opt.cas == "strict";
    // Overlapping schedulers start filling at evenly spaced nodes, so they
    // meet only where one's share spills into another's; --same-start makes
    // them all fill from the first node (a pure race).
    sc.scheduler.rotation =
        opt.overlap && !opt.same_start ? static_cast<size_t>(k) * opt.nodes / opt.partitions : 0;
    if (opt.overlap && !opt.same_start) sc.scheduler.rotation_span = std::max<size_t>(1, opt.nodes / opt.partitions);
    if (data) {
      setup.store_dir = data->partition_dir(k + 1);
      setup.identity = {data->cluster_id(), sc.scheduler.partition};
      setup.store_options = store_options(opt);
      if (opt.writes_in_flight > 0) sc.max_writes_in_flight = opt.writes_in_flight;
      setup.recover = opt.resume;
      setup.change_feed = opt.replicas;
    }
    auto assembled = actors::assemble_partition(sys, std::move(setup));
    if (!assembled) return fail(assembled.error().to_string());
    if (opt.resume) {
      report.recovery_load_ms = std::max(
          report.recovery_load_ms, std::chrono::duration<double, std::milli>(assembled->recovery_time).count());
      report.recovered_jobs += assembled->recovered_jobs;
      report.recovered_task_records += assembled->recovered_task_records;
    }
    if (assembled->store) primaries.push_back(assembled->store);
    schedulers.push_back(assembled->scheduler);
    routes.pools[opt.overlap ? pools[0] : pools[k]].push_back(assembled->scheduler);
    partitions.push_back(std::move(*assembled));
  }
  auto router = sys.spawn(actors::router, routes);
  std::unique_ptr<HttpEndpoint> http;
  if (!opt.http.empty()) {
    auto endpoint = serve_sim_metrics(sys, opt.http, schedulers);
    if (!endpoint) {
      std::fprintf(stderr, "claimsched sim: %s\n", endpoint.error().message.c_str());
      return 2;
    }
    http = std::move(*endpoint);
  }

  // -- nodes (restored from the node store on --resume) --------------------------
  std::shared_ptr<storage::NodeStore> node_store;
  std::map<core::NodeId, storage::LoadedNode> stored_nodes;
  if (data) {
    auto node_options = store_options(opt);
    node_options.sync_interval = std::chrono::duration_cast<std::chrono::microseconds>(opt.node_sync_interval);
    auto store = storage::NodeStore::open(data->node_dir(), {data->cluster_id(), "sim"}, node_options);
    if (!store) return fail(store.error().to_string());
    node_store = std::move(*store);
    if (opt.resume) {
      auto loaded = node_store->load([&](storage::LoadedNode&& n) {
        auto id = n.header.spec.id;
        stored_nodes.emplace(id, std::move(n));
        return core::Status::ok();
      });
      if (!loaded) return fail(loaded.error().to_string());
    }
  }
  core::LedgerConfig ledger;
  ledger.claim_ttl = opt.claim_ttl;
  uint64_t heap_before_nodes = heap_in_use();
  std::vector<actors::node_actor> nodes;
  nodes.reserve(specs.size());
  auto clock = actors::ClockMapping{actors::now(sys), actors::wall_now()};
  std::optional<storage::NodeStore::Batch> first_registration;
  if (node_store) first_registration = node_store->batch();
  auto host = std::make_shared<actors::NodeHost>();
  host->store = node_store;
  for (auto& spec : specs) {
    actors::NodeActorConfig nc;
    nc.spec = spec;
    nc.ledger = ledger;
    nc.host = host;
    if (auto it = stored_nodes.find(spec.id); it != stored_nodes.end()) {
      nc.restored = actors::restore_ledger(it->second, ledger, clock);
    } else if (node_store) {
      core::NodeReport fresh;
      fresh.spec = spec;
      fresh.snapshot = core::NodeLedger(spec.id, spec.capacity, ledger).snapshot();
      first_registration->put_report(fresh);
    }
    nodes.push_back(actors::spawn_node(sys, std::move(nc)));
  }
  stored_nodes.clear();
  if (first_registration && !first_registration->empty())
    if (auto st = node_store->write(std::move(*first_registration)); !st) return fail(st.error().to_string());
  report.bytes_per_node_actor = (heap_in_use() - heap_before_nodes) / opt.nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (opt.overlap) {
      for (auto& s : schedulers) self->send(s, actors::register_atom::value, nodes[i]);
      continue;
    }
    for (uint32_t p = 0; p < pools.size(); ++p)
      if (pools[p] == specs[i].pool) self->send(schedulers[p], actors::register_atom::value, nodes[i]);
  }
  uint64_t expected_views = opt.overlap ? uint64_t{opt.nodes} * opt.partitions : opt.nodes;
  for (;;) {
    auto t = collect(self, schedulers);
    // Registered everywhere, and (after a restart) every node reconciled.
    if (t.nodes >= expected_views && t.unverified == 0) break;
    std::this_thread::sleep_for(5ms);
  }
  report.bytes_per_node = (heap_in_use() - heap_before_nodes) / opt.nodes;
  if (opt.resume)
    report.recovery_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - recovery_started).count();
  progress("claimsched sim: " + thousands(opt.nodes) + " nodes registered with " +
           std::to_string(opt.partitions) + (opt.overlap ? " overlapping" : "") + " scheduler(s)" +
           (opt.resume ? " (resumed in " + std::to_string(static_cast<int>(report.recovery_ms)) + " ms)"
                       : std::string()));

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
  if (policy) {
    load.classes = policy->load_classes;
    load.machine = specs.front().capacity;
  }
  uint64_t heap_before_jobs = heap_in_use();
  actors::LoadGeneratorConfig lg{load, capacity, router, 1024, {}};
  if (data) lg.on_acknowledged = [&data](core::JobId id) { data->append_acknowledged(id); };
  auto generator = sys.spawn(actors::load_generator, lg);
  actors::LoadResult submitted;
  self->request(generator, caf::infinite, actors::start_atom::value)
      .receive([&](actors::LoadResult& r) { submitted = r; },
               [&](caf::error& err) { submitted.first_error = sys.render(err); });
  int64_t heap_jobs = static_cast<int64_t>(heap_in_use()) - static_cast<int64_t>(heap_before_jobs);
  report.jobs = submitted.accepted + submitted.already_present;
  report.tasks = submitted.tasks_accepted + submitted.tasks_already_present;
  report.jobs_rejected = submitted.rejected;
  report.jobs_already_present = submitted.already_present;
  report.bytes_per_pending_task =
      submitted.tasks_accepted == 0
          ? 0.0
          : static_cast<double>(std::max<int64_t>(heap_jobs, 0)) / static_cast<double>(submitted.tasks_accepted);
  progress("claimsched sim: " + thousands(submitted.accepted) + " jobs (" +
           thousands(submitted.tasks_accepted) + " tasks) queued" +
           (submitted.already_present ? ", " + thousands(submitted.already_present) + " already held" : "") +
           (submitted.rejected ? ", " + thousands(submitted.rejected) + " rejected: " + submitted.first_error
                               : std::string()));

  // -- replicas: a replica following each primary's change feed ------------------------
  std::vector<actors::replica_actor> replicas;
  auto start_replicas = [&] {
    for (uint32_t k = 0; k < partitions.size(); ++k) {
      actors::ReplicaConfig rc;
      rc.name = "replica-" + std::to_string(k + 1);
      rc.dir = data->replica_dir(k + 1);
      rc.identity = {data->cluster_id(), core::PartitionId{k + 1}};
      rc.options = store_options(opt);
      rc.feed = partitions[k].feed;
      auto replica = actors::spawn_replica(sys, rc);
      if (!replica) {
        report.failures.push_back(replica.error().to_string());
        continue;
      }
      replicas.push_back(*replica);
    }
  };
  if (opt.replicas && opt.replica_delay.count() == 0) start_replicas();

  // -- place -------------------------------------------------------------------
  auto started = actors::now(sys);
  const double cpu_at_start = process_cpu_seconds();
  for (auto& s : schedulers) self->send(s, actors::start_atom::value);
  Totals totals;
  bool timed_out = false;
  int quiet_polls = 0;
  uint64_t claims_seen = 0;
  Progress bar(progress_style_for_stderr(opt.quiet), "claimsched sim");
  for (;;) {
    std::this_thread::sleep_for(20ms);
    totals = collect(self, schedulers);
    auto t = actors::now(sys);
    // Before the checks below end the loop: the bar shows where the run ended.
    uint64_t done_tasks = opt.churn ? totals.stats.tasks_finished : totals.stats.placements;
    if (bar.due(done_tasks, report.tasks)) {
      double secs = std::chrono::duration<double>(t - started).count();
      std::string detail =
          thousands(static_cast<uint64_t>(static_cast<double>(totals.stats.placements) / std::max(secs, 1e-9))) +
          " placements/s  pending " + thousands(totals.pending) + "  in flight " + thousands(totals.in_flight) +
          "  rejects " + thousands(totals.stats.rejected());
      if (opt.churn) detail = "running " + thousands(totals.running) + "  " + detail;
      bar.update(done_tasks, report.tasks, detail);
    }
    bool done = opt.churn ? totals.jobs_finished + 0 >= report.jobs && totals.running == 0 &&
                                totals.pending == 0 && totals.in_flight == 0
                          : totals.pending == 0 && totals.in_flight == 0;
    // Stuck: no claim sent and nothing in flight, queued or backing off for a
    // while; only jobs waiting for capacity that will not come (or, with
    // churn, nothing left running to free it).
    bool idle = totals.in_flight == 0 && totals.queued == 0 && totals.backing_off == 0 &&
                totals.stats.claims_sent == claims_seen && (!opt.churn || totals.running == 0);
    claims_seen = totals.stats.claims_sent;
    quiet_polls = idle ? quiet_polls + 1 : 0;
    if (done || quiet_polls >= 10 || !totals.problem.empty()) break;
    if (opt.timeout.count() > 0 && t - started > opt.timeout) {
      timed_out = true;
      break;
    }
    if (opt.replicas && replicas.empty() && t - started >= opt.replica_delay) start_replicas();
  }

  bar.finish();
  report.placement_cpu_s = process_cpu_seconds() - cpu_at_start;

  // -- check ---------------------------------------------------------------------
  // Hold the schedulers and let what is in flight land, so the nodes and the
  // schedulers are compared at rest.
  for (auto& s : schedulers) self->send(s, actors::hold_atom::value);
  for (int i = 0; i < 500 && collect(self, schedulers).in_flight > 0; ++i) std::this_thread::sleep_for(10ms);
  std::vector<core::NodeReport> reports;
  reports.reserve(nodes.size());
  std::string report_error;
  auto checked_at = actors::now(sys);
  for (const auto& n : nodes)
    self->request(n, caf::infinite, actors::report_atom::value)
        .receive([&](core::NodeReport& r) { reports.push_back(std::move(r)); },
                 [&](caf::error& err) { report_error = sys.render(err); });
  totals = collect(self, schedulers, true);
  core::ClusterTotals cluster_totals;
  auto node_check = core::check_cluster_invariants(reports, cluster_totals);
  auto& failures = report.failures;
  if (!report_error.empty()) failures.push_back("a node did not report: " + report_error);
  if (!node_check) failures.push_back(node_check.error().message);
  report.double_allocations += cluster_totals.duplicate_tasks;
  if ((totals.pending > 0 && !timed_out) || policy) {
    std::vector<std::vector<core::JobView>> queued(schedulers.size());
    for (size_t k = 0; k < schedulers.size(); ++k)
      self->request(schedulers[k], caf::infinite, actors::queue_atom::value)
          .receive([&](std::vector<core::JobView>& v) { queued[k] = std::move(v); },
                   [&](caf::error& err) { failures.push_back("queue request failed: " + sys.render(err)); });
    if (policy) check_policy(reports, pools, *policy, core::SyntheticLoad(load, capacity), queued, report);
    if (totals.pending > 0 && !timed_out) {
      std::vector<core::JobView> all;
      for (auto& q : queued) all.insert(all.end(), q.begin(), q.end());
      if (auto stranded = core::check_no_stranded_tasks(reports, all); !stranded)
        failures.push_back(stranded.error().message);
    }
  }
  for (const auto& r : reports)
    for (const auto& c : r.claims)
      if (c.expires < checked_at)
        failures.push_back("node " + r.spec.name + " holds claim " + std::to_string(c.id.value) +
                           " past its ttl");
  if (!totals.problem.empty()) failures.push_back(totals.problem);
  if (totals.stats.jobs_submitted != report.jobs)
    failures.push_back("schedulers hold " + std::to_string(totals.stats.jobs_submitted) +
                       " jobs but " + std::to_string(report.jobs) + " were acknowledged");
  if (totals.running != cluster_totals.allocations)
    failures.push_back("schedulers count " + std::to_string(totals.running) +
                       " running tasks, nodes hold " + std::to_string(cluster_totals.allocations));
  if (!opt.resume && totals.stats.placements != totals.running + totals.stats.tasks_finished)
    failures.push_back("placements (" + std::to_string(totals.stats.placements) +
                       ") != running + finished (" +
                       std::to_string(totals.running + totals.stats.tasks_finished) +
                       "): a task was placed twice or lost");
  if (data) {
    // Every job this run or an earlier one acknowledged is held exactly once.
    std::vector<core::JobId> held;
    for (const auto& s : schedulers)
      self->request(s, caf::infinite, actors::jobs_atom::value)
          .receive([&](std::vector<core::JobId>& ids) { held.insert(held.end(), ids.begin(), ids.end()); },
                   [&](caf::error& err) { failures.push_back("jobs request failed: " + sys.render(err)); });
    std::sort(held.begin(), held.end());
    if (auto dup = std::adjacent_find(held.begin(), held.end()); dup != held.end()) {
      failures.push_back("job " + std::to_string(dup->value) + " is held by two partitions");
      for (auto it = dup; it != held.end(); it = std::adjacent_find(it + 1, held.end())) ++report.double_allocations;
    }
    auto acked = data->read_acknowledged();
    if (!acked) {
      failures.push_back(acked.error().to_string());
    } else {
      uint64_t missing = 0;
      core::JobId first_missing;
      for (auto id : *acked)
        if (!std::binary_search(held.begin(), held.end(), id) && missing++ == 0) first_missing = id;
      if (missing > 0)
        failures.push_back(std::to_string(missing) + " acknowledged job(s) lost, e.g. job " +
                           std::to_string(first_missing.value));
      report.lost_acked_jobs = missing;
    }
  }
  if (opt.replicas) {
    if (replicas.empty()) start_replicas();
    check_replicas(self, primaries, replicas, *data, opt, report);
  }
  if (timed_out) failures.push_back("the run did not finish within --timeout");

  // -- report --------------------------------------------------------------------
  report.stats = totals.stats;
  report.unplaced = totals.pending;
  report.store_writes = totals.store_writes;
  for (const auto& p : primaries) {
    auto w = p->writer_stats();
    auto& sum = report.partition_writers;
    sum.writes += w.writes;
    sum.syncs += w.syncs;
    sum.batches += w.batches;
    sum.records += w.records;
    sum.bytes += w.bytes;
    sum.write_time += w.write_time;
  }
  if (node_store) report.node_writer = node_store->writer_stats();
  report.policy_cycles = totals.policy_cycles;
  report.elapsed_s = std::chrono::duration<double>(std::max(totals.last_placement, started) - started).count();
  report.utilization_cpu = ratio(static_cast<double>(cluster_totals.allocated[core::dim::cpu]),
                                 static_cast<double>(cluster_totals.capacity[core::dim::cpu]));
  report.utilization_memory = ratio(static_cast<double>(cluster_totals.allocated[core::dim::memory]),
                                    static_cast<double>(cluster_totals.capacity[core::dim::memory]));
  report.peak_rss_bytes = peak_rss();
  std::printf("%s%s", opt.json ? to_json(opt, report).c_str() : to_text(opt, report).c_str(),
              opt.json ? "\n" : "");
  std::fflush(stdout);
  if (http && opt.http_linger.count() > 0) std::this_thread::sleep_for(opt.http_linger);
  // Before the schedulers go: a scrape in progress finishes.
  http.reset();

  for (auto& n : nodes) self->send_exit(n, caf::exit_reason::user_shutdown);
  self->send_exit(router, caf::exit_reason::user_shutdown);
  self->send_exit(generator, caf::exit_reason::user_shutdown);
  for (auto& r : replicas) self->send_exit(r, caf::exit_reason::user_shutdown);
  for (auto& p : partitions) actors::disassemble_partition(sys, p);
  if (!report.invariants_ok()) return 1;
  if (report.unplaced > report.unplaced_refused_by_allotment) {
    // A load larger than the cluster was refused before the run; the checks
    // above prove that none of these fits any node's free room (none is
    // stranded by a stale view): the shapes left do not pack into what is
    // left, as when racing schedulers fill nodes less tightly than one.
    std::fprintf(stderr,
                 "claimsched sim: %llu task(s) were never placed: no node has room left for their shape (a "
                 "packing effect; lower --utilization to place them all)\n",
                 static_cast<unsigned long long>(report.unplaced - report.unplaced_refused_by_allotment));
  }
  return 0;
}

}  // namespace claimsched::apps
