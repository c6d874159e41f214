#pragma once

// `claimsched replay`'s engine: a workload trace through the partitions' own
// pipelines (core::Scheduler: admission, lock queue, queue, placement, claim
// window, task table; and the policy stage when the configuration turns it
// on) over real NodeLedgers, with a virtual clock. Every placement is a claim
// the ledger checks and a confirm it applies, as the node actors do; only
// the mailboxes are gone (`claimsched sim` measures those), so nothing waits
// and a year of trace takes seconds.
//
// Time moves from one event to the next: a job's arrival, a task's end (its
// recorded run time, or its requested time where it is killed), a
// scheduler's wake-up (a backoff, a parked job's next look) and the policy's
// cycles. The policy ticks at its interval and runs a cycle on the ticks the
// scheduler actor runs one (PolicyStage::due: its input changed, it acted
// last time, or a timer passed), so what the replay decides is what the
// server would.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/node_ledger.hpp"
#include "core/pipeline/scheduler.hpp"
#include "core/policy/stage.hpp"
#include "core/replay/report.hpp"

namespace claimsched::core::replay {

struct ReplaySetup {
  /// One scheduler per partition, as the server would configure it.
  std::vector<SchedulerConfig> partitions;
  /// Fair share and preemption, per partition; none: classes order the queue by priority only.
  std::optional<policy::PolicyConfig> policy;
  /// The machine (ids 1..N in order); each node's pool belongs to one partition.
  std::vector<NodeSpec> nodes;

  Status validate() const;
};

/// One job to replay: what the cluster would be given, and how long each of
/// its tasks runs once started.
struct ReplayJob {
  /// Its submit_time is its arrival on the virtual clock; max_run_time, if
  /// any, is where a task is killed.
  JobSpec spec;
  Duration run{0};
};

struct ReplayProgress {
  TimePoint now{0};
  uint64_t jobs_ended = 0;
  uint64_t jobs_total = 0;
};

/// A job the cluster refused at submit (admission), and why.
struct Refusal {
  JobId job;
  /// The error's kind (Errc, words joined by '_'), the key of ReplayResult::refused.
  std::string reason;
  std::string message;
};

struct ReplayResult {
  /// One per job the cluster accepted, in arrival order.
  std::vector<JobOutcome> outcomes;
  /// Jobs refused at submit, counted by reason, and the first few in full.
  std::map<std::string, uint64_t> refused;
  std::vector<Refusal> refusals;
  /// Jobs accepted that had not ended when the events ran out (a job that
  /// can never be placed, e.g. behind a reservation that never comes).
  uint64_t unfinished = 0;
  /// What the pipelines did: passes, claims, conflicts (summed over partitions).
  SchedulerStats stats;
  uint64_t policy_cycles = 0;
  uint64_t events = 0;
  TimePoint end{0};
  /// The first invariant broken (a ledger over capacity, a task held twice,
  /// the task table's accounting), or empty.
  std::string problem;
};

/// Replays `jobs` (sorted by submit_time) on `setup`. `progress`, if given,
/// is called now and then and once at the end.
Expected<ReplayResult> replay(const ReplaySetup& setup, const std::vector<ReplayJob>& jobs,
                              const std::function<void(const ReplayProgress&)>& progress = {});

}  // namespace claimsched::core::replay
