#include "actors/gateway_metrics.hpp"

#include <memory>
#include <string>
#include <string_view>

#include "core/metrics_text.hpp"

namespace claimsched::actors {

namespace {

/// Bounds of the latency buckets, in seconds: a millisecond to a minute.
const std::vector<double> kLatencyBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
/// A claim's round trip is one message each way: 50 microseconds to a second.
const std::vector<double> kRoundTripBounds{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                           0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};

}  // namespace

void scheduler_metrics(core::MetricsText& m, const PartitionMetrics& metrics) {
  const SchedulerStatus& s = metrics.status;
  core::MetricLabels p{{"partition", std::to_string(s.partition.value)}};
  // The jobs_ended_<outcome> counters are one family with an outcome label, as a dashboard sums them.
  auto counter = [&](std::string_view name, std::string_view what, uint64_t value) {
    constexpr std::string_view kEnded = "jobs_ended_";
    if (name.starts_with(kEnded)) {
      m.counter("claimsched_jobs_ended_total", "jobs that reached a final state, by outcome",
                {p.front(), {"outcome", std::string(name.substr(kEnded.size()))}}, value);
      return;
    }
    m.counter("claimsched_" + std::string(name) + "_total", what, p, value);
  };
#define CLAIMSCHED_METRIC_COUNTER(name, what) counter(#name, what, s.stats.name);
  CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_METRIC_COUNTER)
#undef CLAIMSCHED_METRIC_COUNTER
  auto gauge = [&](const char* name, const char* help, double v) { m.gauge(name, help, p, v); };
  gauge("claimsched_jobs_queued", "jobs waiting to be placed (queued, parked or backing off)",
        static_cast<double>(s.queued_jobs + s.parked_jobs + s.backing_off_jobs));
  gauge("claimsched_tasks_pending", "tasks waiting for a node", static_cast<double>(s.pending_tasks));
  gauge("claimsched_tasks_running", "tasks claimed or running on a node", static_cast<double>(s.running_tasks));
  gauge("claimsched_claims_in_flight", "claims sent and not answered yet", static_cast<double>(s.claims_in_flight));
  gauge("claimsched_tasks_unverified", "tasks restored onto nodes that have not reported since",
        static_cast<double>(s.unverified_tasks));
  gauge("claimsched_partition_epoch", "the owner's epoch (fencing token) of the partition", static_cast<double>(s.epoch));
  gauge("claimsched_partition_scheduling", "1 while the partition places work, 0 while it holds or is fenced",
        s.started && !s.fenced ? 1.0 : 0.0);
  gauge("claimsched_replication_lag_records", "durable changes the partition's standbys do not hold yet",
        static_cast<double>(s.durable_sequence > s.replicated_sequence && s.replicated_sequence > 0
                                ? s.durable_sequence - s.replicated_sequence
                                : 0));
  gauge("claimsched_store_failed", "1 once the partition's store failed (it stopped)", s.store_error.empty() ? 0.0 : 1.0);
  m.histogram_seconds("claimsched_placement_latency_seconds", "submit (or placement start) to confirmed, per task", p,
                      s.stats.placement_latency, kLatencyBounds);
  m.histogram_seconds("claimsched_claim_round_trip_seconds", "a claim sent to a node to the node's answer", p,
                      s.stats.claim_round_trip, kRoundTripBounds);
  for (size_t state = 0; state < metrics.nodes_by_state.size(); ++state)
    m.gauge("claimsched_partition_nodes", "the partition's nodes by state, as its scheduler sees them",
            {p.front(), {"state", std::string(core::to_string(static_cast<core::NodeState>(state)))}},
            static_cast<double>(metrics.nodes_by_state[state]));
  if (metrics.commit_seconds)
    m.histogram("claimsched_group_commit_seconds",
                "time of one group commit of the partition's store (one RocksDB write and its fsync)", p,
                metrics.commit_seconds->bounds, metrics.commit_seconds->at_most, metrics.commit_seconds->sum,
                metrics.commit_seconds->count);
  if (metrics.commit_records)
    m.histogram("claimsched_group_commit_batch_records",
                "records (key changes) in one group commit of the partition's store", p, metrics.commit_records->bounds,
                metrics.commit_records->at_most, metrics.commit_records->sum, metrics.commit_records->count);
  for (const auto& q : metrics.queues) {
    core::MetricLabels l{{"partition", p.front().second}, {"pool", q.pool}, {"class", q.job_class}};
    m.gauge("claimsched_queue_jobs", "jobs with tasks waiting for a node, by pool and class", l,
            static_cast<double>(q.jobs));
    m.gauge("claimsched_queue_tasks", "tasks waiting for a node, by pool and class", l, static_cast<double>(q.tasks));
    m.gauge("claimsched_queue_oldest_wait_seconds", "how long the oldest job with waiting tasks has waited", l,
            std::chrono::duration<double>(q.oldest_wait).count());
  }
  for (const auto& pool : metrics.pools) {
    core::MetricLabels l{{"partition", p.front().second}, {"pool", pool.pool}};
    m.gauge("claimsched_pool_fair_share_ratio", "the pool's fair share (dominant share of its scope), last policy cycle",
            l, pool.fair_share);
    m.gauge("claimsched_pool_demand_ratio", "the pool's demand (dominant share of its scope), last policy cycle", l,
            pool.demand);
    m.gauge("claimsched_pool_usage_ratio", "the pool's usage (dominant share of its scope), last policy cycle", l,
            pool.usage);
  }
}

namespace {

void gateway_metrics(core::MetricsText& m, const gateway_state& st) {
  uint64_t up = 0, down = 0;
  for (const auto& [id, n] : st.nodes) (n.down ? down : up) += 1;
  m.gauge("claimsched_nodes", "nodes registered with this server, by state", {{"state", "up"}}, static_cast<double>(up));
  m.gauge("claimsched_nodes", "nodes registered with this server, by state", {{"state", "down"}},
          static_cast<double>(down));
  for (const auto& p : st.config.partitions)
    m.gauge("claimsched_partition_owned_here", "1 if this server owns the partition now",
            {{"partition", std::to_string(p.id.value)}}, p.local && p.scheduler ? 1.0 : 0.0);
}

}  // namespace

void answer_metrics(gateway_actor::stateful_pointer<gateway_state> self, caf::typed_response_promise<std::string> promise) {
  std::vector<scheduler_actor> local;
  for (const auto& p : self->state.config.partitions)
    if (p.local && p.scheduler) local.push_back(p.scheduler);
  struct Gathering {
    std::vector<PartitionMetrics> partitions;
    size_t left = 0;
  };
  auto g = std::make_shared<Gathering>();
  g->left = local.size();
  auto finish = [self, g, promise]() mutable {
    core::MetricsText m;
    std::sort(g->partitions.begin(), g->partitions.end(),
              [](const auto& a, const auto& b) { return a.status.partition < b.status.partition; });
    for (const auto& s : g->partitions) scheduler_metrics(m, s);
    gateway_metrics(m, self->state);
    promise.deliver(m.text());
  };
  if (local.empty()) {
    finish();
    return;
  }
  for (const auto& s : local)
    self->request(s, std::chrono::seconds(2), metrics_atom::value)
        .then(
            [=](PartitionMetrics& metrics) mutable {
              g->partitions.push_back(std::move(metrics));
              if (--g->left == 0) finish();
            },
            // A partition that does not answer is left out of this scrape.
            [=](caf::error&) mutable {
              if (--g->left == 0) finish();
            });
}

void answer_changes(gateway_actor::stateful_pointer<gateway_state> self, caf::typed_response_promise<uint64_t> promise) {
  std::vector<scheduler_actor> local;
  for (const auto& p : self->state.config.partitions) {
    // A remote owner's writes are not seen from here.
    if (!p.local || !p.scheduler) {
      promise.deliver(uint64_t{0});
      return;
    }
    local.push_back(p.scheduler);
  }
  struct Gathering {
    uint64_t sum = 0;
    size_t left = 0;
    bool complete = true;
  };
  auto g = std::make_shared<Gathering>();
  g->left = local.size();
  if (local.empty()) {
    promise.deliver(uint64_t{0});
    return;
  }
  for (const auto& s : local)
    self->request(s, std::chrono::seconds(2), status_atom::value)
        .then(
            [=](SchedulerStatus& status) mutable {
              g->sum += status.durable_sequence + static_cast<uint64_t>(status.epoch);
              if (--g->left == 0) promise.deliver(g->complete ? g->sum : uint64_t{0});
            },
            [=](caf::error&) mutable {
              g->complete = false;
              if (--g->left == 0) promise.deliver(uint64_t{0});
            });
}

}  // namespace claimsched::actors
