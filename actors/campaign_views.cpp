#include "actors/campaign_views.hpp"

#include <algorithm>

namespace claimsched::actors {

namespace cc = core::campaign;

namespace {

cc::CampaignState state_of(const CampaignRun& run) {
  if (!run.failure.empty()) return cc::CampaignState::failed;
  if (run.cancelled) return cc::CampaignState::cancelled;
  if (run.finished()) return cc::CampaignState::done;
  return run.testing() ? cc::CampaignState::testing : cc::CampaignState::running;
}

/// The test wave's report per pool, in the campaign's order.
std::vector<cc::TestReport> test_report(const CampaignRun& run) {
  std::vector<cc::TestReport> out;
  for (const auto& r : run.test_wave->results()) {
    cc::TestReport t{r.pool, r.ran, 0, core::Duration{0}};
    if (r.ran) {
      t.exit_code = r.exit_code;
      t.run_time = r.run_time;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<cc::PoolReport> pools(const CampaignRun& run, core::TimePoint now) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  const cc::CampaignTasks& tasks = run.scheduler.tasks();
  std::vector<cc::PoolReport> out;
  for (const auto& pool : spec.all_pools()) {
    cc::PoolReport p;
    p.pool = pool;
    p.affinity = std::find(spec.pools.begin(), spec.pools.end(), pool) != spec.pools.end();
    p.waiting = tasks.waiting(pool);
    p.running = tasks.running(pool);
    for (const auto& c : tasks.copies())
      if (c.pool == pool && c.state == cc::CopyState::succeeded) ++p.succeeded;
    auto abandoned = tasks.abandoned_pools().find(pool);
    p.abandoned = abandoned != tasks.abandoned_pools().end();
    if (p.abandoned) p.sink_reason = abandoned->second;
    auto flow = run.scheduler.flows().find(pool);
    if (flow != run.scheduler.flows().end()) {
      p.offered = true;
      p.throughput_per_s = flow->second.throughput.per_second(now);
      p.ratio = flow->second.ratio;
      p.last_move = flow->second.last_move;
      p.last_free = flow->second.last_free;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

cc::CampaignReport campaign_summary(const CampaignRun& run) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  const cc::CampaignTasks& tasks = run.scheduler.tasks();
  cc::CampaignReport out;
  out.id = run.id;
  out.name = spec.name;
  out.user = spec.user;
  out.type = spec.type;
  out.algorithm = spec.algorithm;
  out.state = state_of(run);
  out.tasks = tasks.task_count();
  out.done = tasks.done();
  out.pending = tasks.pending();
  for (const auto& pool : spec.all_pools()) {
    out.waiting += tasks.waiting(pool);
    out.running += tasks.running(pool);
  }
  out.copies = static_cast<uint32_t>(tasks.copies().size());
  out.submitted_at = run.submitted_at;
  return out;
}

cc::CampaignReply campaign_list(const std::map<cc::CampaignId, CampaignRun>& runs) {
  cc::CampaignReply out;
  for (const auto& [id, run] : runs) out.campaigns.push_back(campaign_summary(run));
  return out;
}

cc::CampaignReport campaign_report(const CampaignRun& run, core::TimePoint now) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  cc::CampaignReport out = campaign_summary(run);
  out.throughput_per_s = run.scheduler.throughput(now);
  out.eta = run.scheduler.eta(now);
  out.mean_run_time = run.scheduler.mean_run_time();
  out.max_waiting = spec.max_waiting;
  out.allowed_waiting = spec.effective_allowed_waiting();
  out.finalize_replicas = spec.finalize_replicas;
  out.finalizing = run.scheduler.tasks().finalizing();
  out.pools = pools(run, now);
  if (run.test_wave) out.test = test_report(run);
  out.failure = run.failure;
  return out;
}

}  // namespace claimsched::actors
