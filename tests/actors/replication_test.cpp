// The change feed and the replica on CAF's test coordinator: a replica with
// nothing is rebuilt from shipped checkpoint files and then follows; the feed
// turns acknowledgements into the replicated position under the [ha] ack
// rule; a replica that holds a deposed owner's extra writes is rebuilt, never
// fed on top of them. Strict mocks stand in for the scheduler, a replica or
// the feed, so anything unexpected fails the test.

#include <filesystem>

#include "actors/replication.hpp"
#include "tests/actors/actor_fixture.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;
using actors::change_feed_actor;
using actors::replica_actor;
using actors::scheduler_actor;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/claimsched-replication-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

storage::PartitionIdentity identity() { return {"test", core::PartitionId{1}}; }

storage::StoreOptions quiet_options() {
  storage::StoreOptions o;
  o.log_level = storage::RocksLogLevel::error;
  o.log = [](storage::RocksLogLevel, std::string_view, std::string_view) {};
  return o;
}

class ReplicationTest : public ActorTest {
 protected:
  ReplicationTest() {
    auto s = storage::PartitionStore::open(dir_.path + "/primary", identity(), quiet_options());
    EXPECT_TRUE(s.has_value()) << s.error().to_string();
    primary_ = std::move(*s);
  }

  /// Writes `n` job records to the primary; returns its latest sequence.
  uint64_t write_jobs(uint64_t first, uint64_t n) {
    for (uint64_t id = first; id < first + n; ++id) {
      auto b = primary_->batch();
      core::JobSpec spec;
      spec.id = core::JobId{id};
      spec.user = "u";
      spec.pool = "p";
      spec.per_task = core::Resources::cpu_memory(1000, 1 << 20);
      b.put_job(storage::StoredJob{spec, storage::JobStatus::active, core::TimePoint{0}, core::TimePoint{0}});
      EXPECT_TRUE(primary_->write(std::move(b)));
    }
    return primary_->latest_sequence();
  }

  change_feed_actor make_feed(scheduler_actor scheduler, actors::AckMode ack,
                              std::vector<core::EpochStart> history = {}) {
    actors::ChangeFeedConfig c;
    c.primary = primary_;
    c.scheduler = scheduler;
    c.ack = ack;
    c.history = std::move(history);
    c.checkpoint_dir = dir_.path + "/checkpoints";
    c.chunk_bytes = 4096;  // several chunks per file
    EXPECT_TRUE(c.validate());
    return spawn(actors::change_feed, c);
  }

  replica_actor make_replica(change_feed_actor feed, const std::string& name) {
    actors::ReplicaConfig c;
    c.name = name;
    c.dir = dir_.path + "/" + name;
    c.identity = identity();
    c.options = quiet_options();
    c.feed = feed;
    EXPECT_TRUE(c.validate());
    return spawn(actors::replica, c);
  }

  /// A scheduler mock that records every replicated position it is told.
  scheduler_actor recording_scheduler(std::vector<uint64_t>& positions) {
    return strict_mock<scheduler_actor>(
        "scheduler", caf::behavior{[&positions](actors::replicated_atom, uint64_t seq) { positions.push_back(seq); }});
  }

  TempDir dir_;
  std::shared_ptr<storage::PartitionStore> primary_;
};

TEST_F(ReplicationTest, AnEmptyReplicaIsRebuiltFromShippedFilesThenFollows) {
  uint64_t latest = write_jobs(1, 50);
  std::vector<uint64_t> positions;
  auto feed = make_feed(recording_scheduler(positions), actors::AckMode::one);
  auto replica = make_replica(feed, "standby-a");
  run();
  auto st = ask<actors::ReplicaStatus>(replica, actors::status_atom::value);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->error.empty()) << st->error;
  EXPECT_EQ(st->bootstraps, 1u);
  EXPECT_EQ(st->applied, latest);
  ASSERT_FALSE(positions.empty());
  EXPECT_EQ(positions.back(), latest) << "one standby holds everything: replicated";

  // New writes reach it as the primary commits them (the relay's message).
  latest = write_jobs(100, 5);
  caf::anon_send(feed, actors::committed_atom::value, latest, int64_t{0});
  run();
  st = ask<actors::ReplicaStatus>(replica, actors::status_atom::value);
  EXPECT_EQ(st->applied, latest);
  EXPECT_EQ(st->bootstraps, 1u) << "followed, not rebuilt again";
  EXPECT_EQ(positions.back(), latest);
  EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end())) << "the position only grows";

  // Record for record the same store.
  caf::anon_send_exit(replica, caf::exit_reason::user_shutdown);
  run();
  auto copy = storage::PartitionStore::open(dir_.path + "/standby-a", identity(), quiet_options());
  ASSERT_TRUE(copy.has_value()) << copy.error().to_string();
  auto diff = storage::compare_stores(primary_->database(), (*copy)->database());
  ASSERT_TRUE(diff.has_value());
  EXPECT_TRUE(diff->empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.path + "/checkpoints/checkpoint-1")) << "shipped checkpoints are removed";
}

TEST_F(ReplicationTest, AckAllWaitsForTheSlowestStandbyAndOneForTheFastest) {
  uint64_t latest = write_jobs(1, 3);
  std::vector<uint64_t> all_positions;
  auto feed = make_feed(recording_scheduler(all_positions), actors::AckMode::all);
  // Two consistent followers (they hold the log up to `latest - 1`): each
  // gets the missing batch, nothing else.
  int fast_batches = 0, slow_batches = 0;
  auto fast = strict_mock<replica_actor>(
      "fast", caf::behavior{[&](actors::changes_atom, std::vector<messages::ChangeBatch>&, uint64_t, int64_t) {
        ++fast_batches;
      }});
  auto slow = strict_mock<replica_actor>(
      "slow", caf::behavior{[&](actors::changes_atom, std::vector<messages::ChangeBatch>&, uint64_t, int64_t) {
        ++slow_batches;
      }});
  caf::anon_send(feed, actors::subscribe_atom::value, fast, latest, uint64_t{0}, std::string("fast"));
  caf::anon_send(feed, actors::subscribe_atom::value, slow, latest, uint64_t{0}, std::string("slow"));
  run();
  EXPECT_EQ(fast_batches, 1);
  EXPECT_EQ(slow_batches, 1);
  ASSERT_FALSE(all_positions.empty());
  EXPECT_EQ(all_positions.back(), latest - 1) << "both hold everything before the batch in flight";
  caf::send_as(fast, feed, actors::ack_atom::value, latest);
  run();
  EXPECT_EQ(all_positions.back(), latest - 1) << "ack all: the slow one has not confirmed";
  caf::send_as(slow, feed, actors::ack_atom::value, latest);
  run();
  EXPECT_EQ(all_positions.back(), latest);
  // Under ack one the fast standby alone moves the position.
  std::vector<uint64_t> one_positions;
  auto feed_one = make_feed(recording_scheduler(one_positions), actors::AckMode::one);
  caf::anon_send(feed_one, actors::subscribe_atom::value, slow, latest, uint64_t{0}, std::string("slow"));
  caf::anon_send(feed_one, actors::subscribe_atom::value, fast, latest, uint64_t{0}, std::string("fast"));
  run();
  caf::send_as(fast, feed_one, actors::ack_atom::value, latest);
  run();
  ASSERT_FALSE(one_positions.empty());
  EXPECT_EQ(one_positions.back(), latest);
  EXPECT_EQ(actors::replicated_position(actors::AckMode::owner, {5, 7}), std::nullopt);
  EXPECT_EQ(actors::replicated_position(actors::AckMode::all, {}), std::nullopt);
}

TEST_F(ReplicationTest, AStoreWithADeposedOwnersWritesIsRebuiltNotFedOnTop) {
  uint64_t latest = write_jobs(1, 10);
  // Epoch 2 began at sequence 6: a store of epoch 1 that holds sequence 6 or
  // more has writes of epoch 1's owner that epoch 2's never had.
  std::vector<core::EpochStart> history{{1, 1}, {2, 6}};
  std::vector<uint64_t> positions;
  auto feed = make_feed(recording_scheduler(positions), actors::AckMode::one, history);
  std::vector<std::string> got;
  auto diverged = strict_mock<replica_actor>(
      "diverged", caf::behavior{[&](actors::bootstrap_atom, uint64_t) { got.push_back("bootstrap"); },
                                [&](actors::chunk_atom, std::string&, std::string&) { got.push_back("chunk"); }});
  caf::anon_send(feed, actors::subscribe_atom::value, diverged, uint64_t{8}, uint64_t{1}, std::string("old-owner"));
  run();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), "bootstrap") << "rebuilt first; no change batch reaches it";
  EXPECT_TRUE(positions.empty()) << "what it held does not count as replicated";
  auto behind = strict_mock<replica_actor>(
      "behind", caf::behavior{[&](actors::changes_atom, std::vector<messages::ChangeBatch>& batches, uint64_t, int64_t) {
        ASSERT_FALSE(batches.empty());
        EXPECT_EQ(batches.front().sequence, 5u);
        got.push_back("changes");
      }});
  caf::anon_send(feed, actors::subscribe_atom::value, behind, uint64_t{5}, uint64_t{1}, std::string("behind"));
  run();
  EXPECT_EQ(got.back(), "changes") << "epoch 1 up to sequence 4 is a prefix of epoch 2's log: it follows";
  (void)latest;
}

TEST_F(ReplicationTest, AReplicaRefusesACheckpointFileWithABadName) {
  std::vector<std::string> heard;
  auto feed = strict_mock<change_feed_actor>(
      "feed", caf::behavior{[&](actors::subscribe_atom, replica_actor, uint64_t from, uint64_t epoch, std::string& name) {
                              heard.push_back("subscribe from " + std::to_string(from) + " epoch " +
                                              std::to_string(epoch) + " by " + name);
                            },
                            [&](actors::ack_atom, uint64_t applied) { heard.push_back("ack " + std::to_string(applied)); }});
  auto replica = make_replica(feed, "standby-b");
  run();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0], "subscribe from 0 epoch 0 by standby-b") << "an empty replica asks for everything";
  caf::send_as(feed, replica, actors::bootstrap_atom::value, uint64_t{10});
  caf::send_as(feed, replica, actors::chunk_atom::value, std::string("../../etc/passwd"), std::string("x"));
  run();
  ASSERT_EQ(heard.size(), 2u) << "the bootstrap is acknowledged, the bad chunk is not";
  EXPECT_EQ(heard[1], "ack 0");
  auto st = ask<actors::ReplicaStatus>(replica, actors::status_atom::value);
  EXPECT_NE(st->error.find("bad name"), std::string::npos) << st->error;
  EXPECT_FALSE(std::filesystem::exists(dir_.path + "/../etc/passwd"));
}

}  // namespace
}  // namespace claimsched::testing
