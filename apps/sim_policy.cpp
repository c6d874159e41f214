#include "apps/sim_policy.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/invariants.hpp"

namespace claimsched::apps {

namespace {

// A share of a pool's cpu, as an allotment.
core::Limits cpu_share(const core::Resources& pool_capacity, double share) {
  core::Limits l;
  l.set(core::dim::cpu, static_cast<int64_t>(static_cast<double>(pool_capacity[core::dim::cpu]) * share));
  return l;
}

}  // namespace

void SimPolicy::apply(core::SchedulerConfig& scheduler) const {
  scheduler.classes = classes;
  scheduler.default_class = default_class;
  scheduler.quantum = quantum;
  scheduler.global_allotment = global_allotment;
  scheduler.user_allotments = user_allotments;
}

core::policy::PolicyConfig SimPolicy::policy_for(const std::string& pool) const {
  core::policy::PolicyConfig p;
  p.pools.push_back(core::policy::PoolSpec{pool, "", {}, {}});
  p.classes = classes;
  for (auto& c : p.classes) c.pool = pool;
  for (const auto& [user, limits] : user_allotments) p.users.push_back({user, limits});
  p.settings.default_class = default_class;
  p.settings.quantum = quantum;
  p.settings.global_allotment = global_allotment;
  p.settings.preemption.preemptive_scheduling_backoff = interval;
  p.interval = interval;
  return p;
}

SimPolicy make_sim_policy(const core::Resources& pool_capacity, core::Duration interval) {
  SimPolicy p;
  auto batch = core::ClassConfig::named("batch", 0, 3);
  auto science = core::ClassConfig::named("science", 0, 1);
  auto service = core::ClassConfig::named("service", 10);
  service.policy = core::ClassPolicy::fixed_share;
  // The load gives the 16 users about 1.1% of a pool each in service (20% of
  // a 90% load): the class's cap leaves them room, user0's own cap (0.5%)
  // binds, so some of user0's service jobs wait for it.
  service.allotment = cpu_share(pool_capacity, 0.03);
  auto whole = core::ClassConfig::named("whole", 20);
  whole.policy = core::ClassPolicy::reserve;
  p.classes = {batch, science, service, whole};
  p.default_class = "batch";
  p.quantum = int64_t{1} << 30;
  p.global_allotment = cpu_share(pool_capacity, 0.04);
  p.user_allotments = {{"user0", cpu_share(pool_capacity, 0.005)}};
  p.interval = interval;

  p.load_classes = {{"batch", 0.6, false}, {"science", 0.199, false}, {"service", 0.2, false}, {"whole", 0.001, true}};
  return p;
}

void check_policy(const std::vector<core::NodeReport>& nodes, const std::vector<std::string>& pools,
                  const SimPolicy& policy, const core::SyntheticLoad& load,
                  std::vector<std::vector<core::JobView>>& queued, SimReport& report) {
  // The load is a pure function of the job's index: specs are made again
  // for the jobs the nodes name.
  std::unordered_map<uint64_t, core::JobSpec> specs;
  auto job_of = [&](core::JobId id) -> const core::JobSpec* {
    if (id.value == 0 || id.value > load.job_count()) return nullptr;
    auto it = specs.find(id.value);
    if (it == specs.end()) it = specs.emplace(id.value, load.job(id.value - 1, core::TimePoint{})).first;
    return &it->second;
  };
  report.policy = true;
  for (size_t k = 0; k < pools.size() && k < queued.size(); ++k) {
    core::SchedulerConfig config;
    config.pools = {pools[k]};
    policy.apply(config);
    core::PolicyTotals totals;
    if (auto st = core::check_policy_invariants(nodes, config, job_of, queued[k], totals); !st)
      report.failures.push_back("partition " + std::to_string(k + 1) + ": " + st.error().message);
    report.non_preemptible_tasks += totals.non_preemptible_tasks;
    report.reserved_machines += totals.reserved_machines;
    std::sort(totals.refused_by_allotment.begin(), totals.refused_by_allotment.end());
    auto refused = [&](const core::JobView& v) {
      return std::binary_search(totals.refused_by_allotment.begin(), totals.refused_by_allotment.end(), v.spec.id);
    };
    for (const auto& v : queued[k])
      if (refused(v)) {
        ++report.jobs_refused_by_allotment;
        report.unplaced_refused_by_allotment += v.count_in(core::TaskState::pending);
      }
    std::erase_if(queued[k], refused);
  }
}

}  // namespace claimsched::apps
