#include "apps/policy_command.hpp"

#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/duration.hpp"
#include "core/policy/policy.hpp"

namespace claimsched::apps {

namespace {

using core::Duration;
using core::Errc;
using core::Error;
using core::Expected;
using core::Resources;
using core::Status;
using core::TimePoint;
using namespace core::policy;

// ---------------------------------------------------------------------------
// Reading: every error names the file, the line and the field.

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Error error(const toml::node& at, const std::string& path, const std::string& what) const {
    return core::make_error(Errc::parse_error, source_ + ":" + std::to_string(at.source().begin.line) + ": " +
                                                   path + ": " + what);
  }

  /// Unknown keys are typos: refuse them.
  Status keys(const toml::table& t, const std::string& path,
              std::initializer_list<std::string_view> allowed) const {
    for (auto&& [k, v] : t) {
      bool ok = false;
      for (auto a : allowed) ok = ok || k.str() == a;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return error(v, path.empty() ? std::string(k.str()) : path + "." + std::string(k.str()),
                     "unknown key (known: " + list + ")");
      }
    }
    return Status::ok();
  }

  Status string(const toml::table& t, std::string_view key, const std::string& path, std::string& out,
                bool required = false) const {
    const toml::node* n = t.get(key);
    std::string where = join(path, key);
    if (!n) return required ? missing(t, where) : Status::ok();
    if (!n->is_string()) return error(*n, where, "expected a string");
    out = *n->value<std::string>();
    return Status::ok();
  }

  Status integer(const toml::table& t, std::string_view key, const std::string& path, int64_t& out,
                 int64_t lo, int64_t hi, bool required = false) const {
    const toml::node* n = t.get(key);
    std::string where = join(path, key);
    if (!n) return required ? missing(t, where) : Status::ok();
    if (!n->is_integer()) return error(*n, where, "expected an integer");
    int64_t v = *n->value<int64_t>();
    if (v < lo || v > hi)
      return error(
          *n, where,
          "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    out = v;
    return Status::ok();
  }

  Status number(const toml::table& t, std::string_view key, const std::string& path, double& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    if (!n->is_number()) return error(*n, join(path, key), "expected a number");
    out = *n->value<double>();
    return Status::ok();
  }

  Status boolean(const toml::table& t, std::string_view key, const std::string& path, bool& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    if (!n->is_boolean()) return error(*n, join(path, key), "expected true or false");
    out = *n->value<bool>();
    return Status::ok();
  }

  /// Durations and times are strings with a unit ("30s", "2h"): a bare
  /// number would leave the unit to a guess.
  Status duration(const toml::table& t, std::string_view key, const std::string& path, Duration& out,
                  bool required = false) const {
    std::string text;
    if (auto s = string(t, key, path, text, required); !s) return s;
    if (!t.get(key)) return Status::ok();
    auto d = core::parse_duration(text);
    if (!d) return error(*t.get(key), join(path, key), d.error().message);
    out = *d;
    return Status::ok();
  }

  Status resources(const toml::table& t, std::string_view key, const std::string& path, Resources& out,
                   bool required = false) const {
    std::string text;
    if (auto s = string(t, key, path, text, required); !s) return s;
    if (!t.get(key)) return Status::ok();
    auto r = Resources::parse(text);
    if (!r) return error(*t.get(key), join(path, key), r.error().message);
    out = *r;
    return Status::ok();
  }

  Status limits(const toml::table& t, std::string_view key, const std::string& path, Limits& out) const {
    std::string text;
    if (auto s = string(t, key, path, text); !s) return s;
    if (!t.get(key)) return Status::ok();
    auto l = Limits::parse(text);
    if (!l) return error(*t.get(key), join(path, key), l.error().message);
    out = *l;
    return Status::ok();
  }

  Status strings(const toml::table& t, std::string_view key, const std::string& path,
                 std::vector<std::string>& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    const toml::array* a = n->as_array();
    if (!a) return error(*n, join(path, key), "expected an array of strings");
    for (auto&& e : *a) {
      if (!e.is_string()) return error(e, join(path, key), "expected an array of strings");
      out.push_back(*e.value<std::string>());
    }
    return Status::ok();
  }

  /// An array of tables (`[[jobs]]` or `jobs = [{...}, ...]`); missing is empty.
  Expected<std::vector<const toml::table*>> tables(const toml::table& t, std::string_view key,
                                                   const std::string& path) const {
    std::vector<const toml::table*> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) return error(*n, join(path, key), "expected an array of tables ([[" + std::string(key) + "]])");
    for (auto&& e : *a) {
      if (!e.is_table()) return error(e, join(path, key), "expected tables");
      out.push_back(e.as_table());
    }
    return out;
  }

  Expected<const toml::table*> table(const toml::table& t, std::string_view key,
                                     const std::string& path) const {
    const toml::node* n = t.get(key);
    if (!n) return static_cast<const toml::table*>(nullptr);
    if (!n->is_table()) return error(*n, join(path, key), "expected a table");
    return n->as_table();
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  static std::string item(std::string_view what, size_t i) {
    return std::string(what) + "[" + std::to_string(i) + "]";
  }

 private:
  Status missing(const toml::table& t, const std::string& where) const {
    return error(t, where, "is required");
  }

  std::string source_;
};

#define CS_TRY(expr)                                 \
  do {                                               \
    if (auto st_ = (expr); !st_) return st_.error(); \
  } while (0)

Status read_preemption(const Reader& r, const toml::table& t, PreemptionSettings& p) {
  const std::string path = "preemption";
  CS_TRY(r.keys(t, path,
                {"fair_share_starvation_timeout", "fair_share_aggressive_starvation_timeout",
                 "fair_share_starvation_tolerance", "enable_aggressive_starvation", "enable_pool_starvation",
                 "preemption_satisfaction_threshold", "aggressive_preemption_satisfaction_threshold",
                 "non_preemptible_resource_usage_threshold", "preemptive_scheduling_backoff",
                 "allocation_preemption_timeout"}));
  CS_TRY(r.duration(t, "fair_share_starvation_timeout", path, p.fair_share_starvation_timeout));
  CS_TRY(r.duration(t, "fair_share_aggressive_starvation_timeout", path,
                    p.fair_share_aggressive_starvation_timeout));
  CS_TRY(r.number(t, "fair_share_starvation_tolerance", path, p.fair_share_starvation_tolerance));
  CS_TRY(r.boolean(t, "enable_aggressive_starvation", path, p.enable_aggressive_starvation));
  CS_TRY(r.boolean(t, "enable_pool_starvation", path, p.enable_pool_starvation));
  CS_TRY(r.number(t, "preemption_satisfaction_threshold", path, p.preemption_satisfaction_threshold));
  CS_TRY(r.number(t, "aggressive_preemption_satisfaction_threshold", path,
                  p.aggressive_preemption_satisfaction_threshold));
  CS_TRY(r.limits(t, "non_preemptible_resource_usage_threshold", path,
                  p.non_preemptible_resource_usage_threshold));
  CS_TRY(r.duration(t, "preemptive_scheduling_backoff", path, p.preemptive_scheduling_backoff));
  CS_TRY(r.duration(t, "allocation_preemption_timeout", path, p.allocation_preemption_timeout));
  if (auto s = p.validate(); !s) return r.error(t, path, s.error().message);
  return Status::ok();
}

Status read_settings(const Reader& r, const toml::table& t, PolicySettings& s) {
  const std::string path = "settings";
  CS_TRY(r.keys(t, path, {"quantum", "defragmentation", "default_class", "global_allotment"}));
  if (const toml::node* q = t.get("quantum")) {
    if (q->is_integer()) {
      s.quantum = *q->value<int64_t>();
    } else if (q->is_string()) {
      auto v = core::parse_quantity(core::dim::memory, *q->value<std::string>());
      if (!v) return r.error(*q, "settings.quantum", v.error().message);
      s.quantum = *v;
    } else {
      return r.error(*q, "settings.quantum", "expected a memory size like \"15Gi\"");
    }
    if (s.quantum < 0) return r.error(*q, "settings.quantum", "must not be negative");
  }
  CS_TRY(r.boolean(t, "defragmentation", path, s.defragmentation));
  CS_TRY(r.string(t, "default_class", path, s.default_class));
  CS_TRY(r.limits(t, "global_allotment", path, s.global_allotment));
  return Status::ok();
}

Status read_pools(const Reader& r, const toml::table& root, Snapshot& snap) {
  auto pools = r.tables(root, "pools", "");
  if (!pools) return pools.error();
  for (size_t i = 0; i < pools->size(); ++i) {
    const auto& t = *(*pools)[i];
    std::string path = Reader::item("pools", i);
    CS_TRY(r.keys(t, path,
                  {"name", "parent", "resource_limits", "fair_share_starvation_timeout",
                   "fair_share_aggressive_starvation_timeout", "fair_share_starvation_tolerance",
                   "enable_aggressive_starvation"}));
    PoolSpec p;
    CS_TRY(r.string(t, "name", path, p.name, true));
    CS_TRY(r.string(t, "parent", path, p.parent));
    CS_TRY(r.limits(t, "resource_limits", path, p.resource_limits));
    if (t.get("fair_share_starvation_timeout")) {
      Duration d{};
      CS_TRY(r.duration(t, "fair_share_starvation_timeout", path, d));
      p.overrides.fair_share_starvation_timeout = d;
    }
    if (t.get("fair_share_aggressive_starvation_timeout")) {
      Duration d{};
      CS_TRY(r.duration(t, "fair_share_aggressive_starvation_timeout", path, d));
      p.overrides.fair_share_aggressive_starvation_timeout = d;
    }
    if (t.get("fair_share_starvation_tolerance")) {
      double v = 0;
      CS_TRY(r.number(t, "fair_share_starvation_tolerance", path, v));
      p.overrides.fair_share_starvation_tolerance = v;
    }
    if (t.get("enable_aggressive_starvation")) {
      bool v = false;
      CS_TRY(r.boolean(t, "enable_aggressive_starvation", path, v));
      p.overrides.enable_aggressive_starvation = v;
    }
    snap.pools.push_back(std::move(p));
  }
  return Status::ok();
}

Status read_classes(const Reader& r, const toml::table& root, Snapshot& snap) {
  auto classes = r.tables(root, "classes", "");
  if (!classes) return classes.error();
  for (size_t i = 0; i < classes->size(); ++i) {
    const auto& t = *(*classes)[i];
    std::string path = Reader::item("classes", i);
    CS_TRY(r.keys(t, path,
                  {"name", "priority", "weight", "policy", "pool", "allotment", "user_allotment",
                   "initialization_cap", "expand_by_doubling", "prediction", "prediction_fudge"}));
    ClassSpec c;
    CS_TRY(r.string(t, "name", path, c.name, true));
    int64_t v = c.priority;
    CS_TRY(r.integer(t, "priority", path, v, INT32_MIN, INT32_MAX));
    c.priority = static_cast<int32_t>(v);
    v = c.weight;
    CS_TRY(r.integer(t, "weight", path, v, 1, 1'000'000));
    c.weight = static_cast<uint32_t>(v);
    std::string policy = "fair_share";
    CS_TRY(r.string(t, "policy", path, policy));
    auto pol = parse_class_policy(policy);
    if (!pol) return r.error(*t.get("policy"), path + ".policy", pol.error().message);
    c.policy = *pol;
    CS_TRY(r.string(t, "pool", path, c.pool, true));
    CS_TRY(r.limits(t, "allotment", path, c.allotment));
    auto overrides = r.table(t, "user_allotment", path);
    if (!overrides) return overrides.error();
    if (*overrides) {
      for (auto&& [user, value] : **overrides) {
        std::string where = path + ".user_allotment." + std::string(user.str());
        if (!value.is_string()) return r.error(value, where, "expected a string like \"memory=64Gi\"");
        auto l = Limits::parse(*value.value<std::string>());
        if (!l) return r.error(value, where, l.error().message);
        c.user_allotments.emplace_back(std::string(user.str()), *l);
      }
    }
    v = c.initialization_cap;
    CS_TRY(r.integer(t, "initialization_cap", path, v, 0, 10'000'000));
    c.initialization_cap = static_cast<uint32_t>(v);
    CS_TRY(r.boolean(t, "expand_by_doubling", path, c.expand_by_doubling));
    CS_TRY(r.boolean(t, "prediction", path, c.prediction));
    CS_TRY(r.duration(t, "prediction_fudge", path, c.prediction_fudge));
    snap.classes.push_back(std::move(c));
  }
  return Status::ok();
}

Status read_users(const Reader& r, const toml::table& root, Snapshot& snap) {
  auto users = r.tables(root, "users", "");
  if (!users) return users.error();
  for (size_t i = 0; i < users->size(); ++i) {
    const auto& t = *(*users)[i];
    std::string path = Reader::item("users", i);
    CS_TRY(r.keys(t, path, {"name", "allotment"}));
    UserSpec u;
    CS_TRY(r.string(t, "name", path, u.name, true));
    if (t.get("allotment")) {
      Limits l;
      CS_TRY(r.limits(t, "allotment", path, l));
      u.allotment = l;
    }
    snap.users.push_back(std::move(u));
  }
  return Status::ok();
}

Status read_nodes(const Reader& r, const toml::table& root, Snapshot& snap) {
  auto nodes = r.tables(root, "nodes", "");
  if (!nodes) return nodes.error();
  for (size_t i = 0; i < nodes->size(); ++i) {
    const auto& t = *(*nodes)[i];
    std::string path = Reader::item("nodes", i);
    CS_TRY(r.keys(t, path, {"id", "name", "pool", "capacity", "free", "state", "labels"}));
    NodeInfo n;
    int64_t id = 0;
    CS_TRY(r.integer(t, "id", path, id, 0, UINT32_MAX, true));
    n.id = core::NodeId{static_cast<uint32_t>(id)};
    CS_TRY(r.string(t, "name", path, n.name));
    CS_TRY(r.string(t, "pool", path, n.pool, true));
    CS_TRY(r.resources(t, "capacity", path, n.capacity, true));
    if (t.get("free")) {
      Resources f;
      CS_TRY(r.resources(t, "free", path, f));
      n.free = f;
    }
    std::string state = "up";
    CS_TRY(r.string(t, "state", path, state));
    auto st = core::parse_node_state(state);
    if (!st) return r.error(*t.get("state"), path + ".state", st.error().message);
    n.state = *st;
    CS_TRY(r.strings(t, "labels", path, n.labels));
    snap.nodes.push_back(std::move(n));
  }
  return Status::ok();
}

Status read_jobs(const Reader& r, const toml::table& root, Snapshot& snap) {
  auto jobs = r.tables(root, "jobs", "");
  if (!jobs) return jobs.error();
  for (size_t i = 0; i < jobs->size(); ++i) {
    const auto& t = *(*jobs)[i];
    std::string path = Reader::item("jobs", i);
    CS_TRY(r.keys(
        t, path,
        {"id", "name", "user", "class", "pool", "per_task", "pending", "preemptible", "submit_time",
         "constraints", "initialized", "remaining_work", "time_per_item", "init_time", "allocations"}));
    JobInfo j;
    int64_t v = 0;
    CS_TRY(r.integer(t, "id", path, v, 0, INT64_MAX, true));
    j.id = core::JobId{static_cast<uint64_t>(v)};
    CS_TRY(r.string(t, "name", path, j.name));
    CS_TRY(r.string(t, "user", path, j.user, true));
    CS_TRY(r.string(t, "class", path, j.job_class));
    CS_TRY(r.string(t, "pool", path, j.pool));
    CS_TRY(r.resources(t, "per_task", path, j.per_task, true));
    v = 0;
    CS_TRY(r.integer(t, "pending", path, v, 0, 10'000'000));
    j.pending = static_cast<uint32_t>(v);
    CS_TRY(r.boolean(t, "preemptible", path, j.preemptible));
    CS_TRY(r.duration(t, "submit_time", path, j.submit_time));
    CS_TRY(r.strings(t, "constraints", path, j.constraints));
    CS_TRY(r.boolean(t, "initialized", path, j.initialized));
    if (t.get("remaining_work") || t.get("time_per_item") || t.get("init_time")) {
      PredictionInfo p;
      v = 0;
      CS_TRY(r.integer(t, "remaining_work", path, v, 0, INT64_MAX));
      p.remaining_work = static_cast<uint64_t>(v);
      CS_TRY(r.duration(t, "time_per_item", path, p.time_per_item));
      CS_TRY(r.duration(t, "init_time", path, p.init_time));
      j.prediction = p;
    }
    auto allocs = r.tables(t, "allocations", path);
    if (!allocs) return allocs.error();
    for (size_t k = 0; k < allocs->size(); ++k) {
      const auto& a = *(*allocs)[k];
      std::string apath = path + "." + Reader::item("allocations", k);
      CS_TRY(r.keys(a, apath, {"index", "node", "start", "interruptible", "initialized"}));
      AllocationInfo info;
      int64_t index = static_cast<int64_t>(k);
      CS_TRY(r.integer(a, "index", apath, index, 0, UINT32_MAX));
      info.index = static_cast<core::TaskIndex>(index);
      int64_t node = 0;
      CS_TRY(r.integer(a, "node", apath, node, 0, UINT32_MAX, true));
      info.node = core::NodeId{static_cast<uint32_t>(node)};
      CS_TRY(r.duration(a, "start", apath, info.start, true));
      CS_TRY(r.boolean(a, "interruptible", apath, info.interruptible));
      CS_TRY(r.boolean(a, "initialized", apath, info.initialized));
      j.allocations.push_back(info);
    }
    snap.jobs.push_back(std::move(j));
  }
  return Status::ok();
}

Status read_state(const Reader& r, const toml::table& t, PolicyState& st) {
  CS_TRY(r.keys(t, "state", {"jobs", "pools", "nodes"}));
  auto jobs = r.tables(t, "jobs", "state");
  if (!jobs) return jobs.error();
  for (size_t i = 0; i < jobs->size(); ++i) {
    std::string path = "state." + Reader::item("jobs", i);
    CS_TRY(r.keys(*(*jobs)[i], path, {"id", "below_fair_share_since"}));
    int64_t id = 0;
    Duration since{};
    CS_TRY(r.integer(*(*jobs)[i], "id", path, id, 0, INT64_MAX, true));
    CS_TRY(r.duration(*(*jobs)[i], "below_fair_share_since", path, since, true));
    st.job_below_fair_share_since.emplace_back(core::JobId{static_cast<uint64_t>(id)}, since);
  }
  auto pools = r.tables(t, "pools", "state");
  if (!pools) return pools.error();
  for (size_t i = 0; i < pools->size(); ++i) {
    std::string path = "state." + Reader::item("pools", i);
    CS_TRY(r.keys(*(*pools)[i], path, {"name", "below_fair_share_since"}));
    std::string name;
    Duration since{};
    CS_TRY(r.string(*(*pools)[i], "name", path, name, true));
    CS_TRY(r.duration(*(*pools)[i], "below_fair_share_since", path, since, true));
    st.pool_below_fair_share_since.emplace_back(name, since);
  }
  auto nodes = r.tables(t, "nodes", "state");
  if (!nodes) return nodes.error();
  for (size_t i = 0; i < nodes->size(); ++i) {
    std::string path = "state." + Reader::item("nodes", i);
    CS_TRY(r.keys(*(*nodes)[i], path, {"id", "last_preemptive_scheduling"}));
    int64_t id = 0;
    Duration at{};
    CS_TRY(r.integer(*(*nodes)[i], "id", path, id, 0, UINT32_MAX, true));
    CS_TRY(r.duration(*(*nodes)[i], "last_preemptive_scheduling", path, at, true));
    st.node_last_preemptive_scheduling.emplace_back(core::NodeId{static_cast<uint32_t>(id)}, at);
  }
  std::sort(st.job_below_fair_share_since.begin(), st.job_below_fair_share_since.end());
  std::sort(st.pool_below_fair_share_since.begin(), st.pool_below_fair_share_since.end());
  std::sort(st.node_last_preemptive_scheduling.begin(), st.node_last_preemptive_scheduling.end());
  return Status::ok();
}

#undef CS_TRY

// ---------------------------------------------------------------------------
// JSON.

using nlohmann::json;

std::string when(TimePoint t) { return t == core::kNever ? std::string() : core::format_duration(t); }

void shares(json& j, const ShareRow& r) {
  j["demand"] = r.demand.to_string();
  j["fair_share"] = r.fair_share.to_string();
  j["usage"] = r.usage.to_string();
  j["scope"] = r.scope.to_string();
  j["demand_share"] = share_to_double(r.demand_share);
  j["fair_share_share"] = share_to_double(r.fair_share_share);
  j["usage_share"] = share_to_double(r.usage_share);
  j["scheduling_status"] = std::string(to_string(r.scheduling));
}

std::string task(const core::TaskRef& t) {
  return std::to_string(t.job.value) + "." + std::to_string(t.index);
}

json state_json(const PolicyState& st) {
  json out = json::object();
  out["jobs"] = json::array();
  for (const auto& [id, since] : st.job_below_fair_share_since)
    out["jobs"].push_back({{"id", id.value}, {"below_fair_share_since", core::format_duration(since)}});
  out["pools"] = json::array();
  for (const auto& [name, since] : st.pool_below_fair_share_since)
    out["pools"].push_back({{"name", name}, {"below_fair_share_since", core::format_duration(since)}});
  out["nodes"] = json::array();
  for (const auto& [id, at] : st.node_last_preemptive_scheduling)
    out["nodes"].push_back({{"id", id.value}, {"last_preemptive_scheduling", core::format_duration(at)}});
  return out;
}

core::Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::make_error(Errc::io_error, "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CLI::Option* add_duration(CLI::App& app, const std::string& name, Duration& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            auto d = core::parse_duration(text);
            if (!d) throw CLI::ValidationError(name, d.error().message);
            target = *d;
          },
          help + " (default " + core::format_duration(target) + ")")
      ->type_name("DURATION");
}

}  // namespace

core::Expected<Snapshot> parse_policy_snapshot(std::string_view text, std::string_view source,
                                               PolicyState* state) {
  Reader r(source);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return core::make_error(Errc::parse_error, std::string(source) + ":" +
                                                   std::to_string(e.source().begin.line) + ": " +
                                                   std::string(e.description()));
  }
  if (auto s = r.keys(
          root, "", {"now", "settings", "preemption", "pools", "classes", "users", "nodes", "jobs", "state"});
      !s)
    return s.error();
  Snapshot snap;
  if (auto s = r.duration(root, "now", "", snap.now); !s) return s.error();
  auto settings = r.table(root, "settings", "");
  if (!settings) return settings.error();
  if (*settings)
    if (auto s = read_settings(r, **settings, snap.settings); !s) return s.error();
  auto preemption = r.table(root, "preemption", "");
  if (!preemption) return preemption.error();
  if (*preemption)
    if (auto s = read_preemption(r, **preemption, snap.settings.preemption); !s) return s.error();
  for (auto* read : {read_pools, read_classes, read_users, read_nodes, read_jobs})
    if (auto s = read(r, root, snap); !s) return s.error();
  auto st = r.table(root, "state", "");
  if (!st) return st.error();
  if (*st && state)
    if (auto s = read_state(r, **st, *state); !s) return s.error();
  // What the model checks (names resolve, ids unique, ...) is reported with
  // the file name; the message names the entity and field.
  if (auto s = validate(snap); !s)
    return core::make_error(s.error().code, std::string(source) + ": " + s.error().message);
  return snap;
}

std::string render_policy_json(const CycleResult& r) {
  json out;
  out["now"] = core::format_duration(r.now);
  out["pools"] = json::array();
  for (const auto& p : r.pools) {
    json j;
    j["name"] = p.name;
    j["parent"] = p.parent;
    j["nodes"] = p.nodes;
    j["jobs"] = p.jobs;
    j["own_capacity"] = p.own_capacity.to_string();
    j["resource_limits"] = p.resource_limits.to_string();
    shares(j, p);
    j["starvation_status"] = std::string(to_string(p.starvation));
    j["below_fair_share_since"] = when(p.below_since);
    out["pools"].push_back(std::move(j));
  }
  out["classes"] = json::array();
  for (const auto& c : r.classes) {
    json j;
    j["name"] = c.name;
    j["pool"] = c.pool;
    j["priority"] = c.priority;
    j["weight"] = c.weight;
    j["policy"] = std::string(to_string(c.policy));
    j["users"] = c.users;
    j["jobs"] = c.jobs;
    shares(j, c);
    out["classes"].push_back(std::move(j));
  }
  out["users"] = json::array();
  for (const auto& u : r.users) {
    json j;
    j["class"] = u.class_name;
    j["user"] = u.user;
    j["jobs"] = u.jobs;
    shares(j, u);
    out["users"].push_back(std::move(j));
  }
  out["jobs"] = json::array();
  for (const auto& jr : r.jobs) {
    json j;
    j["id"] = jr.id.value;
    j["name"] = jr.name;
    j["user"] = jr.user;
    j["class"] = jr.class_name;
    j["pool"] = jr.pool;
    j["policy"] = std::string(to_string(jr.policy));
    j["preemptible"] = jr.preemptible;
    j["running"] = jr.running;
    j["pending"] = jr.pending;
    j["cap"] = jr.cap;
    j["cap_reason"] = std::string(to_string(jr.cap_reason));
    j["fair_tasks"] = jr.fair_tasks;
    j["task_share"] = share_to_double(jr.task_share);
    shares(j, jr);
    j["own_starvation_status"] = std::string(to_string(jr.own_starvation));
    j["starvation_status"] = std::string(to_string(jr.starvation));
    j["below_fair_share_since"] = when(jr.below_since);
    if (jr.reserved_node) j["reserved_node"] = jr.reserved_node->value;
    j["allocations"] = json::array();
    for (const auto& a : jr.allocations)
      j["allocations"].push_back({{"task", task(a.task)},
                                  {"node", a.node.value},
                                  {"start", core::format_duration(a.start)},
                                  {"class", std::string(to_string(a.cls))},
                                  {"squatter", a.squatter},
                                  {"interruptible", a.interruptible},
                                  {"lost", a.lost}});
    j["placed"] = jr.placed;
    j["removed"] = jr.removed;
    j["pending_reason"] = jr.pending_reason;
    out["jobs"].push_back(std::move(j));
  }
  json plan;
  plan["placements"] = json::array();
  for (const auto& p : r.plan.placements) {
    json waits = json::array();
    for (const auto& w : p.waits_for) waits.push_back(task(w));
    plan["placements"].push_back({{"job", p.job.value},
                                  {"node", p.node.value},
                                  {"count", p.count},
                                  {"stage", std::string(to_string(p.stage))},
                                  {"per_task", p.per_task.to_string()},
                                  {"waits_for", std::move(waits)}});
  }
  plan["removals"] = json::array();
  for (const auto& rm : r.plan.removals) {
    json j{{"task", task(rm.task)},
           {"node", rm.node.value},
           {"kind", std::string(to_string(rm.kind))},
           {"reason", std::string(to_string(rm.reason))},
           {"class", std::string(to_string(rm.cls))},
           {"squatter", rm.squatter},
           {"interrupt", rm.interrupt},
           {"kill_after", core::format_duration(rm.kill_after)},
           {"detail", rm.detail}};
    if (rm.preemptor) j["preempted_for"] = rm.preemptor->value;
    if (!rm.pool.empty()) j["pool"] = rm.pool;
    plan["removals"].push_back(std::move(j));
  }
  const auto& st = r.plan.stats;
  json by_reason = json::object();
  for (size_t i = 0; i < kRemovalReasons; ++i)
    by_reason[std::string(to_string(static_cast<RemovalReason>(i)))] = st.by_reason[i];
  plan["stats"] = {{"placements", st.placements},       {"tasks_placed", st.tasks_placed},
                   {"preemptions", st.preemptions},     {"evictions", st.evictions},
                   {"by_reason", std::move(by_reason)}, {"nodes_in_backoff", st.nodes_in_backoff}};
  out["plan"] = std::move(plan);
  out["next_state"] = state_json(r.next_state);
  return out.dump(2) + "\n";
}

std::string render_policy_state(const PolicyState& st) {
  std::string out = "[state]\njobs = [\n";
  for (const auto& [id, since] : st.job_below_fair_share_since)
    out += "  { id = " + std::to_string(id.value) + ", below_fair_share_since = \"" +
           core::format_duration(since) + "\" },\n";
  out += "]\npools = [\n";
  for (const auto& [name, since] : st.pool_below_fair_share_since)
    out += "  { name = " + json(name).dump() + ", below_fair_share_since = \"" +
           core::format_duration(since) + "\" },\n";
  out += "]\nnodes = [\n";
  for (const auto& [id, at] : st.node_last_preemptive_scheduling)
    out += "  { id = " + std::to_string(id.value) + ", last_preemptive_scheduling = \"" +
           core::format_duration(at) + "\" },\n";
  out += "]\n";
  return out;
}

core::Status PolicyOptions::validate() const {
  if (snapshot.empty()) return core::make_error(Errc::invalid_argument, "SNAPSHOT is required");
  if (cycles == 0 || cycles > 100'000)
    return core::make_error(Errc::invalid_argument, "--cycles must be in [1, 100000]");
  if (step.count() <= 0) return core::make_error(Errc::invalid_argument, "--step must be positive");
  return Status::ok();
}

void add_policy_commands(CLI::App& app, PolicyOptions& o) {
  auto* policy = app.add_subcommand("policy", "Dry runs of the fair-share and preemption policy");
  policy->require_subcommand(1);
  auto* eval = policy->add_subcommand(
      "eval",
      "Fair shares, statuses and the next cycle's placements and preemptions for a snapshot (runs nothing)");
  eval->add_option("SNAPSHOT", o.snapshot, "Cluster snapshot (TOML; see deploy/POLICY.md)")->required();
  eval->add_flag("--json", o.json, "Print JSON instead of tables");
  eval->add_option("--explain", o.explain, "Also say in words why job JOB is pending or preempted")
      ->type_name("JOB");
  eval->add_option("--cycles", o.cycles, "Simulate this many cycles (each plan carried out before the next)")
      ->capture_default_str();
  add_duration(*eval, "--step", o.step, "Time between simulated cycles");
  eval->add_option("--state-out", o.state_out, "Write the next cycle's [state] (starvation timers) to FILE")
      ->type_name("FILE");
}

int run_policy_eval(const PolicyOptions& o) {
  if (auto s = o.validate(); !s) {
    std::fprintf(stderr, "claimsched policy eval: %s\n", s.error().message.c_str());
    return 1;
  }
  auto text = read_file(o.snapshot);
  if (!text) {
    std::fprintf(stderr, "claimsched policy eval: %s\n", text.error().message.c_str());
    return 1;
  }
  PolicyState state;
  auto snap = parse_policy_snapshot(*text, o.snapshot, &state);
  if (!snap) {
    std::fprintf(stderr, "claimsched policy eval: %s\n", snap.error().message.c_str());
    return 1;
  }
  Snapshot current = std::move(*snap);
  for (uint32_t cycle = 1;; ++cycle) {
    auto result = run_cycle(current, state);
    if (!result) {
      std::fprintf(stderr, "claimsched policy eval: %s\n", result.error().message.c_str());
      return 1;
    }
    bool last = cycle == o.cycles;
    if (!last && !o.json) {
      const auto& st = result->plan.stats;
      std::printf("cycle %u at %s: %u placements (%u tasks), %u preemptions, %u evictions\n", cycle,
                  core::format_duration(result->now).c_str(), st.placements, st.tasks_placed, st.preemptions,
                  st.evictions);
      for (const auto& rm : result->plan.removals) std::printf("  %s\n", describe(rm).c_str());
    }
    if (last) {
      if (o.json) {
        std::fputs(render_policy_json(*result).c_str(), stdout);
      } else {
        if (o.cycles > 1) std::printf("\ncycle %u:\n", cycle);
        std::fputs(render_text(*result).c_str(), stdout);
        for (uint64_t id : o.explain) std::printf("\n%s", explain_job(*result, core::JobId{id}).c_str());
      }
      if (!o.state_out.empty()) {
        std::ofstream out(o.state_out, std::ios::binary | std::ios::trunc);
        out << render_policy_state(result->next_state);
        if (!out) {
          std::fprintf(stderr, "claimsched policy eval: cannot write '%s'\n", o.state_out.c_str());
          return 1;
        }
      }
      return 0;
    }
    current = apply_plan(current, *result, current.now + o.step);
    state = result->next_state;
  }
}

}  // namespace claimsched::apps
