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
  /// Jobs some wait names.
  size_t jobs_waited_for() const { return by_job_.size(); }

 private:
  std::unordered_map<Key, std::vector<JobId>> waits_;
  std::unordered_map<JobId, std::vector<Key>> by_job_;
  Key next_ = 1;
};

}  // namespace claimsched::core
