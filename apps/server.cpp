#include "apps/server.hpp"

#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <cstdio>
#include <filesystem>

#include "actors/clock.hpp"
#include "actors/gateway_actor.hpp"
#include "actors/registration.hpp"
#include "actors/scheduler_actor.hpp"
#include "apps/cluster_config.hpp"
#include "apps/signals.hpp"
#include "storage/journal.hpp"

namespace claimsched::apps {

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "claimsched server: %s\n", what.c_str());
  return 1;
}

storage::StoreOptions store_options(const ClusterConfig& c) {
  storage::StoreOptions o;
  o.sync = *storage::parse_sync_mode(c.storage.sync);
  o.log = [](storage::RocksLogLevel level, std::string_view path, std::string_view line) {
    spdlog::log(level >= storage::RocksLogLevel::error ? spdlog::level::err : spdlog::level::warn,
                "rocksdb {}: {}", path, line);
  };
  o.log_level = storage::RocksLogLevel::error;
  return o;
}

/// The partition scheduler's configuration from the cluster's.
core::SchedulerConfig scheduler_config(const ClusterConfig& c, const PartitionConfig& p) {
  core::SchedulerConfig s;
  s.partition = p.id;
  s.epoch = 1;
  s.pools = p.pools;
  s.classes.clear();
  for (const auto& cls : c.policy.classes) {
    core::ClassConfig cc;
    cc.name = cls.name;
    cc.priority = cls.priority;
    cc.weight = cls.weight;
    for (const auto& [name, scorer] : c.class_scorers)
      if (name == cls.name)
        if (auto k = core::parse_scorer(scorer)) cc.placement.scorers = {{*k, 1.0}};
    s.classes.push_back(cc);
  }
  s.default_class = c.policy.settings.default_class.empty() ? s.classes.front().name
                                                            : c.policy.settings.default_class;
  s.max_claims_in_flight = c.max_claims_in_flight;
  s.reply_timeout = c.timeouts.reply_timeout;
  s.recovery_grace = c.timeouts.recovery_grace;
  return s;
}

}  // namespace

int run_server(const ServerOptions& opt) {
  block_stop_signals();
  auto loaded = load_cluster_config(opt.config);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
    return 2;
  }
  ClusterConfig config = std::move(*loaded);
  if (opt.port >= 0) config.listen.port = static_cast<uint16_t>(opt.port);
  if (!opt.data_dir.empty()) config.storage.data_dir = opt.data_dir;

  caf::actor_system_config cfg;
  actors::LinkOptions link;
  link.heartbeat = config.timeouts.link_heartbeat;
  link.timeout = config.timeouts.link_timeout;
  link.shared_queue = true;
  actors::configure(cfg, link);
  caf::actor_system sys{cfg};

  std::vector<actors::scheduler_actor> schedulers;
  actors::GatewayConfig gc;
  gc.heartbeat_interval = config.timeouts.heartbeat_interval;
  gc.node_grace = config.timeouts.node_grace;
  gc.resources = config.resources;
  gc.agent_restart_grace = config.timeouts.agent_restart_grace;
  for (const auto& p : config.partitions) {
    std::string dir = config.storage.data_dir + "/partition-" + std::to_string(p.id.value);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail("cannot create " + dir + ": " + ec.message());
    auto store = storage::PartitionStore::open(dir, {config.cluster_id, p.id}, store_options(config));
    if (!store) return fail(store.error().to_string());
    std::shared_ptr<storage::PartitionStore> shared = std::move(*store);
    auto recovered = storage::recover_partition(*shared, scheduler_config(config, p), actors::now(sys));
    if (!recovered) return fail(recovered.error().to_string());
    spdlog::info("partition {}: recovered {} job(s), {} task record(s) in {} ms (epoch {})", p.id.value,
                 recovered->jobs, recovered->task_records,
                 std::chrono::duration_cast<std::chrono::milliseconds>(recovered->duration).count(),
                 recovered->epoch);
    actors::SchedulerActorConfig sc;
    sc.store = shared;
    sc.restored = std::move(recovered->scheduler);
    std::vector<core::JobId> known;
    sc.restored->for_each_job([&](const core::JobRecord& j) { known.push_back(j.spec.id); });
    if (config.preemption) sc.policy = config.policy;
    auto s = sys.spawn(actors::scheduler, sc);
    schedulers.push_back(s);
    for (const auto& pool : p.pools) gc.pools[pool] = s;
    for (auto id : known) gc.known_jobs[id] = s;
  }
  gc.schedulers = schedulers;
  auto gateway = sys.spawn(actors::gateway, gc);
  auto port = sys.middleman().publish(gateway, config.listen.port, config.listen.host.c_str(), true);
  if (!port) {
    for (auto& s : schedulers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
    return fail("cannot listen on " + config.listen.host + ":" + std::to_string(config.listen.port) + ": " +
                sys.render(port.error()));
  }
  std::printf("claimsched server listening on %s:%u (cluster %s, %zu partition(s), data in %s)\n",
              config.listen.host.c_str(), static_cast<unsigned>(*port), config.cluster_id.c_str(),
              config.partitions.size(), config.storage.data_dir.c_str());
  std::fflush(stdout);
  while (!wait_for_stop_signal(std::chrono::milliseconds(500))) {
  }
  spdlog::info("claimsched server: stopping");
  sys.middleman().unpublish(gateway, *port);
  caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
  for (auto& s : schedulers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace claimsched::apps
