// storage/partition_store: records survive a reopen and come back in key
// order; every bad input (a corrupt or misplaced record, a damaged table
// file, another cluster's or partition's directory, an unwritable or full
// disk) is an Error naming the directory and the record, never a crash and
// never a silent skip; nothing acknowledged is lost.

#include "storage/partition_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/mount.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>

#include "storage/node_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::unique_ptr<PartitionStore> open_ok(const std::string& dir, PartitionIdentity id = partition_id(),
                                        StoreOptions options = {}) {
  auto s = PartitionStore::open(dir, id, options);
  if (!s) ADD_FAILURE() << s.error().to_string();
  return s ? std::move(*s) : nullptr;
}

/// Writes `value` at `key` of column family `cf` behind the store's back,
/// with plain RocksDB (the store must be closed).
void raw_put(const std::string& dir, std::string_view cf, std::string_view key,
             std::string_view value) {
  rocksdb::Options o;
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(o, dir, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) descs.emplace_back(n, rocksdb::ColumnFamilyOptions{});
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir, descs, &hs, &raw).ok());
  size_t i = static_cast<size_t>(std::find(names.begin(), names.end(), std::string{cf}) - names.begin());
  ASSERT_LT(i, names.size());
  rocksdb::WriteOptions wo;
  wo.sync = true;
  EXPECT_TRUE(raw->Put(wo, hs[i], rocksdb::Slice{key.data(), key.size()},
                       rocksdb::Slice{value.data(), value.size()})
                  .ok());
  for (auto* h : hs) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

// -- round trips and recovery order -------------------------------------------

TEST(PartitionStore, RecordsSurviveAReopenInKeyOrder) {
  TempDir tmp;
  std::mt19937 rng{1};
  std::vector<uint64_t> jobs{300, 2, 70000, 1, 256, 255};
  std::vector<uint32_t> nodes{9, 1, 4'000'000'000u, 256};
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
    for (auto n : nodes) {
      auto b = store->batch();
      b.put_node(stored_node(n));
      ASSERT_OK(store->write(std::move(b)));
    }
    for (auto j : jobs) {
      auto b = store->batch();
      b.put_job(stored_job(j, 300));
      std::vector<core::TaskIndex> idx{299, 0, 256, 1, 255};
      for (auto t : idx) b.put_task(core::JobId{j}, t, stored_task(t + 1));
      ASSERT_OK(store->write(std::move(b)));
    }
    auto b = store->batch();
    b.set_epoch(12);
    b.set_applied_sequence(99);
    ASSERT_OK(store->write(std::move(b)));
  }
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);

  std::vector<std::string> order;
  RecoveryVisitor v;
  v.meta = [&](const PartitionMeta& m) {
    EXPECT_EQ(m.cluster_id, "c1");
    EXPECT_EQ(m.partition, core::PartitionId{1});
    EXPECT_EQ(m.epoch, 12u);
    EXPECT_EQ(m.applied_sequence, 99u);
    order.push_back("meta");
    return core::Status::ok();
  };
  std::vector<uint32_t> seen_nodes;
  v.node = [&](const StoredNode& n) {
    EXPECT_EQ(n, stored_node(n.spec.id.value));
    seen_nodes.push_back(n.spec.id.value);
    order.push_back("node");
    return core::Status::ok();
  };
  std::vector<uint64_t> seen_jobs;
  v.job = [&](const StoredJob& j) {
    EXPECT_EQ(j, stored_job(j.spec.id.value, 300));
    seen_jobs.push_back(j.spec.id.value);
    order.push_back("job");
    return core::Status::ok();
  };
  std::vector<std::pair<uint64_t, uint32_t>> seen_tasks;
  v.task = [&](core::JobId j, core::TaskIndex t, const StoredTask& task) {
    EXPECT_EQ(task, stored_task(t + 1));
    seen_tasks.emplace_back(j.value, t);
    order.push_back("task");
    return core::Status::ok();
  };
  ASSERT_OK(store->recover(v));

  std::sort(nodes.begin(), nodes.end());
  std::sort(jobs.begin(), jobs.end());
  EXPECT_EQ(seen_nodes, nodes);
  EXPECT_EQ(seen_jobs, jobs);
  auto sorted_tasks = seen_tasks;
  std::sort(sorted_tasks.begin(), sorted_tasks.end());
  EXPECT_EQ(seen_tasks, sorted_tasks);
  EXPECT_EQ(seen_tasks.size(), jobs.size() * 5);
  // meta, then nodes, jobs, tasks.
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [](const auto& a, const auto& b) {
    auto rank = [](const std::string& s) {
      return s == "meta" ? 0 : s == "node" ? 1 : s == "job" ? 2 : 3;
    };
    return rank(a) < rank(b);
  }));

  auto one = store->get_task(core::JobId{256}, 299);
  ASSERT_TRUE(one);
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ(**one, stored_task(300));
  auto none = store->get_job(core::JobId{3});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  std::vector<core::TaskIndex> of;
  ASSERT_OK(store->for_each_task_of(core::JobId{255}, [&](core::TaskIndex t, const StoredTask&) {
    of.push_back(t);
    return core::Status::ok();
  }));
  EXPECT_EQ(of, (std::vector<core::TaskIndex>{0, 1, 255, 256, 299}));
}

TEST(PartitionStore, StateChangesOverwriteAndEraseJobRemovesItsTasks) {
  TempDir tmp;
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);
  fill(*store, 1, 3, 10);
  auto b = store->batch();
  b.put_task(core::JobId{2}, 4, stored_task(5, core::TaskState::succeeded));
  std::vector<core::TaskIndex> claim{7, 8};
  b.put_tasks(core::JobId{2}, claim, stored_task(6, core::TaskState::claimed, 1234));
  b.erase_job(core::JobId{1});
  b.erase_task(core::JobId{3}, 9);
  ASSERT_OK(store->write(std::move(b)));

  auto counts = store->count();
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->jobs, 2u);
  EXPECT_EQ(counts->tasks, 19u);
  EXPECT_EQ(**store->get_task(core::JobId{2}, 4), stored_task(5, core::TaskState::succeeded));
  EXPECT_EQ(**store->get_task(core::JobId{2}, 8), stored_task(6, core::TaskState::claimed, 1234));
  EXPECT_FALSE(store->get_task(core::JobId{1}, 0)->has_value());
  EXPECT_FALSE(store->get_task(core::JobId{3}, 9)->has_value());
}

size_t raw_records(const PartitionStore& store, PartitionStore::Cf cf) {
  size_t n = 0;
  EXPECT_OK(store.database().scan(cf, {}, {}, [&](std::string_view, std::string_view) {
    ++n;
    return core::Status::ok();
  }));
  return n;
}

size_t raw_task_records(const PartitionStore& store) { return raw_records(store, PartitionStore::kTasks); }

std::map<core::TaskIndex, StoredTask> tasks_of(const PartitionStore& store, uint64_t job) {
  std::map<core::TaskIndex, StoredTask> out;
  EXPECT_OK(store.for_each_task_of(core::JobId{job}, [&](core::TaskIndex t, const StoredTask& task) {
    out.emplace(t, task);
    return core::Status::ok();
  }));
  return out;
}

TEST(PartitionStore, AClaimsTasksAreOneRecordAndComeBackAsThoseTasksAfterARestart) {
  TempDir tmp;
  const auto claimed = stored_task(4, core::TaskState::claimed, 100);
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
    auto b = store->batch();
    b.put_job(stored_job(7, 12));
    std::vector<core::TaskIndex> claim{5, 1, 3};
    b.put_tasks(core::JobId{7}, claim, claimed);
    ASSERT_OK(store->write(std::move(b)));
    EXPECT_EQ(raw_task_records(*store), 1u) << "a claim of three tasks is one record";
  }
  // kill -9 and restart: the record comes back as those three tasks.
  const auto done = stored_task(4, core::TaskState::succeeded, 100);
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
    auto got = tasks_of(*store, 7);
    EXPECT_EQ(got, (std::map<core::TaskIndex, StoredTask>{{1, claimed}, {3, claimed}, {5, claimed}}));
    EXPECT_EQ(**store->get_task(core::JobId{7}, 3), claimed);
    // After the restart, one task ends (a record of its own, newer than the
    // claim's), and two go back to pending and are placed again together.
    auto b = store->batch();
    b.put_task(core::JobId{7}, 3, done);
    b.put_task(core::JobId{7}, 1, stored_task(0, core::TaskState::pending, 0));
    std::vector<core::TaskIndex> again{1, 9};
    b.put_tasks(core::JobId{7}, again, stored_task(6, core::TaskState::claimed, 200));
    ASSERT_OK(store->write(std::move(b)));
  }
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);
  const auto placed_again = stored_task(6, core::TaskState::claimed, 200);
  std::map<core::TaskIndex, StoredTask> want{{1, placed_again}, {3, done}, {5, claimed}, {9, placed_again}};
  EXPECT_EQ(tasks_of(*store, 7), want);
  std::map<core::TaskIndex, StoredTask> recovered;
  RecoveryVisitor v;
  v.task = [&](core::JobId job, core::TaskIndex t, const StoredTask& task) {
    EXPECT_EQ(job, core::JobId{7});
    EXPECT_TRUE(recovered.emplace(t, task).second) << "task " << t << " recovered twice";
    return core::Status::ok();
  };
  ASSERT_OK(store->recover(v));
  EXPECT_EQ(recovered, want);
  EXPECT_EQ(store->count()->tasks, 4u);
  // The job's erase takes every record of it, the claims' too.
  auto b = store->batch();
  b.erase_job(core::JobId{7});
  ASSERT_OK(store->write(std::move(b)));
  EXPECT_EQ(raw_task_records(*store), 0u);
}

TEST(PartitionStore, AStoreOfOneRecordPerTaskStillRecoversAndTakesNewRecords) {
  TempDir tmp;
  const auto old = stored_task(2, core::TaskState::running, 50);
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
  }
  // The older format: one record per task, no version, no task_version meta.
  for (core::TaskIndex t : {0u, 1u, 2u})
    raw_put(tmp.path(), "tasks", keys::task(core::JobId{4}, t), messages::encode(old));
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);
  EXPECT_EQ(tasks_of(*store, 4), (std::map<core::TaskIndex, StoredTask>{{0, old}, {1, old}, {2, old}}));
  auto b = store->batch();
  std::vector<core::TaskIndex> claim{1, 2};
  const auto placed = stored_task(3, core::TaskState::claimed, 60);
  b.put_tasks(core::JobId{4}, claim, placed);
  ASSERT_OK(store->write(std::move(b)));
  EXPECT_EQ(tasks_of(*store, 4), (std::map<core::TaskIndex, StoredTask>{{0, old}, {1, placed}, {2, placed}}));
}

std::map<uint64_t, StoredJob> jobs_of(const PartitionStore& store) {
  std::map<uint64_t, StoredJob> out;
  uint64_t previous = 0;
  EXPECT_OK(store.for_each_job([&](const StoredJob& job) {
    EXPECT_GT(job.spec.id.value, previous) << "jobs come in id order, each once";
    previous = job.spec.id.value;
    out.emplace(job.spec.id.value, job);
    return core::Status::ok();
  }));
  return out;
}

/// `job` renumbered: what each copy of it reads back as.
StoredJob copy_of(StoredJob job, uint64_t id) {
  job.spec.id = core::JobId{id};
  return job;
}

TEST(PartitionStore, CopiesOfAJobAreOneRecordAndEachComesBackAsAJobOfItsOwn) {
  TempDir tmp;
  const auto first = stored_job(100, 2);
  auto cancelled = [&](uint64_t id) {
    auto j = copy_of(first, id);
    j.status = JobStatus::cancelled;
    j.finished_at = core::TimePoint{std::chrono::seconds(9)};
    return j;
  };
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
    auto b = store->batch();
    b.put_job(stored_job(99));
    b.put_job_copies(first, 500);
    b.put_job(stored_job(600));
    ASSERT_OK(store->write(std::move(b)));
    EXPECT_EQ(raw_records(*store, PartitionStore::kJobs), 3u) << "500 copies are one record";
    // Later, the user cancels the first copy, one in the middle and the last.
    auto later = store->batch();
    for (uint64_t id : {100, 321, 599}) later.put_job(cancelled(id));
    ASSERT_OK(store->write(std::move(later)));
  }
  // kill -9 and restart: 502 jobs, each copy under its own id.
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);
  auto jobs = jobs_of(*store);
  ASSERT_EQ(jobs.size(), 502u);
  EXPECT_EQ(jobs.begin()->first, 99u);
  EXPECT_EQ(jobs.rbegin()->first, 600u);
  for (uint64_t id = 100; id < 600; ++id) {
    bool was_cancelled = id == 100 || id == 321 || id == 599;
    EXPECT_EQ(jobs[id], was_cancelled ? cancelled(id) : copy_of(first, id)) << "job " << id;
  }
  EXPECT_EQ(store->count()->jobs, 502u);
  EXPECT_EQ(**store->get_job(core::JobId{100}), cancelled(100));
  EXPECT_EQ(**store->get_job(core::JobId{101}), copy_of(first, 101));
  EXPECT_EQ(**store->get_job(core::JobId{598}), copy_of(first, 598));
  EXPECT_FALSE(store->get_job(core::JobId{601})->has_value());
  // Erasing the first copy's job takes the copies record with it.
  auto b = store->batch();
  b.erase_job(core::JobId{100});
  ASSERT_OK(store->write(std::move(b)));
  EXPECT_EQ(jobs_of(*store).size(), 4u) << "99, 321, 599 (their own records) and 600 remain";
}

TEST(PartitionStore, MoreCopiesThanARecordHoldsAreSeveralRecords) {
  TempDir tmp;
  auto store = open_ok(tmp.path());
  ASSERT_TRUE(store);
  const auto first = stored_job(1, 1);
  const uint32_t count = 2 * kMaxJobCopiesPerRecord + 1;
  auto b = store->batch();
  b.put_job_copies(first, count);
  ASSERT_OK(store->write(std::move(b)));
  EXPECT_EQ(raw_records(*store, PartitionStore::kJobs), 3u);
  auto jobs = jobs_of(*store);
  ASSERT_EQ(jobs.size(), count);
  EXPECT_EQ(jobs.rbegin()->second, copy_of(first, count));
  EXPECT_EQ(**store->get_job(core::JobId{1}), first) << "the first, under its copies' key";
  EXPECT_EQ(**store->get_job(core::JobId{kMaxJobCopiesPerRecord + 1}), copy_of(first, kMaxJobCopiesPerRecord + 1))
      << "the first of the second record";
  EXPECT_EQ(**store->get_job(core::JobId{count}), copy_of(first, count)) << "the last, a record of its own";
  EXPECT_EQ(**store->get_job(core::JobId{kMaxJobCopiesPerRecord + 7}), copy_of(first, kMaxJobCopiesPerRecord + 7));
}

// -- corrupt records ----------------------------------------------------------

class CorruptRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = open_ok(tmp_.path());
    ASSERT_TRUE(store);
    fill(*store, 1, 10, 20, 5);
  }
  /// Recovery's error after the raw write.
  core::Error recover_error() {
    auto store = open_ok(tmp_.path());
    if (!store) return {};
    size_t visited = 0;
    RecoveryVisitor v;
    v.task = [&](core::JobId, core::TaskIndex, const StoredTask&) {
      ++visited;
      return core::Status::ok();
    };
    auto st = store->recover(v);
    EXPECT_FALSE(st) << "recovery accepted a corrupt record";
    return st ? core::Error{} : st.error();
  }
  TempDir tmp_;
};

TEST_F(CorruptRecord, UnparseableTaskValueIsNamed) {
  raw_put(tmp_.path(), "tasks", keys::task(core::JobId{5}, 2), "\xff\xfe garbage");
  auto e = recover_error();
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_THAT(e.message, AllOf(HasSubstr(tmp_.path()), HasSubstr("column family 'tasks'"),
                               HasSubstr("job 5 task 2 [000000000000000500000002]"),
                               HasSubstr("StoredTask")));
}

TEST_F(CorruptRecord, ValidProtobufWithAMissingFieldIsNamed) {
  pb::StoredJob p;
  messages::to_proto(stored_job(3), p);
  p.set_status(pb::JOB_STATUS_UNSPECIFIED);
  raw_put(tmp_.path(), "jobs", keys::job(core::JobId{3}), p.SerializeAsString());
  auto e = recover_error();
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_THAT(e.message, AllOf(HasSubstr(tmp_.path()), HasSubstr("column family 'jobs'"),
                               HasSubstr("job 3 ["), HasSubstr("StoredJob.status: missing")));
}

TEST_F(CorruptRecord, ACopiesRecordOfOneJobOrUnderAnotherIdIsNamed) {
  raw_put(tmp_.path(), "jobs", keys::job_copies(core::JobId{40}, 1), messages::encode(stored_job(40)));
  auto e = recover_error();
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_THAT(e.message, AllOf(HasSubstr("column family 'jobs'"), HasSubstr("1 copies of job 40 ["),
                               HasSubstr("a copies record of 1 jobs")));
  TempDir other;
  { ASSERT_TRUE(open_ok(other.path())); }
  raw_put(other.path(), "jobs", keys::job_copies(core::JobId{40}, 3), messages::encode(stored_job(41)));
  auto store = open_ok(other.path());
  ASSERT_TRUE(store);
  auto st = store->for_each_job([](const StoredJob&) { return core::Status::ok(); });
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, AllOf(HasSubstr("3 copies of job 40 ["), HasSubstr("holds job 41")));
  // Copies inside another record's copies: no store of ours writes that.
  TempDir overlapping;
  {
    auto fresh = open_ok(overlapping.path());
    ASSERT_TRUE(fresh);
    auto b = fresh->batch();
    b.put_job_copies(stored_job(40), 3);
    ASSERT_OK(fresh->write(std::move(b)));
  }
  raw_put(overlapping.path(), "jobs", keys::job_copies(core::JobId{41}, 2), messages::encode(stored_job(41)));
  store = open_ok(overlapping.path());
  ASSERT_TRUE(store);
  st = store->for_each_job([](const StoredJob&) { return core::Status::ok(); });
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, AllOf(HasSubstr("2 copies of job 41 ["), HasSubstr("overlaps the copies of job 40")));
}

TEST_F(CorruptRecord, MalformedKeyIsNamed) {
  raw_put(tmp_.path(), "tasks", "short", messages::encode(stored_task(1)));
  auto e = recover_error();
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_THAT(e.message, AllOf(HasSubstr("column family 'tasks'"),
                               HasSubstr("malformed key [73686f7274] (5 bytes)")));
}

TEST_F(CorruptRecord, RecordUnderTheWrongKeyIsNamed) {
  raw_put(tmp_.path(), "nodes", keys::node(core::NodeId{3}), messages::encode(stored_node(4)));
  auto e = recover_error();
  EXPECT_THAT(e.message, AllOf(HasSubstr("column family 'nodes'"), HasSubstr("node 3 ["),
                               HasSubstr("holds node 4")));
}

TEST_F(CorruptRecord, UnknownMetaRecordIsNamed) {
  raw_put(tmp_.path(), "meta", "surprise", "x");
  auto e = recover_error();
  EXPECT_THAT(e.message, AllOf(HasSubstr("column family 'meta'"), HasSubstr("'surprise'"),
                               HasSubstr("unknown meta record")));
}

TEST_F(CorruptRecord, CorruptIdentityFailsTheOpen) {
  raw_put(tmp_.path(), "meta", keys::kIdentity, "\x08\x09");
  auto s = PartitionStore::open(tmp_.path(), partition_id());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, core::Errc::corrupt);
  EXPECT_THAT(s.error().message, AllOf(HasSubstr(tmp_.path()), HasSubstr("'identity'"),
                                       HasSubstr("StoreIdentity.kind")));
}

TEST(PartitionStore, DamagedTableFileIsAnErrorNamingTheDirectory) {
  TempDir tmp;
  {
    StoreOptions o;
    o.write_buffer_size = 256 << 10;
    auto store = open_ok(tmp.path(), partition_id(), o);
    ASSERT_TRUE(store);
    fill(*store, 1, 200, 50);
    ASSERT_OK(store->database().flush());
  }
  // Damage the middle of the largest table file (data blocks, not the footer).
  fs::path largest;
  uintmax_t size = 0;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    if (e.path().extension() == ".sst" && e.file_size() > size) {
      size = e.file_size();
      largest = e.path();
    }
  ASSERT_GT(size, 4096u);
  {
    std::fstream f{largest, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(size / 3));
    std::string junk(512, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto s = PartitionStore::open(tmp.path(), partition_id());
  core::Error e;
  if (!s) {
    e = s.error();
  } else {
    auto counts = (*s)->count();
    ASSERT_FALSE(counts) << "a damaged table file was read without complaint";
    e = counts.error();
  }
  EXPECT_EQ(e.code, core::Errc::corrupt) << e.to_string();
  EXPECT_THAT(e.message, HasSubstr(tmp.path()));
  EXPECT_THAT(e.message, HasSubstr("Corruption"));
}

// -- whose directory ----------------------------------------------------------

TEST(PartitionStore, AnotherClustersOrPartitionsDirectoryIsRefusedNamingBoth) {
  TempDir tmp;
  {
    auto store = open_ok(tmp.path(), partition_id(1, "c1"));
    ASSERT_TRUE(store);
    fill(*store, 1, 2, 2);
  }
  auto other_cluster = PartitionStore::open(tmp.path(), partition_id(1, "c2"));
  ASSERT_FALSE(other_cluster);
  EXPECT_EQ(other_cluster.error().code, core::Errc::invalid_argument);
  EXPECT_THAT(other_cluster.error().message,
              AllOf(HasSubstr(tmp.path()), HasSubstr("cluster 'c1' partition 1"),
                    HasSubstr("cluster 'c2' partition 1")));
  auto other_partition = PartitionStore::open(tmp.path(), partition_id(2, "c1"));
  ASSERT_FALSE(other_partition);
  EXPECT_THAT(other_partition.error().message,
              AllOf(HasSubstr("cluster 'c1' partition 1"), HasSubstr("cluster 'c1' partition 2")));
  // Refusing wrote nothing: the owner still opens it with its data.
  auto store = open_ok(tmp.path(), partition_id(1, "c1"));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->count()->tasks, 4u);
}

TEST(PartitionStore, ANodeStoreOrForeignDatabaseIsRefused) {
  TempDir tmp;
  {
    auto ns = NodeStore::open(tmp / "nodes", NodeStoreIdentity{"c1", "host-a"});
    ASSERT_TRUE(ns) << ns.error().to_string();
  }
  auto s = PartitionStore::open(tmp / "nodes", partition_id());
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message,
              AllOf(HasSubstr(tmp / "nodes"), HasSubstr("node store of cluster 'c1' host 'host-a'"),
                    HasSubstr("partition store of cluster 'c1' partition 1")));
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, tmp / "plain", &raw).ok());
    delete raw;
  }
  s = PartitionStore::open(tmp / "plain", partition_id());
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("column families [default]"));
}

TEST(PartitionStore, RocksDbDiagnosticsGoToTheSinkNotToALogFileOnTheDataDisk) {
  TempDir tmp;
  std::mutex m;
  std::vector<std::string> lines;
  StoreOptions o;
  o.log_level = RocksLogLevel::info;
  o.log = [&](RocksLogLevel, std::string_view path, std::string_view line) {
    std::lock_guard<std::mutex> g{m};
    EXPECT_EQ(path, tmp.path());
    lines.emplace_back(line);
  };
  {
    auto store = open_ok(tmp.path(), partition_id(), o);
    ASSERT_TRUE(store);
    fill(*store, 1, 2, 2);
  }
  std::lock_guard<std::mutex> g{m};
  EXPECT_FALSE(lines.empty());
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with("LOG")) << e.path();
}

// -- unwritable and full disks ------------------------------------------------
// Tests run as root, where chmod does not stop writes. What is tested instead:
// a regular file where the directory should be (and under it), the read_only
// option, a filesystem that fails writes with ENOSPC / EROFS (injected through
// RocksDB's FileSystem), and - where the test may mount - a real full tmpfs
// and a real read-only remount.

TEST(PartitionStore, AFileWhereTheDirectoryShouldBeIsAnIoError) {
  TempDir tmp;
  { std::ofstream{tmp / "file"} << "not a database"; }
  for (auto dir : {tmp / "file", tmp / "file" + "/sub"}) {
    auto s = PartitionStore::open(dir, partition_id());
    ASSERT_FALSE(s) << dir;
    EXPECT_EQ(s.error().code, core::Errc::io_error);
    EXPECT_THAT(s.error().message, HasSubstr(dir));
  }
}

TEST(PartitionStore, MissingDirectoryWithoutCreateIsAnError) {
  TempDir tmp;
  StoreOptions o;
  o.create_if_missing = false;
  auto s = PartitionStore::open(tmp / "absent", partition_id(), o);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("no database in " + tmp / "absent"));
}

TEST(PartitionStore, ReadOnlyOpenReadsButRefusesWrites) {
  TempDir tmp;
  {
    auto store = open_ok(tmp.path());
    ASSERT_TRUE(store);
    fill(*store, 1, 3, 3);
  }
  StoreOptions o;
  o.read_only = true;
  auto store = open_ok(tmp.path(), partition_id(), o);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->count()->tasks, 9u);
  auto b = store->batch();
  b.put_job(stored_job(77));
  auto st = store->write(std::move(b));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::wrong_state);
  EXPECT_THAT(st.error().message, AllOf(HasSubstr(tmp.path()), HasSubstr("read-only")));
}

TEST(PartitionStore, InjectedFullDiskFailsWritesClearlyAndLosesNothingAcknowledged) {
  TempDir tmp;
  FaultEnv fault;
  StoreOptions o;
  o.env = fault.env.get();
  {
    auto store = open_ok(tmp.path(), partition_id(), o);
    ASSERT_TRUE(store);
    fill(*store, 1, 10, 10);
    fault.fs->set_fault(Fault::no_space);
    auto b = store->batch();
    b.put_job(stored_job(500));
    auto st = store->write(std::move(b));
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, core::Errc::io_error);
    EXPECT_THAT(st.error().message,
                AllOf(HasSubstr(tmp.path()), HasSubstr("No space"), HasSubstr("disk is full")));
    ASSERT_TRUE(store->database().write_failure());
    // Room again, but RocksDB 7.8 cannot resume after a failed log write: the
    // store is fail-stop and says so, naming the first failure.
    fault.fs->set_fault(Fault::none);
    auto b2 = store->batch();
    b2.put_job(stored_job(501));
    auto st2 = store->write(std::move(b2));
    ASSERT_FALSE(st2);
    EXPECT_THAT(st2.error().message,
                AllOf(HasSubstr("takes no more writes"), HasSubstr("No space"), HasSubstr("reopen")));
    EXPECT_EQ(store->writer_stats().failed_writes, 2u);
  }
  // Reopened: every acknowledged write is there, and writes work again.
  auto store = open_ok(tmp.path(), partition_id(), o);
  ASSERT_TRUE(store);
  auto counts = store->count();
  ASSERT_TRUE(counts) << counts.error().to_string();
  EXPECT_EQ(counts->tasks, 100u);
  for (uint64_t j = 1; j <= 10; ++j) EXPECT_TRUE(store->get_job(core::JobId{j})->has_value());
  auto b3 = store->batch();
  b3.put_job(stored_job(502));
  EXPECT_OK(store->write(std::move(b3)));
}

TEST(PartitionStore, InjectedReadOnlyDiskFailsTheOpenNamingTheDirectory) {
  TempDir tmp;
  FaultEnv fault;
  fault.fs->set_fault(Fault::read_only);
  StoreOptions o;
  o.env = fault.env.get();
  auto s = PartitionStore::open(tmp / "p1", partition_id(), o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, core::Errc::io_error);
  EXPECT_THAT(s.error().message, AllOf(HasSubstr(tmp / "p1"), HasSubstr("Read-only file system")));
}

/// A tmpfs of `size` mounted on a fresh directory, if this process may mount.
class TmpfsMount {
 public:
  explicit TmpfsMount(const std::string& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    std::string opts = "size=" + size;
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  bool remount_read_only() {
    return ::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(PartitionStore, RealFullDiskFailsClearlyAndKeepsAcknowledgedWrites) {
  TempDir tmp;
  TmpfsMount mnt{tmp / "mnt", "6m"};
  if (!mnt.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  std::string dir = tmp / "mnt" + "/p1";
  StoreOptions o;
  o.write_buffer_size = 512 << 10;
  o.wal_ttl_seconds = 0;
  o.wal_size_limit_mb = 0;
  uint64_t acked = 0;
  core::Status failure;
  {
    auto store = open_ok(dir, partition_id(), o);
    ASSERT_TRUE(store);
    std::string big(4096, 'x');
    for (uint64_t j = 1; j < 100000 && failure; ++j) {
      auto b = store->batch();
      auto job = stored_job(j);
      job.spec.name = big;  // fill the disk quickly
      b.put_job(job);
      failure = store->write(std::move(b));
      if (failure) acked = j;
    }
    ASSERT_FALSE(failure) << "a 6 MiB disk never filled up";
    EXPECT_EQ(failure.error().code, core::Errc::io_error);
    EXPECT_THAT(failure.error().message, AllOf(HasSubstr(dir), HasSubstr("No space")));
  }
  ASSERT_GT(acked, 10u);
  StoreOptions ro;
  ro.read_only = true;
  auto store = open_ok(dir, partition_id(), ro);
  ASSERT_TRUE(store);
  for (uint64_t j = 1; j <= acked; ++j)
    ASSERT_TRUE(store->get_job(core::JobId{j})->has_value()) << "acknowledged job " << j << " lost";
}

TEST(PartitionStore, RealReadOnlyFilesystemFailsTheOpenButReadOnlyOpenWorks) {
  TempDir tmp;
  TmpfsMount mnt{tmp / "mnt", "64m"};
  if (!mnt.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  std::string dir = tmp / "mnt" + "/p1";
  {
    auto store = open_ok(dir);
    ASSERT_TRUE(store);
    fill(*store, 1, 5, 5);
  }
  ASSERT_TRUE(mnt.remount_read_only());
  auto s = PartitionStore::open(dir, partition_id());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, core::Errc::io_error);
  EXPECT_THAT(s.error().message, AllOf(HasSubstr(dir), HasSubstr("Read-only file system")));
  StoreOptions ro;
  ro.read_only = true;
  auto store = open_ok(dir, partition_id(), ro);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->count()->tasks, 25u);
}

}  // namespace
}  // namespace claimsched::storage
