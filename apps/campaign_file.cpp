#include "apps/campaign_file.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

#include "apps/file_fields.hpp"
#include "apps/job_file.hpp"
#include <nlohmann/json.hpp>

#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using core::Errc;
using core::make_error;
namespace cc = core::campaign;

std::optional<int64_t> to_integer(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

core::Expected<CampaignDraft> read_campaign(const Fields& f) {
  static const char* kKnown[] = {"name",         "user",           "command",     "parameters",  "range",
                                 "step",         "parameter_file", "resources",   "pools",       "other_pools",
                                 "type",         "priority",       "best_effort", "test_first",  "algorithm",
                                 "max_waiting",  "allowed_waiting", "finalize_replicas", "sink_runtime", "output"};
  for (const auto& k : f.keys())
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown))
      return make_error(Errc::invalid_argument, f.where(k) + ": unknown campaign field '" + k + "'");
  auto bad = [&](std::string_view key, std::string why) {
    return make_error(Errc::invalid_argument, f.where(key) + ": campaign field '" + std::string(key) + "': " + why);
  };
  CampaignDraft draft;
  cc::CampaignSpec& c = draft.spec;
  if (f.has("name")) CLAIMSCHED_FIELD(f.string("name"), c.name);
  if (f.has("user")) CLAIMSCHED_FIELD(f.string("user"), c.user);
  if (f.has("command")) CLAIMSCHED_FIELD(f.strings("command"), c.command);
  int sources = f.has("parameters") + f.has("range") + f.has("parameter_file");
  if (sources == 0) return bad("parameters", "no parameters (give parameters, range or parameter_file)");
  if (sources > 1) return bad("parameters", "give only one of parameters, range and parameter_file");
  if (f.has("parameters")) CLAIMSCHED_FIELD(f.strings("parameters"), c.parameters);
  if (f.has("parameter_file")) CLAIMSCHED_FIELD(f.string("parameter_file"), draft.parameter_file);
  if (f.has("step") && !f.has("range")) return bad("step", "needs a range");
  if (f.has("range")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("range"), text);
    size_t dots = text.find("..");
    auto first = dots == std::string::npos ? std::nullopt : to_integer(std::string_view(text).substr(0, dots));
    auto last = dots == std::string::npos ? std::nullopt : to_integer(std::string_view(text).substr(dots + 2));
    if (!first || !last) return bad("range", "'" + text + "' is not FIRST..LAST (\"1..1000\")");
    int64_t step = 1;
    if (f.has("step")) CLAIMSCHED_FIELD(f.integer("step"), step);
    auto values = cc::range_parameters(*first, *last, step);
    if (!values) return bad("range", values.error().message);
    c.parameters = std::move(*values);
  }
  if (f.has("resources")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("resources"), text);
    auto r = parse_job_resources(text);
    if (!r) return bad("resources", r.error().message);
    // As for a job (core::validate). And campaign_json leaves out resources
    // that are all zero, so the server would read the default instead.
    if (r->is_zero()) return bad("resources", "a task must request some resource");
    c.per_task = *r;
  } else {
    c.per_task = *core::Resources::parse(kDefaultResources);
  }
  if (f.has("pools")) CLAIMSCHED_FIELD(f.strings("pools"), c.pools);
  if (f.has("other_pools")) CLAIMSCHED_FIELD(f.strings("other_pools"), c.other_pools);
  if (f.has("type")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("type"), text);
    auto t = cc::parse_campaign_type(text);
    if (!t) return bad("type", t.error().message);
    c.type = *t;
  }
  if (f.has("algorithm")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("algorithm"), text);
    auto a = cc::parse_ratio_algorithm(text);
    if (!a) return bad("algorithm", a.error().message);
    c.algorithm = *a;
  }
  if (f.has("priority")) {
    int64_t p = 0;
    CLAIMSCHED_FIELD(f.integer("priority"), p);
    if (p < -1000000 || p > 1000000) return bad("priority", "must be in -1000000..1000000");
    c.priority = static_cast<int32_t>(p);
  }
  if (f.has("best_effort")) CLAIMSCHED_FIELD(f.boolean("best_effort"), c.best_effort);
  if (f.has("test_first")) CLAIMSCHED_FIELD(f.boolean("test_first"), c.test_first);
  for (auto [key, target] : {std::pair{"max_waiting", &c.max_waiting}, std::pair{"allowed_waiting", &c.allowed_waiting},
                             std::pair{"finalize_replicas", &c.finalize_replicas}}) {
    if (!f.has(key)) continue;
    int64_t n = 0;
    CLAIMSCHED_FIELD(f.integer(key), n);
    if (n < 0 || n > 1'000'000) return bad(key, "must be in 0..1000000");
    *target = static_cast<uint32_t>(n);
  }
  if (f.has("sink_runtime")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("sink_runtime"), text);
    auto d = core::parse_duration(text);
    if (!d) return bad("sink_runtime", d.error().message);
    c.sink_runtime = *d;
  }
  if (f.has("output")) CLAIMSCHED_FIELD(f.string("output"), c.declared_output);
  return draft;
}

}  // namespace

core::Expected<CampaignDraft> parse_campaign_file(std::string_view text, std::string_view source) {
  std::optional<CampaignDraft> draft;
  auto read = [&](const Fields& f) -> core::Status {
    auto d = read_campaign(f);
    if (!d) return d.error();
    draft = std::move(*d);
    return core::Status::ok();
  };
  if (auto st = read_fields(text, source, "campaign", read); !st) return st.error();
  return std::move(*draft);
}

core::Status read_parameter_file(CampaignDraft& draft, const std::filesystem::path& base_dir) {
  if (draft.parameter_file.empty()) return core::Status::ok();
  std::filesystem::path path = base_dir / draft.parameter_file;
  std::ifstream in(path);
  if (!in) return make_error(Errc::io_error, "campaign field 'parameter_file': cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  draft.spec.parameters = cc::parameter_lines(text.str());
  draft.parameter_file.clear();
  return core::Status::ok();
}

core::Expected<cc::CampaignSpec> finish_campaign(CampaignDraft draft, const std::filesystem::path& base_dir,
                                                 const std::set<std::string>& known_pools, const std::string& user) {
  cc::CampaignSpec& c = draft.spec;
  if (auto st = read_parameter_file(draft, base_dir); !st) return st.error();
  if (c.user.empty()) c.user = user;
  if (auto st = cc::validate(c, known_pools); !st) return st.error();
  return std::move(c);
}

std::string campaign_json(const cc::CampaignSpec& spec) {
  nlohmann::json out{{"name", spec.name},
                     {"user", spec.user},
                     {"command", spec.command},
                     {"parameters", spec.parameters},
                     {"pools", spec.pools},
                     {"other_pools", spec.other_pools},
                     {"type", std::string(cc::to_string(spec.type))},
                     {"priority", spec.priority},
                     {"best_effort", spec.best_effort},
                     {"test_first", spec.test_first},
                     {"algorithm", std::string(cc::to_string(spec.algorithm))},
                     {"max_waiting", spec.max_waiting},
                     {"allowed_waiting", spec.allowed_waiting},
                     {"finalize_replicas", spec.finalize_replicas},
                     {"sink_runtime", core::format_duration(spec.sink_runtime)}};
  if (std::string resources = spec.per_task.to_string(); !resources.empty()) out["resources"] = resources;
  if (!spec.declared_output.empty()) out["output"] = spec.declared_output;
  return out.dump();
}

}  // namespace claimsched::apps
