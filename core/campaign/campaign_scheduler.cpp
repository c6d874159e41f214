#include "core/campaign/campaign_scheduler.hpp"

#include <algorithm>

namespace claimsched::core::campaign {

CampaignScheduler::CampaignScheduler(CampaignSpec spec)
    : spec_(std::move(spec)), tasks_(static_cast<uint32_t>(spec_.parameters.size())) {}

RoundPlan CampaignScheduler::round(TimePoint now, const std::vector<PoolOffer>& offers) {
  RoundPlan plan;
  if (failure_) return plan;
  plan.cancel = check_output(now);
  if (failure_) {
    plan.failure = failure_;
    return plan;
  }
  for (const PoolOffer& offer : offers) {
    if (tasks_.abandoned(offer.pool)) continue;
    if (auto reason = tasks_.sink_reason(offer.pool, now, spec_.sink_runtime)) {
      auto live = tasks_.abandon(offer.pool, *reason);
      plan.cancel.insert(plan.cancel.end(), live.begin(), live.end());
      plan.abandoned.emplace_back(offer.pool, *reason);
      continue;
    }
    PoolFlow& flow = flows_[offer.pool];
    uint32_t waiting = tasks_.waiting(offer.pool);
    RatioUpdate update{flow.ratio, RatioMove::increase, 0};
    if (flow.observed) {
      PoolObservation seen{waiting,     tasks_.running(offer.pool), spec_.effective_allowed_waiting(),
                           offer.size,  flow.ratio,                 flow.last_free};
      update = next_ratio(spec_.algorithm, seen);
    }
    FlowDecision decision = flow_control(update, offer.free, waiting, spec_.max_waiting, tasks_.pending());
    if (decision.withdraw > 0) {
      auto back = tasks_.withdraw(offer.pool, decision.withdraw, now);
      plan.withdrawn.insert(plan.withdrawn.end(), back.begin(), back.end());
    }
    auto sent = tasks_.dispatch(offer.pool, decision.dispatch, now);
    if (!sent.empty()) {
      throughput_.dispatched(now);
      flow.throughput.dispatched(now);
    }
    plan.dispatched.insert(plan.dispatched.end(), sent.begin(), sent.end());
    uint32_t left_free = offer.free - std::min<uint32_t>(offer.free, static_cast<uint32_t>(sent.size()));
    if (spec_.finalize_replicas > 0 && tasks_.finalizing()) {
      auto replicas = tasks_.replicate(offer.pool, left_free, spec_.finalize_replicas, now);
      plan.dispatched.insert(plan.dispatched.end(), replicas.begin(), replicas.end());
    }
    flow.ratio = update.ratio;
    flow.last_free = offer.free;
    flow.last_move = update.move;
    flow.observed = true;
  }
  return plan;
}

SuccessOutcome CampaignScheduler::succeeded(CopyId copy, TimePoint now, bool output_present) {
  TimePoint started = tasks_.copy(copy).started.value_or(now);
  SuccessOutcome out = tasks_.succeeded(copy, now, output_present);
  if (out.counted) {
    throughput_.record(now, now - started);
    flows_[tasks_.copy(copy).pool].throughput.record(now, now - started);
  }
  if (!output_present) {
    for (CopyId other : check_output(now))
      if (std::find(out.cancel.begin(), out.cancel.end(), other) == out.cancel.end()) out.cancel.push_back(other);
  }
  return out;
}

std::vector<CopyId> CampaignScheduler::check_output(TimePoint now) {
  if (failure_) return {};
  auto reason = wrong_output_reason(spec_.declared_output, tasks_.output_histories());
  if (!reason) return {};
  failure_ = std::move(reason);
  return tasks_.cancel_all(now);
}

}  // namespace claimsched::core::campaign
