#pragma once

// What waits in each (pool, class) of a partition: jobs with pending tasks,
// those tasks, and the oldest such job's submit time. The task table keeps it
// as tasks enter and leave the pending state, so the queue-depth metrics read
// it without walking the jobs (a scrape every 100 ms walking a million queued
// jobs took a tenth of the scheduler's throughput).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/ids.hpp"

namespace claimsched::core {

class PendingDepths {
 public:
  struct Row {
    uint32_t jobs = 0;
    uint64_t tasks = 0;
  };

  /// `n` tasks of job `id` (pool, cls) became pending; `first` when the job
  /// had none pending before. `waiting(JobId)` says whether a job still has
  /// pending tasks (for dropping stale oldest-job entries).
  template <class Waiting>
  void add(uint32_t pool, uint32_t cls, JobId id, TimePoint submitted, uint64_t n, bool first, const Waiting& waiting) {
    Slot& s = slot(pool, cls);
    s.row.tasks += n;
    if (!first) return;
    ++s.row.jobs;
    s.heap.push_back(Entry{submitted, id});
    std::push_heap(s.heap.begin(), s.heap.end(), later);
    // Entries of jobs that stopped waiting stay until they reach the top;
    // keeping the heap under twice the waiting jobs bounds what they cost.
    if (s.heap.size() > 2 * static_cast<size_t>(s.row.jobs) + 64) compact(s, waiting);
  }
  /// `n` pending tasks of the job left the pending state; `last` when it has
  /// none left.
  void remove(uint32_t pool, uint32_t cls, uint64_t n, bool last) {
    Slot& s = slot(pool, cls);
    s.row.tasks -= n;
    if (last) --s.row.jobs;
  }

  /// The row, or an empty one.
  Row row(uint32_t pool, uint32_t cls) const {
    const Slot* s = find(pool, cls);
    return s ? s->row : Row{};
  }
  /// The earliest submit time of the row's waiting jobs (kNever: none).
  template <class Waiting>
  TimePoint oldest(uint32_t pool, uint32_t cls, const Waiting& waiting) const {
    const Slot* s = find(pool, cls);
    if (!s || s->row.jobs == 0) return kNever;
    while (!s->heap.empty() && !waiting(s->heap.front().id)) {
      std::pop_heap(s->heap.begin(), s->heap.end(), later);
      s->heap.pop_back();
    }
    return s->heap.empty() ? kNever : s->heap.front().submitted;
  }
  /// Pools with a row, and the classes with a row in pool p.
  uint32_t pools() const { return static_cast<uint32_t>(rows_.size()); }
  uint32_t classes(uint32_t pool) const { return pool < rows_.size() ? static_cast<uint32_t>(rows_[pool].size()) : 0; }

 private:
  struct Entry {
    TimePoint submitted;
    JobId id;
  };
  /// Orders a min-heap by submit time.
  static bool later(const Entry& a, const Entry& b) { return b.submitted < a.submitted; }
  struct Slot {
    Row row;
    /// Waiting jobs by submit time (a job waiting again is pushed again).
    /// Mutable: reading the oldest pops stale entries.
    mutable std::vector<Entry> heap;
  };
  std::vector<std::vector<Slot>> rows_;

  Slot& slot(uint32_t pool, uint32_t cls) {
    if (rows_.size() <= pool) rows_.resize(pool + 1);
    if (rows_[pool].size() <= cls) rows_[pool].resize(cls + 1);
    return rows_[pool][cls];
  }
  const Slot* find(uint32_t pool, uint32_t cls) const {
    return pool < rows_.size() && cls < rows_[pool].size() ? &rows_[pool][cls] : nullptr;
  }
  template <class Waiting>
  static void compact(Slot& s, const Waiting& waiting) {
    std::sort(s.heap.begin(), s.heap.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
    s.heap.erase(std::unique(s.heap.begin(), s.heap.end(), [](const Entry& a, const Entry& b) { return a.id == b.id; }),
                 s.heap.end());
    std::erase_if(s.heap, [&](const Entry& e) { return !waiting(e.id); });
    std::make_heap(s.heap.begin(), s.heap.end(), later);
  }
};

}  // namespace claimsched::core
