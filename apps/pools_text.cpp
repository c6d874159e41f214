#include "apps/pools_text.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/client_text.hpp"

namespace claimsched::apps {

namespace pools_text_detail {

using nlohmann::json;

std::string share(const json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
  return buf;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>().empty() ? "-" : it->get<std::string>();
  return it->dump();
}

/// An ISO 8601 time from the server as a local time, "-" if none.
std::string since(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "-";
  auto t = parse_iso_utc(it->get<std::string>());
  return t ? local_time(*t) : it->get<std::string>();
}

}  // namespace pools_text_detail

namespace {

using nlohmann::json;
using namespace pools_text_detail;

using Rows = std::vector<std::vector<std::string>>;

void pool_rows(const json& pool, int depth, Rows& pools, Rows& classes, Rows& users, Rows& jobs) {
  std::string name = std::string(static_cast<size_t>(2 * depth), ' ') + str(pool, "name");
  pools.push_back({name, str(pool, "nodes"), str(pool, "capacity"), share(pool["demand_share"]),
                   share(pool["fair_share_share"]), share(pool["usage_share"]), str(pool, "status"),
                   str(pool, "starvation"), since(pool, "below_fair_share_since")});
  for (const auto& c : pool["classes"]) {
    classes.push_back({str(c, "name"), str(pool, "name"), str(c, "priority"), str(c, "weight"), str(c, "policy"),
                       share(c["demand_share"]), share(c["fair_share_share"]), share(c["usage_share"]),
                       str(c, "status")});
    for (const auto& u : c["users"]) {
      users.push_back({str(c, "name"), str(u, "name"), share(u["demand_share"]), share(u["fair_share_share"]),
                       share(u["usage_share"]), str(u, "status")});
      for (const auto& j : u["jobs"]) {
        char fair[32];
        std::snprintf(fair, sizeof fair, "%.2f", j.value("fair_share_tasks", 0.0));
        jobs.push_back({str(j, "job"), str(j, "user"), str(j, "class"), str(j, "running"), str(j, "pending"), fair,
                        share(j["usage_share"]), str(j, "status"), str(j, "starvation"),
                        since(j, "below_fair_share_since")});
      }
    }
  }
  for (const auto& sub : pool["pools"]) pool_rows(sub, depth + 1, pools, classes, users, jobs);
}

void section(std::string& out, const char* title, const Rows& rows) {
  out += std::string(title) + "\n";
  if (rows.size() <= 1) {
    out += "  (none)\n\n";
    return;
  }
  std::string table = render_table(rows);
  size_t pos = 0;
  while (pos < table.size()) {
    size_t end = table.find('\n', pos);
    out += "  " + table.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  out += "\n";
}

}  // namespace

core::Expected<std::string> pools_text(const std::vector<std::string>& docs) {
  std::string out;
  for (const auto& d : docs) {
    auto p = json::parse(d, nullptr, false);
    if (p.is_discarded() || !p.is_object())
      return core::make_error(core::Errc::corrupt, "the server sent pools that are not JSON");
    if (docs.size() > 1) out += "PARTITION " + str(p, "partition") + "\n";
    if (!p.value("policy_enabled", false)) {
      out +=
          "the fair-share policy is off ([policy] enabled = false in the cluster's config): jobs run in class "
          "priority and submit order, nothing is preempted, so there are no shares to show\n";
      continue;
    }
    Rows pools{{"POOL", "NODES", "CAPACITY", "DEMAND", "FAIR", "USAGE", "STATUS", "STARVATION", "BELOW SINCE"}};
    Rows classes{{"CLASS", "POOL", "PRIORITY", "WEIGHT", "POLICY", "DEMAND", "FAIR", "USAGE", "STATUS"}};
    Rows users{{"CLASS", "USER", "DEMAND", "FAIR", "USAGE", "STATUS"}};
    Rows jobs{{"JOB", "USER", "CLASS", "RUN", "PEND", "FAIR TASKS", "USAGE", "STATUS", "STARVATION", "BELOW SINCE"}};
    for (const auto& pool : p["pools"]) pool_rows(pool, 0, pools, classes, users, jobs);
    out += "Shares are fractions of the pool subtree a job's class may use.\n\n";
    section(out, "POOLS", pools);
    section(out, "CLASSES", classes);
    section(out, "USERS", users);
    section(out, "JOBS", jobs);
  }
  return out;
}

}  // namespace claimsched::apps
