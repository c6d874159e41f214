// The cluster-wide invariant check over node reports.

#include "core/invariants.hpp"

#include <gtest/gtest.h>

#include <map>

#include "core/node_ledger.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::ClaimBuilder;
using testing::NodeBuilder;
using testing::res;

NodeReport report_of(const NodeLedger& l) {
  NodeReport r;
  r.spec = NodeBuilder(l.id().value).capacity(l.capacity().to_string()).build();
  r.snapshot = l.snapshot();
  r.claims = l.claims();
  r.allocations = l.allocations();
  return r;
}

class InvariantsTest : public ::testing::Test {
 protected:
  InvariantsTest() {
    auto a = ClaimBuilder().node(1).job(1).task_count(2).build();
    EXPECT_EQ(n1.claim(a, TimePoint{0}).outcome, ClaimOutcome::accepted);
    EXPECT_EQ(n1.confirm(testing::confirm_of(a), TimePoint{0}).outcome, ConfirmOutcome::confirmed);
    auto b = ClaimBuilder().id(2).node(2).job(1).tasks({2}).build();
    EXPECT_EQ(n2.claim(b, TimePoint{0}).outcome, ClaimOutcome::accepted);
  }
  NodeLedger n1{NodeId{1}, res("cpu=4")};
  NodeLedger n2{NodeId{2}, res("cpu=2")};
  ClusterTotals totals;
};

TEST_F(InvariantsTest, AHealthyClusterPassesAndIsSummed) {
  auto st = check_cluster_invariants({report_of(n1), report_of(n2)}, totals);
  EXPECT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(totals.capacity, res("cpu=6"));
  EXPECT_EQ(totals.allocated, res("cpu=2"));
  EXPECT_EQ(totals.claimed, res("cpu=1"));
  EXPECT_EQ(totals.allocations, 2u);
  EXPECT_EQ(totals.claimed_tasks, 1u);
  EXPECT_EQ(totals.nodes_over_capacity, 0u);
  EXPECT_EQ(totals.duplicate_tasks, 0u);
}

TEST_F(InvariantsTest, ANodeOverCapacityIsNamed) {
  NodeReport r = report_of(n2);
  Allocation extra;
  extra.task = TaskRef{JobId{9}, 0};
  extra.resources = res("cpu=2");
  r.allocations.push_back(extra);
  r.snapshot.free = r.snapshot.capacity - res("cpu=3");
  auto st = check_cluster_invariants({report_of(n1), r}, totals);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("node node-2 is over capacity"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(totals.nodes_over_capacity, 1u);
}

TEST_F(InvariantsTest, ASnapshotThatDisagreesWithTheHoldingsIsReported) {
  NodeReport r = report_of(n1);
  r.snapshot.free = r.snapshot.capacity;  // claims to be empty
  auto st = check_cluster_invariants({r}, totals);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("reports free"), std::string::npos) << st.error().message;
}

TEST_F(InvariantsTest, ATaskClaimedOnOneNodeAndAllocatedOnAnotherIsAllowed) {
  // A scheduler gave up on a claim (reply timeout) and placed the task again.
  NodeLedger n3(NodeId{3}, res("cpu=2"));
  auto again = ClaimBuilder().id(3).node(3).job(1).tasks({0}).build();
  ASSERT_EQ(n3.claim(again, TimePoint{0}).outcome, ClaimOutcome::accepted);
  auto st = check_cluster_invariants({report_of(n1), report_of(n2), report_of(n3)}, totals);
  EXPECT_TRUE(st) << st.error().message;
  EXPECT_EQ(totals.duplicate_tasks, 0u);
}

TEST_F(InvariantsTest, ATaskAllocatedOnTwoNodesIsReported) {
  NodeLedger n3(NodeId{3}, res("cpu=2"));
  auto twice = ClaimBuilder().id(3).node(3).job(1).tasks({0}).build();  // task 1.0 again
  ASSERT_EQ(n3.claim(twice, TimePoint{0}).outcome, ClaimOutcome::accepted);
  ASSERT_EQ(n3.confirm(testing::confirm_of(twice), TimePoint{0}).outcome,
            ConfirmOutcome::confirmed);
  auto st = check_cluster_invariants({report_of(n1), report_of(n2), report_of(n3)}, totals);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("task 1.0 is allocated more than once"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(totals.duplicate_tasks, 1u);
  EXPECT_EQ(totals.allocations, 3u);  // filled either way
}

JobView pending_view(JobSpec spec, uint32_t pending) {
  JobView v;
  v.spec = std::move(spec);
  v.by_state[static_cast<size_t>(TaskState::pending)] = pending;
  return v;
}

TEST_F(InvariantsTest, APendingTaskThatFitsSomeNodeIsReportedAsStranded) {
  // n1 has cpu=2 free (4 - 2 allocated), n2 cpu=1 (2 - 1 claimed).
  auto nodes = std::vector<NodeReport>{report_of(n1), report_of(n2)};
  auto st = check_no_stranded_tasks(nodes, {pending_view(testing::JobBuilder().id(7).cpu("2").build(), 3)});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("job 7 has 3 pending task(s)"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("fit node node-1"), std::string::npos) << st.error().message;
}

TEST_F(InvariantsTest, APendingTaskThatFitsNoNodeIsFragmentationNotAFault) {
  auto nodes = std::vector<NodeReport>{report_of(n1), report_of(n2)};
  EXPECT_TRUE(check_no_stranded_tasks(nodes, {pending_view(testing::JobBuilder().cpu("3").build(), 1)}));
  // Fits by size, but only on a node of another pool or without the label.
  EXPECT_TRUE(check_no_stranded_tasks(nodes, {pending_view(testing::JobBuilder().pool("gpu").build(), 1)}));
  EXPECT_TRUE(check_no_stranded_tasks(
      nodes, {pending_view(testing::JobBuilder().constraint("ssd").build(), 1)}));
  // Gangs need room for all tasks at once; a placed job has nothing pending.
  EXPECT_TRUE(check_no_stranded_tasks(nodes, {pending_view(testing::JobBuilder().gang().build(), 1)}));
  EXPECT_TRUE(check_no_stranded_tasks(nodes, {pending_view(testing::JobBuilder().build(), 0)}));
}

// -- the policy's invariants (DUCC allotments and reservations) -----------------

class PolicyInvariantsTest : public ::testing::Test {
 protected:
  PolicyInvariantsTest() {
    config.pools = {"p"};
    auto service = ClassConfig::named("service", 10);
    service.policy = ClassPolicy::fixed_share;
    service.allotment.set(dim::cpu, 6000);
    auto whole = ClassConfig::named("whole", 20);
    whole.policy = ClassPolicy::reserve;
    config.classes = {ClassConfig::named("batch"), service, whole};
    config.default_class = "batch";
    config.global_allotment.set(dim::cpu, 8000);
    Limits small;
    small.set(dim::cpu, 2000);
    config.user_allotments = {{"ann", small}};
    add_job(testing::JobBuilder().id(1).user("bob").job_class("service").cpu("2").count(4).build());
    add_job(testing::JobBuilder().id(2).user("bob").job_class("whole").resources("cpu=1,memory=16Gi").build());
    add_job(testing::JobBuilder().id(3).user("bob").cpu("2").count(4).build());  // batch: not counted
  }
  void add_job(JobSpec j) { jobs[j.id.value] = std::move(j); }
  NodeReport node(uint32_t id, std::string_view capacity, std::vector<std::pair<TaskRef, std::string_view>> held) {
    NodeReport r;
    r.spec = testing::NodeBuilder(id).pool("p").capacity(capacity).build();
    r.snapshot.capacity = r.spec.capacity;
    r.snapshot.free = r.spec.capacity;
    for (auto [task, amount] : held) {
      Allocation a;
      a.task = task;
      a.resources = res(amount);
      a.running = true;
      r.allocations.push_back(a);
      r.snapshot.free -= a.resources;
    }
    return r;
  }
  Status check(const std::vector<NodeReport>& nodes, const std::vector<JobView>& queued = {}) {
    return check_policy_invariants(
        nodes, config,
        [&](JobId id) -> const JobSpec* {
          auto it = jobs.find(id.value);
          return it == jobs.end() ? nullptr : &it->second;
        },
        queued, totals);
  }
  SchedulerConfig config;
  std::map<uint64_t, JobSpec> jobs;
  PolicyTotals totals;
};

TEST_F(PolicyInvariantsTest, WorkWithinTheAllotmentsAndAWholeMachinePass) {
  auto st = check({node(1, "cpu=8,memory=16Gi", {{{JobId{1}, 0}, "cpu=2"}, {{JobId{1}, 1}, "cpu=2"},
                                                  {{JobId{3}, 0}, "cpu=2"}, {{JobId{3}, 1}, "cpu=2"}}),
                   node(2, "cpu=4,memory=16Gi", {{{JobId{2}, 0}, "cpu=4,memory=16Gi"}})});
  EXPECT_TRUE(st) << st.error().message;
  EXPECT_EQ(totals.non_preemptible_tasks, 3u);
  EXPECT_EQ(totals.reserved_machines, 1u);
}

TEST_F(PolicyInvariantsTest, AUserOverAClassAllotmentIsNamed) {
  // bob: 8 cpus of service (class allotment 6) ...
  add_job(testing::JobBuilder().id(4).user("bob").job_class("service").cpu("4").build());
  auto st = check({node(1, "cpu=16", {{{JobId{1}, 0}, "cpu=2"}, {{JobId{1}, 1}, "cpu=2"}, {{JobId{4}, 0}, "cpu=4"}})});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("user 'bob' holds cpu=8 in class 'service', over its allotment cpu=6"),
            std::string::npos)
      << st.error().message;
}

TEST_F(PolicyInvariantsTest, AUserOverTheirOwnAllotmentIsNamedAndAReservationCountsItsMachine) {
  // ann may hold 2 cpus in all: her reservation holds a 4-cpu machine.
  add_job(testing::JobBuilder().id(5).user("ann").job_class("whole").resources("cpu=1,memory=16Gi").build());
  auto st = check({node(1, "cpu=4,memory=16Gi", {{{JobId{5}, 0}, "cpu=4,memory=16Gi"}})});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("user 'ann' holds cpu=4,memory=16Gi of non-preemptible work, over the "
                                    "allotment cpu=2"),
            std::string::npos)
      << st.error().message;
}

TEST_F(PolicyInvariantsTest, AReservationThatSharesItsMachineOrHoldsPartOfItIsReported) {
  auto shared = check({node(1, "cpu=8,memory=16Gi", {{{JobId{2}, 0}, "cpu=4,memory=8Gi"}, {{JobId{3}, 0}, "cpu=2"}})});
  ASSERT_FALSE(shared);
  EXPECT_NE(shared.error().message.find("not a whole machine of its own"), std::string::npos)
      << shared.error().message;
  // A whole machine, but with more memory than the request's quantum.
  auto bigger = check({node(1, "cpu=4,memory=64Gi", {{{JobId{2}, 0}, "cpu=4,memory=64Gi"}})});
  ASSERT_FALSE(bigger);
  EXPECT_NE(bigger.error().message.find("does not match within the quantum"), std::string::npos)
      << bigger.error().message;
}

TEST_F(PolicyInvariantsTest, APendingRequestIsRefusedOnlyWhenItWouldExceedAnAllotment) {
  // bob holds 4 cpus of service: 2 more fit the class's 6, 4 more do not.
  auto nodes = std::vector<NodeReport>{node(1, "cpu=16", {{{JobId{1}, 0}, "cpu=2"}, {{JobId{1}, 1}, "cpu=2"}})};
  add_job(testing::JobBuilder().id(6).user("bob").job_class("service").cpu("1").count(2).build());
  add_job(testing::JobBuilder().id(7).user("bob").job_class("service").cpu("2").count(2).build());
  add_job(testing::JobBuilder().id(8).user("bob").cpu("8").count(2).build());  // batch: never refused
  auto st = check(nodes, {pending_view(jobs[6], 2), pending_view(jobs[7], 2), pending_view(jobs[8], 2)});
  EXPECT_TRUE(st) << st.error().message;
  EXPECT_EQ(totals.refused_by_allotment, std::vector<JobId>{JobId{7}});
}

TEST_F(PolicyInvariantsTest, ATaskOfAnUnknownJobIsReported) {
  auto st = check({node(1, "cpu=4", {{{JobId{99}, 0}, "cpu=1"}})});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("of a job nobody submitted"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace claimsched::core
