#include "apps/replay.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "apps/cluster_config.hpp"
#include "apps/partition_setup.hpp"
#include "apps/progress.hpp"
#include "apps/replay_output.hpp"
#include "apps/trace_file.hpp"
#include "core/replay/mapping.hpp"

namespace claimsched::apps {

namespace {

using core::replay::ReplayJob;
using core::replay::Trace;

core::Error usage(const std::string& what) { return core::make_error(core::Errc::invalid_argument, what); }

/// `N:RESOURCES[@POOL]`: N nodes of that capacity in POOL (default: the first leaf pool).
struct MachineGroup {
  uint32_t nodes = 0;
  core::Resources capacity;
  std::string pool;
};

core::Expected<MachineGroup> parse_machine(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return usage("--machine '" + text + "': expected N:RESOURCES[@POOL]");
  MachineGroup g;
  try {
    size_t used = 0;
    long n = std::stol(text.substr(0, colon), &used);
    if (used != colon || n <= 0 || n > 1'000'000) throw std::invalid_argument("n");
    g.nodes = static_cast<uint32_t>(n);
  } catch (const std::exception&) {
    return usage("--machine '" + text + "': the node count must be a whole number from 1 to 1000000");
  }
  std::string rest = text.substr(colon + 1);
  if (auto at = rest.find('@'); at != std::string::npos) {
    g.pool = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (g.pool.empty()) return usage("--machine '" + text + "': empty pool after '@'");
  }
  auto capacity = core::Resources::parse(rest);
  if (!capacity) return usage("--machine '" + text + "': " + capacity.error().message);
  g.capacity = *capacity;
  return g;
}

/// The machine: the --machine groups, or the trace header's MaxNodes nodes
/// sharing MaxProcs CPUs. Memory, when jobs ask for it and the machine does
/// not say, is what the largest request per CPU needs on every CPU.
core::Expected<std::vector<MachineGroup>> machine_of(const ReplayOptions& o, const Trace& trace,
                                                    const std::vector<ReplayJob>& jobs) {
  std::vector<MachineGroup> groups;
  for (const auto& text : o.machines) {
    auto g = parse_machine(text);
    if (!g) return g.error();
    groups.push_back(std::move(*g));
  }
  if (!groups.empty()) return groups;
  const auto& h = trace.header;
  if (!h.max_nodes && !h.max_procs)
    return usage("the trace's header gives neither MaxNodes nor MaxProcs: say what to replay it on with "
                 "--machine N:RESOURCES (e.g. --machine 128:cpu=8,memory=32Gi)");
  uint32_t nodes = h.max_nodes ? *h.max_nodes : *h.max_procs;
  uint32_t procs = h.max_procs ? *h.max_procs : *h.max_nodes;
  int64_t cpus = std::max<int64_t>(1, procs / std::max<uint32_t>(1, nodes));
  int64_t memory_per_cpu = 0;
  for (const auto& j : jobs) {
    int64_t cpu = std::max<int64_t>(1, j.spec.per_task[core::dim::cpu]);
    memory_per_cpu = std::max(memory_per_cpu, j.spec.per_task[core::dim::memory] * 1000 / cpu);
  }
  MachineGroup g;
  g.nodes = nodes;
  g.capacity.set(core::dim::cpu, cpus * 1000);
  if (memory_per_cpu > 0) g.capacity.set(core::dim::memory, memory_per_cpu * cpus);
  groups.push_back(g);
  return groups;
}

std::vector<core::NodeSpec> nodes_of(const std::vector<MachineGroup>& groups, const std::string& default_pool) {
  std::vector<core::NodeSpec> nodes;
  for (const auto& g : groups)
    for (uint32_t i = 0; i < g.nodes; ++i) {
      core::NodeSpec n;
      n.id = core::NodeId{static_cast<uint32_t>(nodes.size() + 1)};
      n.name = "n" + std::to_string(n.id.value);
      n.pool = g.pool.empty() ? default_pool : g.pool;
      n.capacity = g.capacity;
      nodes.push_back(std::move(n));
    }
  return nodes;
}

/// The trace's jobs as the cluster would be given them: a parallel job is a
/// gang of one-processor tasks (all start together), killed at its requested
/// time. Pool and class from the mapping rules, else the default pool and class.
core::Expected<std::vector<ReplayJob>> jobs_of(const Trace& trace, const std::vector<core::replay::MapRule>& rules,
                                               const std::string& default_pool, const ReplayOptions& o,
                                               std::map<std::string, uint64_t>& skipped) {
  uint64_t limit = o.limit;
  std::vector<ReplayJob> jobs;
  std::set<uint64_t> numbers;
  for (const auto& t : trace.jobs) {
    if (limit && jobs.size() >= limit) break;
    if (t.number == 0 || !numbers.insert(t.number).second) {
      ++skipped["duplicate_id"];
      continue;
    }
    ReplayJob j;
    j.spec.id = core::JobId{t.number};
    j.spec.user = t.user.empty() ? "unknown" : t.user;
    auto target = core::replay::map_job(rules, t);
    j.spec.job_class = target.job_class;
    j.spec.pool = target.pool.empty() ? default_pool : target.pool;
    j.spec.count = t.tasks;
    j.spec.per_task = t.per_task;
    j.spec.gang = t.tasks > 1;
    j.spec.preemptible = o.preemptible;
    if (t.requested_time_s) j.spec.max_run_time = std::chrono::seconds(*t.requested_time_s);
    j.spec.submit_time = std::chrono::seconds(t.submit_s);
    j.run = std::chrono::seconds(t.run_s);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

/// What the cluster would run for `config`: its partitions' schedulers and
/// policy, exactly as `claimsched server` sets them up.
core::replay::ReplaySetup setup_of(const ClusterConfig& config, std::vector<core::NodeSpec> nodes) {
  core::replay::ReplaySetup setup;
  for (const auto& p : config.partitions) {
    auto s = partition_setup(config, p);
    setup.partitions.push_back(s.actor.scheduler);
    setup.partitions.back().keep_node_names = false;
    if (s.actor.policy) setup.policy = *s.actor.policy;
  }
  setup.nodes = std::move(nodes);
  return setup;
}

/// The recorded schedule: each job started `wait` after its submit and ran
/// its run time (only for traces that record waits).
std::optional<std::vector<core::replay::JobOutcome>> recorded_of(const Trace& trace, uint64_t limit) {
  std::vector<core::replay::JobOutcome> out;
  bool any = false;
  for (const auto& t : trace.jobs) {
    if (limit && out.size() >= limit) break;
    core::replay::JobOutcome o;
    o.number = t.number;
    o.user = t.user.empty() ? "unknown" : t.user;
    o.tasks = t.tasks;
    o.cpus_per_task = static_cast<double>(t.per_task[core::dim::cpu]) / 1000.0;
    o.submit_s = t.submit_s;
    if (t.wait_s) {
      any = true;
      o.start_s = t.submit_s + *t.wait_s;
      o.end_s = *o.start_s + t.run_s;
      o.busy_cpu_s = static_cast<double>(t.run_s) * o.tasks * o.cpus_per_task;
      if (t.requested_time_s && t.run_s > *t.requested_time_s) o.killed_at_limit = true;
    }
    out.push_back(std::move(o));
  }
  if (!any) return std::nullopt;
  return out;
}

std::string label_of(const std::string& path, std::set<std::string>& taken) {
  std::string base = path.empty() ? "default" : std::filesystem::path(path).stem().string();
  for (char& c : base)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  std::string label = base;
  for (int k = 2; !taken.insert(label).second; ++k) label = base + "-" + std::to_string(k);
  return label;
}

}  // namespace

int run_replay(const ReplayOptions& o) {
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "claimsched replay: %s\n", why.c_str());
    return 2;
  };
  if (o.tau_s <= 0) return fail("--tau must be positive");
  std::vector<core::replay::MapRule> rules;
  for (const auto& text : o.maps) {
    auto r = core::replay::parse_map_rule(text);
    if (!r) return fail("--map '" + text + "': " + r.error().message);
    rules.push_back(std::move(*r));
  }
  std::vector<std::pair<std::string, ClusterConfig>> configs;
  std::set<std::string> labels;
  for (const auto& path : o.configs) {
    auto c = load_cluster_config(path);
    if (!c) return fail(c.error().message);
    configs.emplace_back(label_of(path, labels), std::move(*c));
  }
  if (configs.empty()) {
    auto c = parse_cluster_config("", "(default configuration)");
    if (!c) return fail(c.error().message);
    configs.emplace_back(label_of("", labels), std::move(*c));
  }

  auto trace = load_trace(o.trace, core::replay::TraceOptions{o.strict});
  if (!trace) return fail(trace.error().message);
  for (const auto& p : trace->problems)
    if (!o.quiet) std::fprintf(stderr, "claimsched replay: %s: skipped %s\n", o.trace.c_str(), p.message.c_str());
  if (trace->jobs.empty()) return fail(o.trace + ": no job to replay");

  ReplayReport report;
  report.trace = o.trace;
  report.skipped = trace->skipped;
  report.tau_s = o.tau_s;
  for (auto& [label, config] : configs) {
    std::string default_pool = leaf_pools(config.policy).empty() ? "default" : leaf_pools(config.policy).front();
    std::map<std::string, uint64_t> skipped = trace->skipped;
    auto jobs = jobs_of(*trace, rules, default_pool, o, skipped);
    if (!jobs) return fail(jobs.error().message);
    auto machine = machine_of(o, *trace, *jobs);
    if (!machine) return fail(machine.error().message);
    auto setup = setup_of(config, nodes_of(*machine, default_pool));
    double capacity = 0;
    for (const auto& n : setup.nodes) capacity += static_cast<double>(n.capacity[core::dim::cpu]) / 1000.0;
    core::TimePoint span = jobs->empty() ? core::TimePoint{0} : jobs->back().spec.submit_time;
    Progress bar(progress_style_for_stderr(o.quiet), label);
    double days = std::chrono::duration<double>(span).count() / 86400.0;
    auto show = [&](const core::replay::ReplayProgress& p) {
      // Called per event: the detail is made only when it is shown.
      if (!bar.due(p.jobs_ended, p.jobs_total)) return;
      char detail[64];
      std::snprintf(detail, sizeof detail, "jobs ended, day %.1f of %.1f",
                    std::chrono::duration<double>(p.now).count() / 86400.0, days);
      bar.update(p.jobs_ended, p.jobs_total, detail);
    };
    auto started = std::chrono::steady_clock::now();
    auto result = core::replay::replay(setup, *jobs, show);
    bar.finish();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!result) return fail(label + ": " + result.error().message);
    for (const auto& r : result->refusals)
      if (!o.quiet)
        std::fprintf(stderr, "claimsched replay: %s: job %llu refused: %s\n", label.c_str(),
                     static_cast<unsigned long long>(r.job.value), r.message.c_str());
    for (const auto& [reason, n] : result->refused) skipped["refused_" + reason] += n;
    ConfigRun run;
    run.label = label;
    run.config_path = o.configs.empty() ? "" : o.configs[report.runs.size()];
    run.nodes = setup.nodes.size();
    run.capacity_cpus = capacity;
    run.wall_s = wall;
    run.skipped = std::move(skipped);
    run.figures = core::replay::figures_of(result->outcomes, capacity, {o.tau_s, 0, 8});
    run.result = std::move(*result);
    if (!run.result.problem.empty()) return fail(label + ": invariant broken: " + run.result.problem);
    report.runs.push_back(std::move(run));
  }
  if (auto recorded = recorded_of(*trace, o.limit)) {
    report.recorded = core::replay::figures_of(*recorded, report.runs.front().capacity_cpus, {o.tau_s, 0, 8});
    report.recorded_outcomes = std::move(*recorded);
  }
  if (!o.csv.empty())
    if (auto st = write_job_csvs(report, o.csv); !st) return fail(st.error().message);
  if (!o.plot_dir.empty())
    if (auto st = write_plots(report, o.plot_dir); !st) return fail(st.error().message);
  print_replay_report(report, o.json);
  return 0;
}

}  // namespace claimsched::apps
