#pragma once

// What the server answers `claimsched explain` and `claimsched pools` with:
// JSON documents with stable keys (deploy/CLI.md documents every one). The
// client prints them as they are (--json) or renders them as text. Times leave
// here as wall-clock ISO 8601 timestamps: the scheduler passes `to_wall`, the
// offset from its clock to the wall clock.

#include <set>
#include <string>

#include "core/explain.hpp"
#include "core/policy/result.hpp"
#include "core/status.hpp"

namespace claimsched::messages {

/// Wall-clock time (ns since the Unix epoch) as "2025-01-02T03:04:05.123Z";
/// empty for kNever and 0.
std::string iso_time(core::TimePoint wall);

/// `explain JOB`: the job, the placement verdict with its counts, and what
/// the fair-share policy says about it (null without a policy).
std::string explain_json(const core::Explanation& explanation, const core::JobView& job,
                         const core::policy::CycleResult* cycle, core::Duration to_wall);

/// `pools` for one partition: its pool tree with classes, users and jobs,
/// each with demand, fair share, usage and status (no policy: an empty tree).
/// Pools in `removed` (claimsched pool remove) are left out.
std::string pools_json(core::PartitionId partition, const core::policy::CycleResult* cycle,
                       core::Duration to_wall, const std::set<std::string, std::less<>>& removed = {});

}  // namespace claimsched::messages
