#include "apps/starvation.hpp"

#include "apps/pools_text.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/clock.hpp"
#include "actors/node_actor.hpp"
#include "actors/partition.hpp"
#include "core/synthetic.hpp"
#include "messages/caf_types.hpp"

namespace claimsched::apps {

namespace {

using namespace std::chrono_literals;

core::policy::PolicyConfig policy_for(const std::vector<std::string>& pools, const SimOptions& o) {
  core::policy::PolicyConfig p;
  for (const auto& pool : pools) p.pools.push_back(core::policy::PoolSpec{pool, "", {}, {}});
  for (const char* name : {"batch", "prod"}) {
    core::policy::ClassSpec c;
    c.name = name;
    c.pool = pools.front();
    p.classes.push_back(c);
  }
  p.settings.default_class = "batch";
  p.settings.preemption.fair_share_starvation_timeout = o.starvation_timeout;
  // YTsaurus's default (0.8) stops preempting at 80% of the fair share; the
  // target here is 90%.
  p.settings.preemption.fair_share_starvation_tolerance = 0.95;
  p.settings.preemption.preemptive_scheduling_backoff = o.policy_interval;
  p.interval = o.policy_interval;
  return p;
}

}  // namespace

int run_starvation_scenario(const SimOptions& opt) {
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  cfg.set("scheduler.max-threads", static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency())));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  std::vector<std::string> pools{"pool-0"};
  core::SyntheticClusterConfig cluster;
  cluster.nodes = opt.nodes;
  cluster.pools = pools;
  cluster.seed = opt.seed;
  auto specs = core::make_nodes(cluster);
  core::Resources capacity;
  for (const auto& s : specs) capacity += s.capacity;

  actors::PartitionSetup setup;
  auto& sc = setup.actor;
  sc.scheduler.partition = core::PartitionId{1};
  sc.scheduler.pools = pools;
  sc.scheduler.classes = {core::ClassConfig::named("batch"), core::ClassConfig::named("prod")};
  sc.scheduler.default_class = "batch";
  sc.policy = policy_for(pools, opt);
  auto partition = actors::assemble_partition(sys, std::move(setup));
  if (!partition) {
    std::fprintf(stderr, "claimsched sim: %s\n", partition.error().to_string().c_str());
    return 1;
  }
  auto scheduler = partition->scheduler;
  std::vector<actors::node_actor> nodes;
  for (const auto& spec : specs) {
    actors::NodeActorConfig nc;
    nc.spec = spec;
    nodes.push_back(actors::spawn_node(sys, std::move(nc)));
    self->send(scheduler, actors::register_atom::value, nodes.back());
  }
  auto status = [&] {
    actors::SchedulerStatus st;
    self->request(scheduler, caf::infinite, actors::status_atom::value)
        .receive([&](actors::SchedulerStatus& s) { st = std::move(s); }, [](caf::error&) {});
    return st;
  };
  while (status().nodes < opt.nodes) std::this_thread::sleep_for(5ms);

  // One task shape: a 16th of the default machine, so the cluster holds 16 per node.
  core::Resources task = core::Resources::cpu_memory(2000, int64_t{8} << 30);
  uint32_t slots = static_cast<uint32_t>(task.copies_fitting_in(specs.front().capacity)) * opt.nodes;
  auto submit = [&](uint64_t id, const char* cls, uint32_t count) {
    core::JobSpec j;
    j.id = core::JobId{id};
    j.user = std::string(cls) + "-user";
    j.job_class = cls;
    j.pool = pools.front();
    j.count = count;
    j.per_task = task;
    j.submit_time = actors::now(sys);
    bool ok = false;
    self->request(scheduler, caf::infinite, j).receive([&](core::JobId) { ok = true; }, [](caf::error&) {});
    return ok;
  };
  // batch takes the whole cluster; its tasks never end. (Its jobs all run
  // whole, so what the policy preempts is preempted for prod, not to even
  // out batch's own jobs.)
  uint32_t per_job = 100;
  uint64_t id = 1;
  for (uint32_t left = slots; left > 0; left -= std::min(left, per_job))
    submit(id++, "batch", std::min(left, per_job));
  while (status().running_tasks < slots) std::this_thread::sleep_for(10ms);

  // prod arrives wanting the whole cluster: its fair share is half.
  uint32_t fair = slots / 2;
  uint32_t target = (fair * 9 + 9) / 10;
  uint64_t first_prod = id;
  for (uint32_t left = slots; left > 0; left -= std::min(left, per_job))
    submit(id++, "prod", std::min(left, per_job));
  auto arrived = std::chrono::steady_clock::now();
  auto prod_running = [&] {
    std::string dummy;
    uint64_t running = 0;
    // prod's running tasks = total running minus batch's, from the node reports.
    for (const auto& n : nodes)
      self->request(n, caf::infinite, actors::report_atom::value)
          .receive(
              [&](core::NodeReport& r) {
                for (const auto& a : r.allocations) running += a.task.job.value >= first_prod;
              },
              [](caf::error&) {});
    return running;
  };
  uint64_t reclaimed = 0;
  auto deadline = arrived + opt.starvation_timeout + std::chrono::seconds(120);
  while ((reclaimed = prod_running()) < target && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  auto st = status();
  bool ok = reclaimed >= target;
  double per_task = reclaimed == 0 ? 0.0 : static_cast<double>(st.stats.preemptions) / static_cast<double>(reclaimed);
  double after_timeout = took - std::chrono::duration<double>(opt.starvation_timeout).count();
  double policy_interval_s = std::chrono::duration<double>(opt.policy_interval).count();
  if (opt.json) {
    nlohmann::json j;
    j["scenario"] = "starvation";
    j["nodes"] = opt.nodes;
    j["slots"] = slots;
    j["fair_share_tasks"] = fair;
    j["target_tasks"] = target;
    j["reclaimed_tasks"] = reclaimed;
    j["reached"] = ok;
    j["seconds_to_90pct"] = took;
    j["seconds_after_starvation_timeout"] = after_timeout;
    j["policy_cycles_after_timeout"] = after_timeout / policy_interval_s;
    j["preemptions"] = st.stats.preemptions;
    j["evictions"] = st.stats.evictions;
    j["placements"] = st.stats.placements;
    j["policy_cycles"] = st.policy_cycles;
    j["claims_rejected"] = st.stats.rejected();
    j["preemptions_per_reclaimed_task"] = per_task;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("claimsched sim --scenario starvation: %u nodes, %u task slots; batch fills them, prod arrives\n",
                opt.nodes, slots);
    std::printf("  prod held %llu of its %u fair-share tasks (target %u) %.2f s after arriving, "
                "%.2f s (%.1f policy cycles) after its %.1f s starvation timeout\n",
                static_cast<unsigned long long>(reclaimed), fair, target, took, after_timeout,
                after_timeout / policy_interval_s, std::chrono::duration<double>(opt.starvation_timeout).count());
    std::printf("  %llu preemptions, %.3f per reclaimed task; %llu evictions\n",
                static_cast<unsigned long long>(st.stats.preemptions), per_task,
                static_cast<unsigned long long>(st.stats.evictions));
    std::string doc;
    self->request(scheduler, caf::infinite, actors::pools_atom::value)
        .receive([&](std::string& t) { doc = std::move(t); }, [](caf::error&) {});
    if (auto table = pools_text({doc})) std::printf("%s", table->c_str());
  }
  for (auto& n : nodes) self->send_exit(n, caf::exit_reason::user_shutdown);
  actors::disassemble_partition(sys, *partition);
  return ok ? 0 : 1;
}

}  // namespace claimsched::apps
