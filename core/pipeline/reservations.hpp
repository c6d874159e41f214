#pragma once

// Reservations: room the policy set aside on nodes for one job, claimed once
// the allocations taken away for it (its victims) are freed — a starving job's
// task (YTsaurus's preemptive stages), a non-preemptible request's tasks, all
// at once (DUCC FIXED_SHARE), a whole machine (DUCC RESERVE), the hole
// defragmentation opens. While held, the room counts as in flight in the
// view, so the queue places nothing else there; the job itself leaves the
// queue until its reservation is claimed or dropped. (Backfilling's
// reservations of a future start are another thing: backfill.hpp.)

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/ids.hpp"
#include "core/resources.hpp"

namespace claimsched::core {

struct Hold {
  struct Part {
    NodeIndex node = 0;
    uint32_t tasks = 0;
    /// Victims on that node not freed yet (sorted).
    std::vector<TaskRef> waiting_for;
  };
  JobId job;
  std::vector<Part> parts;
  /// What one task claims (a reservation: the whole machine).
  Resources per_task;
  /// All parts are claimed together, all or nothing (a gang), once every
  /// part's victims are freed; otherwise each part as soon as its own are.
  bool whole = false;
  /// Why, in words (for explain).
  std::string why;

  uint32_t tasks() const {
    uint32_t n = 0;
    for (const auto& p : parts) n += p.tasks;
    return n;
  }
  /// Victims not freed yet, over all parts.
  size_t waiting() const {
    size_t n = 0;
    for (const auto& p : parts) n += p.waiting_for.size();
    return n;
  }
};

class Reservations {
 public:
  /// Adds a hold; a job has at most one (false if it has one already).
  bool add(Hold hold);
  const Hold* of(JobId job) const;
  /// Takes the job's hold out (claimed or dropped).
  std::optional<Hold> take(JobId job);
  /// A victim is free (released, ended, or gone with its node).
  void freed(TaskRef victim);
  /// Jobs with room to claim now (a whole hold with no victims left, or a
  /// part of another whose own are freed), in job order.
  std::vector<JobId> ready() const;
  /// Takes out the parts of the job's hold that may be claimed now (all, or
  /// none, for a whole hold); the hold goes when no part is left.
  std::vector<Hold::Part> take_ready(JobId job, Hold* taken);
  /// Jobs with a part on node n.
  std::vector<JobId> on_node(NodeIndex n) const;
  size_t size() const { return holds_.size(); }
  const std::map<JobId, Hold>& all() const { return holds_; }

 private:
  std::map<JobId, Hold> holds_;
};

}  // namespace claimsched::core
