#include "apps/policy_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/policy_toml.hpp"
#include "core/duration.hpp"
#include "core/policy/policy.hpp"
#include "core/policy/stage.hpp"

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
// Reading: the sections a cluster config shares (settings, preemption, pools,
// classes, users) are read by apps/policy_toml; the ones only a snapshot has
// (nodes, jobs, state) are here. Every problem names the file, the line and
// the field; policy eval reports the first.

using policy_toml::Reader;

void read_nodes(Reader& r, const toml::table& root, Snapshot& snap) {
  auto nodes = r.tables(root, "nodes", "");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& t = *nodes[i];
    std::string path = Reader::item("nodes", i);
    r.keys(t, path, {"id", "name", "pool", "capacity", "free", "state", "labels"});
    NodeInfo n;
    int64_t id = 0;
    r.integer(t, "id", path, id, 0, UINT32_MAX, true);
    n.id = core::NodeId{static_cast<uint32_t>(id)};
    r.string(t, "name", path, n.name);
    r.string(t, "pool", path, n.pool, true);
    r.resources(t, "capacity", path, n.capacity, true);
    if (t.get("free")) {
      Resources f;
      if (r.resources(t, "free", path, f)) n.free = f;
    }
    std::string state = "up";
    if (r.string(t, "state", path, state)) {
      if (auto st = core::parse_node_state(state))
        n.state = *st;
      else
        r.problem(*t.get("state"), path + ".state", st.error().message);
    }
    r.strings(t, "labels", path, n.labels);
    snap.nodes.push_back(std::move(n));
  }
}

void read_jobs(Reader& r, const toml::table& root, Snapshot& snap) {
  auto jobs = r.tables(root, "jobs", "");
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& t = *jobs[i];
    std::string path = Reader::item("jobs", i);
    r.keys(t, path,
           {"id", "name", "user", "class", "pool", "per_task", "pending", "preemptible", "submit_time",
            "constraints", "initialized", "remaining_work", "time_per_item", "init_time", "allocations"});
    JobInfo j;
    int64_t v = 0;
    r.integer(t, "id", path, v, 0, INT64_MAX, true);
    j.id = core::JobId{static_cast<uint64_t>(v)};
    r.string(t, "name", path, j.name);
    r.string(t, "user", path, j.user, true);
    r.string(t, "class", path, j.job_class);
    r.string(t, "pool", path, j.pool);
    r.resources(t, "per_task", path, j.per_task, true);
    v = 0;
    r.integer(t, "pending", path, v, 0, 10'000'000);
    j.pending = static_cast<uint32_t>(v);
    r.boolean(t, "preemptible", path, j.preemptible);
    r.duration(t, "submit_time", path, j.submit_time);
    r.strings(t, "constraints", path, j.constraints);
    r.boolean(t, "initialized", path, j.initialized);
    if (t.get("remaining_work") || t.get("time_per_item") || t.get("init_time")) {
      PredictionInfo p;
      v = 0;
      r.integer(t, "remaining_work", path, v, 0, INT64_MAX);
      p.remaining_work = static_cast<uint64_t>(v);
      r.duration(t, "time_per_item", path, p.time_per_item);
      r.duration(t, "init_time", path, p.init_time);
      j.prediction = p;
    }
    auto allocs = r.tables(t, "allocations", path);
    for (size_t k = 0; k < allocs.size(); ++k) {
      const auto& a = *allocs[k];
      std::string apath = path + "." + Reader::item("allocations", k);
      r.keys(a, apath, {"index", "node", "start", "interruptible", "initialized"});
      AllocationInfo info;
      int64_t index = static_cast<int64_t>(k);
      r.integer(a, "index", apath, index, 0, UINT32_MAX);
      info.index = static_cast<core::TaskIndex>(index);
      int64_t node = 0;
      r.integer(a, "node", apath, node, 0, UINT32_MAX, true);
      info.node = core::NodeId{static_cast<uint32_t>(node)};
      r.duration(a, "start", apath, info.start, true);
      r.boolean(a, "interruptible", apath, info.interruptible);
      r.boolean(a, "initialized", apath, info.initialized);
      j.allocations.push_back(info);
    }
    snap.jobs.push_back(std::move(j));
  }
}

void read_state(Reader& r, const toml::table& t, PolicyState& st) {
  r.keys(t, "state", {"jobs", "pools", "nodes"});
  auto jobs = r.tables(t, "jobs", "state");
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::string path = "state." + Reader::item("jobs", i);
    r.keys(*jobs[i], path, {"id", "below_fair_share_since"});
    int64_t id = 0;
    Duration since{};
    r.integer(*jobs[i], "id", path, id, 0, INT64_MAX, true);
    r.duration(*jobs[i], "below_fair_share_since", path, since, true);
    st.job_below_fair_share_since.emplace_back(core::JobId{static_cast<uint64_t>(id)}, since);
  }
  auto pools = r.tables(t, "pools", "state");
  for (size_t i = 0; i < pools.size(); ++i) {
    std::string path = "state." + Reader::item("pools", i);
    r.keys(*pools[i], path, {"name", "below_fair_share_since"});
    std::string name;
    Duration since{};
    r.string(*pools[i], "name", path, name, true);
    r.duration(*pools[i], "below_fair_share_since", path, since, true);
    st.pool_below_fair_share_since.emplace_back(name, since);
  }
  auto nodes = r.tables(t, "nodes", "state");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string path = "state." + Reader::item("nodes", i);
    r.keys(*nodes[i], path, {"id", "last_preemptive_scheduling"});
    int64_t id = 0;
    Duration at{};
    r.integer(*nodes[i], "id", path, id, 0, UINT32_MAX, true);
    r.duration(*nodes[i], "last_preemptive_scheduling", path, at, true);
    st.node_last_preemptive_scheduling.emplace_back(core::NodeId{static_cast<uint32_t>(id)}, at);
  }
  std::sort(st.job_below_fair_share_since.begin(), st.job_below_fair_share_since.end());
  std::sort(st.pool_below_fair_share_since.begin(), st.pool_below_fair_share_since.end());
  std::sort(st.node_last_preemptive_scheduling.begin(), st.node_last_preemptive_scheduling.end());
}

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
  auto root = policy_toml::parse(text, r);
  if (!root) return r.first_error();
  Snapshot snap;
  r.keys(*root, "", {"now", "settings", "preemption", "pools", "classes", "users", "nodes", "jobs", "state"});
  r.duration(*root, "now", "", snap.now);
  if (const toml::table* settings = r.table(*root, "settings", ""))
    policy_toml::read_settings(r, *settings, snap.settings);
  if (const toml::table* preemption = r.table(*root, "preemption", ""))
    policy_toml::read_preemption(r, *preemption, snap.settings.preemption);
  policy_toml::read_pools(r, *root, snap.pools);
  policy_toml::read_classes(r, *root, snap.classes);
  policy_toml::read_users(r, *root, snap.users);
  read_nodes(r, *root, snap);
  read_jobs(r, *root, snap);
  if (const toml::table* st = r.table(*root, "state", ""); st && state) read_state(r, *st, *state);
  if (!r.ok()) return r.first_error();
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
    auto result = evaluate(current, state);
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
