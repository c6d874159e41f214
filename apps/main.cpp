// claimsched: one binary, one subcommand per role (DESIGN.md, "Interfaces").

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/agent_main.hpp"
#include "apps/client.hpp"
#include "apps/client_campaign.hpp"
#include "apps/config_command.hpp"
#include "apps/log_format.hpp"
#include "apps/policy_command.hpp"
#include "apps/replay.hpp"
#include "apps/server.hpp"
#include "apps/sim.hpp"
#include "apps/starvation.hpp"
#include "core/duration.hpp"

namespace {

using claimsched::core::Duration;

/// A CLI11 option holding a duration written like "500ms" or "10s".
CLI::Option* add_duration(CLI::App& app, const std::string& name, Duration& target,
                          const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            auto d = claimsched::core::parse_duration(text);
            if (!d) throw CLI::ValidationError(name, d.error().message);
            target = *d;
          },
          help + " (default " + claimsched::core::format_duration(target) + ")")
      ->type_name("DURATION");
}

void add_sim(CLI::App& app, claimsched::apps::SimOptions& o) {
  auto* sim = app.add_subcommand("sim", "Synthetic load on an in-process cluster (the embedded default)");
  sim->add_option("--nodes", o.nodes, "Node actors")->capture_default_str();
  sim->add_option("--partitions", o.partitions, "Scheduler partitions")->capture_default_str();
  sim->add_option("--tasks", o.tasks, "Tasks in total")->capture_default_str();
  sim->add_option("--tasks-per-job", o.tasks_per_job, "Tasks per job")->capture_default_str();
  sim->add_option("--utilization", o.utilization, "Target fill of the cluster, 0-1")->capture_default_str();
  sim->add_option("--seed", o.seed, "Random seed")->capture_default_str();
  sim->add_flag("--json", o.json, "Print the summary as JSON");
  sim->add_flag("--churn", o.churn, "Tasks finish after --task-runtime, freeing room for more");
  sim->add_option("--waves", o.waves, "With --churn: how many cluster-fulls the tasks make")->capture_default_str();
  add_duration(*sim, "--task-runtime", o.task_runtime, "With --churn: mean task runtime");
  sim->add_flag("--overlap", o.overlap, "All schedulers place on all nodes (measures races)");
  sim->add_flag("--same-start", o.same_start,
                "With --overlap: all schedulers fill from the same node (worst-case races)");
  sim->add_option("--cas", o.cas, "Conflict detection: fit (fit check) or strict (generation CAS)")
      ->check(CLI::IsMember({"fit", "strict"}))
      ->capture_default_str();
  sim->add_option("--scorer", o.scorer, "Placement scorer: fill_first or spread")
      ->check(CLI::IsMember({"fill_first", "spread"}))
      ->capture_default_str();
  sim->add_flag("--heterogeneous", o.heterogeneous, "Mix three machine shapes");
  sim->add_option("--max-starting", o.max_starting, "Per-node limit on starting tasks (0 = none)")->capture_default_str();
  sim->add_option("--gang-fraction", o.gang_fraction, "Share of jobs that are gangs")->capture_default_str();
  sim->add_option("--window", o.window, "Claims in flight per scheduler")->capture_default_str();
  sim->add_option("--max-tasks-per-claim", o.max_tasks_per_claim, "Tasks batched in one claim")->capture_default_str();
  sim->add_option("--threads", o.threads, "Actor worker threads (0 = one per core)")->capture_default_str();
  sim->add_option("--max-throughput", o.max_throughput, "Messages an actor handles per turn")->capture_default_str();
  add_duration(*sim, "--claim-ttl", o.claim_ttl, "Unconfirmed claims expire after this");
  add_duration(*sim, "--timeout", o.timeout, "Fail if the run takes longer (0s = never)");
  sim->add_flag("--quiet", o.quiet, "No progress (a bar on a terminal, else a line every 5 s)");
  sim->add_option("--data-dir", o.data_dir, "Keep state in RocksDB under this directory");
  sim->add_flag("--resume", o.resume, "Continue the run in --data-dir (a killed one, say)");
  sim->add_flag("--replicas", o.replicas, "With --data-dir: a standby replica per partition");
  add_duration(*sim, "--replica-delay", o.replica_delay, "Start the replicas this late");
  sim->add_option("--scenario", o.scenario, "starvation: a class arrives in a full cluster (fair share)")
      ->check(CLI::IsMember({"", "starvation"}));
  add_duration(*sim, "--starvation-timeout", o.starvation_timeout, "Starvation scenario: the starvation timeout");
  sim->add_flag("--policy", o.policy,
                "Classes (fair_share with weights, fixed_share, reserve), users with allotments, the policy cycle");
  add_duration(*sim, "--policy-interval", o.policy_interval, "--policy and the starvation scenario: the policy cycle");
  sim->add_option("--sync", o.sync, "With --data-dir: always, batch or none")
      ->check(CLI::IsMember({"always", "batch", "none"}))
      ->capture_default_str();
  sim->add_option("--writes-in-flight", o.writes_in_flight,
                  "With --data-dir: store writes in flight per scheduler (0 = the scheduler's default)")
      ->capture_default_str();
  add_duration(*sim, "--node-sync-interval", o.node_sync_interval,
               "With --sync batch: the node store's fsyncs at most this often (0s = after each write)");
  sim->add_option("--http", o.http, "Serve GET /metrics on HOST:PORT while the run lasts (port 0: any, printed)");
  add_duration(*sim, "--http-linger", o.http_linger, "With --http: keep serving this long after the report");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"claimsched: a distributed scheduler cluster"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();
  std::string log_format = "text";
  app.add_option("--log-format", log_format, "text, or json: one JSON object per line, for log shippers")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  claimsched::apps::SimOptions sim;
  add_sim(app, sim);
  claimsched::apps::PolicyOptions policy;
  claimsched::apps::add_policy_commands(app, policy);
  claimsched::apps::ConfigCheckOptions config_check;
  claimsched::apps::add_config_commands(app, config_check);

  claimsched::apps::ServerOptions server;
  auto* srv = app.add_subcommand("server", "Scheduler partitions, their stores and the gateway");
  srv->add_option("--config", server.config, "The cluster's TOML file")->required();
  srv->add_option("--port", server.port, "Override [listen] port (0: any free port, printed)");
  srv->add_option("--data-dir", server.data_dir, "Override [storage] data_dir");
  srv->add_option("--name", server.name, "HA: this member's name (overrides [ha] name)");
  srv->add_option("--etcd", server.etcd, "HA: etcd endpoints, comma-separated (overrides [ha] etcd)");
  srv->add_option("--http", server.http,
                  "Serve /metrics, the JSON API (/api/v1/) and the dashboard (/) on HOST:PORT (overrides [http] "
                  "listen; port 0: any)");
  srv->add_option("--tls-ca", server.tls_ca, "Override [tls] ca: the cluster CA's certificate (PEM)");
  srv->add_option("--tls-cert", server.tls_cert, "Override [tls] cert: this server's certificate (PEM, OU=server)");
  srv->add_option("--tls-key", server.tls_key, "Override [tls] key: its private key (PEM)");

  claimsched::apps::AgentOptions agent;
  auto* agt = app.add_subcommand("agent", "Host this machine's node (or --simulate N) and run its tasks");
  agt->add_option("--config", agent.config, "A cluster.toml whose [agent] section applies");
  agt->add_option("--server", agent.server, "HOST:PORT (default: [agent] server, $CLAIMSCHED_SERVER, 127.0.0.1:7070)");
  agt->add_option("--name", agent.name, "Node name (default: the host name)");
  agt->add_option("--pool", agent.pool, "Pool to join (default: [agent] pool, else default)");
  agt->add_option("--resources", agent.resources, "Capacity, e.g. cpu=8,memory=32Gi (default: from /proc)");
  agt->add_option("--label", agent.labels, "A node label: key or key=value (repeatable)");
  agt->add_option("--state-dir", agent.state_dir, "Where the node's state and task outputs live");
  agt->add_option("--simulate", agent.simulate, "Host N synthetic nodes whose tasks only pretend to run");
  agt->add_option("--max-starting", agent.max_starting, "Tasks starting at once per node (0: no limit)");
  agt->add_option("--on-stop", agent.on_stop,
                  "On SIGTERM: leave running tasks for the next start to adopt (leave, the default) or wait for "
                  "them to end (wait)");
  agt->add_option("--http", agent.http, "Serve GET /metrics on HOST:PORT (port 0: any free one, printed)");
  agt->add_flag("--http-plain", agent.http_plain,
                "Serve --http as plain HTTP even with TLS (default with TLS: HTTPS with the agent's certificate)");
  agt->add_option("--tls-ca", agent.tls_ca, "Override [tls] ca: the cluster CA's certificate (PEM)");
  agt->add_option("--tls-cert", agent.tls_cert, "Override [tls] cert: this agent's certificate (PEM, OU=agent)");
  agt->add_option("--tls-key", agent.tls_key, "Override [tls] key: its private key (PEM)");
  agt->add_option("--keep-outputs", agent.keep_outputs, "Keep task outputs this long after their job ends here (default 7d)");
  agt->add_option("--cgroup", agent.cgroup,
                  "A delegated cgroup v2 directory for the tasks' cgroups (default: the agent's own, if delegated; "
                  "else memory limits are sampled)");

  claimsched::apps::ReplayOptions replay;
  auto* rep = app.add_subcommand("replay", "Replay a workload trace (SWF or CSV, gzip or plain) in virtual time");
  rep->add_option("trace", replay.trace, "The trace file")->required();
  rep->add_option("--config", replay.configs, "A cluster.toml to replay under (repeat to compare several)");
  rep->add_option("--machine", replay.machines,
                  "N:RESOURCES[@POOL]: N nodes of that capacity (repeatable; default: the trace header's "
                  "MaxNodes and MaxProcs)");
  rep->add_option("--map", replay.maps, "FIELD=VALUE:class=C,pool=P: where a trace's user, group, queue, "
                                        "partition or executable goes (repeatable; first match wins)");
  rep->add_flag("--strict", replay.strict, "A malformed trace line is an error (default: skipped and counted)");
  rep->add_flag("--preemptible", replay.preemptible,
                "The trace's jobs may be preempted (restarted from the start); default: not, as HPC jobs");
  rep->add_flag("--json", replay.json, "Print the report as one JSON object");
  rep->add_flag("--quiet", replay.quiet, "No progress bar, no per-line notes");
  rep->add_option("--limit", replay.limit, "Replay only the first N jobs");
  rep->add_option("--csv", replay.csv, "Write a CSV with a row per job (per configuration: FILE-LABEL.csv)");
  rep->add_option("--plot", replay.plot_dir, "Write PNG plots (and their data) into this directory");
  rep->add_option("--tau", replay.tau_s, "Bounded slowdown's threshold, seconds")->capture_default_str();

  claimsched::apps::ClientOptions client;
  claimsched::apps::add_client_commands(app, client);
  claimsched::apps::CampaignOptions campaign;
  claimsched::apps::add_campaign_commands(app, campaign);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the problem (or the help); every usage error exits 2, as
    // the README promises, whatever CLI11's own code for it is.
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_default_logger(spdlog::stderr_color_mt("claimsched"));
  spdlog::set_level(spdlog::level::from_str(log_level));
  claimsched::apps::set_log_format(log_format);
  if (app.got_subcommand("sim") && sim.scenario == "starvation" && !sim.http.empty()) {
    // The scenario builds its own schedulers, and serves none of them.
    std::fprintf(stderr, "claimsched sim: --http serves the synthetic load's run, not a --scenario\n");
    return 2;
  }
  if (app.got_subcommand("sim"))
    return sim.scenario == "starvation" ? claimsched::apps::run_starvation_scenario(sim)
                                        : claimsched::apps::run_sim(sim);
  if (app.got_subcommand("replay")) return claimsched::apps::run_replay(replay);
  if (app.got_subcommand("policy")) return claimsched::apps::run_policy_eval(policy);
  if (app.got_subcommand("config")) return claimsched::apps::run_config_check(config_check);
  if (app.got_subcommand("server")) return claimsched::apps::run_server(server);
  if (app.got_subcommand("agent")) return claimsched::apps::run_agent(agent);
  if (app.got_subcommand("campaign")) return claimsched::apps::run_campaign(campaign);
  for (const auto* sub : app.get_subcommands())
    if (claimsched::apps::is_client_command(sub->get_name()))
      return claimsched::apps::run_client(sub->get_name(), client);
  return 2;
}
