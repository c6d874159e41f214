#pragma once

// Job views: what clients read of a job (claimsched status, queue, explain).
// This stage owns the words the other stages leave on a job — why its last
// claims failed, what was last taken away and why, how often — and the
// placement verdict recorded when the job last found no room; it builds
// JobView from those and the task table.

#include <map>
#include <string>
#include <unordered_map>

#include "core/pipeline/task_table.hpp"
#include "core/placement.hpp"
#include "core/status.hpp"

namespace claimsched::core {

/// Why a job with pending tasks is not in line (JobNotes::waits).
enum class WaitCause : uint8_t {
  none = 0,
  /// Placement found no room (see verdict).
  no_room,
  /// A non-preemptible request the allotments do not allow now.
  not_granted,
  /// The policy caps how many tasks it may hold (DUCC initialization cap,
  /// expand-by-doubling, prediction).
  capped,
  /// It holds a running slot of its class's lock queue and waits on a lock.
  lock,
  /// Room is there, but taking it would delay another job's backfill
  /// reservation (see reason; core/pipeline/backfill.hpp).
  reservation,
};

struct JobNotes {
  /// Why its last claims failed, or why it backs off, in words.
  std::string reason;
  /// The last time a task was taken away (preempted, evicted, lost, failed).
  std::string last_removal;
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  /// Tasks whose last run was preempted for another job: that job.
  std::map<TaskIndex, JobId> preempted_by;
  /// The verdict when it last found no room (decided on the hot path, without words).
  PlacementVerdict verdict = PlacementVerdict::fit;
  WaitCause waits = WaitCause::none;
  /// When it last found no room, its pools had the room for a task in all
  /// (DUCC: fragmented).
  bool fragmented = false;
  /// Backfilling: how it started ahead of a reservation ("backfilled: ends
  /// before the reservation ..."), once placed so.
  std::string backfilled;
  /// Backfilling: why its class would give it a reservation and did not
  /// (no finite start time), while it waits.
  std::string no_reservation;
};

class JobViews {
 public:
  /// The notes of a job, created on first use.
  JobNotes& note(JobId id) { return notes_[id]; }
  const JobNotes* notes(JobId id) const;
  void forget(JobId id) { notes_.erase(id); }

  /// What a client sees; `why_pending` is the explanation when tasks wait.
  JobView view(const JobRecord& j, const ClusterView& cluster, bool with_tasks, std::string why_pending) const;

 private:
  std::unordered_map<JobId, JobNotes> notes_;
};

}  // namespace claimsched::core
