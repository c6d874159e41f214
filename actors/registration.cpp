#include "actors/registration.hpp"

#include <caf/io/all.hpp>
#include <thread>

#include "actors/actors.hpp"
#include "actors/prompt_sharing.hpp"

namespace claimsched::actors {

void configure(caf::actor_system_config& cfg, const LinkOptions& link) {
  messages::register_types(cfg);
  // Handles that cross the network: an agent registers its node actor with
  // the gateway; a scheduler subscribes to a remote node as a listener.
  cfg.add_message_type<node_actor>("claimsched::node_actor");
  cfg.add_message_type<node_listener_actor>("claimsched::node_listener_actor");
  cfg.add_message_type<gateway_actor>("claimsched::gateway_actor");
  // HA members forward jobs to each other's schedulers and follow each
  // other's change feeds.
  cfg.add_message_type<scheduler_actor>("claimsched::scheduler_actor");
  cfg.add_message_type<change_feed_actor>("claimsched::change_feed_actor");
  cfg.add_message_type<replica_actor>("claimsched::replica_actor");
  // HA members pass campaign requests to the member that runs the campaigns.
  cfg.add_message_type<campaign_actor>("claimsched::campaign_actor");
  cfg.load<caf::io::middleman>();
  auto ms = [](core::Duration d) {
    return caf::timespan{std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()};
  };
  if (link.heartbeat.count() > 0) cfg.set("middleman.heartbeat-interval", ms(link.heartbeat));
  if (link.timeout.count() > 0) cfg.set("middleman.connection-timeout", ms(link.timeout));
  uint32_t threads = link.threads != 0 ? link.threads : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  cfg.set("scheduler.max-throughput", size_t{300});
  // A scheduler module loaded here takes the place of the one
  // scheduler.policy names.
  if (link.shared_queue)
    cfg.module_factories.push_back([](caf::actor_system& sys) -> caf::actor_system::module* {
      return new caf::scheduler::coordinator<PromptSharing>(sys);
    });
  // Remote messages are deserialized on the multiplexer's thread and go
  // straight to their actor, instead of through a BASP worker that is
  // scheduled first: one thread wake-up less per message (30.5k instead of
  // 45.6k futex calls for 1,000 jobs in the e2e bench's server).
  if (link.shared_queue) cfg.set("middleman.workers", size_t{0});
}

void stop_network_helpers(caf::actor_system& sys, caf::blocking_actor& self) {
  std::vector<caf::actor> helpers;
  for (auto name : {caf::atom("SpawnServ"), caf::atom("ConfigServ")})
    if (auto h = caf::actor_cast<caf::actor>(sys.registry().get(name))) helpers.push_back(h);
  // The per-peer helpers are registered by id only.
  for (caf::actor_id id = 1; id <= sys.latest_actor_id(); ++id)
    if (id != self.id())
      if (auto h = sys.registry().get<caf::actor>(id)) helpers.push_back(h);
  for (const auto& h : helpers) {
    self.monitor(h);
    self.send_exit(h, caf::exit_reason::user_shutdown);
  }
  // Bounded: an exit is not worth a hung process.
  size_t down = 0;
  bool late = false;
  while (down < helpers.size() && !late)
    self.receive([&](caf::down_msg&) { ++down; }, caf::after(std::chrono::seconds(2)) >> [&] { late = true; });
}

}  // namespace claimsched::actors
