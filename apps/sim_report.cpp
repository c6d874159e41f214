#include "apps/sim_report.hpp"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace claimsched::apps {

namespace {

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }
double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

std::string thousands(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string to_json(const SimOptions& o, const SimReport& r) {
  const auto& s = r.stats;
  uint64_t placements = r.placements();
  nlohmann::json j;
  j["nodes"] = o.nodes;
  j["partitions"] = o.partitions;
  j["overlap"] = o.overlap;
  j["same_start"] = o.same_start;
  j["cas"] = o.cas;
  j["churn"] = o.churn;
  j["seed"] = o.seed;
  j["tasks"] = r.tasks;
  j["jobs"] = r.jobs;
  j["jobs_rejected"] = r.jobs_rejected;
  j["jobs_already_present"] = r.jobs_already_present;
  j["placements"] = placements;
  j["unplaced"] = r.unplaced;
  j["policy"] = r.policy;
  j["policy_cycles"] = r.policy_cycles;
  j["non_preemptible_tasks"] = r.non_preemptible_tasks;
  j["reserved_machines"] = r.reserved_machines;
  j["jobs_refused_by_allotment"] = r.jobs_refused_by_allotment;
  j["unplaced_refused_by_allotment"] = r.unplaced_refused_by_allotment;
  j["elapsed_s"] = r.elapsed_s;
  j["placement_cpu_s"] = r.placement_cpu_s;
  j["cpu_us_per_placement"] = r.placements() > 0 ? r.placement_cpu_s * 1e6 / static_cast<double>(r.placements()) : 0.0;
  j["placements_per_sec"] = r.placements_per_sec();
  j["claims"] = s.claims_sent;
  j["claims_per_placement"] = ratio(s.claims_sent, placements);
  j["conflicts"] = r.conflicts();
  j["conflicts_per_placement"] = ratio(r.conflicts(), placements);
  j["rejected_conflict"] = s.rejected_conflict;
  j["rejected_insufficient"] = s.rejected_insufficient;
  j["backoffs"] = s.backoffs;
  j["latency_p50_ms"] = ms(s.placement_latency.quantile(0.5));
  j["latency_p99_ms"] = ms(s.placement_latency.quantile(0.99));
  j["latency_max_ms"] = ms(s.placement_latency.max());
  j["claim_round_trip_p50_us"] = s.claim_round_trip.quantile(0.5) / 1000.0;
  j["claim_round_trip_p99_us"] = s.claim_round_trip.quantile(0.99) / 1000.0;
  j["utilization"] = (r.utilization_cpu + r.utilization_memory) / 2;
  j["utilization_cpu"] = r.utilization_cpu;
  j["utilization_memory"] = r.utilization_memory;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["bytes_per_node"] = r.bytes_per_node;
  j["bytes_per_node_actor"] = r.bytes_per_node_actor;
  j["bytes_per_pending_task"] = r.bytes_per_pending_task;
  j["durable"] = r.durable;
  j["sync"] = r.durable ? nlohmann::json(o.sync) : nlohmann::json(nullptr);
  j["store_writes"] = r.store_writes;
  if (r.durable) {
    auto writer = [](const storage::WriterStats& w) {
      return nlohmann::json{
          {"writes", w.writes},
          {"syncs", w.syncs},
          {"batches", w.batches},
          {"records", w.records},
          {"bytes", w.bytes},
          {"write_ms_mean", w.writes == 0 ? 0.0
                                          : std::chrono::duration<double, std::milli>(w.write_time).count() /
                                                static_cast<double>(w.writes)}};
    };
    j["partition_store"] = writer(r.partition_writers);
    j["node_store"] = writer(r.node_writer);
  }
  j["resumed"] = r.resumed;
  j["recovery_ms"] = r.recovery_ms;
  j["recovery_load_ms"] = r.recovery_load_ms;
  j["recovered_jobs"] = r.recovered_jobs;
  j["recovered_task_records"] = r.recovered_task_records;
  j["replicas"] = r.replicated;
  j["replica_lag_p50_ms"] = static_cast<double>(r.replica_lag_ms.quantile(0.5));
  j["replica_lag_p99_ms"] = static_cast<double>(r.replica_lag_ms.quantile(0.99));
  j["replica_lag_max_ms"] = static_cast<double>(r.replica_lag_ms.max());
  j["replica_max_sequence_lag"] = r.replica_max_sequence_lag;
  j["replica_bootstraps"] = r.replica_bootstraps;
  // Every scheduler counter under its own name (claims_sent, tasks_retried,
  // tasks_lost, ...), beside the derived figures above.
  s.for_each_counter([&](const char* name, uint64_t value) {
    if (!j.contains(name)) j[name] = value;
  });
  j["lost_acked_jobs"] = r.lost_acked_jobs;
  j["double_allocations"] = r.double_allocations;
  j["invariants_ok"] = r.invariants_ok();
  j["invariant_failures"] = r.failures;
  return j.dump();
}

std::string to_text(const SimOptions& o, const SimReport& r) {
  const auto& s = r.stats;
  uint64_t placements = r.placements();
  std::string out;
  out += format("claimsched sim: %s nodes, %u partition(s)%s, %s tasks (%s jobs), target utilization %.2f, cas %s, seed %llu%s\n",
                thousands(o.nodes).c_str(), o.partitions, o.overlap ? " overlapping" : "",
                thousands(r.tasks).c_str(), thousands(r.jobs).c_str(), o.utilization, o.cas.c_str(),
                static_cast<unsigned long long>(o.seed),
                r.durable ? (", durable (sync " + o.sync + ")").c_str() : "");
  if (r.resumed)
    out += format("  recovery      %.0f ms to resume (%.0f ms reading the stores): %s jobs, %s task records\n",
                  r.recovery_ms, r.recovery_load_ms, thousands(r.recovered_jobs).c_str(),
                  thousands(r.recovered_task_records).c_str());
  out += format("  placed        %s tasks in %.2f s: %s placements/s%s\n", thousands(placements).c_str(),
                r.elapsed_s, thousands(static_cast<uint64_t>(r.placements_per_sec())).c_str(),
                r.unplaced ? (", " + thousands(r.unplaced) + " not placed").c_str() : "");
  out += format("  claims        %.4f per placement; conflicts %.4f per placement (%s conflict, %s insufficient)\n",
                ratio(s.claims_sent, placements), ratio(r.conflicts(), placements),
                thousands(s.rejected_conflict).c_str(), thousands(s.rejected_insufficient).c_str());
  out += format("  latency       submit to confirmed p50 %.1f ms, p99 %.1f ms; claim round trip p50 %.0f us, p99 %.0f us\n",
                ms(s.placement_latency.quantile(0.5)), ms(s.placement_latency.quantile(0.99)),
                s.claim_round_trip.quantile(0.5) / 1000.0, s.claim_round_trip.quantile(0.99) / 1000.0);
  out += format("  utilization   cpu %.3f, memory %.3f\n", r.utilization_cpu, r.utilization_memory);
  if (r.replicated)
    out += format("  replicas      lag p50 %llu ms, p99 %llu ms, max %llu ms (commit to apply); at most %s changes behind; %s bootstrap(s)\n",
                  static_cast<unsigned long long>(r.replica_lag_ms.quantile(0.5)),
                  static_cast<unsigned long long>(r.replica_lag_ms.quantile(0.99)),
                  static_cast<unsigned long long>(r.replica_lag_ms.max()),
                  thousands(r.replica_max_sequence_lag).c_str(), thousands(r.replica_bootstraps).c_str());
  out += format("  memory        peak RSS %.1f MiB; %s bytes per node (%s in the node actor, the rest in\n"
                "                scheduler views and indexes); %.1f bytes per pending task\n",
                static_cast<double>(r.peak_rss_bytes) / (1 << 20), thousands(r.bytes_per_node).c_str(),
                thousands(r.bytes_per_node_actor).c_str(), r.bytes_per_pending_task);
  if (r.policy)
    out += format("  policy        %s cycles, %s preemptions, %s evictions; %s non-preemptible tasks held, %s "
                  "reserved machines; %s jobs (%s tasks) wait for their user's allotment\n",
                  thousands(r.policy_cycles).c_str(), thousands(s.preemptions).c_str(), thousands(s.evictions).c_str(),
                  thousands(r.non_preemptible_tasks).c_str(), thousands(r.reserved_machines).c_str(),
                  thousands(r.jobs_refused_by_allotment).c_str(),
                  thousands(r.unplaced_refused_by_allotment).c_str());
  if (r.invariants_ok()) {
    out += std::string("  invariants    ok: no node over capacity, no task allocated twice, every job accounted for") +
           (r.policy ? ", every allotment held, every reservation a whole machine\n" : "\n");
  } else {
    out += "  invariants    FAILED:\n";
    for (const auto& f : r.failures) out += "    - " + f + "\n";
  }
  return out;
}

}  // namespace claimsched::apps
