#include "core/campaign/spec.hpp"

#include <algorithm>
#include <limits>

#include "core/job.hpp"
#include "core/text.hpp"

namespace claimsched::core::campaign {

namespace {

Error field_error(std::string_view field, std::string message) {
  return make_error(Errc::invalid_argument, "campaign field '" + std::string(field) + "': " + message);
}

constexpr std::string_view kPlaceholders[] = {"param", "index", "campaign"};

/// Walks a template argument: calls `literal` for plain text and
/// `placeholder` for each `{name}`; returns the first malformation.
template <class Literal, class Placeholder>
std::optional<std::string> walk_template(std::string_view arg, Literal literal, Placeholder placeholder) {
  for (size_t i = 0; i < arg.size();) {
    char c = arg[i];
    if (c == '{' && i + 1 < arg.size() && arg[i + 1] == '{') {
      literal("{");
      i += 2;
    } else if (c == '}' && i + 1 < arg.size() && arg[i + 1] == '}') {
      literal("}");
      i += 2;
    } else if (c == '{') {
      size_t close = arg.find('}', i);
      if (close == std::string_view::npos) return "unclosed '{' in \"" + std::string(arg) + "\"";
      std::string_view name = arg.substr(i + 1, close - i - 1);
      if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) == std::end(kPlaceholders)) {
        return "unknown placeholder {" + std::string(name) + "} (known: {param}, {index}, {campaign})";
      }
      placeholder(name);
      i = close + 1;
    } else if (c == '}') {
      return "unmatched '}' in \"" + std::string(arg) + "\" (write }} for a literal brace)";
    } else {
      literal(arg.substr(i, 1));
      ++i;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(CampaignType type) {
  return type == CampaignType::test ? "test" : "default";
}

std::string_view to_string(RatioAlgorithm algorithm) {
  switch (algorithm) {
    case RatioAlgorithm::slow_start: return "slow_start";
    case RatioAlgorithm::two_way_adaptive: return "two_way_adaptive";
    case RatioAlgorithm::adaptive_down_exp_up: return "adaptive_down_exp_up";
  }
  return "slow_start";
}

Expected<CampaignType> parse_campaign_type(std::string_view text) {
  if (text == "default") return CampaignType::bulk;
  if (text == "test") return CampaignType::test;
  return field_error("type", "'" + std::string(text) + "' is not a campaign type (default, test)");
}

Expected<RatioAlgorithm> parse_ratio_algorithm(std::string_view text) {
  for (auto a : {RatioAlgorithm::slow_start, RatioAlgorithm::two_way_adaptive, RatioAlgorithm::adaptive_down_exp_up}) {
    if (text == to_string(a)) return a;
  }
  return field_error("algorithm", "'" + std::string(text) +
                                      "' is not a predictor (slow_start, two_way_adaptive, adaptive_down_exp_up)");
}

std::vector<std::string> CampaignSpec::all_pools() const {
  std::vector<std::string> out = pools;
  out.insert(out.end(), other_pools.begin(), other_pools.end());
  return out;
}

uint32_t CampaignSpec::effective_allowed_waiting() const {
  return allowed_waiting == 0 ? max_waiting / 4 : allowed_waiting;
}

Status check_template(const std::vector<std::string>& command) {
  if (command.empty()) return field_error("command", "is empty: a campaign needs a command template");
  for (const auto& arg : command) {
    if (auto bad = walk_template(arg, [](std::string_view) {}, [](std::string_view) {})) {
      return field_error("command", *bad);
    }
  }
  return Status::ok();
}

Status validate(const CampaignSpec& spec, const std::set<std::string>& known_pools) {
  if (spec.name.empty()) return field_error("name", "is empty");
  if (auto s = check_template(spec.command); !s) return s;
  if (spec.parameters.empty()) {
    return field_error("parameters", "no parameters: a campaign runs one task per parameter");
  }
  if (spec.parameters.size() > kMaxTasksPerJob) {
    return field_error("parameters", "more than " + std::to_string(kMaxTasksPerJob) + " tasks");
  }
  if (spec.pools.empty() && spec.other_pools.empty()) return field_error("pools", "names no pool");
  std::set<std::string> seen;
  for (const auto& [field, list] : {std::pair{"pools", &spec.pools}, std::pair{"other_pools", &spec.other_pools}}) {
    for (const auto& pool : *list) {
      if (!known_pools.contains(pool)) return field_error(field, "unknown pool '" + pool + "'");
      if (!seen.insert(pool).second) return field_error(field, "pool '" + pool + "' named twice");
    }
  }
  if (spec.max_waiting == 0) return field_error("max_waiting", "must be at least 1");
  if (spec.allowed_waiting > spec.max_waiting) {
    return field_error("allowed_waiting", "is above max_waiting (" + std::to_string(spec.max_waiting) + ")");
  }
  if (spec.sink_runtime < Duration::zero()) return field_error("sink_runtime", "is negative");
  if (!spec.declared_output.empty()) {
    if (auto s = check_template({spec.declared_output}); !s) return field_error("output", s.error().message);
  }
  return Status::ok();
}

std::vector<std::string> render_command(const std::vector<std::string>& command, CampaignId campaign,
                                        TaskIndex index, std::string_view param) {
  std::vector<std::string> out;
  out.reserve(command.size());
  for (const auto& arg : command) {
    std::string rendered;
    auto bad = walk_template(
        arg, [&](std::string_view text) { rendered += text; },
        [&](std::string_view name) {
          if (name == "param") rendered += param;
          if (name == "index") rendered += std::to_string(index);
          if (name == "campaign") rendered += std::to_string(campaign.value);
        });
    assert(!bad && "render_command: the template was not checked");
    (void)bad;
    out.push_back(std::move(rendered));
  }
  return out;
}

Expected<std::vector<std::string>> range_parameters(int64_t first, int64_t last, int64_t step) {
  if (step <= 0) return field_error("range", "step must be positive");
  if (last < first) {
    return field_error("range",
                       "is empty (last " + std::to_string(last) + " < first " + std::to_string(first) + ")");
  }
  // In unsigned arithmetic: last - first overflows int64 for a range across most of it.
  uint64_t span = static_cast<uint64_t>(last) - static_cast<uint64_t>(first);
  // The server expands a client's range too: a few bytes must not become
  // billions of parameters. (span / step + 1 itself overflows for the widest.)
  if (span / static_cast<uint64_t>(step) >= kMaxTasksPerJob) {
    return field_error("range", "has more than " + std::to_string(kMaxTasksPerJob) +
                                    " values, the most tasks a campaign has");
  }
  uint64_t count = span / static_cast<uint64_t>(step) + 1;
  std::vector<std::string> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(std::to_string(static_cast<int64_t>(static_cast<uint64_t>(first) + i * static_cast<uint64_t>(step))));
  }
  return out;
}

std::vector<std::string> parameter_lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = trim(text.substr(0, end), " \t\r");
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    out.emplace_back(line);
  }
  return out;
}

}  // namespace claimsched::core::campaign
