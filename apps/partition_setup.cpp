#include "apps/partition_setup.hpp"

#include <algorithm>

namespace claimsched::apps {

std::string partition_dir(const ClusterConfig& config, core::PartitionId id) {
  return config.storage.data_dir + "/partition-" + std::to_string(id.value);
}

actors::PartitionSetup partition_setup(const ClusterConfig& c, const PartitionConfig& p) {
  actors::PartitionSetup setup;
  core::SchedulerConfig& s = setup.actor.scheduler;
  s.partition = p.id;
  s.epoch = 1;
  s.pools = p.pools;
  for (const auto& pool : c.policy.pools) {
    if (!pool.parent.empty()) s.pool_parents.emplace_back(pool.name, pool.parent);
    if (!pool.resource_limits.empty()) s.pool_limits.emplace_back(pool.name, pool.resource_limits);
  }
  std::sort(s.pool_limits.begin(), s.pool_limits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The same classes, allotments, quantum and pool tree the policy reads.
  s.classes = c.policy.classes;
  for (auto& cls : s.classes)
    for (const auto& [name, scorer] : c.class_scorers)
      if (name == cls.name)
        if (auto k = core::parse_scorer(scorer)) cls.placement.scorers = {{*k, 1.0}};
  s.default_class = c.policy.settings.default_class.empty() ? s.classes.front().name
                                                            : c.policy.settings.default_class;
  s.quantum = c.policy.settings.quantum;
  s.global_allotment = c.policy.settings.global_allotment;
  for (const auto& u : c.policy.users)
    if (u.allotment) s.user_allotments.emplace_back(u.name, *u.allotment);
  std::sort(s.user_allotments.begin(), s.user_allotments.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  s.strict_cas = p.cas == "strict";
  s.max_claims_in_flight = c.max_claims_in_flight;
  s.reply_timeout = c.timeouts.reply_timeout;
  s.recovery_grace = c.timeouts.recovery_grace;
  if (c.preemption) setup.actor.policy = c.policy;
  setup.store_dir = partition_dir(c, p.id);
  setup.identity = {c.cluster_id, p.id};
  setup.store_options = actors::logged_store_options(*storage::parse_sync_mode(c.storage.sync));
  setup.recover = true;
  return setup;
}

}  // namespace claimsched::apps
