#include "apps/cluster_config.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "apps/policy_toml.hpp"
#include "core/duration.hpp"
#include "core/limits.hpp"

namespace claimsched::apps {

namespace {

using core::Duration;
using core::Errc;
using policy_toml::Reader;
using namespace core::policy;

constexpr std::string_view kTopKeys[] = {"cluster_id",
                                         "resources",
                                         "max_claims_in_flight",
                                         "default_max_lost_retries",
                                         "listen",
                                         "http",
                                         "storage",
                                         "timeouts",
                                         "partitions",
                                         "pools",
                                         "classes",
                                         "users",
                                         "settings",
                                         "preemption",
                                         "policy",
                                         "agent",
                                         "ha",
                                         "auth",
                                         "tls",
                                         "default_class"};

constexpr std::string_view kScorers[] = {"fill_first", "spread"};
constexpr std::string_view kSyncModes[] = {"always", "batch", "none"};
constexpr std::string_view kAckModes[] = {"owner", "one", "all"};

/// Cluster ids name directories and are compared byte for byte: keep them plain.
bool valid_cluster_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '_' || ch == '.';
  });
}

bool one_of(std::string_view value, std::span<const std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

std::string list(std::span<const std::string_view> values) {
  std::string out;
  for (auto v : values) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

/// "; did you mean 'x'?" when `name` is a near miss of one of `names`.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& names) {
  std::vector<std::string_view> views(names.begin(), names.end());
  auto near = policy_toml::closest(name, views);
  return near.empty() ? std::string() : "; did you mean '" + std::string(near) + "'?";
}

/// "host:port" with a port in [1, 65535] (or 0 with `port_zero`: any free
/// one); the host may be a bracketed IPv6 address ("[::1]:7070"). Empty on
/// success, else what is wrong.
std::string check_host_port(std::string_view text, bool port_zero = false) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return "expected host:port, got '" + std::string(text) + "'";
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.empty()) return "the host is missing in '" + std::string(text) + "'";
  if (host.find(':') != std::string_view::npos && !(host.front() == '[' && host.back() == ']'))
    return "an IPv6 address needs brackets: '[" + std::string(host) + "]:" + std::string(port) + "'";
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return "the port must be a number in [1, 65535], got '" + std::string(port) + "'";
  int p = std::stoi(std::string(port));
  if ((p < 1 && !(port_zero && p == 0)) || p > 65535)
    return "the port must be in [" + std::string(port_zero ? "0" : "1") + ", 65535], got " + std::to_string(p);
  return {};
}

/// Reads a whole cluster file into a ClusterConfig, recording every problem.
class ConfigReader {
 public:
  ConfigReader(Reader& r, const toml::table& root, ClusterConfig& c) : r_(r), root_(root), c_(c) {}

  void read() {
    top_level();
    listen();
    http();
    storage();
    timeouts();
    policy_section();
    pools();
    classes();
    users();
    settings();
    partitions();
    agent();
    ha();
    auth();
    tls();
  }

 private:
  void top_level() {
    r_.keys(root_, "", kTopKeys);
    if (const toml::node* n = root_.get("default_class"))
      r_.problem(*n, "default_class",
                 "unknown key; the default class is set in [settings] (default_class = \"...\")");
    if (r_.string(root_, "cluster_id", "", c_.cluster_id) && root_.get("cluster_id") &&
        !valid_cluster_id(c_.cluster_id))
      r_.problem(*root_.get("cluster_id"), "cluster_id",
                 "must be 1 to 64 letters, digits, '-', '_' or '.', got '" + c_.cluster_id + "'");
    int64_t v = c_.max_claims_in_flight;
    if (r_.integer(root_, "max_claims_in_flight", "", v, 1, 1'000'000))
      c_.max_claims_in_flight = static_cast<uint32_t>(v);
    v = c_.default_max_lost_retries;
    if (r_.integer(root_, "default_max_lost_retries", "", v, 0, 1'000))
      c_.default_max_lost_retries = static_cast<uint32_t>(v);
    std::vector<std::string> resources;
    if (r_.strings(root_, "resources", "", resources) && root_.get("resources")) {
      for (const auto& name : resources) {
        // Checked as a job would write it (lower case letters, digits, '_').
        auto parsed = core::Resources::parse(name + "=1");
        if (!parsed || name == "cpu" || name == "memory" || name == "gpu" || name == "disk")
          r_.problem(*root_.get("resources"), "resources",
                     "'" + name + "' is not a name to declare (cpu, memory, gpu and disk are built in)");
      }
      c_.resources = resources;
    }
  }

  void listen() {
    const toml::table* t = r_.table(root_, "listen", "");
    if (!t) return;
    r_.keys(*t, "listen", {"host", "port"});
    if (r_.string(*t, "host", "listen", c_.listen.host) && c_.listen.host.empty())
      r_.problem(*t->get("host"), "listen.host", "must not be empty (0.0.0.0: every interface)");
    int64_t port = c_.listen.port;
    if (r_.integer(*t, "port", "listen", port, 0, 65535)) c_.listen.port = static_cast<uint16_t>(port);
  }

  /// [tls]: the files are checked when a process starts (they may live only
  /// on the machines that use them); here only that all three are given.
  void tls() {
    const toml::table* t = r_.table(root_, "tls", "");
    if (!t) return;
    r_.keys(*t, "tls", {"ca", "cert", "key"});
    r_.string(*t, "ca", "tls", c_.tls.ca);
    r_.string(*t, "cert", "tls", c_.tls.cert);
    r_.string(*t, "key", "tls", c_.tls.key);
    const std::pair<const char*, const std::string*> files[] = {
        {"ca", &c_.tls.ca}, {"cert", &c_.tls.cert}, {"key", &c_.tls.key}};
    for (const auto& [name, value] : files)
      if (value->empty())
        r_.problem(*t, std::string("tls.") + name, "missing: [tls] needs ca, cert and key (PEM files)");
  }

  void http() {
    const toml::table* t = r_.table(root_, "http", "");
    if (!t) return;
    r_.keys(*t, "http", {"listen", "plain"});
    std::string listen;
    // Required: an [http] table says the operator wants the endpoint.
    if (!r_.string(*t, "listen", "http", listen, true) || !t->get("listen")) return;
    auto parsed = parse_http_listen(listen);
    if (!parsed) {
      r_.problem(*t->get("listen"), "http.listen", parsed.error().message);
      return;
    }
    c_.http = *parsed;
    r_.boolean(*t, "plain", "http", c_.http.plain);
  }

  void storage() {
    const toml::table* t = r_.table(root_, "storage", "");
    if (!t) return;
    r_.keys(*t, "storage", {"data_dir", "sync"});
    if (r_.string(*t, "data_dir", "storage", c_.storage.data_dir) && c_.storage.data_dir.empty())
      r_.problem(*t->get("data_dir"), "storage.data_dir", "must not be empty");
    std::string sync = c_.storage.sync;
    if (r_.string(*t, "sync", "storage", sync)) {
      if (one_of(sync, kSyncModes))
        c_.storage.sync = sync;
      else
        r_.problem(*t->get("sync"), "storage.sync",
                   "must be one of " + list(kSyncModes) + ", got '" + sync + "'");
    }
  }

  void timeouts() {
    const toml::table* t = r_.table(root_, "timeouts", "");
    if (!t) return;
    struct Field {
      std::string_view key;
      Duration TimeoutsConfig::*member;
    };
    static constexpr Field kFields[] = {
        {"heartbeat_interval", &TimeoutsConfig::heartbeat_interval},
        {"node_grace", &TimeoutsConfig::node_grace},
        {"claim_ttl", &TimeoutsConfig::claim_ttl},
        {"reply_timeout", &TimeoutsConfig::reply_timeout},
        {"recovery_grace", &TimeoutsConfig::recovery_grace},
        {"agent_restart_grace", &TimeoutsConfig::agent_restart_grace},
        {"link_heartbeat", &TimeoutsConfig::link_heartbeat},
        {"link_timeout", &TimeoutsConfig::link_timeout},
    };
    std::vector<std::string_view> keys;
    for (const auto& f : kFields) keys.push_back(f.key);
    r_.keys(*t, "timeouts", keys);
    bool all_ok = true;
    for (const auto& f : kFields) {
      Duration d = c_.timeouts.*f.member;
      if (!r_.duration(*t, f.key, "timeouts", d)) {
        all_ok = false;
        continue;
      }
      if (d.count() <= 0) {
        r_.problem(*t->get(f.key), "timeouts." + std::string(f.key), "must be longer than 0s");
        all_ok = false;
        continue;
      }
      c_.timeouts.*f.member = d;
    }
    if (!all_ok) return;  // relations between values only once every value is right
    const TimeoutsConfig& to = c_.timeouts;
    // A relation is reported at the key of the second value, or where the
    // section starts when that one is the default.
    auto relation = [&](bool holds, std::string_view key, std::string message) {
      if (!holds) r_.problem(Reader::line_of(*t, key), "timeouts." + std::string(key), std::move(message));
    };
    relation(to.node_grace > to.heartbeat_interval, "node_grace",
             "must be longer than heartbeat_interval (" + core::format_duration(to.heartbeat_interval) +
                 "), or nodes are marked down between two heartbeats");
    relation(to.claim_ttl > to.reply_timeout, "claim_ttl",
             "must be longer than reply_timeout (" + core::format_duration(to.reply_timeout) +
                 "), or a claim can expire while its scheduler still waits for the reply");
    relation(to.link_timeout > to.link_heartbeat, "link_timeout",
             "must be longer than link_heartbeat (" + core::format_duration(to.link_heartbeat) +
                 "), or every connection times out between two heartbeats");
  }

  void policy_section() {
    const toml::table* t = r_.table(root_, "policy", "");
    if (!t) return;
    r_.keys(*t, "policy", {"enabled", "interval"});
    r_.boolean(*t, "enabled", "policy", c_.preemption);
    Duration d = c_.policy.interval;
    if (r_.duration(*t, "interval", "policy", d)) {
      if (d.count() <= 0)
        r_.problem(*t->get("interval"), "policy.interval", "must be longer than 0s");
      else
        c_.policy.interval = d;
    }
  }

  /// An array key given as an empty array (`pools = []`): a problem when
  /// the section needs at least one entry.
  void require_entries(std::string_view key, std::string_view what) {
    const toml::node* n = root_.get(key);
    if (n && n->is_array() && n->as_array()->empty())
      r_.problem(*n, std::string(key), "needs at least one " + std::string(what));
  }

  void pools() {
    if (!root_.get("pools")) return;  // the default pool
    c_.policy.pools.clear();
    policy_toml::read_pools(r_, root_, c_.policy.pools, &pool_tables_);
    require_entries("pools", "pool");
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < c_.policy.pools.size(); ++i) {
      const PoolSpec& p = c_.policy.pools[i];
      const toml::table& t = *pool_tables_[i];
      std::string path = Reader::item("pools", i);
      if (t.get("name") && t.get("name")->is_string() && p.name.empty())
        r_.problem(*t.get("name"), path + ".name", "must not be empty");
      if (p.name.empty()) continue;
      auto [it, fresh] = by_name.emplace(p.name, i);
      if (!fresh)
        r_.problem(*t.get("name"), path + ".name",
                   "pool '" + p.name + "' is defined twice (first at line " +
                       std::to_string(Reader::line_of(*pool_tables_[it->second], "name")) + ")");
      if (auto tol = p.overrides.fair_share_starvation_tolerance; tol && !(*tol >= 0.0 && *tol <= 1.0))
        r_.problem(*t.get("fair_share_starvation_tolerance"), path + ".fair_share_starvation_tolerance",
                   "must be in [0, 1], got " + std::to_string(*tol));
    }
    for (size_t i = 0; i < c_.policy.pools.size(); ++i) {
      const PoolSpec& p = c_.policy.pools[i];
      if (p.parent.empty() || p.name.empty()) continue;
      const toml::node& at = *pool_tables_[i]->get("parent");
      std::string path = Reader::item("pools", i) + ".parent";
      if (!by_name.count(p.parent)) {
        r_.problem(at, path, "'" + p.parent + "' is not a pool" + did_you_mean(p.parent, pool_names()));
        continue;
      }
      // Walk up; more steps than pools is a cycle. Reported once per pool on it.
      std::string chain = p.name;
      const PoolSpec* cur = &p;
      for (size_t steps = 0; !cur->parent.empty() && by_name.count(cur->parent); ++steps) {
        cur = &c_.policy.pools[by_name.at(cur->parent)];
        if (chain.size() < 200) chain += " -> " + cur->name;
        if (cur == &p || steps > c_.policy.pools.size()) {
          r_.problem(at, path, "the parent chain is a cycle (" + chain + ")");
          break;
        }
      }
    }
    pools_given_ = true;
  }

  void classes() {
    if (root_.get("classes")) {
      c_.policy.classes.clear();
      c_.class_scorers.clear();
      static constexpr std::string_view kExtra[] = {"scorer"};
      policy_toml::read_classes(r_, root_, c_.policy.classes, &class_tables_, kExtra);
      require_entries("classes", "class");
    } else {
      // The default class, bound to the first root pool.
      std::string root_pool = c_.policy.pools.empty() ? "default" : c_.policy.pools.front().name;
      for (const auto& p : c_.policy.pools)
        if (p.parent.empty()) {
          root_pool = p.name;
          break;
        }
      c_.policy.classes = default_policy_config().classes;
      for (auto& cls : c_.policy.classes) cls.pool = root_pool;
      return;
    }
    std::set<std::string> known_pools;
    for (const auto& p : c_.policy.pools) known_pools.insert(p.name);
    std::map<std::string, size_t> by_name;
    std::map<int32_t, size_t> by_priority;  // priority -> first class with it
    for (size_t i = 0; i < c_.policy.classes.size(); ++i) {
      const ClassSpec& cls = c_.policy.classes[i];
      const toml::table& t = *class_tables_[i];
      std::string path = Reader::item("classes", i);
      // DUCC: a priority's resources are divided by weight (fair_share) or
      // by allotment (the others), not both.
      if (auto [it, fresh] = by_priority.emplace(cls.priority, i);
          !fresh && c_.policy.classes[it->second].policy != cls.policy) {
        const ClassSpec& first = c_.policy.classes[it->second];
        const toml::node* at = t.get("policy") ? t.get("policy") : t.get("priority") ? t.get("priority") : &t;
        r_.problem(*at, path + ".policy",
                   "class '" + cls.name + "' is " + std::string(core::to_string(cls.policy)) + " at priority " +
                       std::to_string(cls.priority) + " like " + std::string(core::to_string(first.policy)) +
                       " class '" + first.name + "' (line " +
                       std::to_string(Reader::line_of(*class_tables_[it->second], "name")) +
                       "): classes of one priority must share one policy; give it another priority");
      }
      std::string scorer = "fill_first";
      if (r_.string(t, "scorer", path, scorer) && !one_of(scorer, kScorers)) {
        r_.problem(*t.get("scorer"), path + ".scorer",
                   "must be one of " + list(kScorers) + ", got '" + scorer + "'");
        scorer = "fill_first";
      }
      c_.class_scorers.emplace_back(cls.name, scorer);
      if (t.get("name") && t.get("name")->is_string() && cls.name.empty())
        r_.problem(*t.get("name"), path + ".name", "must not be empty");
      if (!cls.name.empty()) {
        auto [it, fresh] = by_name.emplace(cls.name, i);
        if (!fresh)
          r_.problem(*t.get("name"), path + ".name",
                     "class '" + cls.name + "' is defined twice (first at line " +
                         std::to_string(Reader::line_of(*class_tables_[it->second], "name")) + ")");
      }
      if (t.get("pool") && t.get("pool")->is_string() && !known_pools.count(cls.pool))
        r_.problem(*t.get("pool"), path + ".pool",
                   "'" + cls.pool + "' is not a pool" +
                       (pools_given_ ? did_you_mean(cls.pool, pool_names())
                                     : " (without [[pools]], the only pool is 'default')"));
    }
  }

  void users() {
    if (!root_.get("users")) return;
    std::vector<const toml::table*> tables;
    policy_toml::read_users(r_, root_, c_.policy.users, &tables);
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < c_.policy.users.size(); ++i) {
      const UserSpec& u = c_.policy.users[i];
      const toml::table& t = *tables[i];
      std::string path = Reader::item("users", i) + ".name";
      if (t.get("name") && t.get("name")->is_string() && u.name.empty())
        r_.problem(*t.get("name"), path, "must not be empty");
      if (u.name.empty()) continue;
      auto [it, fresh] = by_name.emplace(u.name, i);
      if (!fresh)
        r_.problem(*t.get("name"), path,
                   "user '" + u.name + "' is defined twice (first at line " +
                       std::to_string(Reader::line_of(*tables[it->second], "name")) + ")");
    }
  }

  void settings() {
    PolicySettings& s = c_.policy.settings;
    // Absent default_class: the first class (the default "batch" without [[classes]]).
    s.default_class = c_.policy.classes.empty() ? std::string() : c_.policy.classes.front().name;
    if (const toml::table* t = r_.table(root_, "settings", "")) {
      policy_toml::read_settings(r_, *t, s);
      if (const toml::node* n = t->get("default_class"); n && n->is_string() && !s.default_class.empty()) {
        bool known = std::any_of(c_.policy.classes.begin(), c_.policy.classes.end(),
                                 [&](const ClassSpec& cls) { return cls.name == s.default_class; });
        if (!known) {
          std::vector<std::string> names;
          for (const auto& cls : c_.policy.classes) names.push_back(cls.name);
          r_.problem(*n, "settings.default_class",
                     "'" + s.default_class + "' is not a class" + did_you_mean(s.default_class, names));
        }
      }
    }
    if (const toml::table* t = r_.table(root_, "preemption", ""))
      policy_toml::read_preemption(r_, *t, s.preemption);
  }

  void partitions() {
    std::vector<std::string> leaves = leaf_pools(c_.policy);
    if (!root_.get("partitions")) {
      // One partition owns every leaf pool.
      c_.partitions = {PartitionConfig{core::PartitionId{1}, leaves}};
      return;
    }
    c_.partitions.clear();
    require_entries("partitions", "partition");
    std::set<std::string> known_pools;
    for (const auto& p : c_.policy.pools) known_pools.insert(p.name);
    std::set<std::string> leaf_set(leaves.begin(), leaves.end());
    std::map<uint32_t, uint32_t> id_lines;                       // id -> line of its first definition
    std::map<std::string, std::pair<uint32_t, uint32_t>> owner;  // pool -> (partition id, line)
    auto tables = r_.tables(root_, "partitions", "");
    bool unreadable = false;  // a partition's pools could not be read at all
    for (size_t i = 0; i < tables.size(); ++i) {
      const toml::table& t = *tables[i];
      std::string path = Reader::item("partitions", i);
      r_.keys(t, path, {"id", "pools", "cas"});
      PartitionConfig part;
      if (r_.string(t, "cas", path, part.cas) && part.cas != "fit" && part.cas != "strict")
        r_.problem(*t.get("cas"), path + ".cas", "must be \"fit\" or \"strict\", not \"" + part.cas + "\"");
      int64_t id = 0;
      if (r_.integer(t, "id", path, id, 1, UINT32_MAX, true)) {
        part.id = core::PartitionId{static_cast<uint32_t>(id)};
        auto [it, fresh] = id_lines.emplace(part.id.value, Reader::line_of(*t.get("id")));
        if (!fresh)
          r_.problem(*t.get("id"), path + ".id",
                     "partition " + std::to_string(id) + " is defined twice (first at line " +
                         std::to_string(it->second) + ")");
      }
      if (!t.get("pools")) {
        r_.problem(t, path + ".pools", "is required (the leaf pools this partition owns)");
        unreadable = true;
      } else if (!r_.strings(t, "pools", path, part.pools)) {
        unreadable = true;
      } else {
        const toml::array& arr = *t.get("pools")->as_array();
        if (part.pools.empty()) r_.problem(arr, path + ".pools", "needs at least one pool");
        for (size_t k = 0; k < part.pools.size(); ++k) {
          const std::string& name = part.pools[k];
          const toml::node& at = *arr.get(k);
          std::string where = path + ".pools";
          if (!known_pools.count(name)) {
            r_.problem(at, where,
                       "'" + name + "' is not a pool" +
                           (pools_given_ ? did_you_mean(name, pool_names())
                                         : " (without [[pools]], the only pool is 'default')"));
            continue;
          }
          if (!leaf_set.count(name)) {
            std::string subpools;
            for (const auto& p : c_.policy.pools)
              if (p.parent == name) subpools += (subpools.empty() ? "" : ", ") + p.name;
            r_.problem(at, where,
                       "'" + name + "' is not a leaf pool (its subpools: " + subpools +
                           "); a partition owns leaf pools");
            continue;
          }
          auto [it, fresh] = owner.emplace(name, std::pair{part.id.value, Reader::line_of(at)});
          if (!fresh)
            r_.problem(at, where,
                       "pool '" + name + "' is already owned by partition " +
                           std::to_string(it->second.first) + " (line " + std::to_string(it->second.second) +
                           "); partitions are disjoint");
        }
      }
      c_.partitions.push_back(std::move(part));
    }
    // Every leaf pool belongs to one partition. Not when a partition's pools
    // could not be read: its pools are unknown, and this would only repeat
    // that problem. (A misspelt pool name is read, so its leaf is reported
    // too: "'cpuu' is not a pool" and "'cpu' is in no partition" go together.)
    if (unreadable || !root_.get("partitions")->is_array()) return;
    for (size_t i = 0; i < c_.policy.pools.size(); ++i) {
      const std::string& name = c_.policy.pools[i].name;
      if (!leaf_set.count(name) || owner.count(name)) continue;
      uint32_t line = pools_given_ ? Reader::line_of(*pool_tables_[i], "name")
                                   : Reader::line_of(*root_.get("partitions"));
      r_.problem(line, pools_given_ ? Reader::item("pools", i) + ".name" : "partitions",
                 "leaf pool '" + name + "' is in no partition (add it to the pools of one [[partitions]])");
    }
  }

  void agent() {
    const toml::table* t = r_.table(root_, "agent", "");
    if (!t) return;
    AgentConfig& a = c_.agent;
    r_.keys(*t, "agent",
            {"name", "pool", "resources", "labels", "state_dir", "max_starting", "server", "on_stop", "keep_outputs"});
    std::string on_stop = a.on_stop;
    if (r_.string(*t, "on_stop", "agent", on_stop) && t->get("on_stop")) {
      if (on_stop == "leave" || on_stop == "wait")
        a.on_stop = on_stop;
      else
        r_.problem(*t->get("on_stop"), "agent.on_stop", "must be \"leave\" or \"wait\", got '" + on_stop + "'");
    }
    if (r_.duration(*t, "keep_outputs", "agent", a.keep_outputs) && a.keep_outputs.count() <= 0)
      r_.problem(*t->get("keep_outputs"), "agent.keep_outputs", "must be longer than 0s");
    r_.string(*t, "name", "agent", a.name);
    if (r_.string(*t, "pool", "agent", a.pool) && t->get("pool")) {
      std::vector<std::string> leaves = leaf_pools(c_.policy);
      if (std::find(leaves.begin(), leaves.end(), a.pool) == leaves.end()) {
        bool exists = std::any_of(c_.policy.pools.begin(), c_.policy.pools.end(),
                                  [&](const PoolSpec& p) { return p.name == a.pool; });
        r_.problem(*t->get("pool"), "agent.pool",
                   exists ? "'" + a.pool + "' is not a leaf pool; a node joins a leaf pool"
                          : "'" + a.pool + "' is not a pool" + did_you_mean(a.pool, leaves));
      }
    }
    std::string resources;
    if (r_.string(*t, "resources", "agent", resources) && t->get("resources")) {
      if (auto res = core::Resources::parse(resources))
        a.resources = resources;
      else
        r_.problem(*t->get("resources"), "agent.resources", res.error().message);
    }
    std::vector<std::string> labels;
    if (r_.strings(*t, "labels", "agent", labels)) {
      bool ok = true;
      for (size_t i = 0; i < labels.size(); ++i) {
        const std::string& l = labels[i];
        bool bad =
            l.empty() || l.front() == '!' || l.front() == '=' || l.find_first_of(" \t,") != std::string::npos;
        if (bad) {
          r_.problem(
              *t->get("labels")->as_array()->get(i), "agent.labels",
              "'" + l + "' is not a label (key or key=value, no spaces or commas, not starting with '!')");
          ok = false;
        }
      }
      if (labels.size() > core::kMaxLabels) {  // the server would refuse the node
        r_.problem(*t->get("labels"), "agent.labels",
                   std::to_string(labels.size()) + " labels, above the limit of " +
                       std::to_string(core::kMaxLabels) + " (kMaxLabels)");
        ok = false;
      }
      if (ok) a.labels = std::move(labels);
    }
    if (r_.string(*t, "state_dir", "agent", a.state_dir) && a.state_dir.empty())
      r_.problem(*t->get("state_dir"), "agent.state_dir", "must not be empty");
    int64_t v = a.max_starting;
    if (r_.integer(*t, "max_starting", "agent", v, 0, 1'000'000)) a.max_starting = static_cast<uint32_t>(v);
    std::string server = a.server;
    if (r_.string(*t, "server", "agent", server) && t->get("server")) {
      // One server, or every member of an HA cluster, comma-separated.
      std::string why;
      std::stringstream items(server);
      for (std::string item; why.empty() && std::getline(items, item, ',');) why = check_host_port(item);
      if (why.empty())
        a.server = server;
      else
        r_.problem(*t->get("server"), "agent.server", why);
    }
  }

  void ha() {
    const toml::table* t = r_.table(root_, "ha", "");
    if (!t) return;
    HaConfig h;
    r_.keys(*t, "ha",
            {"etcd", "name", "lease_ttl", "ack", "advertise", "prefix", "poll_interval", "etcd_timeout", "etcd_ca",
             "etcd_cert", "etcd_key"});
    std::vector<std::string> etcd;
    if (r_.strings(*t, "etcd", "ha", etcd) && t->get("etcd")) {
      if (etcd.empty()) r_.problem(*t->get("etcd"), "ha.etcd", "needs at least one etcd endpoint");
      for (size_t i = 0; i < etcd.size(); ++i) {
        const std::string& e = etcd[i];
        std::string why = e.rfind("http://", 0) == 0    ? check_host_port(e.substr(7))
                          : e.rfind("https://", 0) == 0 ? check_host_port(e.substr(8))
                                                        : "expected http://host:port or https://host:port";
        if (!why.empty()) r_.problem(*t->get("etcd")->as_array()->get(i), "ha.etcd", "'" + e + "': " + why);
      }
      h.etcd = std::move(etcd);
    }
    if (r_.string(*t, "name", "ha", h.name) && t->get("name") &&
        (h.name.empty() || h.name.find_first_of("/ \t") != std::string::npos))
      r_.problem(*t->get("name"), "ha.name", "must be non-empty, without '/' or spaces, got '" + h.name + "'");
    if (r_.duration(*t, "lease_ttl", "ha", h.lease_ttl) && t->get("lease_ttl") &&
        (h.lease_ttl < std::chrono::seconds(1) || h.lease_ttl.count() % 1'000'000'000 != 0))
      r_.problem(*t->get("lease_ttl"), "ha.lease_ttl",
                 "must be whole seconds, at least 1s (etcd grants leases in seconds), got " +
                     core::format_duration(h.lease_ttl));
    if (r_.string(*t, "ack", "ha", h.ack) && t->get("ack") && !one_of(h.ack, kAckModes))
      r_.problem(*t->get("ack"), "ha.ack", "must be one of " + list(kAckModes) + ", got '" + h.ack + "'");
    if (r_.string(*t, "advertise", "ha", h.advertise) && t->get("advertise"))
      if (std::string why = check_host_port(h.advertise); !why.empty())
        r_.problem(*t->get("advertise"), "ha.advertise", why);
    if (r_.string(*t, "prefix", "ha", h.prefix) && t->get("prefix") && (h.prefix.empty() || h.prefix.front() != '/'))
      r_.problem(*t->get("prefix"), "ha.prefix", "must start with '/', got '" + h.prefix + "'");
    for (auto [key, target] : {std::pair{"poll_interval", &h.poll_interval}, std::pair{"etcd_timeout", &h.etcd_timeout}})
      if (r_.duration(*t, key, "ha", *target) && t->get(key) && target->count() <= 0)
        r_.problem(*t->get(key), "ha." + std::string(key), "must be longer than 0s");
    for (auto [key, target] : {std::pair{"etcd_ca", &h.etcd_ca}, std::pair{"etcd_cert", &h.etcd_cert},
                               std::pair{"etcd_key", &h.etcd_key}})
      if (r_.string(*t, key, "ha", *target) && t->get(key) && target->empty())
        r_.problem(*t->get(key), "ha." + std::string(key), "must not be empty (leave it out to use [tls]'s file)");
    c_.ha = std::move(h);
  }

  void auth() {
    const toml::table* t = r_.table(root_, "auth", "");
    if (!t) return;
    AuthConfig a;
    r_.keys(*t, "auth", {"tokens_file", "audit_log"});
    // Required: an [auth] table without tokens would lock everyone out.
    if (r_.string(*t, "tokens_file", "auth", a.tokens_file, true) && t->get("tokens_file") && a.tokens_file.empty())
      r_.problem(*t->get("tokens_file"), "auth.tokens_file", "must not be empty");
    if (r_.string(*t, "audit_log", "auth", a.audit_log) && t->get("audit_log") && a.audit_log.empty())
      r_.problem(*t->get("audit_log"), "auth.audit_log", "must not be empty (leave it out: audit.log in data_dir)");
    c_.auth = std::move(a);
  }

  std::vector<std::string> pool_names() const {
    std::vector<std::string> out;
    for (const auto& p : c_.policy.pools) out.push_back(p.name);
    return out;
  }

  Reader& r_;
  const toml::table& root_;
  ClusterConfig& c_;
  bool pools_given_ = false;
  std::vector<const toml::table*> pool_tables_;
  std::vector<const toml::table*> class_tables_;
};

core::Expected<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::make_error(Errc::io_error, "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return core::make_error(Errc::io_error, "cannot read '" + path + "'");
  return s.str();
}

}  // namespace

std::string ConfigProblem::to_string(std::string_view source) const {
  std::string out(source);
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  return out + message;
}

core::policy::PolicyConfig default_policy_config() {
  core::policy::PolicyConfig p;
  p.pools.push_back(PoolSpec{"default", "", {}, {}});
  ClassSpec batch;
  batch.name = "batch";
  batch.pool = "default";
  p.classes.push_back(std::move(batch));
  p.settings.default_class = "batch";
  return p;
}

std::vector<std::string> leaf_pools(const core::policy::PolicyConfig& policy) {
  std::set<std::string_view> parents;
  for (const auto& p : policy.pools)
    if (!p.parent.empty()) parents.insert(p.parent);
  std::vector<std::string> out;
  std::set<std::string_view> seen;
  for (const auto& p : policy.pools)
    if (!p.name.empty() && !parents.count(p.name) && seen.insert(p.name).second) out.push_back(p.name);
  return out;
}

ConfigReport analyze_cluster_config(std::string_view toml, std::string_view source) {
  ConfigReport report;
  Reader r(source);
  if (auto root = policy_toml::parse(toml, r)) {
    ConfigReader(r, *root, report.config).read();
    // What the policy model checks beyond the above (negative limits, ...):
    // only when the file is otherwise clean, so nothing is said twice.
    if (r.ok())
      if (auto s = report.config.policy.validate(); !s) r.problem(0, "", s.error().message);
  }
  for (const auto& p : r.problems()) report.problems.push_back(ConfigProblem{p.line, p.field, p.message});
  std::stable_sort(report.problems.begin(), report.problems.end(),
                   [](const ConfigProblem& a, const ConfigProblem& b) { return a.line < b.line; });
  return report;
}

core::Expected<HttpConfig> parse_http_listen(const std::string& listen) {
  if (std::string why = check_host_port(listen, true); !why.empty())
    return core::make_error(Errc::invalid_argument, "must be HOST:PORT (127.0.0.1:9090; port 0 picks a free one): " + why);
  auto colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host.front() == '[') host = host.substr(1, host.size() - 2);
  return HttpConfig{true, host, static_cast<uint16_t>(std::stoul(listen.substr(colon + 1)))};
}

core::Expected<ClusterConfig> parse_cluster_config(std::string_view toml, std::string_view source) {
  ConfigReport report = analyze_cluster_config(toml, source);
  if (report.ok()) return std::move(report.config);
  std::string message;
  for (const auto& p : report.problems) message += (message.empty() ? "" : "\n") + p.to_string(source);
  return core::make_error(Errc::parse_error, std::move(message));
}

core::Expected<ClusterConfig> load_cluster_config(const std::string& path) {
  auto text = read_whole_file(path);
  if (!text) return text.error();
  return parse_cluster_config(*text, path);
}

std::vector<ConfigProblem> check_cluster_config(std::string_view toml) {
  return analyze_cluster_config(toml, "config").problems;
}

}  // namespace claimsched::apps
