#pragma once

// A log line for each job that reached a final state, naming its partition,
// the job, its user, pool and class and, for a failure, the first task that
// did not succeed and its node: what an operator searches the log for.

#include <string_view>
#include <vector>

#include "core/pipeline/scheduler.hpp"

namespace claimsched::actors {

/// Succeeded jobs at debug level, failed and cancelled ones at info. Costs
/// nothing when the level is off (the hot path of `sim`).
void log_jobs_ended(std::string_view log_name, const core::Scheduler& scheduler, const std::vector<core::JobId>& ended);

}  // namespace claimsched::actors
