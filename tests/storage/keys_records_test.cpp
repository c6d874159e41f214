// storage/keys.hpp: big-endian keys sort like their numbers, parse is the
// exact inverse of encode; messages/record_codec: every persisted record
// round-trips, and bad bytes are errors naming the field.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "messages/record_codec.hpp"
#include "storage/keys.hpp"
#include "storage/node_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::HasSubstr;

// -- keys ---------------------------------------------------------------------

TEST(Keys, TaskKeysSortLikeTheirNumbers) {
  std::mt19937_64 rng{42};
  std::vector<keys::TaskKey> ids;
  const uint64_t edges[] = {0, 1, 255, 256, 65535, 65536, UINT32_MAX, uint64_t{UINT32_MAX} + 1,
                            UINT64_MAX - 1, UINT64_MAX};
  for (uint64_t j : edges)
    for (uint32_t t : {0u, 1u, 255u, 256u, UINT32_MAX - 1}) ids.push_back({core::JobId{j}, t});
  for (int i = 0; i < 2000; ++i)
    ids.push_back({core::JobId{rng() >> (rng() % 64)}, static_cast<uint32_t>(rng() >> (rng() % 64))});
  std::vector<std::string> encoded;
  for (auto k : ids) encoded.push_back(keys::task(k.job, k.index).str());
  std::sort(ids.begin(), ids.end());
  std::sort(encoded.begin(), encoded.end());  // bytewise, as RocksDB orders them
  ASSERT_EQ(ids.size(), encoded.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto parsed = keys::parse_task(encoded[i]);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, ids[i]) << "position " << i;
  }
}

TEST(Keys, JobAndNodeKeysSortLikeTheirNumbers) {
  std::mt19937_64 rng{7};
  std::vector<uint64_t> jobs{0, 1, 255, 256, UINT64_MAX};
  std::vector<uint32_t> nodes{0, 1, 255, 256, UINT32_MAX};
  for (int i = 0; i < 1000; ++i) {
    jobs.push_back(rng() >> (rng() % 64));
    nodes.push_back(static_cast<uint32_t>(rng() >> (rng() % 64)));
  }
  for (size_t i = 0; i + 1 < jobs.size(); ++i) {
    auto a = keys::job(core::JobId{jobs[i]}).str();
    auto b = keys::job(core::JobId{jobs[i + 1]}).str();
    EXPECT_EQ(jobs[i] < jobs[i + 1], a < b);
    EXPECT_EQ(keys::parse_job(a)->value, jobs[i]);
  }
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    auto a = keys::node(core::NodeId{nodes[i]}).str();
    auto b = keys::node(core::NodeId{nodes[i + 1]}).str();
    EXPECT_EQ(nodes[i] < nodes[i + 1], a < b);
    EXPECT_EQ(keys::parse_node(a)->value, nodes[i]);
  }
}

TEST(Keys, AJobsTasksAreOneContiguousRange) {
  for (uint64_t j : {uint64_t{0}, uint64_t{41}, uint64_t{UINT32_MAX}, UINT64_MAX - 1, UINT64_MAX}) {
    core::JobId job{j};
    auto begin = keys::task_begin(job).str();
    auto end = keys::task_end(job);
    for (uint32_t t : {0u, 1u, 1000u, core::kMaxTasksPerJob, UINT32_MAX - 1}) {
      auto k = keys::task(job, t).str();
      EXPECT_LE(begin, k);
      EXPECT_LT(k, end) << j << "/" << t;
    }
    if (j > 0) {
      EXPECT_LT(keys::task(core::JobId{j - 1}, UINT32_MAX).str(), begin);
    }
    if (j < UINT64_MAX) {
      EXPECT_LE(end, keys::task(core::JobId{j + 1}, 0).str());
    }
  }
}

TEST(Keys, NodeStoreKeysGroupByNode) {
  core::NodeId n{77};
  auto lo = keys::node_prefix(n).str();
  auto hi = keys::node_prefix_end(n).str();
  auto claim = keys::node_claim(n, core::ClaimId{UINT64_MAX}).str();
  auto alloc = keys::node_allocation(n, core::TaskRef{core::JobId{UINT64_MAX}, UINT32_MAX}).str();
  EXPECT_LE(lo, claim);
  EXPECT_LT(claim, hi);
  EXPECT_LE(lo, alloc);
  EXPECT_LT(alloc, hi);
  EXPECT_LT(keys::node_claim(core::NodeId{76}, core::ClaimId{UINT64_MAX}).str(), lo);
  EXPECT_LE(hi, keys::node_claim(core::NodeId{78}, core::ClaimId{0}).str());
  auto pc = keys::parse_node_claim(keys::node_claim(n, core::ClaimId{9}));
  ASSERT_TRUE(pc);
  EXPECT_EQ(pc->node, n);
  EXPECT_EQ(pc->claim, core::ClaimId{9});
  auto pa = keys::parse_node_allocation(keys::node_allocation(n, {core::JobId{5}, 6}));
  ASSERT_TRUE(pa);
  EXPECT_EQ(pa->task, (core::TaskRef{core::JobId{5}, 6}));
}

TEST(Keys, ParseRejectsWrongLengthsAndOversizedIds) {
  EXPECT_FALSE(keys::parse_job(""));
  EXPECT_FALSE(keys::parse_job("1234567"));
  EXPECT_FALSE(keys::parse_job("123456789"));
  EXPECT_FALSE(keys::parse_task(keys::job(core::JobId{1})));
  EXPECT_FALSE(keys::parse_node("abc"));
  // A node key above 2^32 - 1 does not fit core::NodeId.
  EXPECT_FALSE(keys::parse_node(std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8)));
  EXPECT_FALSE(keys::parse_node_claim(keys::node(core::NodeId{1})));
  EXPECT_FALSE(keys::parse_node_allocation(keys::node_claim(core::NodeId{1}, core::ClaimId{1})));
}

TEST(Keys, DescribeNamesTheRecordAndShowsTheBytes) {
  EXPECT_EQ(keys::describe(keys::cf::kTasks, keys::task(core::JobId{42}, 7)),
            "job 42 task 7 [000000000000002a00000007]");
  EXPECT_EQ(keys::describe(keys::cf::kJobs, keys::job(core::JobId{1})), "job 1 [0000000000000001]");
  EXPECT_EQ(keys::describe(keys::cf::kNodes, "xyz"), "malformed key [78797a] (3 bytes)");
  EXPECT_EQ(keys::describe(keys::cf::kMeta, keys::kEpoch), "'epoch' [65706f6368]");
  EXPECT_EQ(keys::describe(keys::cf::kNodeAllocations,
                           keys::node_allocation(core::NodeId{3}, {core::JobId{4}, 5})),
            "node 3 job 4 task 5 [0000000000000003000000000000000400000005]");
}

// -- records ------------------------------------------------------------------

template <class T>
void expect_round_trip(const T& value) {
  std::string bytes = messages::encode(value);
  T back{};
  auto st = messages::decode(bytes, back);
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(back, value);
}

TEST(Records, RoundTrip) {
  auto job = stored_job(9, 3);
  job.status = JobStatus::finished;
  job.finished_at = core::TimePoint{std::chrono::seconds(99)};
  job.spec.constraints = {"ssd", "!gpu"};
  job.spec.gang = true;
  expect_round_trip(job);

  auto task = stored_task(4'000'000'000u, core::TaskState::failed, UINT64_MAX);
  task.exit_code = -9;
  task.attempts = 3;
  expect_round_trip(task);

  auto node = stored_node(12);
  node.state = core::NodeState::draining;
  expect_round_trip(node);

  messages::StoreIdentity id;
  id.kind = messages::StoreKind::nodes;
  id.cluster_id = "prod-eu";
  id.host = "agent-7";
  expect_round_trip(id);

  StoredNodeHeader header;
  header.spec = node_spec(5);
  header.state = core::NodeState::down;
  header.generation = 123456789;
  header.epochs = {{core::PartitionId{1}, 4}, {core::PartitionId{2}, 9}};
  expect_round_trip(header);

  messages::ChangeBatch cb;
  cb.sequence = 17;
  cb.count = 3;
  cb.data = std::string("\x00\x01\x02 raw", 7);
  expect_round_trip(cb);

  uint64_t v = 0;
  ASSERT_TRUE(messages::decode_counter(messages::encode_counter(UINT64_MAX), v));
  EXPECT_EQ(v, UINT64_MAX);
}

TEST(Records, BadBytesNameTheField) {
  StoredTask task;
  auto st = messages::decode("\xff\xff\xff", task);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::corrupt);
  EXPECT_THAT(st.error().message, HasSubstr("StoredTask"));

  // Valid Protobuf, missing enum: never read as the first real value.
  pb::StoredTask p;
  p.set_node(3);
  st = messages::decode(p.SerializeAsString(), task);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("StoredTask.state: missing"));

  p.set_state(static_cast<pb::TaskState>(42));
  st = messages::decode(p.SerializeAsString(), task);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("StoredTask.state: unknown enum value 42"));

  p.set_state(pb::TASK_STATE_RUNNING);
  p.set_node(uint64_t{1} << 33);
  st = messages::decode(p.SerializeAsString(), task);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("StoredTask.node: value 8589934592 does not fit"));

  // A nested core type's error is re-rooted at the field.
  pb::StoredJob pj;
  messages::to_proto(stored_job(1), pj);
  pj.mutable_spec()->set_count(0);
  StoredJob job;
  st = messages::decode(pj.SerializeAsString(), job);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("StoredJob.spec.count"));

  pb::StoredNodeHeader ph;
  messages::to_proto(StoredNodeHeader{node_spec(1), core::NodeState::up, 1,
                                      {{core::PartitionId{1}, 1}, {core::PartitionId{1}, 2}}},
                     ph);
  StoredNodeHeader h;
  st = messages::decode(ph.SerializeAsString(), h);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("StoredNodeHeader.epochs[1].partition: duplicate"));

  pb::ChangeBatch pc;
  pc.set_sequence(5);
  messages::ChangeBatch cb;
  st = messages::decode(pc.SerializeAsString(), cb);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("ChangeBatch.count: missing"));
}

TEST(Records, DecodingLeavesTheOutputUntouchedOnError) {
  auto before = stored_task(3);
  auto task = before;
  ASSERT_FALSE(messages::decode("\x08\x63", task));  // state = 99
  EXPECT_EQ(task, before);
}

TEST(SyncModes, ParseAndPrint) {
  for (auto m : {SyncMode::always, SyncMode::batch, SyncMode::none}) {
    auto parsed = parse_sync_mode(to_string(m));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, m);
  }
  auto bad = parse_sync_mode("sometimes");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("sometimes"));
}

}  // namespace
}  // namespace claimsched::storage
