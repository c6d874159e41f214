#include "apps/server.hpp"

#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <cstdio>

#include "actors/gateway_actor.hpp"
#include "actors/partition.hpp"
#include "actors/registration.hpp"
#include "apps/cluster_config.hpp"
#include "apps/partition_setup.hpp"
#include "apps/signals.hpp"

namespace claimsched::apps {

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "claimsched server: %s\n", what.c_str());
  return 1;
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

  // A single server owns every partition (static ownership, no etcd).
  std::vector<actors::AssembledPartition> partitions;
  auto stop_partitions = [&] {
    for (auto& p : partitions) actors::disassemble_partition(sys, p);
  };
  actors::GatewayConfig gc;
  gc.heartbeat_interval = config.timeouts.heartbeat_interval;
  gc.node_grace = config.timeouts.node_grace;
  for (const auto& p : config.partitions) {
    auto assembled = actors::assemble_partition(sys, partition_setup(config, p));
    if (!assembled) {
      stop_partitions();
      return fail(assembled.error().to_string());
    }
    spdlog::info("partition {}: recovered {} job(s), {} task record(s) in {} ms (epoch {})", p.id.value,
                 assembled->recovered_jobs, assembled->recovered_task_records,
                 std::chrono::duration_cast<std::chrono::milliseconds>(assembled->recovery_time).count(),
                 assembled->epoch);
    gc.partitions.push_back({p.id, p.pools, assembled->scheduler, actors::change_feed_actor{}, assembled->epoch, true});
    for (auto id : assembled->jobs) gc.known_jobs[id] = p.id;
    partitions.push_back(std::move(*assembled));
  }
  if (config.listen.port != 0) gc.address = config.listen.host + ":" + std::to_string(config.listen.port);
  auto gateway = actors::spawn_gateway(sys, gc);
  if (!gateway) {
    stop_partitions();
    return fail(gateway.error().to_string());
  }
  auto port = sys.middleman().publish(*gateway, config.listen.port, config.listen.host.c_str(), true);
  if (!port) {
    caf::anon_send_exit(*gateway, caf::exit_reason::user_shutdown);
    stop_partitions();
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
  sys.middleman().unpublish(*gateway, *port);
  caf::anon_send_exit(*gateway, caf::exit_reason::user_shutdown);
  stop_partitions();
  return 0;
}

}  // namespace claimsched::apps
