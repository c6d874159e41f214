#pragma once

// Identifiers and time for the whole core. Ids are plain integers wrapped in
// distinct types so that a node id can never be passed where a job id is
// expected; time is a duration since an arbitrary origin chosen by the caller
// (the core never reads a clock).

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>

namespace claimsched::core {

template <class Tag, class Rep>
struct StrongId {
  Rep value = 0;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : value(v) {}

  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

using NodeId = StrongId<struct NodeIdTag, uint32_t>;
using JobId = StrongId<struct JobIdTag, uint64_t>;
using ClaimId = StrongId<struct ClaimIdTag, uint64_t>;
using PartitionId = StrongId<struct PartitionIdTag, uint32_t>;

/// A node's version: +1 on every change of what is claimed or allocated on it.
using Generation = uint64_t;
/// A partition owner's fencing token; nodes reject claims from older epochs.
using Epoch = uint64_t;
using TaskIndex = uint32_t;

/// One task of a job: the job and the task's index within it.
struct TaskRef {
  JobId job;
  TaskIndex index = 0;

  friend constexpr auto operator<=>(const TaskRef&, const TaskRef&) = default;
};

using Duration = std::chrono::nanoseconds;
/// Time since an origin the caller picks (an actor clock, a virtual clock).
using TimePoint = std::chrono::nanoseconds;

constexpr TimePoint kNever = TimePoint::max();

}  // namespace claimsched::core

template <class Tag, class Rep>
struct std::hash<claimsched::core::StrongId<Tag, Rep>> {
  size_t operator()(claimsched::core::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value);
  }
};

template <>
struct std::hash<claimsched::core::TaskRef> {
  size_t operator()(const claimsched::core::TaskRef& t) const noexcept {
    return std::hash<uint64_t>{}(t.job.value * 0x9E3779B97F4A7C15ULL ^ t.index);
  }
};
