// The gateway on CAF's test coordinator, with strict mocks for the
// schedulers behind it: a mock fails the test on any message it was not told
// to expect, so each test also proves what the gateway does NOT send.

#include "actors/gateway_actor.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using actors::scheduler_actor;

constexpr int64_t kGi = int64_t{1} << 30;

core::JobSpec job(uint64_t id, std::string pool = "a") {
  core::JobSpec j;
  j.id = core::JobId{id};
  j.user = "alice";
  j.pool = std::move(pool);
  j.count = 1;
  j.per_task = core::Resources::cpu_memory(1000, kGi);
  j.command = {"/bin/true"};
  return j;
}

core::NodeSpec node(uint32_t id, std::string pool) {
  core::NodeSpec s;
  s.id = core::NodeId{id};
  s.name = "node-" + std::to_string(id);
  s.pool = std::move(pool);
  s.capacity = core::Resources::cpu_memory(4000, 8 * kGi);
  return s;
}

class GatewayTest : public ActorTest {
 protected:
  /// Two partitions: 1 owns pool a, 2 owns pool b; `one` and `two` are their
  /// schedulers (null: unowned).
  actors::gateway_actor make_gateway(scheduler_actor one, scheduler_actor two, bool local = true) {
    actors::GatewayConfig c;
    c.partitions.push_back({core::PartitionId{1}, {"a"}, one, {}, 1, local && one});
    c.partitions.push_back({core::PartitionId{2}, {"b"}, two, {}, 1, local && two});
    c.heartbeat_interval = 1s;
    c.node_grace = 3s;
    auto g = actors::spawn_gateway(sys(), c);
    EXPECT_TRUE(g.has_value()) << g.error().to_string();
    return track(*g);
  }

  /// A strict mock of a partition's scheduler that also answers which pools
  /// it removed (none): the gateway asks every owner it routes to, and again
  /// every few seconds (a removal may have gone through another member).
  scheduler_actor scheduler_mock(const std::string& name, caf::behavior expected) {
    return strict_mock<scheduler_actor>(
        name, caf::behavior{caf::message_handler{expected.as_behavior_impl()}.or_else(
                  [](actors::removed_atom) { return std::vector<std::string>{}; })});
  }

  /// The answer to `xs...` from the gateway, as text ("ok ..." or "error <code>: ...").
  template <class R, class... Ts>
  std::string call(actors::gateway_actor g, Ts... xs) {
    auto r = ask<R>(g, xs...);
    if (r) return "ok";
    return "error " + messages::from_caf_error(last_error).to_string();
  }
};

TEST_F(GatewayTest, ARefusedSubmitLeavesNoRouteBehind) {
  int submits = 0;
  auto s1 = scheduler_mock(
      "scheduler-1", caf::behavior{[&](core::JobSpec& j) -> caf::result<core::JobId> {
        // The first attempt is refused (say the class is unknown), the
        // second accepted.
        if (++submits == 1)
          return messages::to_caf_error(core::make_error(core::Errc::unknown_name, "job field 'class': unknown"));
        return j.id;
      }});
  auto g = make_gateway(s1, scheduler_actor{});
  EXPECT_NE(call<core::JobId>(g, job(42)).find("unknown name"), std::string::npos);
  // With the old gateway the refused job's route stayed and this retry was
  // refused as "already exists" without reaching the scheduler.
  auto id = ask<core::JobId>(g, job(42));
  ASSERT_TRUE(id.has_value()) << sys().render(last_error);
  EXPECT_EQ(id->value, 42u);
  EXPECT_EQ(submits, 2);
}

TEST_F(GatewayTest, ASubmitToAPartitionWithoutOwnerIsRetryableNotLost) {
  auto s1 = scheduler_mock("scheduler-1", caf::behavior{});
  auto g = make_gateway(s1, scheduler_actor{});
  auto r = call<core::JobId>(g, job(1, "b"));
  EXPECT_NE(r.find("unavailable"), std::string::npos) << r;
  EXPECT_NE(r.find("partition 2 has no owner"), std::string::npos) << r;
  EXPECT_NE(call<core::JobId>(g, job(1, "nowhere")).find("unknown pool 'nowhere'"), std::string::npos);
}

TEST_F(GatewayTest, CopiesOfAJobReachTheirPartitionInOneMessageWithConsecutiveIds) {
  std::vector<std::vector<core::JobId>> seen;
  bool drop_last = false;
  auto s1 = scheduler_mock("scheduler-1", caf::behavior{[&](actors::repeat_atom, core::JobSpec& j,
                                                             std::vector<core::JobId>& ids) {
                             EXPECT_NE(j.submit_time.count(), 0) << "stamped at the door, as a single submit is";
                             seen.push_back(ids);
                             if (drop_last) ids.pop_back();
                             return ids;
                           }});
  auto g = make_gateway(s1, scheduler_actor{});
  auto first = ask<std::vector<core::JobId>>(g, actors::repeat_atom::value, job(0), uint32_t{3});
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(seen.size(), 1u) << "one message for three jobs";
  EXPECT_EQ(*first, seen[0]);
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[2].value, (*first)[0].value + 2);
  auto next = ask<std::vector<core::JobId>>(g, actors::repeat_atom::value, job(0), uint32_t{2});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)[0].value, (*first)[2].value + 1) << "no id given twice";
  // What the door refuses, before any scheduler hears of it.
  auto refused = [&](core::JobSpec j, uint32_t count) {
    return call<std::vector<core::JobId>>(g, actors::repeat_atom::value, std::move(j), count);
  };
  EXPECT_NE(refused(job(0), 0).find("1 to 10000 copies"), std::string::npos);
  EXPECT_NE(refused(job(0), actors::kMaxJobsPerSubmit + 1).find("not 10001"), std::string::npos);
  EXPECT_NE(refused(job(5), 2).find("its id must be 0"), std::string::npos);
  EXPECT_NE(refused(job(0, "b"), 2).find("partition 2 has no owner"), std::string::npos);
  EXPECT_NE(refused(job(0, "nowhere"), 2).find("unknown pool 'nowhere'"), std::string::npos);
  EXPECT_EQ(seen.size(), 2u);
  // A partition that takes fewer than asked: the client hears which ones.
  drop_last = true;
  auto partial = refused(job(0), 2);
  EXPECT_NE(partial.find("accepted only 1 of 2"), std::string::npos) << partial;
}

TEST_F(GatewayTest, JobsOfAnotherMemberAreFoundByAskingEveryPartition) {
  // Job 9 was submitted through another member: this gateway never saw it.
  int asked1 = 0, asked2 = 0;
  auto s1 = scheduler_mock(
      "scheduler-1", caf::behavior{[&](actors::status_atom, core::JobId id) -> caf::result<core::JobView> {
        ++asked1;
        return messages::to_caf_error(core::make_error(core::Errc::unknown_name, "unknown job " + std::to_string(id.value)));
      }});
  auto s2 = scheduler_mock(
      "scheduler-2", caf::behavior{[&](actors::status_atom, core::JobId id) -> caf::result<core::JobView> {
        ++asked2;
        if (id.value != 9)
          return messages::to_caf_error(core::make_error(core::Errc::unknown_name, "unknown job " + std::to_string(id.value)));
        core::JobView v;
        v.spec = job(id.value, "b");
        return v;
      }});
  auto g = make_gateway(s1, s2);
  auto v = ask<core::JobView>(g, actors::status_atom::value, core::JobId{9});
  ASSERT_TRUE(v.has_value()) << sys().render(last_error);
  EXPECT_EQ(v->spec.pool, "b");
  EXPECT_EQ(asked1, 1);
  EXPECT_EQ(asked2, 1);
  // Now it knows where job 9 lives: only partition 2 is asked.
  ASSERT_TRUE(ask<core::JobView>(g, actors::status_atom::value, core::JobId{9}).has_value());
  EXPECT_EQ(asked1, 1);
  EXPECT_EQ(asked2, 2);
  // A job nobody holds.
  EXPECT_NE(call<core::JobView>(g, actors::status_atom::value, core::JobId{10}).find("unknown job 10"),
            std::string::npos);
}

TEST_F(GatewayTest, NodesGoToTheirPartitionsLocalOwnerOnlyAndFollowItsChange) {
  std::vector<core::NodeId> registered1, registered2;
  auto s1 = scheduler_mock(
      "scheduler-1", caf::behavior{[&](actors::register_atom, actors::node_actor) { registered1.push_back({}); }});
  auto g = make_gateway(s1, scheduler_actor{});
  auto n1 = strict_mock<actors::node_actor>("node-1", caf::behavior{});
  auto n2 = strict_mock<actors::node_actor>("node-2", caf::behavior{});
  ASSERT_TRUE(ask<uint64_t>(g, actors::register_atom::value, node(1, "a"), n1).has_value());
  ASSERT_TRUE(ask<uint64_t>(g, actors::register_atom::value, node(2, "b"), n2).has_value());
  EXPECT_EQ(registered1.size(), 1u) << "node 1 to partition 1's owner; node 2's partition has none";
  // Partition 2 gets an owner here: the gateway hands it the nodes it knows.
  auto s2 = scheduler_mock(
      "scheduler-2", caf::behavior{[&](actors::register_atom, actors::node_actor) { registered2.push_back({}); }});
  // (From a local actor: the member coordinator; anonymous routes are ignored.)
  caf::send_as(s1, g, actors::route_atom::value, uint32_t{2}, s2, actors::change_feed_actor{}, uint64_t{3}, true);
  run();
  EXPECT_EQ(registered2.size(), 1u);
  // The same route again is no news.
  caf::send_as(s1, g, actors::route_atom::value, uint32_t{2}, s2, actors::change_feed_actor{}, uint64_t{3}, true);
  run();
  EXPECT_EQ(registered2.size(), 1u);
}

TEST_F(GatewayTest, ASilentNodeIsDeclaredDownToItsOwnerOnce) {
  int downs = 0;
  auto s1 = scheduler_mock("scheduler-1",
                                         caf::behavior{[&](actors::register_atom, actors::node_actor) {},
                                                       [&](actors::node_down_atom, core::NodeId id) {
                                                         EXPECT_EQ(id.value, 1u);
                                                         ++downs;
                                                       }});
  auto g = make_gateway(s1, scheduler_actor{});
  auto n1 = strict_mock<actors::node_actor>("node-1", caf::behavior{});
  ASSERT_TRUE(ask<uint64_t>(g, actors::register_atom::value, node(1, "a"), n1).has_value());
  advance(2s);
  caf::anon_send(g, actors::heartbeat_atom::value, core::NodeId{1});
  run();
  advance(2s);
  EXPECT_EQ(downs, 0) << "a heartbeat within the grace keeps it up";
  advance(2s);
  EXPECT_EQ(downs, 1);
  advance(5s);
  EXPECT_EQ(downs, 1) << "down is said once";
}

TEST_F(GatewayTest, AHeartbeatThatPassesALeaveDoesNotShortenTheRestartGrace) {
  int downs = 0;
  auto s1 = scheduler_mock("scheduler-1",
                                         caf::behavior{[&](actors::register_atom, actors::node_actor) {},
                                                       [&](actors::node_down_atom, core::NodeId) { ++downs; }});
  auto g = make_gateway(s1, scheduler_actor{});
  auto n1 = strict_mock<actors::node_actor>("node-1", caf::behavior{});
  ASSERT_TRUE(ask<uint64_t>(g, actors::register_atom::value, node(1, "a"), n1).has_value());
  // The agent stops and leaves its tasks running; its uplink's last
  // heartbeat arrives after the leave.
  caf::anon_send(g, actors::leave_atom::value, core::NodeId{1});
  run();
  caf::anon_send(g, actors::heartbeat_atom::value, core::NodeId{1});
  run();
  advance(4s);
  advance(4s);
  EXPECT_EQ(downs, 0) << "a node whose agent left is down only after agent_restart_grace, not node_grace: "
                         "its running tasks would be lost and run again";
}

TEST_F(GatewayTest, PeersGetOnlyPartitionsOwnedHere) {
  auto s1 = scheduler_mock("scheduler-1", caf::behavior{});
  auto s2 = scheduler_mock("scheduler-2", caf::behavior{});
  auto g = make_gateway(s1, scheduler_actor{});
  caf::send_as(s1, g, actors::route_atom::value, uint32_t{2}, s2, actors::change_feed_actor{}, uint64_t{5}, false);
  run();
  // What a peer hears when it asks for partition `p`.
  auto fetch = [&](uint32_t p) {
    std::string answer;
    spawn(
        [&answer, s1, p](caf::event_based_actor* self, actors::gateway_actor to) {
          self->request(to, caf::infinite, actors::partition_atom::value, p)
              .then(
                  [&answer, s1](scheduler_actor s, actors::change_feed_actor, uint64_t e) {
                    answer = (s == s1 ? "scheduler-1 epoch " : "another epoch ") + std::to_string(e);
                  },
                  [&answer](caf::error& e) { answer = messages::from_caf_error(e).to_string(); });
        },
        g);
    run();
    return answer;
  };
  EXPECT_EQ(fetch(1), "scheduler-1 epoch 1");
  EXPECT_NE(fetch(2).find("not owned here"), std::string::npos) << fetch(2);
  EXPECT_NE(fetch(3).find("unknown partition"), std::string::npos) << fetch(3);
}

TEST_F(GatewayTest, AWaitingClientIsAnsweredWhenItsJobEndsAndAskedNothingInBetween) {
  // The scheduler's side: who watches its job events, and which jobs have ended.
  caf::actor watcher;
  std::vector<uint64_t> ended_jobs;
  int looks = 0;
  auto s1 = scheduler_mock(
      "scheduler-1",
      caf::behavior{[&](actors::watch_atom, caf::actor w) { watcher = w; },
                    [&](actors::ended_atom, std::vector<core::JobId>& asked) {
                      ++looks;
                      std::vector<core::JobView> out;
                      for (auto id : asked)
                        if (std::find(ended_jobs.begin(), ended_jobs.end(), id.value) != ended_jobs.end()) {
                          core::JobView v;
                          v.spec = job(id.value);
                          v.state = core::JobState::succeeded;
                          out.push_back(v);
                        }
                      return out;
                    }});
  auto g = make_gateway(s1, scheduler_actor{});
  auto answer = std::make_shared<std::optional<std::vector<core::JobView>>>();
  auto wait = [&](std::vector<core::JobId> jobs, uint32_t ms) {
    answer->reset();
    spawn(
        [=](caf::event_based_actor* self, actors::gateway_actor to) {
          self->request(to, caf::infinite, actors::ended_atom::value, jobs, ms)
              .then([=](std::vector<core::JobView>& v) { *answer = std::move(v); }, [](caf::error&) {});
        },
        g);
    run();
  };
  wait({core::JobId{1}, core::JobId{2}}, 60'000);
  // One look when the wait begins (nothing ended yet), and the gateway now
  // hears the scheduler's job events.
  EXPECT_EQ(looks, 1);
  ASSERT_TRUE(watcher);
  EXPECT_FALSE(answer->has_value());
  auto ended_view = [&](uint64_t id) {
    core::JobView v;
    v.spec = job(id);
    v.state = core::JobState::succeeded;
    return v;
  };
  // An event about other jobs costs the scheduler nothing.
  caf::anon_send(watcher, actors::watch_atom::value, std::vector<core::JobId>{core::JobId{3}},
                 std::vector<core::JobView>{ended_view(3)});
  run();
  EXPECT_EQ(looks, 1);
  EXPECT_FALSE(answer->has_value());
  // Job 1 starts: nothing to answer, nothing asked.
  caf::anon_send(watcher, actors::watch_atom::value, std::vector<core::JobId>{core::JobId{1}},
                 std::vector<core::JobView>{});
  run();
  EXPECT_EQ(looks, 1);
  EXPECT_FALSE(answer->has_value());
  // Job 2 ends: the event wakes the wait, which is answered with the view
  // the event carries, without asking the scheduler again.
  caf::anon_send(watcher, actors::watch_atom::value, std::vector<core::JobId>{core::JobId{2}},
                 std::vector<core::JobView>{ended_view(2)});
  run();
  EXPECT_EQ(looks, 1);
  ASSERT_TRUE(answer->has_value());
  ASSERT_EQ((*answer)->size(), 1u);
  EXPECT_EQ((*answer)->front().spec.id.value, 2u);

  // A job whose event never comes (a partition another member owns) is
  // still seen to end: the wait looks once more at its timeout.
  wait({core::JobId{1}}, 500);
  EXPECT_FALSE(answer->has_value());
  ended_jobs.push_back(1);
  advance(std::chrono::milliseconds(600));
  ASSERT_TRUE(answer->has_value());
  ASSERT_EQ((*answer)->size(), 1u);
  EXPECT_EQ((*answer)->front().spec.id.value, 1u);
  // And a wait for nothing that ends is answered empty at its timeout.
  wait({core::JobId{5}}, 500);
  advance(std::chrono::milliseconds(600));
  ASSERT_TRUE(answer->has_value());
  EXPECT_TRUE((*answer)->empty());
}

TEST_F(GatewayTest, AConfigWithAPoolInTwoPartitionsIsRefused) {
  actors::GatewayConfig c;
  c.partitions.push_back({core::PartitionId{1}, {"a"}, {}, {}, 0, false});
  c.partitions.push_back({core::PartitionId{2}, {"a"}, {}, {}, 0, false});
  auto g = actors::spawn_gateway(sys(), c);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message.find("pool 'a' is in two partitions"), std::string::npos) << g.error().message;
}

}  // namespace
}  // namespace claimsched::testing
