#pragma once

// Campaign requests and what the server answers, as plain values: what
// travels between the client and the server (messages/claimsched.proto has
// their encoding). The client reads the campaign file into the request's
// spec and prints the answer as text or JSON; the server fills the answer
// from its campaigns (actors/campaign_views.*).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/campaign/predictor.hpp"
#include "core/campaign/spec.hpp"

namespace claimsched::core::campaign {

enum class CampaignVerb : uint8_t { submit, status, list, cancel, explain };

inline std::string_view to_string(CampaignVerb verb) {
  switch (verb) {
    case CampaignVerb::submit:
      return "submit";
    case CampaignVerb::status:
      return "status";
    case CampaignVerb::list:
      return "list";
    case CampaignVerb::cancel:
      return "cancel";
    case CampaignVerb::explain:
      return "explain";
  }
  return "?";
}

/// A client's campaign request: `spec` for submit, `id` for status, cancel
/// and explain; list needs neither.
struct CampaignRequest {
  CampaignVerb verb = CampaignVerb::status;
  CampaignId id;
  CampaignSpec spec;
  friend bool operator==(const CampaignRequest&, const CampaignRequest&) = default;
};

enum class CampaignState : uint8_t { testing, running, done, cancelled, failed };

inline std::string_view to_string(CampaignState state) {
  switch (state) {
    case CampaignState::testing:
      return "testing";
    case CampaignState::running:
      return "running";
    case CampaignState::done:
      return "done";
    case CampaignState::cancelled:
      return "cancelled";
    case CampaignState::failed:
      return "failed";
  }
  return "?";
}

/// One pool of a campaign (status, explain).
struct PoolReport {
  std::string pool;
  /// One of the user's own pools (not borrowed).
  bool affinity = false;
  uint32_t waiting = 0;
  uint32_t running = 0;
  uint32_t succeeded = 0;
  bool abandoned = false;
  std::string sink_reason;
  /// A round has offered it: the predictor's fields below mean something.
  bool offered = false;
  double throughput_per_s = 0;
  double ratio = 0;
  RatioMove last_move = RatioMove::increase;
  uint32_t last_free = 0;
  friend bool operator==(const PoolReport&, const PoolReport&) = default;
};

/// One pool's test task (a test campaign, or `test_first`).
struct TestReport {
  std::string pool;
  bool reported = false;
  int32_t exit_code = 0;
  Duration run_time{0};
  friend bool operator==(const TestReport&, const TestReport&) = default;
};

/// One campaign as the server sees it. Times are wall clock (since the Unix
/// epoch); a list carries the summary only (no pools, tests or ETA).
struct CampaignReport {
  CampaignId id;
  std::string name;
  std::string user;
  CampaignType type = CampaignType::bulk;
  RatioAlgorithm algorithm = RatioAlgorithm::slow_start;
  CampaignState state = CampaignState::running;
  uint32_t tasks = 0;
  uint32_t done = 0;
  uint32_t pending = 0;
  uint32_t waiting = 0;
  uint32_t running = 0;
  uint32_t copies = 0;
  TimePoint submitted_at{0};
  double throughput_per_s = 0;
  std::optional<TimePoint> eta;
  std::optional<Duration> mean_run_time;
  uint32_t max_waiting = 0;
  uint32_t allowed_waiting = 0;
  uint32_t finalize_replicas = 0;
  bool finalizing = false;
  std::vector<PoolReport> pools;
  std::vector<TestReport> test;
  /// Why it stopped by itself; empty if it did not.
  std::string failure;
  friend bool operator==(const CampaignReport&, const CampaignReport&) = default;
};

/// The answer to any campaign request: the campaign it is about (submit,
/// status, cancel, explain) or every campaign the asker may see (list).
struct CampaignReply {
  std::vector<CampaignReport> campaigns;
  friend bool operator==(const CampaignReply&, const CampaignReply&) = default;
};

}  // namespace claimsched::core::campaign
