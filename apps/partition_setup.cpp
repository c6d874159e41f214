#include "apps/partition_setup.hpp"

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
  s.classes.clear();
  for (const auto& cls : c.policy.classes) {
    core::ClassConfig cc;
    cc.name = cls.name;
    cc.priority = cls.priority;
    cc.weight = cls.weight;
    for (const auto& [name, scorer] : c.class_scorers)
      if (name == cls.name)
        if (auto k = core::parse_scorer(scorer)) cc.placement.scorers = {{*k, 1.0}};
    s.classes.push_back(cc);
  }
  s.default_class = c.policy.settings.default_class.empty() ? s.classes.front().name
                                                            : c.policy.settings.default_class;
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
