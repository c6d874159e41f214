#include "apps/config_command.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using core::format_duration;
using nlohmann::json;

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

/// Breaks `text` into lines of at most `width` columns at spaces.
std::string wrap(const std::string& text, size_t width = 80) {
  std::string out;
  size_t column = 0;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += "\n";
      column = 0;
    } else if (column > 0) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out + "\n";
}

std::string scorer_of(const ClusterConfig& c, const std::string& cls) {
  for (const auto& [name, scorer] : c.class_scorers)
    if (name == cls) return scorer;
  return "fill_first";
}

}  // namespace

std::string summarize_cluster_config(const ClusterConfig& c, std::string_view source) {
  const auto& policy = c.policy;
  std::string s = std::string(source) + " is valid. Cluster '" + c.cluster_id + "': the server listens on " +
                  c.listen.host + ":" + std::to_string(c.listen.port) + " and keeps its state under " +
                  c.storage.data_dir + " (sync " + c.storage.sync + ").";
  std::vector<std::string> parts;
  for (const auto& p : c.partitions)
    parts.push_back("partition " + std::to_string(p.id.value) + " owns " + join(p.pools) +
                    (p.cas == "strict" ? " (strict CAS)" : ""));
  s += " " + plural(c.partitions.size(), "partition", "partitions") + ": " + join(parts, "; ") + ".";
  s += " " + plural(policy.pools.size(), "pool", "pools") + " (" +
       plural(leaf_pools(policy).size(), "leaf", "leaves") + ") and " +
       plural(policy.classes.size(), "class", "classes") + ":";
  std::vector<std::string> classes;
  for (const auto& cls : policy.classes)
    classes.push_back(cls.name + " (priority " + std::to_string(cls.priority) + ", weight " +
                      std::to_string(cls.weight) + ", " + std::string(core::policy::to_string(cls.policy)) +
                      " in pool " + cls.pool + ", " + scorer_of(c, cls.name) +
                      (cls.backfill == core::BackfillMode::none
                           ? std::string()
                           : ", backfill " + std::string(core::to_string(cls.backfill))) +
                      ")");
  s += " " + join(classes, ", ") + ";";
  s += policy.settings.default_class.empty()
           ? " jobs must name their class."
           : " jobs that name no class go to " + policy.settings.default_class + ".";
  if (!policy.users.empty()) {
    std::vector<std::string> users;
    for (const auto& u : policy.users) users.push_back(u.name);
    s += " Users with entries of their own: " + join(users) + ".";
  }
  if (c.preemption)
    s += " Fair share and preemption run every " + format_duration(policy.interval) + " (starving after " +
         format_duration(policy.settings.preemption.fair_share_starvation_timeout) + " below fair share" +
         (policy.settings.preemption.enable_aggressive_starvation
              ? ", aggressively after " +
                    format_duration(policy.settings.preemption.fair_share_aggressive_starvation_timeout)
              : std::string()) +
         ").";
  else
    s += " Fair share and preemption are off: classes order the queue by priority, nothing is preempted.";
  s += " Up to " + std::to_string(c.max_claims_in_flight) +
       " claims in flight per partition; tasks on lost " + "nodes are retried " +
       plural(c.default_max_lost_retries, "time", "times") + ".";
  const auto& t = c.timeouts;
  s += " Timeouts: heartbeat every " + format_duration(t.heartbeat_interval) + ", node down after " +
       format_duration(t.node_grace) + ", claims expire after " + format_duration(t.claim_ttl) +
       ", replies " + format_duration(t.reply_timeout) + ", recovery grace " +
       format_duration(t.recovery_grace) + ", links " + format_duration(t.link_heartbeat) + "/" +
       format_duration(t.link_timeout) + ".";
  const auto& a = c.agent;
  s += " Agents: node " + (a.name.empty() ? std::string("<host name>") : a.name) + " joins pool " + a.pool +
       " with " + (a.resources.empty() ? std::string("the machine's resources") : a.resources) +
       (a.labels.empty() ? std::string() : " and labels " + join(a.labels)) + ", at most " +
       (a.max_starting == 0 ? std::string("unlimited") : std::to_string(a.max_starting)) +
       " tasks starting, state in " + a.state_dir + ", server " + a.server + ".";
  if (c.ha)
    s += " HA: this server is member " + (c.ha->name.empty() ? std::string("<host name>") : c.ha->name) +
         " of several; etcd at " + join(c.ha->etcd) + " elects each partition's owner (lease " +
         format_duration(c.ha->lease_ttl) + ", jobs acknowledged when durable on " +
         (c.ha->ack == "owner" ? std::string("the owner") : c.ha->ack == "one" ? "the owner and one standby"
                                                                                : "the owner and every standby") +
         ").";
  if (c.auth)
    s += " Auth: clients present a token from " + c.auth->tokens_file +
         " and may do what its roles allow; refusals and privileged actions go to " +
         (c.auth->audit_log.empty() ? c.storage.data_dir + "/audit.log" : c.auth->audit_log) + ".";
  return wrap(s);
}

std::string cluster_config_json(const ConfigReport& report, std::string_view source) {
  json out;
  out["file"] = std::string(source);
  out["valid"] = report.ok();
  out["problems"] = json::array();
  for (const auto& p : report.problems)
    out["problems"].push_back({{"line", p.line}, {"field", p.field}, {"message", p.message}});
  if (!report.ok()) return out.dump(2) + "\n";
  const ClusterConfig& c = report.config;
  json cfg;
  cfg["cluster_id"] = c.cluster_id;
  cfg["resources"] = c.resources;
  cfg["max_claims_in_flight"] = c.max_claims_in_flight;
  cfg["default_max_lost_retries"] = c.default_max_lost_retries;
  cfg["listen"] = {{"host", c.listen.host}, {"port", c.listen.port}};
  cfg["storage"] = {{"data_dir", c.storage.data_dir}, {"sync", c.storage.sync}};
  const auto& t = c.timeouts;
  cfg["timeouts"] = {{"heartbeat_interval", format_duration(t.heartbeat_interval)},
                     {"node_grace", format_duration(t.node_grace)},
                     {"claim_ttl", format_duration(t.claim_ttl)},
                     {"reply_timeout", format_duration(t.reply_timeout)},
                     {"recovery_grace", format_duration(t.recovery_grace)},
                     {"agent_restart_grace", format_duration(t.agent_restart_grace)},
                     {"link_heartbeat", format_duration(t.link_heartbeat)},
                     {"link_timeout", format_duration(t.link_timeout)}};
  cfg["partitions"] = json::array();
  for (const auto& p : c.partitions) cfg["partitions"].push_back({{"id", p.id.value}, {"pools", p.pools}, {"cas", p.cas}});
  cfg["pools"] = json::array();
  for (const auto& p : c.policy.pools) {
    json j{{"name", p.name}, {"parent", p.parent}};
    if (!p.resource_limits.empty()) j["resource_limits"] = p.resource_limits.to_string();
    cfg["pools"].push_back(std::move(j));
  }
  cfg["classes"] = json::array();
  for (const auto& cls : c.policy.classes)
    cfg["classes"].push_back({{"name", cls.name},
                              {"pool", cls.pool},
                              {"priority", cls.priority},
                              {"weight", cls.weight},
                              {"policy", std::string(core::policy::to_string(cls.policy))},
                              {"scorer", scorer_of(c, cls.name)},
                              {"backfill", std::string(core::to_string(cls.backfill))}});
  cfg["users"] = json::array();
  for (const auto& u : c.policy.users) {
    json j{{"name", u.name}};
    if (u.allotment) j["allotment"] = u.allotment->to_string();
    cfg["users"].push_back(std::move(j));
  }
  const auto& pre = c.policy.settings.preemption;
  cfg["settings"] = {{"default_class", c.policy.settings.default_class},
                     {"quantum", c.policy.settings.quantum},
                     {"defragmentation", c.policy.settings.defragmentation},
                     {"global_allotment", c.policy.settings.global_allotment.to_string()}};
  cfg["preemption"] = {
      {"fair_share_starvation_timeout", format_duration(pre.fair_share_starvation_timeout)},
      {"fair_share_aggressive_starvation_timeout",
       format_duration(pre.fair_share_aggressive_starvation_timeout)},
      {"fair_share_starvation_tolerance", pre.fair_share_starvation_tolerance},
      {"enable_aggressive_starvation", pre.enable_aggressive_starvation},
      {"enable_pool_starvation", pre.enable_pool_starvation},
      {"preemption_satisfaction_threshold", pre.preemption_satisfaction_threshold},
      {"aggressive_preemption_satisfaction_threshold", pre.aggressive_preemption_satisfaction_threshold},
      {"non_preemptible_resource_usage_threshold", pre.non_preemptible_resource_usage_threshold.to_string()},
      {"preemptive_scheduling_backoff", format_duration(pre.preemptive_scheduling_backoff)},
      {"allocation_preemption_timeout", format_duration(pre.allocation_preemption_timeout)}};
  cfg["policy"] = {{"enabled", c.preemption}, {"interval", format_duration(c.policy.interval)}};
  cfg["agent"] = {{"name", c.agent.name},           {"pool", c.agent.pool},
                  {"resources", c.agent.resources}, {"labels", c.agent.labels},
                  {"state_dir", c.agent.state_dir}, {"max_starting", c.agent.max_starting},
                  {"server", c.agent.server}};
  if (c.ha)
    cfg["ha"] = {{"etcd", c.ha->etcd},
                 {"name", c.ha->name},
                 {"lease_ttl", format_duration(c.ha->lease_ttl)},
                 {"ack", c.ha->ack},
                 {"advertise", c.ha->advertise},
                 {"prefix", c.ha->prefix},
                 {"poll_interval", format_duration(c.ha->poll_interval)},
                 {"etcd_timeout", format_duration(c.ha->etcd_timeout)}};
  if (c.auth) cfg["auth"] = {{"tokens_file", c.auth->tokens_file}, {"audit_log", c.auth->audit_log}};
  out["config"] = std::move(cfg);
  return out.dump(2) + "\n";
}

void add_config_commands(CLI::App& app, ConfigCheckOptions& o) {
  auto* config = app.add_subcommand("config", "Cluster configuration files (deploy/CONFIG.md)");
  config->require_subcommand(1);
  auto* check = config->add_subcommand(
      "check",
      "Validate a cluster configuration: every problem with its line, or a summary of what it configures");
  check->add_option("FILE", o.file, "The configuration (TOML)")->required();
  check->add_flag("--json", o.json, "Print the effective configuration (or the problems) as JSON");
}

int run_config_check(const ConfigCheckOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.file, ec)) {
    std::fprintf(stderr, "claimsched config check: '%s' is a directory\n", o.file.c_str());
    return 2;
  }
  std::ifstream in(o.file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    std::fprintf(stderr, "claimsched config check: cannot read '%s'\n", o.file.c_str());
    return 2;
  }
  ConfigReport report = analyze_cluster_config(text.str(), o.file);
  for (const auto& p : report.problems) std::fprintf(stderr, "%s\n", p.to_string(o.file).c_str());
  if (o.json)
    std::fputs(cluster_config_json(report, o.file).c_str(), stdout);
  else if (report.ok())
    std::fputs(summarize_cluster_config(report.config, o.file).c_str(), stdout);
  return report.ok() ? 0 : 1;
}

}  // namespace claimsched::apps
