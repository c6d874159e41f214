#pragma once

// Campaign files for `claimsched campaign submit FILE` (issue 16): TOML or
// JSON with the same keys.
//
//   name = "sweep"                 command = ["/bin/sim", "--seed={param}"]
//   parameters = ["1", "2"]        # or: range = "1..100000" (step = 10)
//                                  # or: parameter_file = "seeds.txt" (one per line)
//   resources = "cpu=1,memory=1Gi" pools = ["lyon"]   other_pools = ["grenoble"]
//   type = "default"               # or "test"          priority = 0
//   best_effort = false            test_first = false
//   algorithm = "slow_start"       # two_way_adaptive, adaptive_down_exp_up
//   max_waiting = 100              allowed_waiting = 25   finalize_replicas = 1
//   sink_runtime = "1s"            output = "/data/out-{index}.dat"
//
// Errors name the field (and, for TOML, the line). Whether the pools exist
// is checked by finish_campaign, against the cluster's pools.

#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "core/campaign/spec.hpp"
#include "core/error.hpp"

namespace claimsched::apps {

/// A campaign as written: the parameter file is named, not yet read.
struct CampaignDraft {
  core::campaign::CampaignSpec spec;
  std::string parameter_file;
};

/// Parses a campaign file; `source` names it in errors.
core::Expected<CampaignDraft> parse_campaign_file(std::string_view text, std::string_view source);

/// Reads the draft's parameter file, if it names one (relative to
/// `base_dir`), into its parameters; the error names the field.
core::Status read_parameter_file(CampaignDraft& draft, const std::filesystem::path& base_dir);

/// Reads the parameter file (relative to `base_dir`), fills the defaults
/// (resources, user) and validates the campaign against `known_pools`.
core::Expected<core::campaign::CampaignSpec> finish_campaign(CampaignDraft draft, const std::filesystem::path& base_dir,
                                                             const std::set<std::string>& known_pools,
                                                             const std::string& user);

/// A finished campaign as JSON with the file's own keys (parameters listed,
/// never a file name): what the client sends the server, which reads it
/// back with parse_campaign_file and finish_campaign.
std::string campaign_json(const core::campaign::CampaignSpec& spec);

}  // namespace claimsched::apps
