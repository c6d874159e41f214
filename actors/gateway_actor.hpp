#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/actors.hpp"
#include "actors/gateway_waits.hpp"
#include "actors/peer_proof.hpp"

namespace claimsched::actors {

/// One partition as the gateway routes to it.
struct GatewayPartition {
  core::PartitionId id;
  /// Its leaf pools (disjoint across partitions).
  std::vector<std::string> pools;
  /// Its owner's scheduler, here or on another member; null while nobody
  /// owns it (HA: an election is under way).
  scheduler_actor scheduler;
  /// Its owner's change feed (null without one).
  change_feed_actor feed;
  core::Epoch epoch = 0;
  /// The owner runs in this process (it gets this gateway's nodes).
  bool local = false;
};

struct GatewayConfig {
  /// Every partition of the cluster, owned or not.
  std::vector<GatewayPartition> partitions;
  /// Jobs the partitions already hold (after a restart).
  std::map<core::JobId, core::PartitionId> known_jobs;
  /// Pools their partitions' stores say were removed (`claimsched pool
  /// remove`), though the config may still list them.
  std::set<std::string> removed_pools;
  core::Duration heartbeat_interval = std::chrono::seconds(1);
  /// Silent this long: the node is down and its tasks are lost.
  core::Duration node_grace = std::chrono::seconds(10);
  /// Resource names jobs may ask for besides cpu, memory, gpu and disk.
  std::vector<std::string> resources;
  /// A node whose agent stopped on purpose and left its tasks running is
  /// down (its tasks lost) only after this long without coming back.
  core::Duration agent_restart_grace = std::chrono::minutes(10);
  /// A request forwarded to a scheduler (maybe on another member) fails
  /// after this (CAF answers a dead remote actor only at the timeout).
  core::Duration request_timeout = std::chrono::seconds(10);
  /// HA: the member coordinator, which answers members_atom and assigns
  /// job ids unique across members. Null: a single server.
  member_actor member;
  /// Named in the members view of a single server.
  std::string name = "server";
  std::string address;

  core::Status validate() const;
};

struct gateway_state {
  explicit gateway_state(caf::local_actor*) {}

  /// With TLS: agents' proofs at registration (actors/peer_proof.hpp).
  RegistrationProofs proofs;

  struct Node {
    std::string name;
    core::PartitionId partition;
    node_actor handle;
    core::TimePoint last_heartbeat{0};
    bool down = false;
    /// Its connection is up (false after a down_msg).
    bool connected = false;
    /// Its agent stopped on purpose and left its tasks running.
    bool away = false;
  };
  GatewayConfig config;
  /// Pool name -> index into config.partitions (removed pools too).
  std::map<std::string, size_t> pools;
  /// Pools removed: known from the stores at start, then learned from the
  /// partitions' schedulers (after a removal forwarded here, when a
  /// partition's owner changes, and every kLearnRemovedPoolsEvery: a removal
  /// may go through another member).
  std::set<std::string> removed_pools;
  core::TimePoint removed_pools_learned{0};
  static constexpr core::Duration kLearnRemovedPoolsEvery = std::chrono::seconds(5);
  std::map<core::NodeId, Node> nodes;
  /// Where each job the gateway has seen lives (accepted ones only).
  std::map<core::JobId, core::PartitionId> jobs;
  uint64_t next_job = 1;
  /// Requests forwarded to a partition's owner and not answered yet: failed
  /// at once (retryable) when that owner's connection drops, rather than at
  /// their timeout (CAF answers a request to a dead remote actor only then).
  struct Forward {
    core::PartitionId partition;
    std::function<void(const caf::error&)> fail;
  };
  std::map<uint64_t, Forward> forwards;
  /// Where campaign requests go: this server's campaigns, or (HA) those of
  /// the member that runs them (null: campaign requests are refused).
  campaign_actor campaigns;
  /// Local actors told of every partition's job events (watch_atom): each
  /// owner's scheduler is asked to tell them, a new owner too.
  std::vector<caf::actor> job_watchers;
  /// Clients waiting for their jobs to end (actors/gateway_waits.hpp).
  GatewayWaits job_waits;
  uint64_t next_forward = 0;
  /// When the heartbeat tick last ran (a late tick: this process stalled).
  core::TimePoint last_tick{0};

  GatewayPartition* partition(core::PartitionId id);

  static inline const char* name = "gateway";
};

gateway_actor::behavior_type gateway(gateway_actor::stateful_pointer<gateway_state> self,
                                     GatewayConfig config);

/// Validates `config` and spawns the gateway (the error names the field).
core::Expected<gateway_actor> spawn_gateway(caf::actor_system& sys, GatewayConfig config);

/// A job id that no other member or client picks: milliseconds since
/// 2020-01-01 in the high bits, random bits below (ids stay ordered by time).
/// With `block` > 1, the first of that many consecutive ids, all this
/// process's alone.
core::JobId fresh_job_id(uint32_t block = 1);

}  // namespace claimsched::actors
