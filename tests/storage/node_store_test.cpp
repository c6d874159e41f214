// storage/node_store: one store per process holds every hosted node's
// header, live claims and allocations; all of it comes back, in node id
// order, after a reopen; bad records and foreign directories are errors.

#include "storage/node_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <map>

#include "messages/codec.hpp"
#include "storage/partition_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

NodeStoreIdentity host_a() { return {"c1", "host-a"}; }

core::LiveClaim live_claim(uint64_t id, uint64_t job, std::vector<core::TaskIndex> tasks) {
  core::LiveClaim c;
  c.id = core::ClaimId{id};
  c.partition = core::PartitionId{2};
  c.expires = core::TimePoint{std::chrono::seconds(1'700'000'000)};
  c.job = core::JobId{job};
  c.per_task = core::Resources::cpu_memory(100, 1 << 20);
  c.tasks = std::move(tasks);
  return c;
}

core::Allocation allocation(uint64_t job, core::TaskIndex index, uint64_t claim) {
  core::Allocation a;
  a.task = core::TaskRef{core::JobId{job}, index};
  a.partition = core::PartitionId{2};
  a.running = index % 2 == 0;
  a.resources = core::Resources::cpu_memory(100, 1 << 20);
  a.confirmed_at = core::TimePoint{std::chrono::seconds(1'700'000'001)};
  a.claim_id = core::ClaimId{claim};
  return a;
}

StoredNodeHeader header(uint32_t node, core::Generation g) {
  StoredNodeHeader h;
  h.spec = node_spec(node);
  h.generation = g;
  h.epochs = {{core::PartitionId{2}, 5}, {core::PartitionId{3}, 1}};
  return h;
}

std::map<uint32_t, LoadedNode> load_all(const NodeStore& store) {
  std::map<uint32_t, LoadedNode> out;
  uint32_t previous = 0;
  bool first = true;
  auto st = store.load([&](LoadedNode&& n) {
    uint32_t id = n.header.spec.id.value;
    EXPECT_TRUE(first || id > previous) << "nodes not in id order";
    first = false;
    previous = id;
    out.emplace(id, std::move(n));
    return core::Status::ok();
  });
  EXPECT_TRUE(st) << st.error().to_string();
  return out;
}

TEST(NodeStore, EveryHostedNodeReloadsWithItsClaimsAndAllocations) {
  TempDir tmp;
  std::map<uint32_t, LoadedNode> expected;
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store) << store.error().to_string();
    // 300 nodes through one store, a ledger's worth of operations each.
    for (uint32_t n = 300; n >= 1; --n) {
      LoadedNode e;
      e.header = header(n, 0);
      auto b = (*store)->batch();
      b.put_header(e.header);
      ASSERT_OK((*store)->write(std::move(b)));
      // claim accepted
      auto c1 = live_claim(n * 10 + 1, n, {0, 1, 2});
      auto c2 = live_claim(n * 10 + 2, n + 1000, {4});
      e.header.generation = 2;
      b = (*store)->batch();
      b.put_claim(core::NodeId{n}, c1);
      b.put_claim(core::NodeId{n}, c2);
      b.put_header(e.header);
      ASSERT_OK((*store)->write(std::move(b)));
      // c1 confirmed: claim gone, allocations in
      e.header.generation = 3;
      b = (*store)->batch();
      b.erase_claim(core::NodeId{n}, c1.id);
      for (auto t : c1.tasks) {
        e.allocations.push_back(allocation(n, t, c1.id.value));
        b.put_allocation(core::NodeId{n}, e.allocations.back());
      }
      b.put_header(e.header);
      ASSERT_OK((*store)->write(std::move(b)));
      // task 1 finished
      e.header.generation = 4;
      b = (*store)->batch();
      b.erase_allocation(core::NodeId{n}, core::TaskRef{core::JobId{n}, 1});
      e.allocations.erase(e.allocations.begin() + 1);
      b.put_header(e.header);
      ASSERT_OK((*store)->write(std::move(b)));
      e.claims = {c2};
      expected.emplace(n, std::move(e));
    }
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store) << store.error().to_string();
  auto loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), expected.size());
  for (const auto& [id, e] : expected) EXPECT_EQ(loaded.at(id), e) << "node " << id;

  auto one = (*store)->load_node(core::NodeId{17});
  ASSERT_TRUE(one);
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ(**one, expected.at(17));
  auto none = (*store)->load_node(core::NodeId{301});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

size_t raw_allocation_records(const NodeStore& store) {
  size_t n = 0;
  EXPECT_OK(store.database().scan(NodeStore::kAllocations, {}, {}, [&](std::string_view, std::string_view) {
    ++n;
    return core::Status::ok();
  }));
  return n;
}

TEST(NodeStore, AClaimsAllocationsAreOneRecordRewrittenAsTheyChange) {
  TempDir tmp;
  LoadedNode e;
  e.header = header(3, 1);
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(e.header);
    e.allocations = {allocation(8, 0, 41), allocation(8, 2, 41), allocation(8, 5, 41)};
    b.put_allocations(core::NodeId{3}, core::ClaimId{41}, e.allocations);
    b.put_allocations(core::NodeId{3}, core::ClaimId{42}, std::vector{allocation(9, 1, 42)});
    ASSERT_OK((*store)->write(std::move(b)));
    EXPECT_EQ(raw_allocation_records(**store), 2u);
    // Task 8.2 ends: the claim's record is rewritten without it; claim 42's last ends.
    b = (*store)->batch();
    e.allocations.erase(e.allocations.begin() + 1);
    b.put_allocations(core::NodeId{3}, core::ClaimId{41}, e.allocations);
    b.put_allocations(core::NodeId{3}, core::ClaimId{42}, {});
    ASSERT_OK((*store)->write(std::move(b)));
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  EXPECT_EQ(raw_allocation_records(**store), 1u);
  auto loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded.at(3), e);
}

/// The raw value of node `node`'s record of claim `claim`.
std::string raw_claim_record(const NodeStore& store, uint32_t node, uint64_t claim) {
  auto key = keys::node_allocation_group(core::NodeId{node}, core::ClaimId{claim});
  auto v = store.database().get(NodeStore::kAllocations, key.view());
  EXPECT_TRUE(v && v->has_value());
  return v && v->has_value() ? **v : std::string{};
}

TEST(NodeStore, AClaimsRecordIsCompactAndReloadsEveryField) {
  TempDir tmp;
  LoadedNode e;
  e.header = header(4, 1);
  // Fields that change from one allocation to the next, and one that differs from all before it.
  std::vector<core::Allocation> held;
  for (core::TaskIndex i = 0; i < 64; ++i) held.push_back(allocation(7, i * 3, 50));
  held[5].resources = core::Resources::of({{core::dim::cpu, 0}, {core::dim::gpu, 2}, {core::dim::disk, 1 << 30}});
  held[9].task.job = core::JobId{uint64_t{1} << 40};
  held[10].partition = core::PartitionId{UINT32_MAX};
  held[11].finishes_at = core::kNever;
  held[12].confirmed_at = core::TimePoint{-5};
  held[13].resources = core::Resources{};
  e.allocations = held;
  std::sort(e.allocations.begin(), e.allocations.end(), [](const auto& a, const auto& b) { return a.task < b.task; });
  size_t protobuf_bytes = 0;
  for (const auto& a : held) protobuf_bytes += messages::encode(a).size();
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(e.header);
    b.put_allocations(core::NodeId{4}, core::ClaimId{50}, held);
    ASSERT_OK((*store)->write(std::move(b)));
    EXPECT_LT(raw_claim_record(**store, 4, 50).size() * 5, protobuf_bytes) << "not compact";
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  EXPECT_EQ(load_all(**store).at(4), e);
}

TEST(NodeStore, AllocationsTheCompactFormCannotHoldAreWrittenAsProtobufAndReload) {
  TempDir tmp;
  auto custom = core::DimensionRegistry::intern("licenses");
  ASSERT_TRUE(custom);
  LoadedNode e;
  e.header = header(6, 1);
  auto with_launch = allocation(3, 0, 60);
  core::TaskLaunch launch;
  launch.argv = {"/bin/true"};
  with_launch.launch = core::LaunchRef{launch};
  auto with_custom = allocation(3, 1, 61);
  with_custom.resources.set(*custom, 4);
  e.allocations = {with_launch, with_custom};
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(e.header);
    b.put_allocations(core::NodeId{6}, core::ClaimId{60}, std::vector{with_launch});
    b.put_allocations(core::NodeId{6}, core::ClaimId{61}, std::vector{with_custom});
    ASSERT_OK((*store)->write(std::move(b)));
    EXPECT_NE(raw_claim_record(**store, 6, 60).front(), '\0') << "a launch is kept: Protobuf";
    EXPECT_NE(raw_claim_record(**store, 6, 61).front(), '\0') << "a named dimension is kept: Protobuf";
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  EXPECT_EQ(load_all(**store).at(6), e);
}

/// Writes `value` under node 1's record of claim 9, beside node 1's header.
void put_claim_record(const std::string& dir, const std::string& value) {
  auto store = NodeStore::open(dir, host_a());
  ASSERT_TRUE(store);
  auto b = (*store)->batch();
  b.put_header(header(1, 1));
  ASSERT_OK((*store)->write(std::move(b)));
  rocksdb::WriteBatch raw;
  auto key = keys::node_allocation_group(core::NodeId{1}, core::ClaimId{9});
  ASSERT_TRUE(raw.Put((*store)->database().handle(NodeStore::kAllocations),
                      rocksdb::Slice{key.view().data(), key.view().size()}, value)
                  .ok());
  ASSERT_OK((*store)->database().write(std::move(raw)));
}

TEST(NodeStore, AClaimsRecordOfTheEarlierProtobufFormStillLoads) {
  TempDir tmp;
  pb::StoredAllocations p;
  std::vector<core::Allocation> held = {allocation(2, 0, 9), allocation(2, 1, 9)};
  for (const auto& a : held) messages::to_proto(a, *p.add_allocations());
  put_claim_record(tmp.path(), p.SerializeAsString());
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ(load_all(**store).at(1).allocations, held);
}

TEST(NodeStore, ADamagedCompactRecordIsCorruptNamingItsKey) {
  // A good record of two allocations, then damaged copies of it.
  std::string good;
  {
    TempDir tmp;
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_allocations(core::NodeId{1}, core::ClaimId{9}, std::vector{allocation(2, 0, 9), allocation(2, 1, 9)});
    ASSERT_OK((*store)->write(std::move(b)));
    good = raw_claim_record(**store, 1, 9);
  }
  ASSERT_GT(good.size(), 4u);
  std::string unknown_format = good;
  unknown_format[1] = 7;
  for (const auto& [what, value] :
       std::vector<std::pair<std::string, std::string>>{{"truncated", good.substr(0, good.size() - 1)},
                                                        {"trailing byte", good + '\x01'},
                                                        {"unknown format", unknown_format},
                                                        {"no allocation", std::string{"\0\1\0", 3}},
                                                        {"count past the end", std::string{"\0\1\x7f\0\0", 5}}}) {
    SCOPED_TRACE(what);
    TempDir tmp;
    put_claim_record(tmp.path(), value);
    StoreOptions read_only;
    read_only.read_only = true;
    auto reader = NodeStore::open(tmp.path(), host_a(), read_only);
    ASSERT_TRUE(reader);
    auto st = (*reader)->load([](LoadedNode&&) { return core::Status::ok(); });
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, core::Errc::corrupt);
    EXPECT_THAT(st.error().message,
                AllOf(HasSubstr("column family 'node_allocations'"), HasSubstr("compact allocations")));
  }
}

TEST(NodeStore, OneRecordPerTaskAllocationsAreRewrittenPerClaimOnOpen) {
  TempDir tmp;
  LoadedNode e;
  e.header = header(5, 2);
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(e.header);
    // The older format: one record per task (and one without a claim id, which stays so).
    e.allocations = {allocation(1, 0, 0), allocation(2, 0, 70), allocation(2, 1, 70), allocation(3, 4, 71)};
    for (const auto& a : e.allocations) b.put_allocation(core::NodeId{5}, a);
    ASSERT_OK((*store)->write(std::move(b)));
    EXPECT_EQ(raw_allocation_records(**store), 4u);
  }
  StoreOptions read_only;
  read_only.read_only = true;
  {
    auto reader = NodeStore::open(tmp.path(), host_a(), read_only);
    ASSERT_TRUE(reader);
    EXPECT_EQ(raw_allocation_records(**reader), 4u) << "a read-only open changes nothing";
    EXPECT_EQ(load_all(**reader).at(5), e);
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  EXPECT_EQ(raw_allocation_records(**store), 3u);
  EXPECT_EQ(load_all(**store).at(5), e);
}

TEST(NodeStore, PutReportReplacesAndEraseNodeRemovesEverything) {
  TempDir tmp;
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  auto b = (*store)->batch();
  b.put_header(header(1, 1));
  b.put_claim(core::NodeId{1}, live_claim(11, 1, {0}));
  b.put_allocation(core::NodeId{1}, allocation(1, 5, 10));
  b.put_header(header(2, 1));
  b.put_claim(core::NodeId{2}, live_claim(21, 2, {0}));
  ASSERT_OK((*store)->write(std::move(b)));

  core::NodeReport r;
  r.spec = node_spec(1);
  r.snapshot.node = core::NodeId{1};
  r.snapshot.generation = 9;
  r.snapshot.state = core::NodeState::draining;
  r.epochs = {{core::PartitionId{7}, 3}};
  r.claims = {live_claim(12, 1, {1, 2})};
  r.allocations = {allocation(1, 6, 12), allocation(1, 7, 12)};
  b = (*store)->batch();
  b.put_report(r);
  b.erase_node(core::NodeId{2});
  ASSERT_OK((*store)->write(std::move(b)));

  auto loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), 1u);
  const auto& n = loaded.at(1);
  EXPECT_EQ(n.header.generation, 9u);
  EXPECT_EQ(n.header.state, core::NodeState::draining);
  EXPECT_EQ(n.header.epochs, r.epochs);
  EXPECT_EQ(n.claims, r.claims);
  EXPECT_EQ(n.allocations, r.allocations);
}

TEST(NodeStore, ErasingAClaimWritesNothingUntilTheStoreHoldsClaimsAndThenErasesIt) {
  // Accepted claims are not stored, so a confirm's erase of its claim has
  // nothing to erase: it adds no record. A claim a report put (or an older
  // build left: seen again after a reopen) is erased as before.
  TempDir tmp;
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(header(3, 1));
    ASSERT_OK((*store)->write(std::move(b)));
    b = (*store)->batch();
    b.erase_claim(core::NodeId{3}, core::ClaimId{41});
    EXPECT_TRUE(b.empty());
    b = (*store)->batch();
    b.put_claim(core::NodeId{3}, live_claim(41, 8, {0, 1}));
    b.put_claim(core::NodeId{3}, live_claim(42, 8, {2}));
    ASSERT_OK((*store)->write(std::move(b)));
    b = (*store)->batch();
    b.erase_claim(core::NodeId{3}, core::ClaimId{41});
    EXPECT_EQ(b.records(), 1u);
    ASSERT_OK((*store)->write(std::move(b)));
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  auto b = (*store)->batch();
  b.erase_claim(core::NodeId{3}, core::ClaimId{42});
  EXPECT_EQ(b.records(), 1u);
  ASSERT_OK((*store)->write(std::move(b)));
  auto loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(loaded.at(3).claims.empty());
}

TEST(NodeStore, ItsFsyncsFollowEachOtherNoFasterThanItsSyncInterval) {
  // Nothing waits for a node store write: by default its synced writes are
  // kNodeStoreSyncInterval apart (batches queued meanwhile share one fsync);
  // options that name an interval keep it.
  auto two_writes = [](const StoreOptions& o) {
    TempDir tmp;
    auto store = NodeStore::open(tmp.path(), host_a(), o);
    EXPECT_TRUE(store);
    auto t0 = std::chrono::steady_clock::now();
    for (uint32_t node = 1; node <= 2; ++node) {
      auto b = (*store)->batch();
      b.put_header(header(node, 1));
      EXPECT_OK((*store)->write(std::move(b)));
    }
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(load_all(**store).size(), 2u);
    EXPECT_EQ((*store)->database().writer_stats().syncs, 2u);
    return took;
  };
  EXPECT_GE(two_writes({}), kNodeStoreSyncInterval);
  StoreOptions longer;
  longer.sync_interval = std::chrono::milliseconds(300);
  EXPECT_GE(two_writes(longer), std::chrono::milliseconds(300));
}

TEST(NodeStore, RecentTaskEndsReloadBySlotAndGoWithTheirNode) {
  TempDir tmp;
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  auto end_of = [](uint64_t job) {
    core::NodeEvent ev;
    ev.kind = core::NodeEvent::Kind::task_finished;
    ev.partition = core::PartitionId{2};
    ev.task = core::TaskRef{core::JobId{job}, 0};
    ev.claim_id = core::ClaimId{job};
    ev.exit_code = 3;
    ev.final_state = core::TaskState::failed;
    return ev;
  };
  auto b = (*store)->batch();
  b.put_header(header(1, 1));
  b.put_finished(core::NodeId{1}, 0, 0, end_of(10));
  b.put_finished(core::NodeId{1}, 1, 1, end_of(11));
  b.put_finished(core::NodeId{1}, 0, 4, end_of(14));  // the ring went round: slot 0 again
  b.put_header(header(2, 1));
  b.put_finished(core::NodeId{2}, 0, 0, end_of(20));
  ASSERT_OK((*store)->write(std::move(b)));
  auto loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), 2u);
  using Finished = std::vector<std::pair<uint64_t, core::NodeEvent>>;
  EXPECT_EQ(loaded.at(1).finished, (Finished{{4, end_of(14)}, {1, end_of(11)}}));
  EXPECT_EQ(loaded.at(2).finished, (Finished{{0, end_of(20)}}));

  // A registration's full report keeps them; removing the node removes them.
  core::NodeReport r;
  r.spec = node_spec(1);
  r.snapshot.node = core::NodeId{1};
  b = (*store)->batch();
  b.put_report(r);
  b.erase_node(core::NodeId{2});
  ASSERT_OK((*store)->write(std::move(b)));
  loaded = load_all(**store);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded.at(1).finished.size(), 2u);
}

TEST(NodeStore, AClaimWithoutItsNodeIsCorruptNotSkipped) {
  TempDir tmp;
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(header(1, 1));
    b.put_header(header(3, 1));
    b.put_claim(core::NodeId{2}, live_claim(5, 1, {0}));  // node 2 has no header
    ASSERT_OK((*store)->write(std::move(b)));
  }
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_TRUE(store);
  auto st = (*store)->load([](LoadedNode&&) { return core::Status::ok(); });
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::corrupt);
  EXPECT_THAT(st.error().message,
              AllOf(HasSubstr(tmp.path()), HasSubstr("column family 'node_claims'"),
                    HasSubstr("node 2 claim 5"), HasSubstr("no node_headers record")));
}

TEST(NodeStore, AnAllocationUnderTheWrongKeyIsCorrupt) {
  TempDir tmp;
  {
    auto store = NodeStore::open(tmp.path(), host_a());
    ASSERT_TRUE(store);
    auto b = (*store)->batch();
    b.put_header(header(1, 1));
    ASSERT_OK((*store)->write(std::move(b)));
  }
  {
    rocksdb::Options o;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(o, tmp.path(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions{});
    std::vector<rocksdb::ColumnFamilyHandle*> hs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, tmp.path(), descs, &hs, &raw).ok());
    size_t i = 0;
    while (names[i] != "node_allocations") ++i;
    auto key = keys::node_allocation(core::NodeId{1}, {core::JobId{8}, 3});
    std::string value = messages::encode(allocation(8, 4, 1));
    EXPECT_TRUE(raw->Put({}, hs[i], rocksdb::Slice{key.view().data(), key.view().size()}, value).ok());
    for (auto* h : hs) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  // Opening for writing upgrades one-per-task allocation records, and reads
  // this one there; a read-only open reads it at load.
  auto store = NodeStore::open(tmp.path(), host_a());
  ASSERT_FALSE(store);
  EXPECT_THAT(store.error().message, AllOf(HasSubstr("column family 'node_allocations'"),
                                           HasSubstr("node 1 job 8 task 3"), HasSubstr("holds job 8 task 4")));
  StoreOptions read_only;
  read_only.read_only = true;
  auto reader = NodeStore::open(tmp.path(), host_a(), read_only);
  ASSERT_TRUE(reader);
  auto st = (*reader)->load([](LoadedNode&&) { return core::Status::ok(); });
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, AllOf(HasSubstr("column family 'node_allocations'"),
                                        HasSubstr("node 1 job 8 task 3"),
                                        HasSubstr("holds job 8 task 4")));
}

TEST(NodeStore, AnotherHostsStoreOrAPartitionStoreIsRefused) {
  TempDir tmp;
  { ASSERT_TRUE(NodeStore::open(tmp / "n", host_a())); }
  auto other = NodeStore::open(tmp / "n", NodeStoreIdentity{"c1", "host-b"});
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message,
              AllOf(HasSubstr("cluster 'c1' host 'host-a'"), HasSubstr("cluster 'c1' host 'host-b'")));
  { ASSERT_TRUE(PartitionStore::open(tmp / "p", partition_id(4))); }
  auto wrong = NodeStore::open(tmp / "p", host_a());
  ASSERT_FALSE(wrong);
  EXPECT_THAT(wrong.error().message, HasSubstr("partition store of cluster 'c1' partition 4"));
}

}  // namespace
}  // namespace claimsched::storage
