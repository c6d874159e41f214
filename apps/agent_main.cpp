#include "apps/agent_main.hpp"

#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <map>
#include <sstream>
#include <thread>

#include "actors/clock.hpp"
#include "actors/connect.hpp"
#include "actors/node_actor.hpp"
#include "actors/node_persistence.hpp"
#include "actors/process_executor.hpp"
#include "actors/registration.hpp"
#include "agent/machine.hpp"
#include "apps/cluster_config.hpp"
#include "apps/signals.hpp"
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
  caf::actor_system& sys;
  const std::string& name;
  const std::vector<core::NodeSpec>& specs;
  const std::vector<actors::node_actor>& nodes;
  core::Duration connect_timeout;
  std::atomic<bool>& stopping;
  std::atomic<int>& exit_code;

  /// Sleeps `d` unless the agent stops meanwhile.
  void pause(std::chrono::milliseconds d) const {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stopping.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(d, std::chrono::milliseconds(50)));
  }

  void keep(const std::string& host, uint16_t port) const {
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
      bool registered = true;
      for (size_t i = 0; i < nodes.size() && registered; ++i) {
        self->request(gw, std::chrono::seconds(10), actors::register_atom::value, specs[i], nodes[i])
            .receive([&](uint64_t ms) { interval = std::chrono::milliseconds(std::max<uint64_t>(ms, 50)); },
                     [&](caf::error& err) {
                       auto e = messages::from_caf_error(err, &sys);
                       spdlog::error("claimsched agent {}: the server at {} refused node {}: {}", name, server,
                                     specs[i].name, e.message);
                       registered = false;
                       if (e.code == core::Errc::invalid_argument || e.code == core::Errc::unknown_name ||
                           e.code == core::Errc::duplicate) {
                         exit_code = 1;
                         stopping = true;
                       }
                     });
      }
      if (!registered) {
        self->demonitor(gw.address());
        pause(backoff);
        continue;
      }
      spdlog::info("claimsched agent {}: registered with {}", name, server);
      bool lost = false;
      while (!lost && !stopping.load()) {
        for (const auto& s : specs) self->send(gw, actors::heartbeat_atom::value, s.id);
        auto deadline = std::chrono::steady_clock::now() + interval;
        while (!lost && !stopping.load() && std::chrono::steady_clock::now() < deadline)
          self->receive([&](caf::down_msg&) { lost = true; }, caf::after(std::chrono::milliseconds(50)) >> [&] {});
      }
      if (lost) spdlog::warn("claimsched agent {}: lost the server at {}; reconnecting", name, server);
      self->demonitor(gw.address());
    }
  }
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

  std::shared_ptr<actors::TaskExecutor> executor;
  if (opt.simulate == 0) executor = std::make_shared<actors::ProcessExecutor>(a.state_dir + "/tasks");
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
    nc.store = node_store;
    nc.executor = executor;
    nc.finish_unrun_tasks = opt.simulate > 0;
    if (auto it = stored.find(spec.id); it != stored.end()) {
      nc.restored = actors::restore_ledger(it->second, ledger, clock);
      nc.restored->set_capacity(capacity);
    } else {
      core::NodeReport r;
      r.spec = spec;
      r.snapshot = core::NodeLedger(spec.id, capacity, ledger).snapshot();
      fresh.put_report(r);
    }
    specs.push_back(spec);
    nodes.push_back(sys.spawn(actors::node, std::move(nc)));
  }
  if (!fresh.empty())
    if (auto st = node_store->write(std::move(fresh)); !st) return fail(1, st.error().to_string());
  spdlog::info("claimsched agent {}: {} node(s) of {} in pool {}, state in {}", a.name, count,
               capacity.to_string(), a.pool, a.state_dir);

  std::atomic<bool> stopping{false};
  std::atomic<int> exit_code{0};
  Uplink uplink{sys, a.name, specs, nodes, config.timeouts.link_timeout, stopping, exit_code};
  std::vector<std::thread> links;
  for (const auto& [host, port] : servers)
    links.emplace_back([&uplink, host = host, port = port] { uplink.keep(host, port); });
  while (!stopping.load() && !wait_for_stop_signal(std::chrono::milliseconds(200))) {
  }
  stopping = true;
  for (auto& t : links) t.join();
  spdlog::info("claimsched agent {}: stopping", a.name);
  caf::scoped_actor self{sys};
  for (auto& n : nodes) self->send_exit(n, caf::exit_reason::user_shutdown);
  for (auto& n : nodes) self->wait_for(n);
  return exit_code.load();
}

}  // namespace claimsched::apps
