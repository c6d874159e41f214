#pragma once

// The cluster's configuration: one TOML file for `claimsched server` (and the
// agents' own section for `claimsched agent`). Every option has a default;
// deploy/CONFIG.md documents each with its default, deploy/cluster.toml is an
// example. `claimsched config check FILE` validates a file and names every
// problem with its line.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/policy/driver.hpp"
#include "core/resources.hpp"

namespace claimsched::apps {

/// One problem in a configuration file.
struct ConfigProblem {
  /// 1-based line of the offending value (0 when the file as a whole is wrong).
  uint32_t line = 0;
  /// Dotted path of the field: "partitions[1].pools", "storage.sync".
  std::string field;
  std::string message;

  std::string to_string(std::string_view source) const;  // "cluster.toml:12: storage.sync: ..."
};

struct ListenConfig {
  /// Address the gateway binds to.
  std::string host = "127.0.0.1";
  /// Port for clients and agents (0: pick a free one and print it).
  uint16_t port = 7070;
};

/// [http]: the HTTP endpoint (GET /metrics); off unless `listen` is given.
struct HttpConfig {
  bool enabled = false;
  std::string host;
  /// 0: pick a free one and print it.
  uint16_t port = 0;
  /// With [tls] the endpoint serves HTTPS with the member's certificate;
  /// `plain = true` keeps plain HTTP (a loopback-only scraper).
  bool plain = false;
};

/// [tls]: mutual TLS between members (actors/tls.hpp): PEM files, paths as
/// given (relative ones from the process's working directory). Absent: plain
/// TCP.
struct TlsFiles {
  /// The cluster CA's certificate.
  std::string ca;
  /// This member's certificate (its subject's OU names its role: server,
  /// agent or client) and its private key.
  std::string cert;
  std::string key;

  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

struct StorageConfig {
  /// Root of all state: one directory per partition under it.
  std::string data_dir = "/var/lib/claimsched";
  /// always | batch | none (see README, durability).
  std::string sync = "batch";
};

struct TimeoutsConfig {
  /// Agents send a heartbeat this often.
  core::Duration heartbeat_interval = std::chrono::seconds(1);
  /// A node with no heartbeat for this long is marked down; its tasks are
  /// lost and go back to the queue.
  core::Duration node_grace = std::chrono::seconds(10);
  /// Unconfirmed claims expire on the node after this.
  core::Duration claim_ttl = std::chrono::seconds(10);
  /// A claim or confirm unanswered this long is given up (claim) or resent (confirm).
  core::Duration reply_timeout = std::chrono::seconds(5);
  /// After a server restart, tasks on nodes that have not come back by then are lost.
  core::Duration recovery_grace = std::chrono::seconds(30);
  /// An agent that stopped on purpose and left its tasks running (a drain)
  /// has this long to come back before its node is down and its tasks lost.
  core::Duration agent_restart_grace = std::chrono::minutes(10);
  /// CAF's middleman heartbeat and connection timeout between processes.
  core::Duration link_heartbeat = std::chrono::milliseconds(250);
  core::Duration link_timeout = std::chrono::seconds(2);
};

struct PartitionConfig {
  core::PartitionId id;
  /// Leaf pools this partition owns (disjoint across partitions).
  std::vector<std::string> pools;
  /// Conflict detection of its claims: "fit" (the node checks fit only) or
  /// "strict" (compare-and-swap on the node's generation).
  std::string cas = "fit";
};

/// Settings for `claimsched agent`.
struct AgentConfig {
  /// Node name (default: the host name).
  std::string name;
  /// Leaf pool the node joins.
  std::string pool = "default";
  /// Capacity; empty: detected from /proc (all CPUs, MemTotal).
  std::string resources;
  std::vector<std::string> labels;
  /// Where task outputs and the node's state live.
  std::string state_dir = "/var/lib/claimsched-agent";
  /// Nova's IO-ops limit: tasks starting at once (0: none).
  uint32_t max_starting = 0;
  /// The server (host:port), or every member of an HA cluster
  /// (host:port,host:port,...); CLAIMSCHED_SERVER or --server override it.
  std::string server = "127.0.0.1:7070";
  /// On SIGTERM: "leave" its running tasks running for its next start (which
  /// adopts them), or "wait" for them to end first. Either way it takes no
  /// new work once the signal came.
  std::string on_stop = "leave";
  /// How long task outputs are kept after their job's last task here ended
  /// (`claimsched logs` reads them until then).
  core::Duration keep_outputs = std::chrono::hours(24 * 7);
};

/// [ha]: this server is one of several members; etcd elects the owner of
/// each partition, the others keep standby copies. Absent: one server owns
/// every partition, no etcd.
struct HaConfig {
  /// etcd's client URLs ("http://host:port" or "https://host:port").
  std::vector<std::string> etcd{"http://127.0.0.1:2379"};
  /// For https endpoints (PEM paths): etcd's CA and the member's client
  /// certificate and key; each empty one defaults to [tls]'s ca, cert, key.
  std::string etcd_ca, etcd_cert, etcd_key;
  /// This member's name, unique in the cluster (default: the host name;
  /// `server --name` overrides).
  std::string name;
  /// The member's lease in etcd: a member silent this long loses its
  /// partitions. Whole seconds, at least 1s.
  core::Duration lease_ttl = std::chrono::seconds(1);
  /// When a job counts as acknowledged: durable on the owner ("owner"), also
  /// on one standby ("one"), or on every standby that follows ("all").
  std::string ack = "one";
  /// host:port the others (members, agents, clients) reach this member at
  /// (default: [listen] host and the port it listens on).
  std::string advertise;
  /// etcd key prefix (the cluster id is appended).
  std::string prefix = "/claimsched";
  /// How often a member reads etcd's state, and how long one etcd request
  /// may take before the next endpoint is tried.
  core::Duration poll_interval = std::chrono::milliseconds(50);
  core::Duration etcd_timeout = std::chrono::milliseconds(300);
};

/// The policy part of an empty file: one root pool "default", one
/// fair_share class "batch" bound to it, which is also the default class.
core::policy::PolicyConfig default_policy_config();

/// [auth]: clients authenticate with a token and may do what its roles
/// allow (core/auth.hpp has the tokens file's format and the rules).
/// Absent: nothing is checked (a loopback or development setup).
struct AuthConfig {
  /// The tokens file (required); relative: to the config file's directory.
  std::string tokens_file;
  /// The audit log (JSON lines); relative: to the config file's directory.
  /// Default: audit.log in [storage] data_dir.
  std::string audit_log;
};

struct ClusterConfig {
  /// Names the cluster; every store refuses another cluster's data.
  std::string cluster_id = "claimsched";
  /// Resource names jobs may ask for besides cpu, memory, gpu and disk
  /// (`resources = ["fpga"]`); a job asking for another is refused at submit.
  std::vector<std::string> resources;
  ListenConfig listen;
  HttpConfig http;
  TlsFiles tls;
  StorageConfig storage;
  TimeoutsConfig timeouts;
  /// Which partition owns which leaf pools.
  std::vector<PartitionConfig> partitions{{core::PartitionId{1}, {"default"}}};
  /// Pools ([[pools]]), classes ([[classes]]), users ([[users]]) and the
  /// policy settings ([settings], [preemption]) in the same format as a
  /// `claimsched policy eval` snapshot (deploy/POLICY.md). Defaults: one pool
  /// "default", one fair_share class "batch". The default class is
  /// [settings].default_class (absent: the first class of [[classes]]).
  core::policy::PolicyConfig policy = default_policy_config();
  /// Per class: fill_first | spread (the [[classes]] key `scorer`), one entry
  /// per class in [[classes]] order (absent: fill_first).
  std::vector<std::pair<std::string, std::string>> class_scorers{{"batch", "fill_first"}};
  /// Run the fair-share and preemption cycles ([policy] enabled = true);
  /// off: classes order the queue by priority only, nothing is preempted.
  bool preemption = false;
  AgentConfig agent;
  /// Several members with elected owners ([ha]); none: a single server.
  std::optional<HaConfig> ha;
  /// Who may do what ([auth]); none: authentication is off.
  std::optional<AuthConfig> auth;
  /// Claims in flight per partition.
  uint32_t max_claims_in_flight = 512;
  /// Retries of a task whose node was lost, unless the job says otherwise.
  uint32_t default_max_lost_retries = 3;
};

/// `[http] listen`'s value, "HOST:PORT" ("[::1]:9090"; port 0: a free one).
core::Expected<HttpConfig> parse_http_listen(const std::string& listen);

/// Parses and validates `toml` (named `source` in messages). On failure the
/// error lists every problem found, one per line, each with its line.
core::Expected<ClusterConfig> parse_cluster_config(std::string_view toml, std::string_view source);
/// Reads and parses a file.
core::Expected<ClusterConfig> load_cluster_config(const std::string& path);
/// Every problem in `toml` (empty: it is valid).
std::vector<ConfigProblem> check_cluster_config(std::string_view toml);

/// What parse and check share: the configuration as far as it could be read
/// (a value with a problem keeps its default) and every problem, sorted by
/// line. Never throws, whatever `toml` holds.
struct ConfigReport {
  ClusterConfig config;
  std::vector<ConfigProblem> problems;

  bool ok() const { return problems.empty(); }
};
ConfigReport analyze_cluster_config(std::string_view toml, std::string_view source);

/// Leaf pools of the pool tree (pools that are no pool's parent), in
/// [[pools]] order.
std::vector<std::string> leaf_pools(const core::policy::PolicyConfig& policy);

}  // namespace claimsched::apps
