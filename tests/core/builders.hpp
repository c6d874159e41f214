#pragma once

// Fluent builders for the core's value types, so a test states only what it
// is about: `JobBuilder().count(10).cpu("500m").pool("p").build()`.
// Quantities are written the way operators write them and go through the real
// parser; a typo in a test fails loudly instead of building a zero.

#include <chrono>
#include <initializer_list>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/node.hpp"
#include "core/placement.hpp"
#include "core/protocol.hpp"
#include "core/resources.hpp"

// GoogleTest printers (found by argument-dependent lookup): failures show
// "insufficient", not "1-byte object <03>".
namespace claimsched::core {
inline void PrintTo(ClaimOutcome v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(ConfirmOutcome v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(NodeState v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(TaskState v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(Errc v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(NodeEvent::Kind v, std::ostream* os) { *os << to_string(v); }
inline void PrintTo(PlacementVerdict v, std::ostream* os) {
  *os << (v == PlacementVerdict::fit             ? "fit"
          : v == PlacementVerdict::unschedulable ? "unschedulable"
                                                 : "unresolvable");
}
inline void PrintTo(const Resources& r, std::ostream* os) { *os << '{' << r.to_string() << '}'; }
inline void PrintTo(const TaskRef& t, std::ostream* os) { *os << t.job.value << '.' << t.index; }
inline void PrintTo(const NodeSnapshot& s, std::ostream* os) {
  *os << "{node " << s.node.value << " g" << s.generation << ' ' << to_string(s.state) << " free "
      << s.free.to_string() << " starting " << s.starting << '}';
}
}  // namespace claimsched::core

namespace claimsched::core::testing {

using namespace std::chrono_literals;

/// Parses resources or throws (GoogleTest reports the exception and its text).
inline Resources res(std::string_view text) {
  auto r = Resources::parse(text);
  if (!r) throw std::invalid_argument("bad resources in test: " + r.error().to_string());
  return *r;
}

/// Parses a lock declaration ("node=exclusive:n1 instance=shared:i") or throws.
inline LockDeclaration locks(std::string_view text) {
  auto d = parse_lock_declaration(text);
  if (!d) throw std::invalid_argument("bad locks in test: " + d.error().to_string());
  return *d;
}

inline int64_t qty(DimensionId d, std::string_view text) {
  auto q = parse_quantity(d, text);
  if (!q) throw std::invalid_argument("bad quantity in test: " + q.error().to_string());
  return *q;
}

/// Milliseconds since the test's time origin.
inline TimePoint ms(int64_t n) { return std::chrono::milliseconds(n); }

inline std::vector<TaskIndex> task_range(TaskIndex from, TaskIndex to) {
  std::vector<TaskIndex> out(to - from);
  std::iota(out.begin(), out.end(), from);
  return out;
}

class NodeBuilder {
 public:
  explicit NodeBuilder(uint32_t id = 1) {
    spec_.id = NodeId{id};
    spec_.pool = "default";
    spec_.capacity = res("cpu=4,memory=8Gi");
  }
  NodeBuilder& id(uint32_t v) {
    spec_.id = NodeId{v};
    return *this;
  }
  NodeBuilder& name(std::string v) {
    spec_.name = std::move(v);
    return *this;
  }
  NodeBuilder& pool(std::string v) {
    spec_.pool = std::move(v);
    return *this;
  }
  /// Replaces the whole capacity: `capacity("cpu=8,memory=16Gi,gpu=2")`.
  NodeBuilder& capacity(std::string_view text) {
    spec_.capacity = res(text);
    return *this;
  }
  NodeBuilder& cpu(std::string_view q) {
    spec_.capacity.set(dim::cpu, qty(dim::cpu, q));
    return *this;
  }
  NodeBuilder& memory(std::string_view q) {
    spec_.capacity.set(dim::memory, qty(dim::memory, q));
    return *this;
  }
  NodeBuilder& gpu(int64_t n) {
    spec_.capacity.set(dim::gpu, n);
    return *this;
  }
  NodeBuilder& label(std::string v) {
    spec_.labels.push_back(std::move(v));
    return *this;
  }
  NodeBuilder& max_starting(uint32_t n) {
    spec_.max_starting = n;
    return *this;
  }
  NodeSpec build() const {
    NodeSpec s = spec_;
    if (s.name.empty()) s.name = "node-" + std::to_string(s.id.value);
    return s;
  }

 private:
  NodeSpec spec_;
};

/// Defaults: job 1 of user "alice" in pool "default", one task of cpu=1.
class JobBuilder {
 public:
  explicit JobBuilder(uint64_t id = 1) {
    job_.id = JobId{id};
    job_.user = "alice";
    job_.pool = "default";
    job_.count = 1;
    job_.per_task = res("cpu=1");
  }
  JobBuilder& id(uint64_t v) {
    job_.id = JobId{v};
    return *this;
  }
  JobBuilder& name(std::string v) {
    job_.name = std::move(v);
    return *this;
  }
  JobBuilder& user(std::string v) {
    job_.user = std::move(v);
    return *this;
  }
  JobBuilder& job_class(std::string v) {
    job_.job_class = std::move(v);
    return *this;
  }
  JobBuilder& pool(std::string v) {
    job_.pool = std::move(v);
    return *this;
  }
  JobBuilder& count(uint32_t n) {
    job_.count = n;
    return *this;
  }
  /// Replaces all per-task resources: `resources("cpu=500m,memory=1Gi")`.
  JobBuilder& resources(std::string_view text) {
    job_.per_task = res(text);
    return *this;
  }
  JobBuilder& resources(const Resources& r) {
    job_.per_task = r;
    return *this;
  }
  JobBuilder& cpu(std::string_view q) {
    job_.per_task.set(dim::cpu, qty(dim::cpu, q));
    return *this;
  }
  JobBuilder& memory(std::string_view q) {
    job_.per_task.set(dim::memory, qty(dim::memory, q));
    return *this;
  }
  JobBuilder& gpu(int64_t n) {
    job_.per_task.set(dim::gpu, n);
    return *this;
  }
  JobBuilder& constraint(std::string selector) {
    job_.constraints.push_back(std::move(selector));
    return *this;
  }
  JobBuilder& gang(bool v = true) {
    job_.gang = v;
    return *this;
  }
  JobBuilder& runtime(Duration d) {
    job_.simulated_runtime = d;
    return *this;
  }
  JobBuilder& max_run_time(Duration d) {
    job_.max_run_time = d;
    return *this;
  }
  JobBuilder& submitted(TimePoint t) {
    job_.submit_time = t;
    return *this;
  }
  JobBuilder& max_lost_retries(uint32_t n) {
    job_.max_lost_retries = n;
    return *this;
  }
  JobSpec build() const { return job_; }

 private:
  JobSpec job_;
};

/// Defaults: claim 1 from partition 1 at epoch 1 on node 1 for task 0 of job 1, cpu=1.
class ClaimBuilder {
 public:
  ClaimBuilder() {
    c_.claim_id = ClaimId{1};
    c_.partition = PartitionId{1};
    c_.epoch = 1;
    c_.node = NodeId{1};
    c_.job = JobId{1};
    c_.per_task = res("cpu=1");
    c_.tasks = {0};
  }
  ClaimBuilder& id(uint64_t v) {
    c_.claim_id = ClaimId{v};
    return *this;
  }
  ClaimBuilder& partition(uint32_t v) {
    c_.partition = PartitionId{v};
    return *this;
  }
  ClaimBuilder& epoch(Epoch e) {
    c_.epoch = e;
    return *this;
  }
  ClaimBuilder& node(uint32_t v) {
    c_.node = NodeId{v};
    return *this;
  }
  ClaimBuilder& expect(Generation g) {
    c_.expected_generation = g;
    return *this;
  }
  ClaimBuilder& job(uint64_t v) {
    c_.job = JobId{v};
    return *this;
  }
  ClaimBuilder& per_task(std::string_view text) {
    c_.per_task = res(text);
    return *this;
  }
  ClaimBuilder& tasks(std::vector<TaskIndex> t) {
    c_.tasks = std::move(t);
    return *this;
  }
  /// Tasks 0 .. n-1.
  ClaimBuilder& task_count(uint32_t n) {
    c_.tasks = task_range(0, n);
    return *this;
  }
  ClaimBuilder& runtime(Duration d) {
    c_.simulated_runtime = d;
    return *this;
  }
  ClaimRequest build() const { return c_; }

 private:
  ClaimRequest c_;
};

inline ConfirmRequest confirm_of(const ClaimRequest& c) {
  ConfirmRequest r;
  r.claim_id = c.claim_id;
  r.partition = c.partition;
  r.epoch = c.epoch;
  r.node = c.node;
  return r;
}

/// Cancels the live claim `c` (not its allocations).
inline ReleaseRequest release_claim(const ClaimRequest& c) {
  ReleaseRequest r;
  r.partition = c.partition;
  r.epoch = c.epoch;
  r.node = c.node;
  r.claim_id = c.claim_id;
  r.job = c.job;
  return r;
}

/// Frees the allocations of `tasks` (default: all of the claim's tasks).
inline ReleaseRequest release_tasks(const ClaimRequest& c, std::vector<TaskIndex> tasks = {}) {
  ReleaseRequest r;
  r.partition = c.partition;
  r.epoch = c.epoch;
  r.node = c.node;
  r.job = c.job;
  r.tasks = tasks.empty() ? c.tasks : std::move(tasks);
  return r;
}

}  // namespace claimsched::core::testing
