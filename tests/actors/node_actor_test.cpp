// A node actor that runs real tasks (through a TaskExecutor), step by step on
// CAF's test coordinator: what it does with an allocation it cannot run, how
// it reports the real end of a task it was told to stop, its output, drain.

#include <map>

#include "actors/node_actor.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using actors::node_actor;
using core::Resources;

/// Records what the node asks of it; tasks "run" until the test ends them.
struct FakeExecutor : actors::TaskExecutor {
  std::vector<core::TaskRef> started;
  std::vector<core::TaskRef> killed;
  std::map<core::TaskRef, bool> adoptable;

  core::Status start(const caf::actor&, const core::NodeSpec&, const core::Allocation& a) override {
    started.push_back(a.task);
    return core::Status::ok();
  }
  bool kill(core::TaskRef task, const std::string&) override {
    killed.push_back(task);
    return true;
  }
  bool adopt(const caf::actor&, const core::Allocation& a) override { return adoptable[a.task]; }
  core::Expected<core::LogChunk> read_output(const core::LogRequest& r) const override {
    core::LogChunk c;
    c.data = "hello from " + std::to_string(r.task.index) + "\n";
    c.size = c.data.size();
    return c;
  }
};

core::ClaimRequest claim(uint64_t id, uint64_t job, std::vector<core::TaskIndex> tasks, bool with_command) {
  core::ClaimRequest c;
  c.claim_id = core::ClaimId{id};
  c.partition = core::PartitionId{1};
  c.epoch = 1;
  c.node = core::NodeId{1};
  c.job = core::JobId{job};
  c.per_task = Resources::cpu_memory(1000, 0);
  c.tasks = std::move(tasks);
  if (with_command) c.launch = core::LaunchRef(core::TaskLaunch{{"/bin/true"}, {}, "", {}, ""});
  return c;
}

core::ConfirmRequest confirm(uint64_t id) {
  core::ConfirmRequest r;
  r.claim_id = core::ClaimId{id};
  r.partition = core::PartitionId{1};
  r.epoch = 1;
  r.node = core::NodeId{1};
  return r;
}

core::ReleaseRequest release(uint64_t job, core::TaskIndex task) {
  core::ReleaseRequest r;
  r.partition = core::PartitionId{1};
  r.epoch = 1;
  r.node = core::NodeId{1};
  r.job = core::JobId{job};
  r.tasks = {task};
  return r;
}

actors::TaskEnded ended(core::TaskState state, int32_t exit_code, core::TaskEnd end, uint64_t claim = 0) {
  actors::TaskEnded e;
  e.task = core::TaskRef{core::JobId{10}, 0};
  e.state = state;
  e.exit_code = exit_code;
  e.end = end;
  e.claim = core::ClaimId{claim};
  return e;
}

class NodeActorTest : public ActorTest {
 protected:
  NodeActorTest() {
    core::NodeSpec spec;
    spec.id = core::NodeId{1};
    spec.name = "n1";
    spec.pool = "p";
    spec.capacity = Resources::cpu_memory(4000, int64_t{8} << 30);
    actors::NodeActorConfig nc;
    nc.spec = spec;
    auto host = std::make_shared<actors::NodeHost>();
    host->executor = executor;
    nc.host = host;
    node = track(actors::spawn_node(sys(), std::move(nc)));
    listener = spawn(recording_client, log);
    EXPECT_TRUE(ask<core::NodeReport>(node, actors::subscribe_atom::value,
                                      caf::actor_cast<actors::node_listener_actor>(listener)));
  }

  std::vector<core::NodeEvent> events(core::NodeEvent::Kind kind) {
    std::vector<core::NodeEvent> out;
    for (const auto& d : log->deltas)
      for (const auto& e : d.events)
        if (e.kind == kind) out.push_back(e);
    return out;
  }

  std::shared_ptr<FakeExecutor> executor = std::make_shared<FakeExecutor>();
  std::shared_ptr<Recorder> log = std::make_shared<Recorder>();
  node_actor node;
  actors::claim_client_actor listener;
};

// Bug 1 of issue 13: an allocation without a command was skipped by the
// node actor, so its task stayed `running` forever holding its slot.
TEST_F(NodeActorTest, AnAllocationWithoutACommandEndsAsSpawnFailedAndFreesItsSlot) {
  caf::anon_send(node, claim(1, 10, {0}, false));
  caf::anon_send(node, confirm(1));
  run();
  EXPECT_TRUE(executor->started.empty());
  auto ended = events(core::NodeEvent::Kind::task_finished);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].final_state, core::TaskState::failed);
  EXPECT_EQ(ended[0].end, core::TaskEnd::spawn_failed(core::SpawnStage::no_command, 0));
  auto r = ask<core::NodeReport>(node, actors::report_atom::value);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->allocations.empty()) << "the slot is free again";
}

TEST_F(NodeActorTest, AReleasedTasksRealEndIsReportedForTheRecord) {
  caf::anon_send(node, claim(1, 10, {0}, true));
  caf::anon_send(node, confirm(1));
  run();
  ASSERT_EQ(executor->started.size(), 1u);
  caf::anon_send(node, release(10, 0));
  run();
  ASSERT_EQ(executor->killed.size(), 1u);
  // It trapped SIGTERM and exited 1: the executor reports that end.
  auto e = ended(core::TaskState::lost, 1, core::TaskEnd::observed(core::EndReason::cancelled, 1, 0));
  caf::anon_send(node, e);
  run();
  auto exited = events(core::NodeEvent::Kind::task_exited);
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].partition, core::PartitionId{1});
  EXPECT_EQ(exited[0].end.exit_code, 1);
  EXPECT_EQ(log->deltas.back().snapshot.generation, 0u) << "not a change of the node";
  // Once only.
  caf::anon_send(node, e);
  run();
  EXPECT_EQ(events(core::NodeEvent::Kind::task_exited).size(), 1u);
}

// Seen in ClusterTest.AnAgentThatComesBackAfterItsTasksWereRequeuedHasThemKilled:
// a task released on a node was placed on it again before its old process's
// end arrived, and that end ended the new run (which then ran a third time).
TEST_F(NodeActorTest, ALateEndOfAReleasedRunDoesNotEndTheTasksNextRunThere) {
  caf::anon_send(node, claim(1, 10, {0}, true));
  caf::anon_send(node, confirm(1));
  run();
  caf::anon_send(node, release(10, 0));
  caf::anon_send(node, claim(2, 10, {0}, true));
  caf::anon_send(node, confirm(2));
  run();
  ASSERT_EQ(executor->started.size(), 2u);
  caf::anon_send(node, ended(core::TaskState::lost, 143, core::TaskEnd::observed(core::EndReason::cancelled, -1, 15), 1));
  run();
  EXPECT_TRUE(events(core::NodeEvent::Kind::task_finished).empty()) << "the new run goes on";
  ASSERT_EQ(events(core::NodeEvent::Kind::task_exited).size(), 1u);
  auto r = ask<core::NodeReport>(node, actors::report_atom::value);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->allocations.size(), 1u);
  caf::anon_send(node, ended(core::TaskState::succeeded, 0, core::TaskEnd::exited(0), 2));
  run();
  ASSERT_EQ(events(core::NodeEvent::Kind::task_finished).size(), 1u);
  EXPECT_EQ(events(core::NodeEvent::Kind::task_finished)[0].final_state, core::TaskState::succeeded);
}

TEST_F(NodeActorTest, OutputIsReadThroughTheExecutorWithTheTasksState) {
  caf::anon_send(node, claim(1, 10, {0}, true));
  caf::anon_send(node, confirm(1));
  run();
  core::LogRequest request;
  request.task = core::TaskRef{core::JobId{10}, 0};
  auto chunk = ask<core::LogChunk>(node, actors::logs_atom::value, request);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->data, "hello from 0\n");
  EXPECT_EQ(chunk->node, "n1");
  EXPECT_TRUE(chunk->running);
}

TEST_F(NodeActorTest, ADrainedNodeTakesNoNewClaims) {
  auto snap = ask<core::NodeSnapshot>(node, actors::drain_atom::value);
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->state, core::NodeState::draining);
  caf::send_as(listener, node, claim(1, 10, {0}, true));
  run();
  ASSERT_EQ(log->claims.size(), 1u);
  EXPECT_EQ(log->claims[0].outcome, core::ClaimOutcome::not_schedulable);
}

TEST_F(NodeActorTest, AnOperatorDrainsAndUndrainsANode) {
  auto drained = ask<core::NodeSnapshot>(node, actors::drain_atom::value, true);
  ASSERT_TRUE(drained);
  EXPECT_EQ(drained->state, core::NodeState::draining);
  auto undrained = ask<core::NodeSnapshot>(node, actors::drain_atom::value, false);
  ASSERT_TRUE(undrained);
  EXPECT_EQ(undrained->state, core::NodeState::up);
  EXPECT_GT(undrained->generation, drained->generation);
  caf::send_as(listener, node, claim(1, 10, {0}, true));
  run();
  ASSERT_EQ(log->claims.size(), 1u);
  EXPECT_EQ(log->claims[0].outcome, core::ClaimOutcome::accepted);
}

// Every node actor of a process runs the same behavior, whose handlers find
// their actor through the one whose turn it is (node_actor.cpp): each message
// must still reach the node it was sent to, in whatever order the nodes run.
class SharedBehaviorTest : public ActorTest {};

TEST_F(SharedBehaviorTest, EachMessageReachesTheNodeItWasSentTo) {
  std::vector<node_actor> nodes;
  auto capacity = [](uint32_t id) { return Resources::cpu_memory(int64_t{2000} * id, 0); };
  for (uint32_t id = 1; id <= 3; ++id) {
    actors::NodeActorConfig nc;
    nc.spec.id = core::NodeId{id};
    nc.spec.name = "n" + std::to_string(id);
    nc.spec.pool = "p";
    nc.spec.capacity = capacity(id);
    nodes.push_back(track(actors::spawn_node(sys(), std::move(nc))));
  }
  auto log = std::make_shared<Recorder>();
  auto claimant = spawn(recording_client, log);
  run();
  for (uint32_t id = 1; id <= 3; ++id) {
    auto c = claim(id, 10 + id, {0}, false);
    c.node = core::NodeId{id};
    caf::send_as(claimant, nodes[id - 1], c);
  }
  // Not in the order sent.
  step(nodes[2]);
  step(nodes[0]);
  step(nodes[1]);
  run();
  ASSERT_EQ(log->claims.size(), 3u);
  for (const auto& reply : log->claims) {
    EXPECT_EQ(reply.outcome, core::ClaimOutcome::accepted);
    EXPECT_EQ(reply.claim_id.value, reply.snapshot.node.value) << "answered by the node it was sent to";
  }
  for (uint32_t id = 1; id <= 3; ++id) {
    auto report = ask<core::NodeReport>(nodes[id - 1], actors::report_atom::value);
    ASSERT_TRUE(report);
    EXPECT_EQ(report->spec.id, core::NodeId{id});
    EXPECT_EQ(report->spec.name, "n" + std::to_string(id));
    EXPECT_EQ(report->spec.capacity, capacity(id));
    ASSERT_EQ(report->claims.size(), 1u);
    EXPECT_EQ(report->claims[0].job, core::JobId{10 + id});
    EXPECT_EQ(report->snapshot.free, capacity(id) - Resources::cpu_memory(1000, 0));
  }
}

}  // namespace
}  // namespace claimsched::testing
