#include "messages/json_views.hpp"

#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

namespace claimsched::messages {

namespace {

using nlohmann::json;
using namespace core::policy;

json time_or_null(core::TimePoint t, core::Duration to_wall) {
  if (t == core::kNever) return nullptr;
  return iso_time(t + to_wall);
}

/// Demand, fair share and usage, as resources and as shares of the scope.
void shares(json& j, const ShareRow& r) {
  j["demand"] = r.demand.to_string();
  j["fair_share"] = r.fair_share.to_string();
  j["usage"] = r.usage.to_string();
  j["demand_share"] = share_to_double(r.demand_share);
  j["fair_share_share"] = share_to_double(r.fair_share_share);
  j["usage_share"] = share_to_double(r.usage_share);
  j["status"] = std::string(to_string(r.scheduling));
}

json job_row(const JobRow& r, core::TimePoint now, core::Duration to_wall) {
  json j{{"job", r.id.value},          {"name", r.name},         {"user", r.user},
         {"class", r.class_name},      {"pool", r.pool},         {"running", r.running},
         {"pending", r.pending},       {"fair_share_tasks", r.fair_tasks},
         {"starvation", std::string(to_string(r.starvation))},
         {"below_fair_share_since", time_or_null(r.below_since, to_wall)}};
  shares(j, r);
  j["below_fair_share_for_s"] =
      r.below_since == core::kNever ? json(nullptr)
                                    : json(std::chrono::duration<double>(now - r.below_since).count());
  j["cap"] = r.cap;
  j["cap_reason"] = std::string(to_string(r.cap_reason));
  j["pending_reason"] = r.pending_reason;
  return j;
}

json removal(const Removal& rm) {
  json j{{"job", rm.task.job.value},
         {"task", rm.task.index},
         {"node", rm.node.value},
         {"kind", std::string(to_string(rm.kind))},
         {"reason", std::string(to_string(rm.reason))},
         {"for_job", rm.preemptor ? json(rm.preemptor->value) : json(nullptr)},
         {"detail", rm.detail}};
  return j;
}

json counts(const core::PlacementCounts& c) {
  return {{"nodes", c.nodes},
          {"nodes_up", c.nodes_up},
          {"nodes_matching", c.nodes_matching},
          {"nodes_big_enough", c.nodes_big_enough},
          {"nodes_with_room", c.nodes_with_room},
          {"tasks_fitting_now", c.tasks_fitting_now},
          {"tasks_fitting_empty", c.tasks_fitting_empty},
          {"largest_node", c.largest.to_string()}};
}

}  // namespace

std::string iso_time(core::TimePoint wall) {
  if (wall == core::kNever || wall.count() <= 0) return "";
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(wall);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

/// Where a job stands in its class's lock queue: the seed's per-level
/// comparison (its lock, the worst running lock, the cell's value), its
/// value, age and weight; or the lock it waits for and who holds it.
json lock_queue_json(const core::LockExplanation& l) {
  json out{{"order", std::string(core::to_string(l.order))},
           {"declared", l.declared},
           {"running", l.running},
           {"running_limit", l.running_limit},
           {"started", l.started},
           {"held", l.held}};
  if (l.block)
    out["blocked_on"] = {{"level", l.block->level ? std::string(core::to_string(*l.block->level)) : "bgl"},
                         {"lock", l.block->lock},
                         {"job", l.block->holder.value},
                         {"job_waits_too", l.block->holder_waits},
                         {"summary", l.block->to_string()}};
  else
    out["blocked_on"] = nullptr;
  if (!l.value) {
    out["predictive"] = nullptr;
    return out;
  }
  json levels = json::array();
  for (core::LockLevel level : core::kAllLockLevels) {
    const core::LevelTerm& t = l.value->levels[static_cast<size_t>(level)];
    levels.push_back({{"level", std::string(core::to_string(level))},
                      {"lock", l.levels[static_cast<size_t>(level)]},
                      {"worst_held", t.held},
                      {"held_by", t.against ? json(t.against->value) : json(nullptr)},
                      {"value", t.weight / 10.0}});
  }
  out["predictive"] = {{"levels", std::move(levels)},
                       {"bgl", l.value->bgl},
                       {"base_value", l.value->base_value / 10.0},
                       {"value", l.value->value / 10.0},
                       {"age_ticks", l.age_ticks},
                       {"weight", l.weight}};
  return out;
}

std::string explain_json(const core::Explanation& e, const core::JobView& v, const CycleResult* cycle,
                         core::Duration to_wall) {
  json out{{"job", v.spec.id.value},
           {"name", v.spec.name},
           {"user", v.spec.user},
           {"class", v.spec.job_class},
           {"pool", v.spec.pool},
           {"state", std::string(core::to_string(v.state))},
           {"last_removal", v.last_removal},
           {"preemptions", v.preemptions},
           {"evictions", v.evictions}};
  json placement{{"verdict", std::string(core::to_string(e.verdict))},
                 {"summary", e.summary},
                 {"pending", e.pending},
                 {"gang", e.gang}};
  placement["counts"] = e.counted ? counts(e.counts) : json(nullptr);
  // Backfilling: the start it holds (the words are in summary too).
  json reserved_nodes = json::array();
  for (core::NodeId n : e.reserved_nodes) reserved_nodes.push_back(n.value);
  placement["reserved_start"] = e.reserved_start ? time_or_null(*e.reserved_start, to_wall) : json(nullptr);
  placement["reserved_nodes"] = std::move(reserved_nodes);
  out["placement"] = std::move(placement);
  out["locks"] = e.locks ? lock_queue_json(*e.locks) : json(nullptr);
  const JobRow* row = cycle ? cycle->job(v.spec.id) : nullptr;
  if (!row) {
    out["policy"] = nullptr;
    return out.dump();
  }
  json policy = job_row(*row, cycle->now, to_wall);
  policy["own_starvation"] = std::string(to_string(row->own_starvation));
  json removals = json::array(), for_it = json::array(), placements = json::array();
  for (const auto& rm : cycle->plan.removals) {
    if (rm.task.job == v.spec.id) removals.push_back(removal(rm));
    if (rm.preemptor == v.spec.id && rm.task.job != v.spec.id) for_it.push_back(removal(rm));
  }
  for (const auto& p : cycle->plan.placements)
    if (p.job == v.spec.id)
      placements.push_back({{"node", p.node.value}, {"count", p.count}, {"stage", std::string(to_string(p.stage))}});
  policy["next_cycle"] = {{"placements", std::move(placements)},
                          {"removals", std::move(removals)},
                          {"preemptions_for_it", std::move(for_it)}};
  out["policy"] = std::move(policy);
  return out.dump();
}

std::string pools_json(core::PartitionId partition, const CycleResult* cycle, core::Duration to_wall,
                       const std::set<std::string, std::less<>>& removed) {
  json out{{"partition", partition.value}, {"policy_enabled", cycle != nullptr}};
  json roots = json::array();
  if (!cycle) {
    out["pools"] = std::move(roots);
    return out.dump();
  }
  // Rows in the tree's pre-order: a pool's classes, each class's users, each
  // user's jobs nest below it; subpools nest in "pools".
  std::map<std::string, json> pools;
  for (const auto& p : cycle->pools) {
    if (removed.contains(p.name)) continue;
    json j{{"name", p.name},         {"parent", p.parent.empty() ? json(nullptr) : json(p.parent)},
           {"nodes", p.nodes},       {"jobs", p.jobs},
           {"capacity", p.scope.to_string()},
           {"starvation", std::string(to_string(p.starvation))},
           {"below_fair_share_since", time_or_null(p.below_since, to_wall)}};
    shares(j, p);
    j["classes"] = json::array();
    j["pools"] = json::array();
    pools.emplace(p.name, std::move(j));
  }
  for (const auto& c : cycle->classes) {
    json j{{"name", c.name},
           {"priority", c.priority},
           {"weight", c.weight},
           {"policy", std::string(to_string(c.policy))},
           {"users", json::array()}};
    shares(j, c);
    for (const auto& u : cycle->users) {
      if (u.class_name != c.name) continue;
      json uj{{"name", u.user}, {"jobs", json::array()}};
      shares(uj, u);
      for (const auto& r : cycle->jobs)
        if (r.class_name == c.name && r.user == u.user) uj["jobs"].push_back(job_row(r, cycle->now, to_wall));
      j["users"].push_back(std::move(uj));
    }
    if (auto it = pools.find(c.pool); it != pools.end()) it->second["classes"].push_back(std::move(j));
  }
  // Children into parents, deepest first (pre-order reversed).
  for (auto it = cycle->pools.rbegin(); it != cycle->pools.rend(); ++it) {
    if (!pools.contains(it->name) || it->parent.empty() || !pools.contains(it->parent)) continue;
    auto& parent = pools.at(it->parent)["pools"];
    parent.insert(parent.begin(), std::move(pools.at(it->name)));
  }
  for (const auto& p : cycle->pools)
    if (pools.contains(p.name) && (p.parent.empty() || !pools.contains(p.parent)))
      roots.push_back(std::move(pools.at(p.name)));
  out["pools"] = std::move(roots);
  return out.dump();
}

}  // namespace claimsched::messages
