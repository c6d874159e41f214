#include "apps/agent_main.hpp"

#include <signal.h>

#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "actors/clock.hpp"
#include "actors/connect.hpp"
#include "actors/peer_proof.hpp"
#include "actors/node_actor.hpp"
#include "actors/node_persistence.hpp"
#include "actors/process_executor.hpp"
#include "actors/registration.hpp"
#include "agent/machine.hpp"
#include "agent/task_output.hpp"
#include "core/duration.hpp"
#include "apps/cluster_config.hpp"
#include "apps/tls_setup.hpp"
#include "apps/http_endpoint.hpp"
#include "apps/process_stats.hpp"
#include "apps/signals.hpp"
#include "core/metrics_text.hpp"
#include "storage/node_store.hpp"

namespace claimsched::apps {

namespace {

int fail(int code, const std::string& what) {
  std::fprintf(stderr, "claimsched agent: %s\n", what.c_str());
  return code;
}

/// Keeps the nodes registered with one server: connect, register every
/// node, heartbeat, and on a lost connection start over (one thread each).
struct Uplink {
  /// A gateway answers a registration in milliseconds; an answer that does
  /// not come was lost with a connection that died under it (a member
  /// paused, then resumed). Given up after 1.5 s, inside the gateway's 3 s
  /// node grace, the agent reconnects and heartbeats again before its nodes
  /// are declared down and their running tasks run a second time (chaos.sh).
  static constexpr std::chrono::milliseconds kRegisterTimeout{1500};

  caf::actor_system& sys;
  const std::string& name;
  const std::vector<core::NodeSpec>& specs;
  const std::vector<actors::node_actor>& nodes;
  core::Duration connect_timeout;
  std::atomic<bool>& stopping;
  std::atomic<int>& exit_code;
  /// Runs on this uplink's thread after every (re)registration: a server
  /// that restarted while the agent drains learns it again.
  std::function<void()> on_registered;

  /// The gateways registered with now (an agent that leaves tells them).
  std::vector<actors::gateway_actor> connected() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return gateways_;
  }

  /// Sleeps `d` unless the agent stops meanwhile.
  void pause(std::chrono::milliseconds d) const {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stopping.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(d, std::chrono::milliseconds(50)));
  }

  void keep(const std::string& host, uint16_t port) {
    std::string server = host + ":" + std::to_string(port);
    caf::scoped_actor self{sys};
    auto backoff = std::chrono::milliseconds(200);
    bool said_unreachable = false;
    while (!stopping.load()) {
      auto remote = actors::connect_gateway(sys, host, port, connect_timeout);
      if (!remote) {
        if (!said_unreachable)
          spdlog::warn("claimsched agent {}: cannot reach the server at {}: {}; retrying", name, server,
                       sys.render(remote.error()));
        said_unreachable = true;
        pause(backoff);
        // A member that restarts is back within a second or two, and the
        // partitions it may take over need its nodes: retry briskly (a
        // refused connection costs nothing).
        backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
        continue;
      }
      said_unreachable = false;
      backoff = std::chrono::milliseconds(200);
      auto gw = *remote;
      self->monitor(gw);
      auto interval = std::chrono::milliseconds(1000);
      if (!register_all(*self, gw, server, interval)) {
        self->demonitor(gw.address());
        pause(backoff);
        continue;
      }
      spdlog::info("claimsched agent {}: registered with {}", name, server);
      if (on_registered) on_registered();
      set_connected(gw, true);
      bool lost = false;
      while (!lost && !stopping.load()) {
        for (const auto& s : specs) self->send(gw, actors::heartbeat_atom::value, s.id);
        auto deadline = std::chrono::steady_clock::now() + interval;
        while (!lost && !stopping.load() && std::chrono::steady_clock::now() < deadline)
          self->receive([&](caf::down_msg& down) { lost = lost || down.source == gw.address(); },
                        [&](uint64_t) {}, [&](caf::error&) {},  // a registration answered too late
                        caf::after(std::chrono::milliseconds(50)) >> [&] {});
      }
      set_connected(gw, false);
      if (lost) spdlog::warn("claimsched agent {}: lost the server at {}; reconnecting", name, server);
      self->demonitor(gw.address());
    }
  }

  /// With TLS: proves to `gw` that this agent holds an agent certificate,
  /// for its nodes (actors/peer_proof.hpp); false if that failed (logged).
  bool prove_nodes(caf::blocking_actor& self, const actors::gateway_actor& gw, const std::string& server) {
    auto refused = [&](const std::string& why) {
      spdlog::error("claimsched agent {}: cannot prove this agent's certificate to the server at {}: {}", name,
                    server, why);
      return false;
    };
    auto hp = actors::split_address(server);
    auto verified = hp ? actors::server_identity_at(hp->first, hp->second) : std::nullopt;
    if (!verified) return refused("its TLS identity is unknown");
    std::string nonce, cn, failure;
    bool answered = false;
    self.send(gw, actors::challenge_atom::value);
    self.receive(
        [&](std::string& n, std::string& c) {
          nonce = std::move(n);
          cn = std::move(c);
          answered = true;
        },
        [&](caf::error& err) { failure = messages::from_caf_error(err, &sys).message; },
        caf::after(kRegisterTimeout) >> [&] { failure = "no challenge came"; });
    if (!answered) return refused(failure);
    // Sign only for the server our own handshake verified: a proof is never
    // handed to anyone else to replay.
    if (cn != verified->cn)
      return refused("it names itself '" + cn + "' but its certificate says '" + verified->cn + "'");
    std::vector<std::pair<std::string, std::string>> named;
    for (size_t i = 0; i < nodes.size(); ++i) named.emplace_back(caf::to_string(nodes[i].address()), specs[i].name);
    auto message = actors::registration_message(nonce, cn, named);
    auto signature = actors::sign_with_own_key(message);
    if (!signature) return refused(signature.error().message);
    answered = false;
    self.send(gw, actors::prove_atom::value, actors::own_certificate_pem(), message, *signature);
    self.receive([&](std::string&) { answered = true; },
                 [&](caf::error& err) { failure = messages::from_caf_error(err, &sys).message; },
                 caf::after(kRegisterTimeout) >> [&] { failure = "no answer to the proof"; });
    return answered || refused(failure);
  }

  /// Registers every node with `gw`; false when one was refused or its
  /// answer did not come. A refusal that a retry cannot mend (a bad spec, a
  /// name another connected agent holds) stops the agent with exit code 1.
  bool register_all(caf::blocking_actor& self, const actors::gateway_actor& gw, const std::string& server,
                    std::chrono::milliseconds& interval) {
    // Answers from an earlier connection that came too late are not this one's.
    bool drained = false;
    while (!drained)
      self.receive([](uint64_t) {}, [](caf::error&) {}, caf::after(std::chrono::seconds(0)) >> [&] { drained = true; });
    if (actors::tls_enabled() && !prove_nodes(self, gw, server)) return false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      // A plain send, not a request with a timeout: CAF 0.17 keeps such a
      // timeout pending after the answer, and it held this actor alive past
      // the agent's exit (LeakSanitizer). The answer comes as a message.
      self.send(gw, actors::register_atom::value, specs[i], nodes[i]);
      enum class Outcome { waiting, accepted, refused, lost } outcome = Outcome::waiting;
      auto deadline = std::chrono::steady_clock::now() + kRegisterTimeout;
      while (outcome == Outcome::waiting && !stopping.load()) {
        if (std::chrono::steady_clock::now() >= deadline) {
          outcome = Outcome::lost;
          break;
        }
        self.receive(
            [&](uint64_t ms) {
              interval = std::chrono::milliseconds(std::max<uint64_t>(ms, 50));
              outcome = Outcome::accepted;
            },
            [&](caf::error& err) {
              auto e = messages::from_caf_error(err, &sys);
              spdlog::error("claimsched agent {}: the server at {} refused node {}: {}", name, server, specs[i].name,
                            e.message);
              outcome = Outcome::refused;
              if (e.code == core::Errc::invalid_argument || e.code == core::Errc::unknown_name ||
                  e.code == core::Errc::duplicate) {
                exit_code = 1;
                stopping = true;
              }
            },
            [&](caf::down_msg& down) {
              if (down.source == gw.address()) outcome = Outcome::lost;
            },
            caf::after(std::chrono::milliseconds(50)) >> [] {});
      }
      if (outcome == Outcome::lost)
        spdlog::warn("claimsched agent {}: the server at {} did not answer node {}'s registration within {} ms; "
                     "reconnecting",
                     name, server, specs[i].name, kRegisterTimeout.count());
      if (outcome != Outcome::accepted) return false;
    }
    return true;
  }

  void set_connected(const actors::gateway_actor& gw, bool up) {
    std::lock_guard<std::mutex> guard(mutex_);
    gateways_.erase(std::remove(gateways_.begin(), gateways_.end(), gw), gateways_.end());
    if (up) gateways_.push_back(gw);
  }

  mutable std::mutex mutex_{};
  std::vector<actors::gateway_actor> gateways_{};
};

}  // namespace

core::NodeId node_id_of(std::string_view name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  return core::NodeId{h == 0 ? 1u : h};
}

int run_agent(const AgentOptions& opt) {
  block_stop_signals();
  ignore_broken_pipes();
  // Every keeper's exit sends the agent a SIGCHLD that nothing here handles
  // (the supervisor reaps by pidfd): blocked in every thread made from here
  // on, it stays pending once and wakes none, where the main thread's
  // sigtimedwait was woken by each (6% of an agent's CPU at 1,000 tasks/s).
  // Tasks get an empty mask from their keepers (agent/keeper.cpp).
  sigset_t child_exits;
  sigemptyset(&child_exits);
  sigaddset(&child_exits, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &child_exits, nullptr);
  ClusterConfig config;
  if (!opt.config.empty()) {
    auto loaded = load_cluster_config(opt.config);
    if (!loaded) {
      std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
      return 2;
    }
    config = std::move(*loaded);
  }
  AgentConfig a = config.agent;
  if (!opt.server.empty()) a.server = opt.server;
  else if (const char* env = std::getenv("CLAIMSCHED_SERVER"); env && *env && opt.config.empty()) a.server = env;
  if (!opt.name.empty()) a.name = opt.name;
  if (a.name.empty()) a.name = agent::host_name();
  if (!opt.pool.empty()) a.pool = opt.pool;
  if (!opt.resources.empty()) a.resources = opt.resources;
  if (!opt.labels.empty()) a.labels = opt.labels;
  if (!opt.state_dir.empty()) a.state_dir = opt.state_dir;
  if (opt.max_starting >= 0) a.max_starting = static_cast<uint32_t>(opt.max_starting);
  if (!opt.on_stop.empty()) {
    if (opt.on_stop != "leave" && opt.on_stop != "wait")
      return fail(2, "--on-stop must be leave or wait, got '" + opt.on_stop + "'");
    a.on_stop = opt.on_stop;
  }
  if (!opt.keep_outputs.empty()) {
    auto d = core::parse_duration(opt.keep_outputs);
    if (!d || d->count() <= 0) return fail(2, "--keep-outputs must be a duration such as 7d or 12h");
    a.keep_outputs = *d;
  }

  core::Resources capacity;
  if (!a.resources.empty()) {
    auto r = core::Resources::parse(a.resources);
    if (!r) return fail(2, "resources: " + r.error().message);
    capacity = *r;
  } else {
    auto r = agent::detect_machine_capacity();
    if (!r) return fail(2, "cannot detect this machine's capacity (give --resources): " + r.error().message);
    capacity = *r;
  }
  // One server, or every member of an HA cluster: the node registers with
  // each, so whichever member owns its partition (now or after a failover)
  // already has it.
  std::vector<std::pair<std::string, uint16_t>> servers;
  {
    std::stringstream items(a.server);
    for (std::string item; std::getline(items, item, ',');) {
      auto hp = actors::split_address(item);
      if (!hp) return fail(2, "server '" + item + "' is not HOST:PORT");
      servers.push_back(*hp);
    }
    if (servers.empty()) return fail(2, "no server given");
  }
  std::error_code ec;
  std::filesystem::create_directories(a.state_dir, ec);
  if (ec) return fail(2, "cannot create the state directory " + a.state_dir + ": " + ec.message());

  const TlsFiles tls = resolve_tls_files(config.tls, {opt.tls_ca, opt.tls_cert, opt.tls_key});
  if (auto bad = setup_tls(tls, TlsRole::agent)) return fail(2, *bad);

  caf::actor_system_config cfg;
  actors::LinkOptions link;
  link.heartbeat = config.timeouts.link_heartbeat;
  link.timeout = config.timeouts.link_timeout;
  link.shared_queue = true;
  actors::configure(cfg, link);
  caf::actor_system sys{cfg};

  storage::StoreOptions so;
  so.log_level = storage::RocksLogLevel::error;
  auto store = storage::NodeStore::open(a.state_dir + "/nodes", {config.cluster_id, a.name}, so);
  if (!store) return fail(1, store.error().to_string());
  std::shared_ptr<storage::NodeStore> node_store = std::move(*store);
  std::map<core::NodeId, storage::LoadedNode> stored;
  if (auto st = node_store->load([&](storage::LoadedNode&& n) {
        auto id = n.header.spec.id;
        stored.emplace(id, std::move(n));
        return core::Status::ok();
      });
      !st)
    return fail(1, st.error().to_string());

  std::shared_ptr<actors::ProcessExecutor> executor;
  if (opt.simulate == 0) {
    agent::SupervisorOptions supervisor;
    supervisor.cgroup_dir = opt.cgroup;
    executor = std::make_shared<actors::ProcessExecutor>(a.state_dir + "/tasks", supervisor);
    executor->load_detached();  // what the last agent left running, for the nodes to adopt
  }
  std::unique_ptr<HttpEndpoint> http;
  if (!opt.http.empty()) {
    auto where = parse_http_listen(opt.http);
    if (!where) return fail(2, "--http: " + where.error().message);
    auto endpoint =
        HttpEndpoint::start(where->host, where->port, [executor, node_store]() -> core::Expected<std::string> {
          core::MetricsText m;
          if (executor) executor->metrics().render(m, executor->busy());
          // The node store's group commits: every ledger change of the
          // agent's nodes is a record of one.
          const auto& commits = node_store->database().commit_metrics();
          auto seconds = commits.seconds.snapshot();
          auto records = commits.records.snapshot();
          m.histogram("claimsched_agent_group_commit_seconds",
                      "time of one group commit of the agent's node store (one RocksDB write and its fsync)", {},
                      seconds.bounds, seconds.at_most, seconds.sum, seconds.count);
          m.histogram("claimsched_agent_group_commit_batch_records",
                      "records (key changes) in one group commit of the agent's node store", {}, records.bounds,
                      records.at_most, records.sum, records.count);
          return m.text();
        },
        {}, tls.enabled() && !opt.http_plain ? HttpEndpoint::HttpsFiles{tls.cert, tls.key} : HttpEndpoint::HttpsFiles{});
    if (!endpoint) return fail(1, endpoint.error().message);
    http = std::move(*endpoint);
    std::printf("claimsched agent http on %s:%u (%s: GET /metrics)\n", where->host.c_str(),
                static_cast<unsigned>(http->port()), http->https() ? "HTTPS" : "plain HTTP");
    std::fflush(stdout);
  }
  core::LedgerConfig ledger;
  ledger.claim_ttl = config.timeouts.claim_ttl;
  // A real node remembers many task ends: while the server restarts, every
  // task that ends here must still be reported ended, not lost and run again.
  if (opt.simulate == 0) ledger.recent_finished = 4096;
  uint32_t count = std::max<uint32_t>(1, opt.simulate);
  std::vector<core::NodeSpec> specs;
  std::vector<actors::node_actor> nodes;
  auto clock = actors::ClockMapping{actors::now(sys), actors::wall_now()};
  auto fresh = node_store->batch();
  auto host = std::make_shared<actors::NodeHost>();
  host->store = node_store;
  host->executor = executor;
  host->finish_unrun_tasks = opt.simulate > 0;
  for (uint32_t i = 0; i < count; ++i) {
    core::NodeSpec spec;
    spec.name = opt.simulate == 0 ? a.name : a.name + "-" + std::to_string(i + 1);
    spec.id = node_id_of(spec.name);
    spec.pool = a.pool;
    spec.capacity = capacity;
    spec.labels = a.labels;
    spec.max_starting = a.max_starting;
    actors::NodeActorConfig nc;
    nc.spec = spec;
    nc.ledger = ledger;
    nc.host = host;
    if (auto it = stored.find(spec.id); it != stored.end()) {
      nc.restored = actors::restore_ledger(it->second, ledger, clock);
      nc.restored->set_capacity(capacity);
      nc.restored->set_state(core::NodeState::up);  // drained when the last agent stopped
    } else {
      core::NodeReport r;
      r.spec = spec;
      r.snapshot = core::NodeLedger(spec.id, capacity, ledger).snapshot();
      fresh.put_report(r);
    }
    specs.push_back(spec);
    nodes.push_back(actors::spawn_node(sys, std::move(nc)));
  }
  if (!fresh.empty())
    if (auto st = node_store->write(std::move(fresh)); !st) return fail(1, st.error().to_string());
  spdlog::info("claimsched agent {}: {} node(s) of {} in pool {}, state in {}", a.name, count,
               capacity.to_string(), a.pool, a.state_dir);

  caf::scoped_actor self{sys};
  if (executor) {
    // Every node actor has adopted what it still holds once it answers;
    // what the last agent left that no node holds any more must not run on.
    for (auto& n : nodes)
      self->request(n, caf::infinite, actors::report_atom::value).receive([](core::NodeReport&) {},
                                                                         [](caf::error&) {});
    executor->drop_unadopted();
  }
  auto next_cleanup = std::chrono::steady_clock::now();
  auto clean_outputs = [&] {
    if (!executor || std::chrono::steady_clock::now() < next_cleanup) return;
    next_cleanup = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    size_t removed = agent::remove_old_outputs(a.state_dir + "/tasks", a.keep_outputs,
                                               [&](core::JobId job) { return executor->runs_job(job); });
    if (removed > 0)
      spdlog::info("claimsched agent {}: removed the outputs of {} job(s) older than {}", a.name, removed,
                   core::format_duration(a.keep_outputs));
  };
  // Stopping: the first signal drains; "wait" then runs until the tasks end,
  // "leave" (or a second signal) leaves them running and exits.
  enum class Stop { running, waiting, leaving } stop = Stop::running;
  std::atomic<bool> draining{false};
  // Called from the uplinks' threads too: its own scoped actor.
  auto drain = [&] {
    caf::scoped_actor asker{sys};
    for (auto& n : nodes)
      asker->request(n, std::chrono::seconds(10), actors::drain_atom::value)
          .receive([](core::NodeSnapshot&) {}, [](caf::error&) {});
  };
  auto on_signal = [&] {
    if (stop == Stop::running && a.on_stop == "wait" && executor && executor->busy() > 0) {
      spdlog::info("claimsched agent {}: stopping: no new work; waiting for {} task(s) to end (signal again to "
                   "leave them running)",
                   a.name, executor->busy());
      draining = true;
      drain();
      stop = Stop::waiting;
      return;
    }
    stop = Stop::leaving;
  };
  std::atomic<bool> stopping{false};
  std::atomic<int> exit_code{0};
  Uplink uplink{sys, a.name, specs, nodes, config.timeouts.link_timeout, stopping, exit_code, [&] {
                  if (draining.load()) drain();
                }};
  std::vector<std::thread> links;
  for (const auto& [host, port] : servers)
    links.emplace_back([&uplink, host = host, port = port] { uplink.keep(host, port); });
  while (!stopping.load()) {
    if (wait_for_stop_signal(std::chrono::milliseconds(200))) on_signal();
    if (stop == Stop::waiting && executor->busy() == 0) stop = Stop::leaving;
    if (stop == Stop::leaving) break;
    clean_outputs();
  }
  if (executor && executor->busy() > 0) {
    // Leave: nothing new starts here, every server waits for this node's
    // return, and the tasks run on under their keepers for the next start.
    drain();
    for (const auto& gw : uplink.connected())
      for (const auto& s : specs) self->send(gw, actors::leave_atom::value, s.id);
    size_t left = executor->detach_all();
    spdlog::info("claimsched agent {}: stopping; {} task(s) left running for the next start to adopt", a.name,
                 left);
  } else {
    spdlog::info("claimsched agent {}: stopping", a.name);
  }
  http.reset();
  stopping = true;
  for (auto& t : links) t.join();
  for (auto& n : nodes) self->send_exit(n, caf::exit_reason::user_shutdown);
  for (auto& n : nodes) self->wait_for(n);
  actors::stop_network_helpers(sys, *self);
  return exit_code.load();
}

}  // namespace claimsched::apps
