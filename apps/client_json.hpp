#pragma once

// The JSON the client prints with --json: stable keys, documented in
// deploy/CLI.md. Times are ISO 8601 UTC strings (null when not yet), ids are
// numbers, node names beside node ids. The server's HTTP API (http_api.hpp)
// answers with these same functions, so a script may use either.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/campaign/report.hpp"
#include "core/error.hpp"
#include "core/status.hpp"

namespace claimsched::apps {

/// A job (with its tasks if the view has them).
nlohmann::json job_json(const core::JobView& v);
/// The same job as JSON text, appended to `out`: job_json(v).dump() byte for
/// byte, written directly (a list of 10,000 jobs is 5 MB of it).
void append_job_json(std::string& out, const core::JobView& v);
nlohmann::json task_json(const core::TaskView& t);
nlohmann::json end_json(const core::TaskEnd& end);
nlohmann::json node_json(const core::NodeStatus& n);

/// `jobs --json`, `queue --json`: an array, in the order given (newest first), as text.
std::string jobs_json(const std::vector<core::JobView>& jobs);
/// `nodes --json`: an array sorted by name (then id), as the table is.
nlohmann::json nodes_json(std::vector<core::NodeStatus> nodes);
/// `pools --json`: {"partitions": [each partition's document]}.
core::Expected<nlohmann::json> pools_json(const std::vector<std::string>& docs);
/// `explain --json`, `status --json` without a job: the server's document;
/// `what` names it in the error when it is not a JSON object.
core::Expected<nlohmann::json> document_json(const std::string& doc, std::string_view what);

/// How much of a campaign `campaign ... --json` prints: the summary (submit,
/// cancel, each of a list), status (plus ETA, pools, tests, failure) or
/// explain (plus the predictor's state per pool and the flood limits).
enum class CampaignDetail { summary, status, explain };
nlohmann::json campaign_report_json(const core::campaign::CampaignReport& c, CampaignDetail detail);
/// `campaign list --json`: {"campaigns": [each summary]}.
nlohmann::json campaign_list_json(const core::campaign::CampaignReply& reply);

/// What `queue` lists when no --state is given: the jobs that have not ended.
core::JobFilter queue_filter(core::JobFilter filter);

}  // namespace claimsched::apps
