#pragma once

// `claimsched sim --policy`: the same synthetic load with the policy on, so
// its cost is measured against the same run without it. Every partition gets
// four classes — two fair_share classes of one priority with weights 3 and 1
// (batch, science), a fixed_share class (service) and a reserve class
// (whole) — users with allotments, one of which binds, and the fair-share
// policy cycle; the load's jobs name those classes by share.

#include <string>
#include <vector>

#include "apps/sim_report.hpp"
#include "core/pipeline/scheduler.hpp"
#include "core/policy/stage.hpp"
#include "core/synthetic.hpp"

namespace claimsched::apps {

struct SimPolicy {
  /// What every partition's scheduler is given (classes, allotments, quantum).
  std::vector<core::ClassConfig> classes;
  std::string default_class;
  int64_t quantum = 0;
  core::Limits global_allotment;
  std::vector<std::pair<std::string, core::Limits>> user_allotments;
  /// The policy cycle every interval, for every partition.
  core::Duration interval{0};
  /// The load's mix of those classes.
  std::vector<core::SyntheticClass> load_classes;

  /// Gives a partition's scheduler these classes and allotments.
  void apply(core::SchedulerConfig& scheduler) const;
  /// The policy of the partition that owns `pool`: the classes bound to it.
  core::policy::PolicyConfig policy_for(const std::string& pool) const;
};

/// The policy-on setup for pools the smallest of which has `pool_capacity`
/// (allotments are shares of it) and a policy cycle every `interval`.
SimPolicy make_sim_policy(const core::Resources& pool_capacity, core::Duration interval);

/// The policy's invariants over what the nodes hold at rest, for each
/// partition k (pool `pools[k]`, queue `queued[k]`): core::check_policy_invariants.
/// Jobs the allotments rightly refuse are taken out of `queued` (they are not
/// stranded); the figures and any violation go to `report`.
void check_policy(const std::vector<core::NodeReport>& nodes, const std::vector<std::string>& pools,
                  const SimPolicy& policy, const core::SyntheticLoad& load,
                  std::vector<std::vector<core::JobView>>& queued, SimReport& report);

}  // namespace claimsched::apps
