#pragma once

// Clients waiting for their jobs to end (`submit --wait`, the e2e bench):
// each wait names jobs, and a job event (a scheduler's "these jobs started or
// ended") wakes only the waits that name one of its jobs. Bookkeeping only:
// whoever holds it asks the schedulers which jobs ended and answers the
// waiter, so a waiting client costs the server nothing between events,
// where a polling one made it build views of every job it waits for (or of
// the whole queue) several times a second.

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/ids.hpp"

namespace claimsched::core {

class JobWaits {
 public:
  using Key = uint64_t;

  /// Registers a wait for `jobs` (duplicates are ignored); its key, never
  /// reused.
  Key add(std::span<const JobId> jobs);

  /// The waits that name any of `jobs`, each once, in the order they were added.
  std::vector<Key> touched_by(std::span<const JobId> jobs) const;

  /// The jobs of wait `key`, or nullptr once it is gone.
  const std::vector<JobId>* jobs_of(Key key) const;

  /// Of wait `key`'s jobs, those among `jobs` (in `jobs`' order).
  std::vector<JobId> named_by(Key key, std::span<const JobId> jobs) const;

  /// Forgets wait `key` (nothing if it is gone).
  void remove(Key key);

  size_t size() const { return waits_.size(); }
  /// Job names held, summed over the waits.
  size_t names_held() const { return names_; }

  /// A wait naming more jobs than this is not indexed by job: an event looks
  /// its jobs up in the wait's sorted list. A client waiting for N copies
  /// (`submit --repeat N --wait`) asks again after each answer with the jobs
  /// still running; indexing them cost an entry made and freed per job per
  /// question, most of the server's work per job with a few thousand jobs.
  static constexpr size_t kIndexedJobsPerWait = 64;

 private:
  /// Each wait's jobs, sorted and unique.
  std::unordered_map<Key, std::vector<JobId>> waits_;
  /// The small waits, by job.
  std::unordered_map<JobId, std::vector<Key>> by_job_;
  /// The big waits, in the order they were added.
  std::vector<Key> big_;
  size_t names_ = 0;
  Key next_ = 1;
};

}  // namespace claimsched::core
