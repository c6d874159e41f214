#pragma once

// What a partition scheduler counts. Every counter is declared once, in
// CLAIMSCHED_SCHEDULER_COUNTERS; the struct's fields and merge() are generated
// from that list, so a new counter cannot be left out of merge() (sums over
// partitions, `claimsched sim --json`). tests/core/stats_test.cpp checks that
// the struct holds nothing else.

#include <cstddef>
#include <cstdint>

#include "core/histogram.hpp"

namespace claimsched::core {

// X(name, what it counts)
#define CLAIMSCHED_SCHEDULER_COUNTERS(X)                                                        \
  X(jobs_submitted, "jobs accepted (or restored) by the partition")                            \
  X(tasks_submitted, "tasks of those jobs")                                                    \
  X(claims_sent, "claims sent to nodes")                                                       \
  X(claims_accepted, "claims the nodes accepted")                                              \
  X(rejected_conflict, "claims rejected: strict CAS saw another generation")                  \
  X(rejected_insufficient, "claims rejected: the tasks did not fit")                          \
  X(rejected_other, "claims rejected: node not schedulable, or malformed")                    \
  X(rejected_stale_epoch, "claims rejected: a newer owner has the partition")                 \
  X(confirms_sent, "confirms sent")                                                            \
  X(confirms_failed, "confirms that found their claim gone")                                   \
  X(placements, "tasks confirmed on a node")                                                   \
  X(tasks_finished, "tasks that reached a final state")                                        \
  X(tasks_retried, "tasks run again after they failed or their node was lost")                \
  X(tasks_requeued, "tasks put back in the queue (rejects, timeouts, aborted gangs, removals)") \
  X(claim_timeouts, "claims given up after reply_timeout")                                     \
  X(late_replies, "replies to claims or confirms no longer in flight")                         \
  X(generation_gaps, "node deltas that skipped a generation (a snapshot was asked for)")       \
  X(gangs_aborted, "gangs released whole after one of their claims failed")                    \
  X(preemptions, "allocations taken away by policy")                                           \
  X(evictions, "allocations taken away because of their node or configuration")                \
  X(backoffs, "times a job's tasks exhausted their claim attempts and it backed off")         \
  X(tasks_lost, "tasks whose node no longer held them (recovery, node down)")                 \
  X(reconcile_releases, "allocations or claims on nodes that the records do not back, released")  \
  X(jobs_ended_succeeded, "jobs whose every task succeeded")                                     \
  X(jobs_ended_failed, "jobs that ended with a task that did not succeed")                       \
  X(jobs_ended_cancelled, "jobs the user cancelled")

struct SchedulerStats {
#define CLAIMSCHED_DECLARE_COUNTER(name, what) uint64_t name = 0;
  CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_DECLARE_COUNTER)
#undef CLAIMSCHED_DECLARE_COUNTER
  /// Submit (or placement start) to confirmed, per task, in nanoseconds.
  Histogram placement_latency;
  /// A claim sent to its node's answer, in nanoseconds: the protocol's round trip.
  Histogram claim_round_trip;

  uint64_t rejected() const {
    return rejected_conflict + rejected_insufficient + rejected_other + rejected_stale_epoch;
  }
  /// Adds every counter and the histogram of `o`.
  void merge(const SchedulerStats& o);
  /// Calls f(name, value) for every counter, in declaration order (reports).
  template <class F>
  void for_each_counter(F&& f) const {
#define CLAIMSCHED_VISIT_COUNTER(name, what) f(#name, name);
    CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_VISIT_COUNTER)
#undef CLAIMSCHED_VISIT_COUNTER
  }
};

inline constexpr size_t kSchedulerCounters = [] {
  size_t n = 0;
#define CLAIMSCHED_COUNT_COUNTER(name, what) ++n;
  CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_COUNT_COUNTER)
#undef CLAIMSCHED_COUNT_COUNTER
  return n;
}();

inline void SchedulerStats::merge(const SchedulerStats& o) {
#define CLAIMSCHED_MERGE_COUNTER(name, what) name += o.name;
  CLAIMSCHED_SCHEDULER_COUNTERS(CLAIMSCHED_MERGE_COUNTER)
#undef CLAIMSCHED_MERGE_COUNTER
  placement_latency.merge(o.placement_latency);
  claim_round_trip.merge(o.claim_round_trip);
}

}  // namespace claimsched::core
