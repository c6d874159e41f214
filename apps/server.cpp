#include "apps/server.hpp"

#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "actors/campaign_actor.hpp"
#include "actors/connect.hpp"
#include "actors/gateway_actor.hpp"
#include "actors/member.hpp"
#include "actors/partition.hpp"
#include "actors/registration.hpp"
#include "apps/campaign_file.hpp"
#include "apps/cluster_config.hpp"
#include "apps/server_auth.hpp"
#include "apps/server_http.hpp"
#include "apps/partition_setup.hpp"
#include "apps/process_stats.hpp"
#include "apps/signals.hpp"
#include "apps/tls_setup.hpp"
#include "agent/machine.hpp"

namespace claimsched::apps {

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "claimsched server: %s\n", what.c_str());
  return 1;
}

/// Spawns the gateway and publishes it on [listen] (with [auth], the door
/// in front of it); the port it listens on, or why not (the gateway is
/// stopped again then).
core::Expected<std::pair<actors::gateway_actor, uint16_t>> serve_gateway(caf::actor_system& sys,
                                                                         const ClusterConfig& config,
                                                                         actors::GatewayConfig gc,
                                                                         const ServerAuth& auth) {
  bool ha = gc.member != nullptr;
  auto gateway = actors::spawn_gateway(sys, std::move(gc));
  if (!gateway) return gateway.error();
  auto door = front_door(sys, *gateway, auth, ha);
  auto port = actors::publish_gateway(sys, door, config.listen.port, config.listen.host);
  if (!port) {
    caf::anon_send_exit(*gateway, caf::exit_reason::user_shutdown);
    return core::make_error(core::Errc::io_error, "cannot listen on " + config.listen.host + ":" +
                                                      std::to_string(config.listen.port) + ": " +
                                                      sys.render(port.error()));
  }
  return std::make_pair(*gateway, *port);
}

/// How this server's campaigns read a campaign (the campaign file's reader,
/// against the cluster's pools) and write one back; no gateway, no store yet.
actors::CampaignActorConfig campaign_config(const ClusterConfig& config) {
  std::set<std::string> known_pools;
  for (const auto& p : config.partitions) known_pools.insert(p.pools.begin(), p.pools.end());
  actors::CampaignActorConfig cc;
  cc.read_campaign = [known_pools](const std::string& json) -> core::Expected<core::campaign::CampaignSpec> {
    auto draft = parse_campaign_file(json, "campaign");
    if (!draft) return draft.error();
    // The client sends the parameters themselves; a file named here would be
    // read on the server's disk, not the user's.
    if (!draft->parameter_file.empty())
      return core::make_error(core::Errc::invalid_argument,
                              "campaign field 'parameter_file': send the parameters, not a file name");
    std::string user = draft->spec.user.empty() ? "unknown" : draft->spec.user;
    return finish_campaign(std::move(*draft), ".", known_pools, user);
  };
  cc.write_campaign = campaign_json;
  return cc;
}

/// This server's campaigns, dispatching through `gateway` and recorded in
/// `<data_dir>/campaigns` (rebuilt from there now); the gateway is told
/// where campaign requests go.
core::Expected<actors::campaign_actor> serve_campaigns(caf::actor_system& sys, const ClusterConfig& config,
                                                       actors::gateway_actor gateway) {
  std::error_code ec;
  std::filesystem::create_directories(config.storage.data_dir, ec);
  auto store = storage::CampaignStore::open(config.storage.data_dir + "/campaigns");
  if (!store) return store.error();
  auto cc = campaign_config(config);
  cc.gateway = gateway;
  cc.store = std::move(*store);
  auto campaigns = sys.spawn<caf::detached>(actors::campaigns, std::move(cc));
  caf::scoped_actor self{sys};  // the gateway takes this only from its own process
  self->send(gateway, actors::campaign_atom::value, campaigns);
  return campaigns;
}

/// One member of an HA cluster ([ha]): the gateway, and the member
/// coordinator that owns or follows each partition.
int run_member(ClusterConfig& config, const ServerOptions& opt, caf::actor_system& sys, const ServerAuth& auth) {
  const HaConfig& ha = *config.ha;
  actors::MemberConfig mc;
  mc.name = !opt.name.empty() ? opt.name : !ha.name.empty() ? ha.name : agent::host_name();
  mc.cluster_id = config.cluster_id;
  mc.etcd = ha.etcd;
  if (!opt.etcd.empty()) {
    mc.etcd.clear();
    std::stringstream items(opt.etcd);
    for (std::string item; std::getline(items, item, ',');)
      if (!item.empty()) mc.etcd.push_back(item);
  }
  // https etcd endpoints: [ha]'s own files, else the member's [tls] ones.
  mc.etcd_ca = !ha.etcd_ca.empty() ? ha.etcd_ca : config.tls.ca;
  mc.etcd_cert = !ha.etcd_cert.empty() ? ha.etcd_cert : config.tls.cert;
  mc.etcd_key = !ha.etcd_key.empty() ? ha.etcd_key : config.tls.key;
  mc.prefix = ha.prefix;
  mc.lease_ttl = std::chrono::duration_cast<std::chrono::seconds>(ha.lease_ttl);
  mc.etcd_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(ha.etcd_timeout);
  mc.poll_interval = ha.poll_interval;
  mc.ack = *actors::parse_ack_mode(ha.ack);
  mc.replica_options = actors::logged_store_options(*storage::parse_sync_mode(config.storage.sync));
  // The campaigns run on the owner of the first partition, recorded in its store.
  mc.campaigns = campaign_config(config);
  for (const auto& p : config.partitions) {
    auto setup = partition_setup(config, p);
    // A member that died while bootstrapping a copy leaves half of one here.
    std::error_code ec;
    std::filesystem::remove_all(setup.store_dir + ".next", ec);
    // Refuse another cluster's (or partition's) data before joining.
    if (auto v = actors::read_store_version(setup.store_dir, setup.identity, mc.replica_options); !v)
      return fail("member " + mc.name + ": " + v.error().to_string());
    setup.change_feed = true;
    setup.ack = mc.ack;
    mc.partitions.push_back(std::move(setup));
  }
  auto member = actors::spawn_member(sys, mc);
  if (!member) return fail(member.error().to_string());
  actors::GatewayConfig gc;
  gc.heartbeat_interval = config.timeouts.heartbeat_interval;
  gc.node_grace = config.timeouts.node_grace;
  gc.member = *member;
  gc.name = mc.name;
  for (const auto& p : config.partitions) gc.partitions.push_back({p.id, p.pools, {}, {}, 0, false});
  caf::scoped_actor self{sys};
  auto stop_member = [&] {
    self->send_exit(*member, caf::exit_reason::user_shutdown);
    self->wait_for(*member);
  };
  auto served = serve_gateway(sys, config, gc, auth);
  if (!served) {
    stop_member();
    return fail(served.error().message);
  }
  auto [gateway, port] = *served;
  std::string address = ha.advertise;
  if (address.empty()) {
    std::string host = config.listen.host == "0.0.0.0" ? agent::host_name() : config.listen.host;
    address = host + ":" + std::to_string(port);
  }
  self->monitor(*member);
  self->send(*member, actors::start_atom::value, gateway, address);
  std::printf("claimsched server listening on %s:%u (cluster %s, member %s at %s, %zu partition(s), etcd %s, data in %s)\n",
              config.listen.host.c_str(), static_cast<unsigned>(port), config.cluster_id.c_str(), mc.name.c_str(),
              address.c_str(), config.partitions.size(), mc.etcd.front().c_str(), config.storage.data_dir.c_str());
  std::fflush(stdout);
  auto http = serve_http(sys, config, gateway, auth);
  if (!http) {
    sys.middleman().unpublish(gateway, port);
    stop_member();
    self->send_exit(gateway, caf::exit_reason::user_shutdown);
    self->wait_for(gateway);
    return fail(http.error().message);
  }
  int code = 0;
  bool member_ended = false;
  while (!member_ended && !wait_for_stop_signal(std::chrono::milliseconds(200))) {
    self->receive(
        [&](caf::down_msg& down) {
          member_ended = true;
          if (down.reason && down.reason != caf::exit_reason::user_shutdown) {
            std::fprintf(stderr, "claimsched server: %s\n",
                         messages::from_caf_error(down.reason, &sys).message.c_str());
            code = 1;
          }
        },
        caf::after(std::chrono::milliseconds(0)) >> [] {});
  }
  spdlog::info("claimsched server: stopping");
  http->reset();
  sys.middleman().unpublish(gateway, port);
  if (!member_ended) stop_member();
  self->send_exit(gateway, caf::exit_reason::user_shutdown);
  self->wait_for(gateway);
  // Everything is stopped and every store closed. CAF 0.17's actor system
  // would now wait for each detached actor's last reference to go, and the
  // middleman can keep one for good: a message the member sent to a peer or
  // client whose connection went away (seen as a hang at exit, the member's
  // thread in await_self_destroyed). Nothing is left to do, so leave here.
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace

int run_server(const ServerOptions& opt) {
  block_stop_signals();
  ignore_broken_pipes();
  // A descriptor per connection (see raise_open_file_limit).
  if (auto files = raise_open_file_limit(65536); files > 0 && files < 4096)
    spdlog::warn("open files limited to {} (ulimit -n): a flood of that many connections locks clients out", files);
  auto loaded = load_cluster_config(opt.config);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
    return 2;
  }
  ClusterConfig config = std::move(*loaded);
  if (opt.port >= 0) config.listen.port = static_cast<uint16_t>(opt.port);
  if (!opt.data_dir.empty()) config.storage.data_dir = opt.data_dir;
  if (!opt.http.empty()) {
    auto http = parse_http_listen(opt.http);
    if (!http) {
      std::fprintf(stderr, "claimsched server: --http: %s\n", http.error().message.c_str());
      return 2;
    }
    config.http = *http;
  }
  if (!config.ha && (!opt.name.empty() || !opt.etcd.empty())) {
    std::fprintf(stderr, "claimsched server: --name and --etcd need an [ha] section in %s\n", opt.config.c_str());
    return 2;
  }

  // Resolved once: the member's port and its HTTPS endpoint use the same files.
  config.tls = resolve_tls_files(config.tls, {opt.tls_ca, opt.tls_cert, opt.tls_key});
  if (auto bad = setup_tls(config.tls, TlsRole::server)) {
    std::fprintf(stderr, "claimsched server: %s\n", bad->c_str());
    return 2;
  }

  caf::actor_system_config cfg;
  actors::LinkOptions link;
  link.heartbeat = config.timeouts.link_heartbeat;
  link.timeout = config.timeouts.link_timeout;
  link.shared_queue = true;
  actors::configure(cfg, link);
  auto auth = load_server_auth(config, opt.config);
  if (!auth) {
    std::fprintf(stderr, "claimsched server: %s\n", auth.error().message.c_str());
    return 2;
  }
  caf::actor_system sys{cfg};
  if (config.ha) return run_member(config, opt, sys, *auth);

  // A single server owns every partition (static ownership, no etcd).
  std::vector<actors::AssembledPartition> partitions;
  auto stop_partitions = [&] {
    for (auto& p : partitions) actors::disassemble_partition(sys, p);
  };
  actors::GatewayConfig gc;
  gc.heartbeat_interval = config.timeouts.heartbeat_interval;
  gc.node_grace = config.timeouts.node_grace;
  gc.resources = config.resources;
  gc.agent_restart_grace = config.timeouts.agent_restart_grace;
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
    gc.removed_pools.insert(assembled->removed_pools.begin(), assembled->removed_pools.end());
    partitions.push_back(std::move(*assembled));
  }
  if (config.listen.port != 0) gc.address = config.listen.host + ":" + std::to_string(config.listen.port);
  auto served = serve_gateway(sys, config, gc, *auth);
  if (!served) {
    stop_partitions();
    return fail(served.error().message);
  }
  auto [gateway, port] = *served;
  auto served_campaigns = serve_campaigns(sys, config, gateway);
  if (!served_campaigns) {
    sys.middleman().unpublish(gateway, port);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
    stop_partitions();
    return fail(served_campaigns.error().message);
  }
  auto campaigns = *served_campaigns;
  std::printf("claimsched server listening on %s:%u (cluster %s, %zu partition(s), data in %s)\n",
              config.listen.host.c_str(), static_cast<unsigned>(port), config.cluster_id.c_str(),
              config.partitions.size(), config.storage.data_dir.c_str());
  std::fflush(stdout);
  auto http = serve_http(sys, config, gateway, *auth);
  if (!http) {
    sys.middleman().unpublish(gateway, port);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
    stop_partitions();
    return fail(http.error().message);
  }
  while (!wait_for_stop_signal(std::chrono::milliseconds(500))) {
  }
  spdlog::info("claimsched server: stopping");
  http->reset();
  sys.middleman().unpublish(gateway, port);
  caf::scoped_actor self{sys};
  self->send_exit(campaigns, caf::exit_reason::user_shutdown);
  self->wait_for(campaigns);
  self->send_exit(gateway, caf::exit_reason::user_shutdown);
  self->wait_for(gateway);
  stop_partitions();
  return 0;
}

}  // namespace claimsched::apps
