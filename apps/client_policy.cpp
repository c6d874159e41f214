// `pools` and `explain`: the server answers JSON documents (deploy/CLI.md);
// --json prints them, otherwise they are rendered here as tables and words.

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "apps/client_json.hpp"
#include "apps/client_text.hpp"
#include "apps/pools_text.hpp"

namespace claimsched::apps {

namespace {

using nlohmann::json;
using pools_text_detail::share;
using pools_text_detail::since;
using pools_text_detail::str;

/// Node id -> name, from the gateway (empty on error: ids are shown then).
std::map<uint64_t, std::string> node_names(ClientSession& s) {
  std::map<uint64_t, std::string> names;
  if (auto nodes = s.nodes())
    for (const auto& n : *nodes) names[n.spec.id.value] = n.spec.name;
  return names;
}

std::string node_name(const std::map<uint64_t, std::string>& names, const json& id) {
  if (!id.is_number()) return "-";
  auto it = names.find(id.get<uint64_t>());
  return it != names.end() && !it->second.empty() ? it->second : "node " + id.dump();
}

}  // namespace

int run_pools(ClientSession& s, const ClientOptions& o) {
  auto docs = s.pools();
  if (!docs) return fail(docs.error());
  if (o.json) {
    auto j = pools_json(*docs);
    if (!j) return fail(kExitFailed, j.error().message);
    std::printf("%s\n", j->dump().c_str());
    return kExitOk;
  }
  auto text = pools_text(*docs);
  if (!text) return fail(kExitFailed, text.error().message);
  std::fputs(text->c_str(), stdout);
  return kExitOk;
}

/// The lock queue's part of `explain`: the seed's per-level comparison.
static void print_lock_queue(const json& l) {
  std::string limit = l.value("running_limit", 0) ? str(l, "running_limit") : "unlimited";
  std::printf("  lock queue: %s order, %s of %s running or waiting; declares %s\n", str(l, "order").c_str(),
              str(l, "running").c_str(), limit.c_str(),
              l.value("declared", "").empty() ? "no locks" : str(l, "declared").c_str());
  if (const json& b = l["blocked_on"]; b.is_object())
    std::printf("  waits for %s; holds %s\n", str(b, "summary").c_str(),
                l.value("held", "").empty() ? "nothing yet" : str(l, "held").c_str());
  const json& p = l["predictive"];
  if (!p.is_object()) return;
  if (p.value("bgl", false)) {
    std::printf("  value: the big lock: base_value %g + 15 = %g\n", p.value("base_value", 0.0), p.value("value", 0.0));
  } else {
    std::vector<std::vector<std::string>> rows{{"    LEVEL", "ITS LOCK", "WORST HELD", "BY JOB", "VALUE"}};
    for (const auto& row : p["levels"]) {
      char value[16];
      std::snprintf(value, sizeof value, "%g", row.value("value", 0.0));
      rows.push_back({"    " + str(row, "level"), str(row, "lock"),
                      row.value("worst_held", "").empty() ? "-" : str(row, "worst_held"),
                      row["held_by"].is_number() ? row["held_by"].dump() : "-", value});
    }
    std::fputs(render_table(rows).c_str(), stdout);
    std::printf("  value: base_value %g + the levels' worst = %g\n", p.value("base_value", 0.0), p.value("value", 0.0));
  }
  std::printf("  weight: %g x (1 - age/K) at age %s ticks = %g\n", p.value("value", 0.0),
              str(p, "age_ticks").c_str(), p.value("weight", 0.0));
}

int run_explain(ClientSession& s, const ClientOptions& o) {
  auto doc = s.explain(*parse_job_id(o.job));
  if (!doc) return fail(doc.error());
  auto parsed = document_json(*doc, "an explanation");
  if (!parsed) return fail(kExitFailed, parsed.error().message);
  const json& j = *parsed;
  if (o.json) {
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  auto names = node_names(s);
  const json& placement = j["placement"];
  std::printf("job %s%s of %s, class %s, pool %s: %s\n", str(j, "job").c_str(),
              j.value("name", "").empty() ? "" : (" (" + j.value("name", "") + ")").c_str(), str(j, "user").c_str(),
              str(j, "class").c_str(), str(j, "pool").c_str(), str(j, "state").c_str());
  std::printf("  %s: %s\n", str(placement, "verdict").c_str(), str(placement, "summary").c_str());
  if (const json& c = placement["counts"]; c.is_object()) {
    std::printf("  nodes in the pool: %s (%s up): %s match its constraints, %s are big enough for a task, %s have "
                "room for one now\n",
                str(c, "nodes").c_str(), str(c, "nodes_up").c_str(), str(c, "nodes_matching").c_str(),
                str(c, "nodes_big_enough").c_str(), str(c, "nodes_with_room").c_str());
    std::printf("  pending tasks: %s; %s fit now%s\n", str(placement, "pending").c_str(),
                str(c, "tasks_fitting_now").c_str(),
                placement.value("gang", false)
                    ? (", " + str(c, "tasks_fitting_empty") + " would when the pool is empty").c_str()
                    : "");
  }
  if (placement["reserved_start"].is_string()) {
    std::string on;
    for (const auto& n : placement["reserved_nodes"]) {
      auto id = n.get<uint64_t>();
      auto named = names.find(id);
      on += (on.empty() ? "" : ", ") + (named != names.end() ? named->second : "node " + std::to_string(id));
    }
    std::printf("  reserved (backfilling): starts at %s on %s\n", str(placement, "reserved_start").c_str(),
                on.c_str());
  }
  if (const json& locks = j["locks"]; locks.is_object()) print_lock_queue(locks);
  if (!j.value("last_removal", "").empty()) std::printf("  last taken away: %s\n", str(j, "last_removal").c_str());
  const json& policy = j["policy"];
  if (!policy.is_object()) {
    std::printf("  fair share: not computed (the fair-share policy is off, or the job has ended)\n");
    return kExitOk;
  }
  std::string below = policy["below_fair_share_since"].is_string()
                          ? " since " + since(policy, "below_fair_share_since") + " (for " +
                                human_duration(std::chrono::duration_cast<core::Duration>(std::chrono::duration<double>(
                                    policy.value("below_fair_share_for_s", 0.0)))) +
                                ")"
                          : "";
  std::printf("  fair share: %.2f tasks (%s of its pool), usage %s: %s%s, %s\n",
              policy.value("fair_share_tasks", 0.0), share(policy["fair_share_share"]).c_str(),
              share(policy["usage_share"]).c_str(), str(policy, "status").c_str(), below.c_str(),
              str(policy, "starvation").c_str());
  if (!policy.value("pending_reason", "").empty())
    std::printf("  pending because: %s\n", str(policy, "pending_reason").c_str());
  const json& next = policy["next_cycle"];
  for (const auto& p : next["placements"])
    std::printf("  next cycle: places %s task(s) on %s (%s stage)\n", str(p, "count").c_str(),
                node_name(names, p["node"]).c_str(), str(p, "stage").c_str());
  for (const auto& r : next["removals"])
    std::printf("  next cycle: %s of its task %s on %s (%s)%s\n", str(r, "kind").c_str(), str(r, "task").c_str(),
                node_name(names, r["node"]).c_str(), str(r, "reason").c_str(),
                r["for_job"].is_number() ? (" for job " + r["for_job"].dump()).c_str() : "");
  for (const auto& r : next["preemptions_for_it"])
    std::printf("  for it, next cycle: %s of task %s.%s on %s (%s)\n", str(r, "kind").c_str(), str(r, "job").c_str(),
                str(r, "task").c_str(), node_name(names, r["node"]).c_str(), str(r, "reason").c_str());
  return kExitOk;
}

}  // namespace claimsched::apps
