// Fuzz target `campaign_file`: campaign files for `claimsched campaign submit`,
// TOML or JSON (apps/campaign_file.hpp). The server reads them too: the
// client sends a finished campaign as a Protobuf CampaignSpec, and the server
// checks it through campaign_json and the same parser, so these bytes are
// attacker-controlled. Beyond "never a crash": errors name the file; what
// parses keeps the documented bounds (a range expands to at most
// kMaxTasksPerJob parameters); and a campaign that finishes (validates)
// crosses to the server unchanged: through the wire, then campaign_json.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "apps/campaign_file.hpp"
#include "core/job.hpp"
#include "core/limits.hpp"
#include "messages/codec.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace claimsched;
namespace cc = core::campaign;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  return 0;
}

namespace {

bool same(const cc::CampaignSpec& a, const cc::CampaignSpec& b) {
  return a.name == b.name && a.user == b.user && a.command == b.command && a.parameters == b.parameters &&
         a.per_task == b.per_task && a.pools == b.pools && a.other_pools == b.other_pools && a.type == b.type &&
         a.priority == b.priority && a.best_effort == b.best_effort && a.test_first == b.test_first &&
         a.algorithm == b.algorithm && a.max_waiting == b.max_waiting && a.allowed_waiting == b.allowed_waiting &&
         a.finalize_replicas == b.finalize_replicas && a.sink_runtime == b.sink_runtime &&
         a.declared_output == b.declared_output;
}

// Round trips of huge campaigns (a range of millions) take seconds each and
// check nothing a small one does not.
constexpr size_t kRoundTripParameters = 100'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto parsed = apps::parse_campaign_file(text, "campaign.toml");
  if (!parsed) {
    fuzz::require_message(parsed.error(), text);
    fuzz::require(parsed.error().message.starts_with("campaign.toml"), "error does not name the file",
                  parsed.error().message);
    return 0;
  }
  apps::CampaignDraft draft = std::move(*parsed);
  const cc::CampaignSpec& c = draft.spec;
  fuzz::require(c.parameters.size() <= core::kMaxTasksPerJob, "more parameters than kMaxTasksPerJob", text);
  fuzz::require(c.priority >= -1'000'000 && c.priority <= 1'000'000, "priority out of bounds", text);
  fuzz::require(c.max_waiting <= 1'000'000 && c.allowed_waiting <= 1'000'000 && c.finalize_replicas <= 1'000'000,
                "a count out of bounds", text);
  fuzz::require(c.sink_runtime >= core::Duration::zero() && c.sink_runtime <= core::kMaxDuration,
                "sink_runtime out of bounds", text);
  if (c.parameters.size() > kRoundTripParameters) return 0;
  // Never read the fuzzer's disk: a named parameter file stands for one parameter.
  if (!draft.parameter_file.empty()) {
    fuzz::require(draft.spec.parameters.empty(), "both a parameter file and parameters", text);
    draft.parameter_file.clear();
    draft.spec.parameters = {"1"};
  }
  std::set<std::string> pools(c.pools.begin(), c.pools.end());
  pools.insert(c.other_pools.begin(), c.other_pools.end());
  auto finished = apps::finish_campaign(draft, ".", pools, "fuzz");
  if (!finished) {
    fuzz::require_message(finished.error(), text);
    return 0;
  }
  // What the client sends: it decodes on the server as it was sent.
  cc::CampaignSpec sent;
  if (auto st = messages::decode(messages::encode(*finished), sent); !st)
    fuzz::fail("a finished campaign does not decode on the server", st.error().message);
  fuzz::require(same(sent, *finished), "a campaign changed on the wire", text);
  // The server checks it as a file, through the JSON its store keeps.
  std::string json = apps::campaign_json(sent);
  auto received = apps::parse_campaign_file(json, "request");
  if (!received) fuzz::fail("a finished campaign does not parse on the server", received.error().message + "\n" + json);
  auto again = apps::finish_campaign(std::move(*received), ".", pools, "someone else");
  if (!again) fuzz::fail("a finished campaign does not finish on the server", again.error().message + "\n" + json);
  fuzz::require(same(*again, *finished), "a campaign changed on its way to the server", json);
  return 0;
}
