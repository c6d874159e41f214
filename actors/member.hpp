#pragma once

// One `claimsched server` member of an HA cluster (DESIGN.md, "HA"; the
// [ha] section of deploy/CONFIG.md). The member coordinator:
//
// - joins: a lease in etcd (kept alive by etcd::LeaseKeeper) and a member key
//   on it; a second live member with the same name is refused;
// - reads etcd's state every poll interval and, per partition:
//   owned here       runs it (assemble_partition) and hands it to the
//                    balanced owner once that standby has caught up;
//   owned elsewhere  follows the owner's change feed into its own store (a
//                    standby) and routes the gateway's jobs to the owner;
//   vacant           stops following, bids with how far its copy goes, and
//                    once every live member bid, the one with the furthest
//                    consistent copy takes the partition with the next epoch
//                    (core::choose_owner), so every acknowledged write
//                    survives;
// - holds its schedulers when etcd stops answering keep-alives (before the
//   lease can have expired) and steps down when the lease is gone;
// - notices a peer whose process died (its connection drops and its port
//   refuses connections) and revokes that peer's lease at once, instead of
//   waiting for the lease to expire.
//
// It does blocking etcd and RocksDB I/O and is spawned detached.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/campaign_actor.hpp"
#include "actors/partition.hpp"
#include "etcd/etcd_client.hpp"
#include "etcd/ha_state.hpp"
#include "etcd/lease_keeper.hpp"

namespace claimsched::actors {

struct MemberConfig {
  /// This member's name (unique in the cluster).
  std::string name;
  std::string cluster_id;
  /// etcd's endpoints ("http://host:port" or "https://host:port") and the key prefix.
  std::vector<std::string> etcd;
  /// For https endpoints: etcd's CA, and this member's client certificate
  /// and key (etcd::Client::Options).
  std::string etcd_ca, etcd_cert, etcd_key;
  std::string prefix = "/claimsched";
  std::chrono::seconds lease_ttl{1};
  /// Per etcd request (then the next endpoint is tried).
  std::chrono::milliseconds etcd_timeout{300};
  /// How often etcd's state is read.
  core::Duration poll_interval = std::chrono::milliseconds(50);
  /// Reaching a peer's gateway.
  core::Duration connect_timeout = std::chrono::seconds(1);
  AckMode ack = AckMode::one;
  /// Every partition of the cluster, set up as its owner builds it (a
  /// store directory, recovery); the same directory holds the standby copy.
  std::vector<PartitionSetup> partitions;
  storage::StoreOptions replica_options;
  /// The cluster's campaigns (issue 16): how campaigns are read and written
  /// back (the server's campaign file reader). They run on the owner of the
  /// first partition (the lowest id), recorded in that partition's store
  /// (storage::CampaignStore::in_partition), so its standbys hold them and
  /// its next owner runs them on; the gateway and store are filled in here.
  /// Unset: no member runs campaigns.
  std::optional<CampaignActorConfig> campaigns;

  core::Status validate() const;
  /// What an etcd client of this member is given (endpoints, timeout, TLS).
  etcd::Client::Options etcd_options() const { return {etcd, etcd_timeout, etcd_ca, etcd_cert, etcd_key}; }
};

struct member_state {
  explicit member_state(caf::local_actor*) {}

  /// One partition as this member sees it.
  struct Local {
    PartitionSetup setup;
    /// Owned here: what runs, and the revision of our owner key.
    std::optional<AssembledPartition> owned;
    int64_t owner_revision = 0;
    bool handing_over = false;
    core::TimePoint handover_since{0};
    /// A standby here: the replica and whom it follows.
    replica_actor replica;
    std::string following;
    int64_t following_revision = 0;
    bool fetching = false;
    /// Election: none, bid posted (for `round`), waiting for the winner.
    enum class Phase { idle, bid, waiting } phase = Phase::idle;
    core::Epoch round = 0;
    core::TimePoint phase_since{0};
    StoreVersion bid;
    std::string last_problem;
    /// Why this member cannot run the partition (its store failed while it
    /// owned it: a full or broken disk); it steps down and bids as ineligible
    /// until restarted.
    std::string broken;
    bool checking_store = false;
    /// The owner's actors, for routing and status.
    scheduler_actor scheduler;
    change_feed_actor feed;
    core::Epoch epoch = 0;
  };

  MemberConfig config;
  std::string address;
  gateway_actor gateway;
  std::optional<etcd::Client> etcd;
  std::optional<etcd::HaKeys> keys;
  int64_t lease = 0;
  std::unique_ptr<etcd::LeaseKeeper> keeper;
  /// The schedulers the lease keeper holds when the lease is at risk.
  struct Owned {
    std::mutex mutex;
    std::vector<scheduler_actor> schedulers;
  };
  std::shared_ptr<Owned> owned = std::make_shared<Owned>();
  bool lease_at_risk = false;
  /// When a member with our name was first seen in the way.
  core::TimePoint name_conflict_since{0};
  etcd::HaState state;
  std::string etcd_problem;
  core::TimePoint etcd_problem_said{0};
  std::map<core::PartitionId, Local> partitions;
  /// Peer gateways by address.
  std::map<std::string, gateway_actor> peers;
  std::map<std::string, core::TimePoint> peer_retry;
  std::string log_name;
  /// A tick is scheduled (CAF's clock holds a reference to this actor until
  /// it fires: a detached actor must not end with one pending, or the actor
  /// system waits for it forever at shutdown).
  bool tick_pending = false;
  /// The same holds for a request's timeout, cancelled only when its answer
  /// comes: this is when the last request this member sent times out.
  core::TimePoint requests_until{0};
  /// Asked to stop: it quits with this reason at the pending tick.
  std::optional<caf::error> stopping;
  /// The campaigns (see MemberConfig::campaigns): the actor running here
  /// while this member owns the campaign partition, and the revision of the
  /// owner key whose campaign actor the gateway was last given (here or a
  /// peer's), with a fetch of a peer's under way.
  campaign_actor campaigns;
  int64_t campaigns_revision = 0;
  bool fetching_campaigns = false;
};

member_actor::behavior_type member(member_actor::stateful_pointer<member_state> self, MemberConfig config);

/// Validates `config` and spawns the member (detached: etcd and RocksDB I/O).
core::Expected<member_actor> spawn_member(caf::actor_system& sys, MemberConfig config);

}  // namespace claimsched::actors
