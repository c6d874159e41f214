// "Acknowledge only when durable on the owner and held by a standby", stepped
// on CAF's test coordinator: the scheduler actor writes through an in-memory
// PartitionLog the test completes write by write, and the standby's position
// arrives when the test says so (as the change feed would send it).

#include "actors/node_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using actors::scheduler_actor;

constexpr int64_t kGi = int64_t{1} << 30;

core::JobSpec job(uint64_t id, uint32_t count = 1) {
  core::JobSpec j;
  j.id = core::JobId{id};
  j.user = "alice";
  j.pool = "p";
  j.count = count;
  j.per_task = core::Resources::cpu_memory(1000, kGi);
  return j;
}

class DurabilityTest : public ActorTest {
 protected:
  /// A scheduler over `log_`; with `replicated`, acknowledgements also wait
  /// for the standby position.
  scheduler_actor make_scheduler(bool replicated) {
    actors::SchedulerActorConfig c;
    c.scheduler.partition = core::PartitionId{1};
    c.scheduler.pools = {"p", "q"};
    c.log = log_;
    c.await_replication = replicated;
    auto s = actors::spawn_scheduler(sys(), c);
    EXPECT_TRUE(s.has_value()) << s.error().to_string();
    return track(*s);
  }

  /// Submits `j` from a helper actor; the answer lands in `answers`.
  void submit(scheduler_actor s, core::JobSpec j) {
    spawn(
        [j, answers = answers](caf::event_based_actor* self, scheduler_actor to) {
          self->request(to, caf::infinite, j)
              .then([answers](core::JobId id) { answers->push_back("ok " + std::to_string(id.value)); },
                    [answers](caf::error& e) { answers->push_back("error " + messages::from_caf_error(e).message); });
        },
        s);
    run();
  }

  actors::node_actor add_node(scheduler_actor s) {
    core::NodeSpec spec;
    spec.id = core::NodeId{1};
    spec.name = "node-1";
    spec.pool = "p";
    spec.capacity = core::Resources::cpu_memory(4000, 8 * kGi);
    actors::NodeActorConfig nc;
    nc.spec = spec;
    auto n = track(actors::spawn_node(sys(), std::move(nc)));
    caf::anon_send(s, actors::register_atom::value, n);
    run();
    return n;
  }

  std::shared_ptr<storage::MemoryPartitionLog> log_ = std::make_shared<storage::MemoryPartitionLog>();
  std::shared_ptr<std::vector<std::string>> answers = std::make_shared<std::vector<std::string>>();
};

TEST_F(DurabilityTest, AJobIsAcknowledgedOnlyOnceItsRecordIsDurable) {
  auto s = make_scheduler(false);
  submit(s, job(7));
  EXPECT_TRUE(answers->empty()) << "nothing durable yet";
  ASSERT_EQ(log_->pending(), 1u);
  EXPECT_FALSE(log_->has_job(core::JobId{7}));
  ASSERT_TRUE(log_->complete_next());
  run();
  EXPECT_EQ(*answers, std::vector<std::string>{"ok 7"});
  EXPECT_TRUE(log_->has_job(core::JobId{7}));
}

TEST_F(DurabilityTest, WithStandbysTheAcknowledgementAlsoWaitsForTheirPosition) {
  auto s = make_scheduler(true);
  submit(s, job(7));
  ASSERT_TRUE(log_->complete_next());
  run();
  EXPECT_TRUE(answers->empty()) << "durable on the owner only";
  auto durable = log_->latest_sequence();
  // A standby that holds less than the job's write does not release it.
  caf::anon_send(s, actors::replicated_atom::value, durable - 1);
  run();
  EXPECT_TRUE(answers->empty());
  caf::anon_send(s, actors::replicated_atom::value, durable);
  run();
  EXPECT_EQ(*answers, std::vector<std::string>{"ok 7"});
  auto st = ask<actors::SchedulerStatus>(s, actors::status_atom::value);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->durable_sequence, durable);
  EXPECT_EQ(st->replicated_sequence, durable);
  EXPECT_EQ(st->writes_awaiting_replication, 0u);
}

TEST_F(DurabilityTest, APlacementIsConfirmedOnlyOnceStandbysHoldIt) {
  auto s = make_scheduler(true);
  auto n = add_node(s);
  // The node's registration is a write of its own: durable and replicated.
  while (log_->complete_next()) run();
  caf::anon_send(s, actors::replicated_atom::value, log_->latest_sequence());
  run();
  submit(s, job(7, 2));
  while (log_->complete_next()) run();
  auto r = ask<core::NodeReport>(n, actors::report_atom::value);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->claims.size(), 1u) << "claimed, durable on the owner, not yet confirmed";
  EXPECT_TRUE(r->allocations.empty());
  auto task = log_->task(core::JobId{7}, 0);
  ASSERT_TRUE(task.has_value()) << "the placement is in the owner's log before the confirm";
  caf::anon_send(s, actors::replicated_atom::value, log_->latest_sequence());
  run();
  while (log_->complete_next()) run();
  r = ask<core::NodeReport>(n, actors::report_atom::value);
  EXPECT_TRUE(r->claims.empty());
  EXPECT_EQ(r->allocations.size(), 2u);
  EXPECT_EQ(*answers, std::vector<std::string>{"ok 7"});
}

TEST_F(DurabilityTest, ARetriedSubmitIsTheSameJobAnsweredOnce) {
  auto s = make_scheduler(true);
  submit(s, job(7));
  submit(s, job(7));  // the client lost the first answer and asks again
  auto other = job(7);
  other.count = 5;
  submit(s, other);  // a different job under the same id
  ASSERT_EQ(answers->size(), 1u);
  EXPECT_NE((*answers)[0].find("error"), std::string::npos);
  EXPECT_NE((*answers)[0].find("already exists"), std::string::npos) << (*answers)[0];
  while (log_->complete_next()) run();
  caf::anon_send(s, actors::replicated_atom::value, log_->latest_sequence());
  run();
  EXPECT_EQ(*answers, (std::vector<std::string>{(*answers)[0], "ok 7", "ok 7"}));
  submit(s, job(7));
  EXPECT_EQ(answers->back(), "ok 7") << "after the acknowledgement a retry is answered at once";
  auto ids = ask<std::vector<core::JobId>>(s, actors::jobs_atom::value);
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(ids->size(), 1u) << "one job, however often it was submitted";
}

TEST_F(DurabilityTest, CopiesOfAJobAreOneWriteAnsweredOnceAllAreDurableAndARetryIsNotDoubled) {
  auto s = make_scheduler(false);
  auto copies = [&](std::vector<uint64_t> ids, core::JobSpec spec) {
    std::vector<core::JobId> named;
    for (auto id : ids) named.push_back(core::JobId{id});
    spawn(
        [spec, named, answers = answers](caf::event_based_actor* self, scheduler_actor to) {
          self->request(to, caf::infinite, actors::repeat_atom::value, spec, named)
              .then(
                  [answers](std::vector<core::JobId>& got) {
                    std::string text = "ok";
                    for (auto id : got) text += " " + std::to_string(id.value);
                    answers->push_back(text);
                  },
                  [answers](caf::error& e) { answers->push_back("error " + messages::from_caf_error(e).message); });
        },
        s);
    run();
  };
  copies({10, 11, 12}, job(0));
  EXPECT_TRUE(answers->empty()) << "nothing durable yet";
  ASSERT_EQ(log_->pending(), 1u) << "three jobs, one write";
  ASSERT_TRUE(log_->complete_next());
  run();
  EXPECT_EQ(*answers, std::vector<std::string>{"ok 10 11 12"});
  for (uint64_t id : {10, 11, 12}) EXPECT_TRUE(log_->has_job(core::JobId{id})) << id;
  // The client lost the answer and asks again, with one more id: the three
  // are the same jobs, only 13 is new.
  copies({10, 11, 12, 13}, job(0));
  ASSERT_TRUE(log_->complete_next());
  run();
  EXPECT_EQ(answers->back(), "ok 10 11 12 13");
  // All or none: an id held with another spec refuses the whole submit.
  auto other = job(0);
  other.count = 5;
  copies({14, 12}, other);
  EXPECT_NE(answers->back().find("already exists"), std::string::npos) << answers->back();
  copies({15, 15}, job(0));
  EXPECT_NE(answers->back().find("twice"), std::string::npos) << answers->back();
  copies({}, job(0));
  EXPECT_NE(answers->back().find("1 to 10000 jobs"), std::string::npos) << answers->back();
  auto ids = ask<std::vector<core::JobId>>(s, actors::jobs_atom::value);
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(ids->size(), 4u) << "10 to 13, nothing of the refused submits";
}

TEST_F(DurabilityTest, AFailedWriteFailsWhatWaitedAndStopsThePartition) {
  auto s = make_scheduler(true);
  submit(s, job(7));
  ASSERT_TRUE(log_->fail_next("No space left on device"));
  run();
  ASSERT_EQ(answers->size(), 1u);
  EXPECT_NE((*answers)[0].find("No space left on device"), std::string::npos) << (*answers)[0];
  submit(s, job(8));
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_NE((*answers)[1].find("cannot store jobs"), std::string::npos) << (*answers)[1];
  auto st = ask<actors::SchedulerStatus>(s, actors::status_atom::value);
  EXPECT_FALSE(st->store_error.empty());
}

TEST_F(DurabilityTest, AConfigThatCannotWorkIsRefusedBeforeSpawning) {
  actors::SchedulerActorConfig c;
  c.scheduler.partition = core::PartitionId{1};
  c.scheduler.pools = {"p"};
  c.await_replication = true;  // without a log: nothing to wait for
  auto s = actors::spawn_scheduler(sys(), c);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("await_replication"), std::string::npos) << s.error().message;
  c.await_replication = false;
  c.max_writes_in_flight = 0;
  EXPECT_FALSE(actors::spawn_scheduler(sys(), c).has_value());
}

// `claimsched pool remove`: the operator hears "done" only once the removal
// is durable, and a pool a node uses is refused at once, naming the node.
TEST_F(DurabilityTest, APoolRemovalIsAnsweredOnlyOnceItIsDurable) {
  auto s = make_scheduler(false);
  auto remove = [&](const std::string& pool) {
    spawn(
        [pool, answers = answers](caf::event_based_actor* self, scheduler_actor to) {
          self->request(to, caf::infinite, actors::remove_pool_atom::value, pool, false)
              .then([answers](std::string& words) { answers->push_back("ok " + words); },
                    [answers](caf::error& e) { answers->push_back("error " + messages::from_caf_error(e).message); });
        },
        s);
    run();
  };
  add_node(s);
  while (log_->complete_next()) {
  }
  run();
  remove("p");
  ASSERT_EQ(answers->size(), 1u);
  EXPECT_EQ(answers->back(), "error pool p is in use: node node-1 is up");
  EXPECT_EQ(log_->pending(), 0u) << "a refusal writes nothing";

  answers->clear();
  remove("q");
  EXPECT_TRUE(answers->empty()) << "nothing durable yet";
  ASSERT_EQ(log_->pending(), 1u);
  ASSERT_TRUE(log_->complete_next());
  run();
  ASSERT_EQ(answers->size(), 1u);
  EXPECT_EQ(answers->back(), "ok remove pool q (operation 1): done");
}

}  // namespace
}  // namespace claimsched::testing
