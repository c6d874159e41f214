#pragma once

// The fixture of the Scheduler's scenario tests (scheduler_test.cpp,
// scheduler_rules_test.cpp): one partition's scheduler over a simulated
// cluster of real NodeLedgers (sim_cluster.hpp), every invariant checked
// after each run.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core::scheduler_fixture {

using testing::ClaimBuilder;
using testing::JobBuilder;
using testing::ms;
using testing::NodeBuilder;
using testing::res;
using testing::SimCluster;

inline constexpr Duration kTtl = std::chrono::seconds(1);
inline constexpr Duration kReplyTimeout = std::chrono::milliseconds(100);

inline LedgerConfig ledger_config() {
  LedgerConfig c;
  c.claim_ttl = kTtl;
  return c;
}

inline SchedulerConfig scheduler_config() {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.epoch = 1;
  c.pools = {"default"};
  c.reply_timeout = kReplyTimeout;
  c.unpark_interval = ms(5);
  return c;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void add_nodes(int n, std::string_view capacity = "cpu=4,memory=8Gi") {
    for (int i = 0; i < n; ++i)
      cluster.add_node(
          NodeBuilder(static_cast<uint32_t>(cluster.node_count() + 1)).capacity(capacity).build());
  }
  size_t start(SchedulerConfig config = scheduler_config()) {
    s = cluster.add_scheduler(std::move(config));
    return s;
  }
  Scheduler& sched() { return cluster.scheduler(s); }
  const JobRecord& job(uint64_t id) {
    const JobRecord* j = sched().job(JobId{id});
    if (!j) throw std::logic_error("no job " + std::to_string(id));
    return *j;
  }
  std::vector<uint32_t> nodes_of(uint64_t id) {
    std::vector<uint32_t> out;
    for (const auto& t : job(id).tasks) out.push_back(t.node ? *t.node + 1 : 0);
    return out;
  }
  /// Waiting for capacity or backing off (not in line).
  static bool parked(const JobRecord& j) {
    return j.queue.state == QueueState::waiting_for_capacity || j.queue.state == QueueState::backing_off;
  }
  std::string reason(uint64_t id) {
    const JobNotes* n = sched().notes(JobId{id});
    return n ? n->reason : std::string();
  }
  /// Allocations of `job` on node n.
  size_t allocated_on(size_t n, uint64_t id) {
    size_t k = 0;
    for (const auto& a : cluster.ledger(n).allocations()) k += a.task.job == JobId{id};
    return k;
  }
  size_t claimed_on(size_t n, uint64_t id) {
    size_t k = 0;
    for (const auto& c : cluster.ledger(n).claims())
      if (c.job == JobId{id}) k += c.tasks.size();
    return k;
  }
  /// Runs the network to quiet and checks every invariant.
  void run() {
    cluster.run();
    EXPECT_EQ(cluster.check_all(), "");
  }
  void TearDown() override {
    EXPECT_EQ(cluster.check_all(), "");
    for (const auto& v : cluster.violations()) ADD_FAILURE() << v;
  }

  SimCluster cluster{ledger_config()};
  size_t s = 0;
};

}  // namespace claimsched::core::scheduler_fixture
