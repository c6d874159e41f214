#include "apps/client_campaign.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/campaign_file.hpp"
#include "apps/client.hpp"
#include "apps/client_commands.hpp"
#include "apps/client_json.hpp"
#include "apps/client_session.hpp"
#include "apps/client_text.hpp"
#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using nlohmann::json;

/// The campaign a file describes, with its parameters read and its user
/// filled in; exit 2 on a bad file (the error names the field). Pools are
/// checked by the server, which knows them.
ClientResult<core::campaign::CampaignSpec> campaign_request(const CampaignOptions& o, const std::string& user) {
  std::ifstream in(o.target);
  if (!in) return ClientError{kExitUsage, "cannot read campaign file " + o.target};
  std::stringstream text;
  text << in.rdbuf();
  auto draft = parse_campaign_file(text.str(), o.target);
  if (!draft) return ClientError{kExitUsage, draft.error().message};
  if (auto st = read_parameter_file(*draft, std::filesystem::path(o.target).parent_path()); !st)
    return ClientError{kExitUsage, st.error().message};
  auto& spec = draft->spec;
  if (spec.user.empty()) spec.user = user.empty() ? account_name() : user;
  if (o.test_first) spec.test_first = true;
  if (auto st = core::campaign::check_template(spec.command); !st) return ClientError{kExitUsage, st.error().message};
  return std::move(spec);
}

std::string eta_words(const json& c) {
  if (c.value("state", "") != "running") return "";
  if (!c.contains("eta") || !c["eta"].is_string()) return ", no ETA yet (nothing finished in the window)";
  auto eta = parse_iso_utc(c["eta"].get<std::string>());
  return eta ? ", ETA " + local_time(*eta) : "";
}

std::string summary_line(const json& c) {
  std::string name = c.value("name", "");
  char line[512];
  std::string named = name.empty() ? "" : " (" + name + ")";
  std::snprintf(line, sizeof line, "campaign %llu%s of %s (%s, %s): %s, %u/%u done, %u running, %u waiting, %u pending",
                static_cast<unsigned long long>(c.value("id", uint64_t{0})), named.c_str(),
                c.value("user", "").c_str(), c.value("type", "").c_str(), c.value("algorithm", "").c_str(),
                c.value("state", "").c_str(), c.value("done", 0u), c.value("tasks", 0u), c.value("running", 0u),
                c.value("waiting", 0u), c.value("pending", 0u));
  return line;
}

void print_pools(const json& c, bool predictor) {
  for (const auto& p : c.value("pools", json::array())) {
    std::string line = "  pool " + p.value("pool", "") + (p.value("affinity", false) ? "" : " (borrowed)") + ": " +
                       std::to_string(p.value("running", 0u)) + " running, " + std::to_string(p.value("waiting", 0u)) +
                       " waiting, " + std::to_string(p.value("succeeded", 0u)) + " succeeded";
    if (predictor) {
      if (p.contains("ratio") && !p["ratio"].is_null()) {
        char ratio[96];
        std::string move = p.value("last_move", "");
        std::snprintf(ratio, sizeof ratio, "; job ratio %.3g after %s %s, %u slots free last round",
                      p["ratio"].get<double>(), move == "increase" ? "an" : "a", move.c_str(),
                      p.value("last_free", 0u));
        line += ratio;
      } else {
        line += "; not offered yet (no free slot there in any round)";
      }
    }
    if (p.value("abandoned", false)) line += "\n    abandoned as a sink: " + p.value("sink_reason", "");
    std::printf("%s\n", line.c_str());
  }
}

int print_answer(const CampaignOptions& o, const core::campaign::CampaignReply& reply) {
  json c;
  if (o.action == "list") {
    c = campaign_list_json(reply);
  } else {
    if (reply.campaigns.size() != 1) return fail(kExitFailed, "the server's answer names no campaign");
    CampaignDetail detail = o.action == "explain"  ? CampaignDetail::explain
                            : o.action == "status" ? CampaignDetail::status
                                                   : CampaignDetail::summary;
    c = campaign_report_json(reply.campaigns.front(), detail);
  }
  if (o.json) {
    std::printf("%s\n", c.dump().c_str());
    return kExitOk;
  }
  if (o.action == "list") {
    const auto& all = c.value("campaigns", json::array());
    if (all.empty()) std::printf("no campaigns\n");
    for (const auto& one : all) std::printf("%s\n", summary_line(one).c_str());
    return kExitOk;
  }
  if (o.action == "submit") {
    std::printf("%llu\n", static_cast<unsigned long long>(c.value("id", uint64_t{0})));
    return kExitOk;
  }
  std::printf("%s%s\n", summary_line(c).c_str(), eta_words(c).c_str());
  if (c.contains("failure")) std::printf("  failed: %s\n", c["failure"].get<std::string>().c_str());
  for (const auto& t : c.value("test", json::array())) {
    if (!t.value("reported", false)) {
      std::printf("  test on pool %s: not reported yet\n", t.value("pool", "").c_str());
      continue;
    }
    std::printf("  test on pool %s: %s, exit code %d after %s\n", t.value("pool", "").c_str(),
                t.value("passed", false) ? "passed" : "failed", t.value("exit_code", 0),
                human_duration(std::chrono::duration_cast<core::Duration>(
                                   std::chrono::duration<double>(t.value("run_time_s", 0.0))))
                    .c_str());
  }
  if (o.action == "status" || o.action == "explain") print_pools(c, o.action == "explain");
  if (o.action == "explain") {
    std::printf("  flow control: at most %u waiting per pool; above %u waiting the ratio goes down and the excess "
                "is withdrawn\n",
                c.value("max_waiting", 0u), c.value("allowed_waiting", 0u));
    if (c.value("finalizing", false))
      std::printf("  finalizing: nothing left to dispatch; running tasks are copied onto free slots (%u each)\n",
                  c.value("finalize_replicas", 0u));
  }
  return kExitOk;
}

}  // namespace

void add_campaign_commands(CLI::App& app, CampaignOptions& o) {
  auto* campaign = app.add_subcommand("campaign", "Campaigns: bags of many tasks over several pools");
  campaign->require_subcommand(1);
  auto common = [&](CLI::App* c) {
    c->add_option("--server", o.server, "HOST:PORT of the server (default: $CLAIMSCHED_SERVER or 127.0.0.1:7070)");
    c->add_flag("--json", o.json, "Print the server's JSON");
    add_timeout_option(c, o.timeout, "Give up after this long (default 10s)");
    add_token_option(c, o.token_file);
    c->final_callback([&o, c] { o.action = c->get_name(); });
  };
  auto* submit = campaign->add_subcommand("submit", "Submit a campaign file (TOML or JSON); prints its id");
  submit->add_option("file", o.target, "The campaign file")->required();
  submit->add_flag("--test-first", o.test_first, "Run one test task per pool first; bulk only where it succeeded");
  common(submit);
  for (auto [name, what] : {std::pair{"status", "A campaign's progress per pool and its ETA"},
                            std::pair{"cancel", "Cancel a campaign: what it dispatched is cancelled, nothing else"},
                            std::pair{"explain", "Why: job ratios, waiting per pool, abandoned sinks, ETA"}}) {
    auto* c = campaign->add_subcommand(name, what);
    c->add_option("id", o.target, "Campaign id")->required();
    common(c);
  }
  common(campaign->add_subcommand("list", "Every campaign, the oldest first"));
}

int run_campaign(const CampaignOptions& o) {
  core::campaign::CampaignRequest request;
  const std::map<std::string, core::campaign::CampaignVerb> verbs{{"submit", core::campaign::CampaignVerb::submit},
                                                                  {"status", core::campaign::CampaignVerb::status},
                                                                  {"list", core::campaign::CampaignVerb::list},
                                                                  {"cancel", core::campaign::CampaignVerb::cancel},
                                                                  {"explain", core::campaign::CampaignVerb::explain}};
  auto verb = verbs.find(o.action);
  if (verb == verbs.end()) return fail(kExitUsage, "unknown campaign command '" + o.action + "'");
  request.verb = verb->second;
  if (o.action == "submit") {
    auto spec = campaign_request(o, "");
    if (!spec) return fail(spec.error());
    request.spec = std::move(*spec);
  } else if (o.action != "list") {
    const std::string& id = o.target;
    if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos)
      return fail(kExitUsage, "'" + id + "' is not a campaign id (a positive number)");
    request.id = core::campaign::CampaignId{std::stoull(id)};
  }
  auto token = client_token(o.token_file);
  if (!token) return fail(kExitUsage, token.error().message);
  auto session = ClientSession::connect(server_address(o.server), o.timeout, *token);
  if (!session) return fail(session.error());
  if (o.action == "submit" && !(*session)->user().empty()) {
    // [auth]: a campaign that names no user is the token's user's.
    auto spec = campaign_request(o, (*session)->user());
    if (!spec) return fail(spec.error());
    request.spec = std::move(*spec);
  }
  auto answer = (*session)->campaign(request);
  if (!answer) return fail(answer.error());
  return print_answer(o, *answer);
}

}  // namespace claimsched::apps
