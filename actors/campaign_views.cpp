#include "actors/campaign_views.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "messages/json_views.hpp"

namespace claimsched::actors {

namespace cc = core::campaign;
using nlohmann::json;

namespace {

std::string state_of(const CampaignRun& run) {
  if (!run.failure.empty()) return "failed";
  if (run.cancelled) return "cancelled";
  if (run.finished()) return "done";
  return run.testing() ? "testing" : "running";
}

/// The test wave's report per pool, in the campaign's order.
json test_report(const CampaignRun& run) {
  json out = json::array();
  for (const auto& r : run.test_wave->results()) {
    json t{{"pool", r.pool}, {"reported", r.ran}};
    if (r.ran) {
      t["exit_code"] = r.exit_code;
      t["run_time_s"] = std::chrono::duration<double>(r.run_time).count();
      t["passed"] = r.exit_code == 0;
    }
    out.push_back(std::move(t));
  }
  return out;
}

json summary(const CampaignRun& run) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  const cc::CampaignTasks& tasks = run.scheduler.tasks();
  uint32_t waiting = 0;
  uint32_t running = 0;
  for (const auto& pool : spec.all_pools()) {
    waiting += tasks.waiting(pool);
    running += tasks.running(pool);
  }
  return json{{"id", run.id.value},
              {"name", spec.name},
              {"user", spec.user},
              {"type", std::string(cc::to_string(spec.type))},
              {"algorithm", std::string(cc::to_string(spec.algorithm))},
              {"state", state_of(run)},
              {"tasks", tasks.task_count()},
              {"done", tasks.done()},
              {"pending", tasks.pending()},
              {"waiting", waiting},
              {"running", running},
              {"copies", tasks.copies().size()},
              {"submitted_at", messages::iso_time(run.submitted_at)}};
}

json eta_fields(const CampaignRun& run, core::TimePoint now) {
  json out;
  out["throughput_per_s"] = run.scheduler.throughput(now);
  auto eta = run.scheduler.eta(now);
  out["eta"] = eta ? json(messages::iso_time(*eta)) : json(nullptr);
  auto mean = run.scheduler.mean_run_time();
  out["mean_run_time_s"] = mean ? json(std::chrono::duration<double>(*mean).count()) : json(nullptr);
  return out;
}

json pools(const CampaignRun& run, core::TimePoint now, bool predictor) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  const cc::CampaignTasks& tasks = run.scheduler.tasks();
  json out = json::array();
  for (const auto& pool : spec.all_pools()) {
    json p{{"pool", pool},
           {"affinity", std::find(spec.pools.begin(), spec.pools.end(), pool) != spec.pools.end()},
           {"waiting", tasks.waiting(pool)},
           {"running", tasks.running(pool)}};
    uint32_t succeeded = 0;
    for (const auto& c : tasks.copies())
      if (c.pool == pool && c.state == cc::CopyState::succeeded) ++succeeded;
    p["succeeded"] = succeeded;
    auto abandoned = tasks.abandoned_pools().find(pool);
    p["abandoned"] = abandoned != tasks.abandoned_pools().end();
    if (abandoned != tasks.abandoned_pools().end()) p["sink_reason"] = abandoned->second;
    auto flow = run.scheduler.flows().find(pool);
    if (flow != run.scheduler.flows().end()) {
      p["throughput_per_s"] = flow->second.throughput.per_second(now);
      if (predictor) {
        p["ratio"] = flow->second.ratio;
        p["last_move"] = flow->second.last_move == cc::RatioMove::increase ? "increase" : "decrease";
        p["last_free"] = flow->second.last_free;
      }
    } else if (predictor) {
      p["ratio"] = nullptr;  // never offered: no round has looked at it
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string campaign_summary_json(const CampaignRun& run, core::TimePoint) { return summary(run).dump(); }

std::string campaign_list_json(const std::map<cc::CampaignId, CampaignRun>& runs, core::TimePoint) {
  json all = json::array();
  for (const auto& [id, run] : runs) all.push_back(summary(run));
  return json{{"campaigns", std::move(all)}}.dump();
}

std::string campaign_status_json(const CampaignRun& run, core::TimePoint now) {
  json out = summary(run);
  out.update(eta_fields(run, now));
  out["pools"] = pools(run, now, false);
  if (run.test_wave) out["test"] = test_report(run);
  if (!run.failure.empty()) out["failure"] = run.failure;
  return out.dump();
}

std::string campaign_explain_json(const CampaignRun& run, core::TimePoint now) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  json out = summary(run);
  out.update(eta_fields(run, now));
  out["max_waiting"] = spec.max_waiting;
  out["allowed_waiting"] = spec.effective_allowed_waiting();
  out["finalize_replicas"] = spec.finalize_replicas;
  out["finalizing"] = run.scheduler.tasks().finalizing();
  out["pools"] = pools(run, now, true);
  if (run.test_wave) out["test"] = test_report(run);
  if (!run.failure.empty()) out["failure"] = run.failure;
  return out.dump();
}

}  // namespace claimsched::actors
