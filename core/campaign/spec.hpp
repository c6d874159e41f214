#pragma once

// A campaign (CiGri's design, issue 16): one command template run once per
// parameter, over several pools, under a flow control that keeps every pool
// busy without flooding its queue. This is the campaign as the core sees it;
// apps/campaign_file.* reads it from TOML or JSON.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/resources.hpp"

namespace claimsched::core::campaign {

using CampaignId = StrongId<struct CampaignIdTag, uint64_t>;

/// The seed's campaign types: `test` runs one task in each of its pools,
/// ahead of every `bulk` (CiGri's "default") campaign.
enum class CampaignType : uint8_t { bulk, test };

/// The seed's three ways of moving the job ratio (predictor.hpp).
enum class RatioAlgorithm : uint8_t { slow_start, two_way_adaptive, adaptive_down_exp_up };

std::string_view to_string(CampaignType type);
std::string_view to_string(RatioAlgorithm algorithm);
/// "default" and "test", as users write them (gridsub -t).
Expected<CampaignType> parse_campaign_type(std::string_view text);
Expected<RatioAlgorithm> parse_ratio_algorithm(std::string_view text);

/// Defaults, in one place.
inline constexpr uint32_t kDefaultMaxWaiting = 100;
inline constexpr uint32_t kDefaultFinalizeReplicas = 1;
inline constexpr Duration kDefaultSinkRuntime = std::chrono::seconds(1);

struct CampaignSpec {
  std::string name;
  std::string user;
  /// argv of every task; each argument may hold `{param}`, `{index}` and
  /// `{campaign}` (`{{` and `}}` for literal braces). The task also finds
  /// them as CLAIMSCHED_PARAM, CLAIMSCHED_TASK_INDEX, CLAIMSCHED_CAMPAIGN_ID.
  std::vector<std::string> command;
  /// One task per parameter; the task's index is its position here.
  std::vector<std::string> parameters;
  Resources per_task;
  /// The user's own pools, in affinity order: served first.
  std::vector<std::string> pools;
  /// Pools used only when the affinity pools' owners leave them free (the
  /// seed's Grenoble jobs on Lyon clusters).
  std::vector<std::string> other_pools;
  CampaignType type = CampaignType::bulk;
  /// Higher first among bulk campaigns; FIFO within a priority.
  int32_t priority = 0;
  /// Tasks are preemptible and resubmitted when preempted (CiGri grid jobs).
  bool best_effort = false;
  /// Run the test wave first; bulk only on the pools where it succeeded.
  bool test_first = false;
  RatioAlgorithm algorithm = RatioAlgorithm::slow_start;
  /// Flood control: never more of this campaign's tasks waiting in a pool.
  uint32_t max_waiting = kDefaultMaxWaiting;
  /// The seed's "allowed": more waiting than this lowers the ratio and the
  /// excess is withdrawn. At most max_waiting; 0 means max_waiting / 4.
  uint32_t allowed_waiting = 0;
  /// Finalize: copies of each still-running task at the end (0: no finalize).
  uint32_t finalize_replicas = kDefaultFinalizeReplicas;
  /// Success faster than this, while tasks elsewhere run much longer, is
  /// suspect (the sink effect).
  Duration sink_runtime = kDefaultSinkRuntime;
  /// A file every successful task must leave (after rendering); empty: none
  /// declared. Success without it is suspect.
  std::string declared_output;

  friend bool operator==(const CampaignSpec&, const CampaignSpec&) = default;

  /// Every pool, affinity pools first.
  std::vector<std::string> all_pools() const;
  uint32_t effective_allowed_waiting() const;
};

/// Checks a spec against the pools the cluster knows; the error names the
/// field ("parameters", "pools", "command", ...).
Status validate(const CampaignSpec& spec, const std::set<std::string>& known_pools);

/// Checks a command template: balanced braces, known placeholders.
Status check_template(const std::vector<std::string>& command);

/// The argv of task `index` (its parameter `param`); the template must have
/// passed check_template.
std::vector<std::string> render_command(const std::vector<std::string>& command, CampaignId campaign,
                                        TaskIndex index, std::string_view param);

/// Parameters `first`..`last` inclusive, by `step` (a range in a campaign
/// file); an empty range or a zero step is an error naming "range".
Expected<std::vector<std::string>> range_parameters(int64_t first, int64_t last, int64_t step);

/// One parameter per non-blank line of `text` (a parameter file), trimmed;
/// lines starting with '#' are comments.
std::vector<std::string> parameter_lines(std::string_view text);

}  // namespace claimsched::core::campaign
