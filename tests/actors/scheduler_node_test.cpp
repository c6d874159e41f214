// The scheduler and node actors talking the claim protocol, step by step on
// CAF's test coordinator: accept, reject with snapshot, retry, expiry, fencing,
// reply timeouts, routing.

#include "actors/node_actor.hpp"
#include "actors/router_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using actors::node_actor;
using actors::scheduler_actor;
using core::ClaimOutcome;
using core::Resources;

constexpr int64_t kGi = int64_t{1} << 30;

core::NodeSpec node_spec(uint32_t id, int64_t millicores, std::string pool = "p") {
  core::NodeSpec s;
  s.id = core::NodeId{id};
  s.name = "node-" + std::to_string(id);
  s.pool = std::move(pool);
  s.capacity = Resources::cpu_memory(millicores, 8 * kGi);
  return s;
}

core::JobSpec job(uint64_t id, uint32_t count, int64_t millicores, std::string pool = "p") {
  core::JobSpec j;
  j.id = core::JobId{id};
  j.user = "alice";
  j.pool = std::move(pool);
  j.count = count;
  j.per_task = Resources::cpu_memory(millicores, kGi);
  return j;
}

core::ClaimRequest raw_claim(uint64_t claim, uint32_t partition, core::Epoch epoch, uint32_t node,
                             uint64_t job, int64_t millicores, std::vector<core::TaskIndex> tasks) {
  core::ClaimRequest c;
  c.claim_id = core::ClaimId{claim};
  c.partition = core::PartitionId{partition};
  c.epoch = epoch;
  c.node = core::NodeId{node};
  c.job = core::JobId{job};
  c.per_task = Resources::cpu_memory(millicores, 0);
  c.tasks = std::move(tasks);
  return c;
}

actors::SchedulerActorConfig scheduler_config(core::Duration reply_timeout = 5s) {
  actors::SchedulerActorConfig c;
  c.scheduler.partition = core::PartitionId{1};
  c.scheduler.epoch = 1;
  c.scheduler.pools = {"p"};
  c.scheduler.reply_timeout = reply_timeout;
  c.tick_interval = 100ms;
  c.start_immediately = true;
  return c;
}

class SchedulerNodeTest : public ActorTest {
 protected:
  node_actor add_node(scheduler_actor s, core::NodeSpec spec, core::Duration ttl = 10s) {
    core::LedgerConfig ledger;
    ledger.claim_ttl = ttl;
    actors::NodeActorConfig nc;
    nc.spec = std::move(spec);
    nc.ledger = ledger;
    auto n = track(actors::spawn_node(sys(), std::move(nc)));
    if (s) caf::anon_send(s, actors::register_atom::value, n);
    run();
    return n;
  }

  core::NodeReport report(node_actor n) {
    auto r = ask<core::NodeReport>(n, actors::report_atom::value);
    EXPECT_TRUE(r.has_value());
    return r.value_or(core::NodeReport{});
  }

  actors::SchedulerStatus status(scheduler_actor s) {
    auto r = ask<actors::SchedulerStatus>(s, actors::audit_atom::value);
    EXPECT_TRUE(r.has_value());
    return r.value_or(actors::SchedulerStatus{});
  }
};

TEST_F(SchedulerNodeTest, AcceptedClaimIsConfirmedAndTasksRun) {
  auto s = spawn(actors::scheduler, scheduler_config());
  auto n = add_node(s, node_spec(1, 4000));

  auto id = ask<core::JobId>(s, job(7, 3, 1000));
  ASSERT_TRUE(id.has_value()) << sys().render(last_error);
  EXPECT_EQ(id->value, 7u);

  auto r = report(n);
  ASSERT_EQ(r.allocations.size(), 3u);
  EXPECT_TRUE(r.claims.empty());
  EXPECT_EQ(r.snapshot.free[core::dim::cpu], 1000);
  for (const auto& a : r.allocations) EXPECT_EQ(a.task.job.value, 7u);

  auto st = status(s);
  EXPECT_EQ(st.stats.placements, 3u);
  EXPECT_EQ(st.stats.claims_sent, 1u) << "three tasks for one node travel in one claim";
  EXPECT_EQ(st.stats.rejected(), 0u);
  EXPECT_EQ(st.running_tasks, 3u);
  EXPECT_TRUE(st.accounting_error.empty()) << st.accounting_error;
}

TEST_F(SchedulerNodeTest, RejectCarriesSnapshotAndTheSchedulerRetriesElsewhere) {
  auto s = spawn(actors::scheduler, scheduler_config());
  auto a = add_node(s, node_spec(1, 2000));
  auto b = add_node(s, node_spec(2, 2000));

  // Another partition's claim for all of node 1 is on its way to the node...
  caf::anon_send(a, raw_claim(999, 2, 1, 1, 500, 2000, {0}));
  // ...when the job reaches the scheduler, whose view of node 1 is still
  // empty: it places both tasks there (fill-first), and its claim queues
  // behind the other one.
  caf::anon_send(s, job(1, 2, 1000));
  step(s);
  run();  // node 1 rejects with its snapshot; the scheduler retries on node 2

  auto ra = report(a);
  auto rb = report(b);
  EXPECT_TRUE(ra.allocations.empty());
  ASSERT_EQ(ra.claims.size(), 1u) << "only the other partition's claim";
  EXPECT_EQ(ra.claims[0].job.value, 500u);
  EXPECT_EQ(rb.allocations.size(), 2u);

  auto st = status(s);
  EXPECT_EQ(st.stats.rejected_insufficient, 1u);
  EXPECT_EQ(st.stats.claims_sent, 2u);
  EXPECT_EQ(st.stats.placements, 2u);
  EXPECT_TRUE(st.accounting_error.empty()) << st.accounting_error;
}

TEST_F(SchedulerNodeTest, AJobAndANodesNewsThatArriveTogetherArePlacedInOnePassThatKnowsTheNews) {
  auto s = spawn(actors::scheduler, scheduler_config());
  auto a = add_node(s, node_spec(1, 2000));
  auto b = add_node(s, node_spec(2, 2000));

  // The job reaches the scheduler while its view of node 1 is still empty,
  // and the node's delta (another partition took all of it) queues right
  // behind the job: the pass waits for the end of the burst, so it places
  // on node 2 at once, with no claim that node 1 must refuse.
  caf::anon_send(s, job(1, 2, 1000));
  caf::anon_send(a, raw_claim(999, 2, 1, 1, 500, 2000, {0}));
  step(a);
  run();

  EXPECT_TRUE(report(a).allocations.empty());
  EXPECT_EQ(report(b).allocations.size(), 2u);
  auto st = status(s);
  EXPECT_EQ(st.stats.rejected(), 0u);
  EXPECT_EQ(st.stats.claims_sent, 1u);
  EXPECT_EQ(st.stats.placements, 2u);
}

TEST_F(SchedulerNodeTest, RejectedClaimAnswersWithTheNodesSnapshot) {
  auto n = add_node(scheduler_actor{}, node_spec(1, 2000));
  auto log = std::make_shared<Recorder>();
  auto client = spawn(recording_client, log);

  caf::anon_send(n, raw_claim(1, 1, 1, 1, 10, 1500, {0}));  // takes 1.5 cores
  run();
  // A claim that does not fit, sent by our client so the reply comes back.
  caf::send_as(client, n, raw_claim(2, 1, 1, 1, 11, 1000, {0}));
  run();
  ASSERT_EQ(log->claims.size(), 1u);
  EXPECT_EQ(log->claims[0].outcome, ClaimOutcome::insufficient);
  EXPECT_EQ(log->claims[0].snapshot.generation, 1u);
  EXPECT_EQ(log->claims[0].snapshot.free[core::dim::cpu], 500);

  // Strict CAS against a generation the node has left.
  auto strict = raw_claim(3, 1, 1, 1, 12, 100, {0});
  strict.expected_generation = 0;
  caf::send_as(client, n, strict);
  run();
  ASSERT_EQ(log->claims.size(), 2u);
  EXPECT_EQ(log->claims[1].outcome, ClaimOutcome::conflict);
  EXPECT_EQ(log->claims[1].snapshot.generation, 1u);
}

TEST_F(SchedulerNodeTest, UnconfirmedClaimExpiresAndSubscribersHearOfIt) {
  auto n = add_node(scheduler_actor{}, node_spec(1, 4000), 1s);
  auto log = std::make_shared<Recorder>();
  auto listener = spawn(recording_client, log);
  auto subscribed = ask<core::NodeReport>(n, actors::subscribe_atom::value,
                                          caf::actor_cast<actors::node_listener_actor>(listener));
  ASSERT_TRUE(subscribed.has_value());

  caf::anon_send(n, raw_claim(1, 1, 1, 1, 10, 1000, {0, 1, 2}));
  run();
  EXPECT_EQ(report(n).claims.size(), 1u);
  ASSERT_EQ(log->deltas.size(), 1u) << "the claim is a change the subscriber hears of";
  EXPECT_EQ(log->deltas[0].snapshot.free[core::dim::cpu], 1000);

  advance(999ms);
  EXPECT_EQ(report(n).claims.size(), 1u) << "not yet expired";
  advance(2ms);
  auto r = report(n);
  EXPECT_TRUE(r.claims.empty());
  EXPECT_EQ(r.snapshot.free[core::dim::cpu], 4000);
  ASSERT_EQ(log->deltas.size(), 2u);
  ASSERT_EQ(log->deltas[1].events.size(), 1u);
  EXPECT_EQ(log->deltas[1].events[0].kind, core::NodeEvent::Kind::claim_expired);
  EXPECT_EQ(log->deltas[1].events[0].claim_id.value, 1u);
  EXPECT_EQ(log->deltas[1].snapshot.generation, log->deltas[0].snapshot.generation + 1);
}

TEST_F(SchedulerNodeTest, AnOlderEpochIsFencedOff) {
  auto n = add_node(scheduler_actor{}, node_spec(1, 4000));
  auto log = std::make_shared<Recorder>();
  auto client = spawn(recording_client, log);
  caf::send_as(client, n, raw_claim(1, 1, 2, 1, 10, 1000, {0}));
  caf::send_as(client, n, raw_claim(2, 1, 1, 1, 11, 1000, {0}));
  run();
  ASSERT_EQ(log->claims.size(), 2u);
  EXPECT_EQ(log->claims[0].outcome, ClaimOutcome::accepted);
  EXPECT_EQ(log->claims[1].outcome, ClaimOutcome::stale_epoch);
  EXPECT_EQ(report(n).claims.size(), 1u);
}

TEST_F(SchedulerNodeTest, ASchedulerFromAnOlderEpochStopsPlacing) {
  auto s = spawn(actors::scheduler, scheduler_config());  // partition 1, epoch 1
  auto n = add_node(s, node_spec(1, 4000));
  // A new owner of partition 1 (epoch 5) has already claimed on the node.
  caf::anon_send(n, raw_claim(77, 1, 5, 1, 900, 1000, {0}));
  run();
  auto id = ask<core::JobId>(s, job(1, 1, 1000));
  ASSERT_TRUE(id.has_value());
  auto st = status(s);
  EXPECT_TRUE(st.fenced);
  EXPECT_EQ(st.stats.rejected_stale_epoch, 1u);
  EXPECT_EQ(st.stats.placements, 0u);
  auto r = report(n);
  EXPECT_TRUE(r.allocations.empty());
  EXPECT_EQ(r.claims.size(), 1u);
}

/// A node that answers its first `lost_answers` subscriptions never (their
/// answers lost on the way) and the later ones at once; then never answers
/// anything else.
node_actor::behavior_type silent_node_losing(node_actor::pointer self, core::NodeSpec spec, uint32_t lost_answers) {
  auto held = std::make_shared<std::vector<caf::typed_response_promise<core::NodeReport>>>();
  return {
      [](core::ClaimRequest&) {},
      [](core::ConfirmRequest&) {},
      [](core::ReleaseRequest&) {},
      [=](actors::subscribe_atom, actors::node_listener_actor) -> caf::result<core::NodeReport> {
        if (held->size() < lost_answers) {
          held->push_back(self->make_response_promise<core::NodeReport>());
          return held->back();
        }
        core::NodeReport r;
        r.spec = spec;
        r.snapshot.node = spec.id;
        r.snapshot.capacity = spec.capacity;
        r.snapshot.free = spec.capacity;
        return r;
      },
      [](actors::snapshot_atom) {},
      [=](actors::report_atom) { return core::NodeReport{}; },
      [](actors::logs_atom, const core::LogRequest&) { return core::LogChunk{}; },
      [](actors::drain_atom) { return core::NodeSnapshot{}; },
      [](actors::drain_atom, bool) { return core::NodeSnapshot{}; },
      [](actors::tick_atom) {},
      [](actors::TaskEnded&) {},
      [](actors::TasksEnded&) {},
  };
}

/// A node that registers and then never answers.
node_actor::behavior_type silent_node(node_actor::pointer self, core::NodeSpec spec) {
  return silent_node_losing(self, std::move(spec), 0);
}

TEST_F(SchedulerNodeTest, UnansweredClaimsTimeOutAndTheTasksGoBackToTheQueue) {
  auto s = spawn(actors::scheduler, scheduler_config(2s));
  auto n = spawn(silent_node, node_spec(1, 4000));
  caf::anon_send(s, actors::register_atom::value, n);
  run();
  ASSERT_TRUE(ask<core::JobId>(s, job(1, 2, 1000)).has_value());
  auto before = status(s);
  EXPECT_EQ(before.claims_in_flight, 1u);
  EXPECT_EQ(before.pending_tasks, 0u);

  advance(2100ms);
  auto after = status(s);
  EXPECT_GE(after.stats.claim_timeouts, 1u);
  EXPECT_EQ(after.stats.placements, 0u);
  EXPECT_TRUE(after.accounting_error.empty()) << after.accounting_error;
}

TEST_F(SchedulerNodeTest, RouterSendsJobsToThePoolOwnerAndRejectsUnknownPools) {
  auto s = spawn(actors::scheduler, scheduler_config());
  add_node(s, node_spec(1, 4000));
  actors::RouterConfig routes;
  routes.pools["p"].push_back(s);
  auto r = spawn(actors::router, routes);

  auto ok = ask<core::JobId>(r, job(5, 1, 1000));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->value, 5u);

  auto bad = ask<core::JobId>(r, job(6, 1, 1000, "gpu-pool"));
  EXPECT_FALSE(bad.has_value());
  auto err = messages::from_caf_error(last_error);
  EXPECT_EQ(err.code, core::Errc::unknown_name);
  EXPECT_NE(err.message.find("gpu-pool"), std::string::npos) << err.message;
  EXPECT_NE(err.message.find("known: p"), std::string::npos) << err.message;

  auto invalid = job(8, 0, 1000);
  EXPECT_FALSE(ask<core::JobId>(r, invalid).has_value());
  EXPECT_NE(messages::from_caf_error(last_error).message.find("count"), std::string::npos);
}

TEST_F(SchedulerNodeTest, ANodeWhoseSubscriptionAnswerIsLostIsAskedAgainAndUsed) {
  auto config = scheduler_config();
  config.subscribe_timeout = 1s;
  auto s = spawn(actors::scheduler, config);
  auto n = spawn(silent_node_losing, node_spec(1, 4000), 2u);
  caf::anon_send(s, actors::register_atom::value, n);
  run();
  ASSERT_TRUE(ask<core::JobId>(s, job(1, 2, 1000)).has_value());
  EXPECT_EQ(status(s).nodes, 0u) << "the node's answer is lost: the scheduler does not know it yet";

  advance(1100ms);  // the first subscription times out: asked again, lost again
  EXPECT_EQ(status(s).nodes, 0u);
  advance(1100ms);  // the third is answered
  auto st = status(s);
  EXPECT_EQ(st.nodes, 1u) << "a lost subscription answer must not leave a live node unused";
  EXPECT_EQ(st.claims_in_flight, 1u) << "the waiting job is placed on the node once it is known";
}

TEST_F(SchedulerNodeTest, AWatcherHearsOfItsPartitionsJobsUntilItUnwatches) {
  // The campaigns watch job events only while they follow a job: after an
  // unwatch, passes send them nothing.
  auto s = spawn(actors::scheduler, scheduler_config());
  add_node(s, node_spec(1, 4000));
  auto heard = std::make_shared<std::vector<uint64_t>>();
  auto ended = std::make_shared<std::vector<core::JobView>>();
  auto watcher = spawn([heard, ended]() -> caf::behavior {
    return {[heard, ended](actors::watch_atom, const std::vector<core::JobId>& jobs,
                           const std::vector<core::JobView>& views) {
      for (auto j : jobs) heard->push_back(j.value);
      ended->insert(ended->end(), views.begin(), views.end());
    }};
  });
  auto tell = [&](auto atom) {
    spawn([atom](caf::event_based_actor* self, scheduler_actor to, caf::actor w) { self->send(to, atom, w); }, s,
          watcher);
    run();
  };
  tell(actors::watch_atom::value);
  ASSERT_TRUE(ask<core::JobId>(s, job(7, 1, 1000)).has_value()) << sys().render(last_error);
  run();
  EXPECT_EQ(*heard, std::vector<uint64_t>{7}) << "placed: the watcher hears of it";
  EXPECT_TRUE(ended->empty()) << "placed, not ended: no view";
  tell(actors::unwatch_atom::value);
  ASSERT_TRUE(ask<core::JobId>(s, job(8, 1, 1000)).has_value()) << sys().render(last_error);
  run();
  EXPECT_EQ(*heard, std::vector<uint64_t>{7}) << "unwatched: job 8's placement is not told";
  EXPECT_EQ(status(s).running_tasks, 2u);
}

}  // namespace
}  // namespace claimsched::testing
