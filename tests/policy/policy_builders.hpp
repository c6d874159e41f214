#pragma once

// Builders for policy snapshots, so a scenario states only what it is about:
//   SnapshotBuilder s;
//   s.pool("root").fair_class("batch", "root").nodes(4, "root", "cpu=8");
//   s.job(1, "alice", "batch").per_task("cpu=1").running_on({1, 2, 3});

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/duration.hpp"
#include "core/policy/engine.hpp"
#include "core/policy/policy.hpp"
#include "core/policy/stage.hpp"

namespace claimsched::core::policy {
inline void PrintTo(StarvationStatus v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(SchedulingStatus v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(AllocationClass v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(Stage v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(RemovalKind v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(RemovalReason v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(CapReason v, std::ostream* os) { *os << to_string(v); }
}  // namespace claimsched::core::policy

namespace claimsched::core {
inline void PrintTo(const Resources& r, std::ostream* os) { *os << '{' << r.to_string() << '}'; }
}  // namespace claimsched::core

namespace claimsched::core::policy::testing {

using namespace std::chrono_literals;

inline Resources res(std::string_view text) {
  auto r = Resources::parse(text);
  if (!r) throw std::invalid_argument("bad resources in test: " + r.error().to_string());
  return *r;
}

inline Limits limits(std::string_view text) {
  auto r = Limits::parse(text);
  if (!r) throw std::invalid_argument("bad limits in test: " + r.error().to_string());
  return *r;
}

inline TimePoint sec(int64_t n) { return std::chrono::seconds(n); }

/// Shares in tests are written as fractions: share(3, 8) == 0.375 exactly.
inline Share share(int64_t num, int64_t den) { return kShareOne / den * num; }

class JobRef {
 public:
  explicit JobRef(JobInfo& j) : j_(j) {}
  JobRef& per_task(std::string_view text) {
    j_.per_task = res(text);
    return *this;
  }
  JobRef& pending(uint32_t n) {
    j_.pending = n;
    return *this;
  }
  JobRef& pool(std::string p) {
    j_.pool = std::move(p);
    return *this;
  }
  JobRef& submitted(TimePoint t) {
    j_.submit_time = t;
    return *this;
  }
  JobRef& preemptible(bool v) {
    j_.preemptible = v;
    return *this;
  }
  JobRef& initialized(bool v = true) {
    j_.initialized = v;
    return *this;
  }
  JobRef& prediction(uint64_t remaining, Duration per_item, Duration init) {
    j_.prediction = PredictionInfo{remaining, per_item, init};
    return *this;
  }
  /// One allocation on `node`, started at `start`, with the next free index.
  JobRef& running(uint32_t node, TimePoint start, bool interruptible = false, bool initialized = true) {
    AllocationInfo a;
    a.index = static_cast<TaskIndex>(j_.allocations.size());
    a.node = NodeId{node};
    a.start = start;
    a.interruptible = interruptible;
    a.initialized = initialized;
    j_.allocations.push_back(a);
    return *this;
  }
  JobInfo& info() { return j_; }

 private:
  JobInfo& j_;
};

class SnapshotBuilder {
 public:
  SnapshotBuilder() { s_.now = sec(600); }

  SnapshotBuilder& now(TimePoint t) {
    s_.now = t;
    return *this;
  }
  SnapshotBuilder& pool(std::string name, std::string parent = "", std::string_view resource_limits = "") {
    PoolSpec p;
    p.name = std::move(name);
    p.parent = std::move(parent);
    p.resource_limits = limits(resource_limits);
    s_.pools.push_back(p);
    return *this;
  }
  SnapshotBuilder& cls(std::string name, std::string pool, int32_t priority = 0, uint32_t weight = 1,
                       ClassPolicy policy = ClassPolicy::fair_share) {
    ClassSpec c;
    c.name = std::move(name);
    c.pool = std::move(pool);
    c.priority = priority;
    c.weight = weight;
    c.policy = policy;
    s_.classes.push_back(c);
    return *this;
  }
  ClassSpec& last_class() { return s_.classes.back(); }
  SnapshotBuilder& node(uint32_t id, std::string pool, std::string_view capacity) {
    NodeInfo n;
    n.id = NodeId{id};
    n.name = "n" + std::to_string(id);
    n.pool = std::move(pool);
    n.capacity = res(capacity);
    s_.nodes.push_back(n);
    return *this;
  }
  /// Nodes first_id .. first_id + count - 1.
  SnapshotBuilder& nodes(uint32_t first_id, uint32_t count, std::string pool, std::string_view capacity) {
    for (uint32_t i = 0; i < count; ++i) node(first_id + i, pool, capacity);
    return *this;
  }
  SnapshotBuilder& user(std::string name, std::string_view allotment) {
    UserSpec u;
    u.name = std::move(name);
    u.allotment = limits(allotment);
    s_.users.push_back(u);
    return *this;
  }
  JobRef job(uint64_t id, std::string user, std::string cls) {
    JobInfo j;
    j.id = JobId{id};
    j.user = std::move(user);
    j.job_class = std::move(cls);
    j.per_task = res("cpu=1");
    s_.jobs.push_back(j);
    return JobRef(s_.jobs.back());
  }
  JobInfo& job_info(uint64_t id) {
    for (auto& j : s_.jobs)
      if (j.id.value == id) return j;
    throw std::invalid_argument("no job " + std::to_string(id));
  }
  PolicySettings& settings() { return s_.settings; }
  PreemptionSettings& preemption() { return s_.settings.preemption; }
  Snapshot& snapshot() { return s_; }
  const Snapshot& build() const { return s_; }

 private:
  Snapshot s_;
};

/// The partition's pipeline on the snapshot (what `policy eval` runs): the
/// queue's placements into free room, then the policy's cycle.
inline CycleResult run(const Snapshot& s, const PolicyState& state = {}) {
  auto r = evaluate(s, state);
  if (!r) throw std::runtime_error("evaluate failed: " + r.error().to_string());
  return std::move(*r);
}

inline const JobRow& job(const CycleResult& r, uint64_t id) {
  const JobRow* j = r.job(JobId{id});
  if (!j) throw std::invalid_argument("no job row " + std::to_string(id));
  return *j;
}

/// Tasks the plan places for `id` (any stage).
inline uint32_t placed(const CycleResult& r, uint64_t id) {
  uint32_t n = 0;
  for (const auto& p : r.plan.placements)
    if (p.job.value == id) n += p.count;
  return n;
}

/// Allocation classes of a job, in start order.
inline std::vector<AllocationClass> classes_of(const CycleResult& r, uint64_t id) {
  std::vector<AllocationClass> out;
  for (const auto& a : job(r, id).allocations) out.push_back(a.cls);
  return out;
}

inline size_t count_class(const CycleResult& r, uint64_t id, AllocationClass c) {
  size_t n = 0;
  for (const auto& a : job(r, id).allocations) n += a.cls == c;
  return n;
}

}  // namespace claimsched::core::policy::testing
