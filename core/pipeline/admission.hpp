#pragma once

// Admission: the first stage. It checks a job against what can be checked
// without running it — the job's own fields (core::validate), its pool (one of
// this partition's), its class (defaulted, known) and what the class's policy
// allows (a reserve takes exactly one machine, matched by memory) — and
// resolves names to indices. What can never run is refused here, with the
// field named; what cannot run now is the queue's and the placement's to say.

#include "core/class_config.hpp"
#include "core/cluster_view.hpp"
#include "core/pipeline/task_table.hpp"

namespace claimsched::core {

struct SchedulerConfig;

/// The record of an admitted job, all tasks pending (not yet in the table).
Expected<JobRecord> admit(const SchedulerConfig& config, const ClusterView& view, JobSpec job);

}  // namespace claimsched::core
