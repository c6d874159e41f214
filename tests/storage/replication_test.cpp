// storage/change_log: a replica that follows a primary's change log while the
// primary is under write load ends equal to it record by record, with the
// same sequence numbers; a replica started after the log it needs is gone is
// told to bootstrap (RocksDB's GetUpdatesSince silently starts later: that
// case is detected), bootstraps from a checkpoint and catches up; gaps in the
// sequence, a follower ahead of its primary and bad shipped batches are
// reported, never applied.

#include "storage/change_log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <atomic>
#include <thread>

#include "storage/node_store.hpp"
#include "storage/partition_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<PartitionStore> open_ok(const std::string& dir, StoreOptions o = {}) {
  auto s = PartitionStore::open(dir, partition_id(), o);
  if (!s) ADD_FAILURE() << s.error().to_string();
  return s ? std::move(*s) : nullptr;
}

/// One round of following: read from the primary, ship through the wire
/// encoding, apply. Returns false once the log says bootstrap; naps when
/// there was nothing to read (a follower must not starve the writers of the
/// two shared cores).
bool follow_once(ChangeLog& log, ReplicaApplier& applier, uint64_t* max_lag = nullptr) {
  if (max_lag) {  // behind the primary as it is now, before this round
    uint64_t now = log.primary().latest_sequence();
    *max_lag = std::max(*max_lag, sequence_lag(now, applier.applied_sequence()));
  }
  auto r = log.read(256);
  EXPECT_TRUE(r) << r.error().to_string();
  if (!r || r->need_bootstrap) return false;
  if (r->batches.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  std::vector<ChangeBatch> shipped;
  for (const auto& b : r->batches) {
    ChangeBatch back;
    EXPECT_TRUE(messages::decode(messages::encode(b), back));
    shipped.push_back(std::move(back));
  }
  auto st = applier.apply(shipped);
  EXPECT_TRUE(st) << st.error().to_string();
  return true;
}

void expect_equal(const Database& a, const Database& b) {
  auto diff = compare_stores(a, b);
  ASSERT_TRUE(diff) << diff.error().to_string();
  for (const auto& d : *diff) ADD_FAILURE() << d.column_family << " " << d.key << ": " << d.what;
  EXPECT_EQ(a.latest_sequence(), b.latest_sequence());
}

/// Writes a mix of changes from several threads: jobs, task state changes,
/// nodes, epochs, erased jobs.
void write_load(PartitionStore& store, int threads, int batches_per_thread, uint64_t job_base) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::atomic<int> in_flight{0};
      for (int i = 0; i < batches_per_thread; ++i) {
        uint64_t job = job_base + static_cast<uint64_t>(t) * 100'000 + static_cast<uint64_t>(i);
        auto b = store.batch();
        b.put_job(stored_job(job, 20));
        for (uint32_t k = 0; k < 20; ++k)
          b.put_task(core::JobId{job}, k, stored_task(k + 1, core::TaskState::claimed));
        if (i % 7 == 3) b.put_node(stored_node(static_cast<uint32_t>(i)));
        if (i % 11 == 5) b.erase_job(core::JobId{job - 3});
        if (i % 13 == 0) b.set_epoch(static_cast<uint64_t>(i));
        ++in_flight;
        store.submit(std::move(b), [&](core::Status st) {
          EXPECT_TRUE(st);
          --in_flight;
        });
        while (in_flight.load() > 8) std::this_thread::yield();
      }
      while (in_flight.load() > 0) std::this_thread::yield();
    });
  }
  for (auto& th : ts) th.join();
}

TEST(Replication, ReplicaEqualsPrimaryRecordByRecordAfterARunUnderLoad) {
  TempDir tmp;
  StoreOptions small;
  small.write_buffer_size = 256 << 10;  // memtable flushes, hence log switches, during the run
  auto primary = open_ok(tmp / "primary", small);
  ASSERT_TRUE(primary);
  fill(*primary, 1, 50, 10, 20);

  auto seq = primary->database().checkpoint(tmp / "replica");
  ASSERT_TRUE(seq) << seq.error().to_string();
  auto replica = open_ok(tmp / "replica");
  ASSERT_TRUE(replica);
  EXPECT_GE(replica->latest_sequence(), *seq);
  ReplicaApplier applier{replica->database()};
  ChangeLog log{primary->database(), applier.applied_sequence() + 1};

  std::atomic<bool> done{false};
  uint64_t max_lag = 0;
  uint64_t rounds = 0;
  std::thread follower([&] {
    while (!done.load() || log.next_sequence() <= primary->latest_sequence()) {
      if (!follow_once(log, applier, &max_lag)) {
        ADD_FAILURE() << "the follower was told to bootstrap";
        return;
      }
      ++rounds;
    }
  });
  write_load(*primary, 4, 300, 1000);
  done = true;
  follower.join();

  expect_equal(primary->database(), replica->database());
  EXPECT_EQ(sequence_lag(primary->latest_sequence(), applier.applied_sequence()), 0u);
  EXPECT_GT(rounds, 1u);
  EXPECT_GT(max_lag, 0u) << "the replica never lagged: the test did not overlap writes and reads";
  // Log switches during the run made the cursor reopen, and it still kept up.
  EXPECT_LE(log.iterator_opens(), rounds);
  std::printf("[          ] replica followed in %llu rounds with %llu log iterator opens, max lag "
              "%llu sequence numbers\n",
              static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(log.iterator_opens()),
              static_cast<unsigned long long>(max_lag));

  // The replica is a store like any other: its records decode and recover.
  auto counts = replica->count();
  ASSERT_TRUE(counts) << counts.error().to_string();
  EXPECT_EQ(counts->jobs, primary->count()->jobs);
}

TEST(Replication, TheCursorTailsTheLiveLogWithoutReopening) {
  TempDir tmp;
  auto primary = open_ok(tmp / "primary");
  ASSERT_TRUE(primary);
  auto seq = primary->database().checkpoint(tmp / "replica");
  ASSERT_TRUE(seq);
  auto replica = open_ok(tmp / "replica");
  ASSERT_TRUE(replica);
  ReplicaApplier applier{replica->database()};
  ChangeLog log{primary->database(), applier.applied_sequence() + 1};
  for (uint64_t j = 1; j <= 50; ++j) {
    fill(*primary, j, 1, 5);
    ASSERT_TRUE(follow_once(log, applier));
    ASSERT_EQ(applier.applied_sequence(), primary->latest_sequence());
  }
  // One open for 50 reads: each read continued where the last one stopped.
  EXPECT_EQ(log.iterator_opens(), 1u);
  // A log switch (memtable flush) makes it reopen once, and it goes on.
  ASSERT_OK(primary->database().flush());
  fill(*primary, 100, 1, 5);
  ASSERT_TRUE(follow_once(log, applier));
  EXPECT_EQ(applier.applied_sequence(), primary->latest_sequence());
  EXPECT_EQ(log.iterator_opens(), 2u);
  expect_equal(primary->database(), replica->database());
}

TEST(Replication, ALateReplicaWhoseLogIsGoneBootstrapsFromACheckpointAndCatchesUp) {
  TempDir tmp;
  StoreOptions o;
  o.wal_ttl_seconds = 0;  // no retention: obsolete logs are deleted at once
  o.wal_size_limit_mb = 0;
  auto primary = open_ok(tmp / "primary", o);
  ASSERT_TRUE(primary);
  fill(*primary, 1, 100, 10, 5);
  ASSERT_OK(primary->database().flush());  // the log holding sequences 1.. is now gone
  fill(*primary, 1000, 10, 10);            // the live log starts later

  // A replica that never saw anything asks from sequence 1.
  ChangeLog late{primary->database(), 1};
  auto r = late.read();
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->need_bootstrap);
  EXPECT_TRUE(r->batches.empty());
  EXPECT_THAT(r->why, AllOf(HasSubstr("needs 1"), HasSubstr("no longer in the write-ahead log")));

  // Bootstrap, then follow while the primary keeps writing.
  auto seq = primary->database().checkpoint(tmp / "replica");
  ASSERT_TRUE(seq) << seq.error().to_string();
  auto replica = open_ok(tmp / "replica");
  ASSERT_TRUE(replica);
  ReplicaApplier applier{replica->database()};
  late.seek(applier.applied_sequence() + 1);
  std::atomic<bool> done{false};
  std::thread follower([&] {
    while (!done.load() || late.next_sequence() <= primary->latest_sequence())
      if (!follow_once(late, applier)) {
        ADD_FAILURE() << "told to bootstrap again right after bootstrapping";
        return;
      }
  });
  write_load(*primary, 2, 200, 5000);
  done = true;
  follower.join();
  expect_equal(primary->database(), replica->database());
}

TEST(Replication, AnEmptyLogAfterAFlushAlsoMeansBootstrap) {
  TempDir tmp;
  StoreOptions o;
  o.wal_ttl_seconds = 0;
  o.wal_size_limit_mb = 0;
  auto primary = open_ok(tmp / "primary", o);
  ASSERT_TRUE(primary);
  fill(*primary, 1, 10, 10);
  ASSERT_OK(primary->database().flush());
  ChangeLog log{primary->database(), 2};
  auto r = log.read();
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->need_bootstrap);
}

TEST(Replication, RetainedLogsLetALateReplicaCatchUpWithoutACheckpoint) {
  TempDir tmp;
  auto primary = open_ok(tmp / "primary");  // default retention: an hour / 1 GiB
  ASSERT_TRUE(primary);
  // The replica is a checkpoint of the primary's very first state.
  auto seq = primary->database().checkpoint(tmp / "replica");
  ASSERT_TRUE(seq);
  fill(*primary, 1, 100, 10, 5);
  ASSERT_OK(primary->database().flush());  // logs become obsolete but are archived
  fill(*primary, 1000, 10, 10);
  auto replica = open_ok(tmp / "replica");
  ASSERT_TRUE(replica);
  ReplicaApplier applier{replica->database()};
  ChangeLog log{primary->database(), applier.applied_sequence() + 1};
  while (log.next_sequence() <= primary->latest_sequence())
    ASSERT_TRUE(follow_once(log, applier)) << "told to bootstrap although the logs were archived";
  expect_equal(primary->database(), replica->database());
}

TEST(Replication, ASequenceGapInTheLogIsDetected) {
  TempDir tmp;
  auto primary = open_ok(tmp / "primary");
  ASSERT_TRUE(primary);
  fill(*primary, 1, 5, 4);
  const uint64_t before_gap = primary->latest_sequence();
  {
    // Changes that take sequence numbers but never reach the log.
    rocksdb::WriteBatch wb;
    wb.Put(primary->database().handle(PartitionStore::kJobs), "unlogged", "x");
    wb.Put(primary->database().handle(PartitionStore::kJobs), "unlogged2", "y");
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    ASSERT_TRUE(primary->database().rocksdb()->Write(wo, &wb).ok());
  }
  fill(*primary, 100, 3, 4);

  ChangeLog log{primary->database(), 1};
  uint64_t got_to = 0;
  bool told = false;
  std::string why;
  for (int i = 0; i < 10 && !told; ++i) {
    auto r = log.read(3);
    ASSERT_TRUE(r) << r.error().to_string();
    for (const auto& b : r->batches) got_to = b.last_sequence();
    told = r->need_bootstrap;
    why = r->why;
  }
  EXPECT_EQ(got_to, before_gap) << "batches past the gap were handed out";
  EXPECT_TRUE(told);
  EXPECT_THAT(why, HasSubstr("needs " + std::to_string(before_gap + 1)));
}

TEST(Replication, AFollowerAheadOfItsPrimaryIsToldToBootstrap) {
  TempDir tmp;
  auto primary = open_ok(tmp / "primary");
  ASSERT_TRUE(primary);
  fill(*primary, 1, 2, 2);
  ChangeLog log{primary->database(), primary->latest_sequence() + 5};
  auto r = log.read();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->need_bootstrap);
  EXPECT_THAT(r->why, HasSubstr("ahead of the primary"));
  // Exactly caught up is not ahead: nothing to read.
  ChangeLog current{primary->database(), primary->latest_sequence() + 1};
  r = current.read();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->need_bootstrap);
  EXPECT_TRUE(r->batches.empty());
}

TEST(Replication, TheApplierRejectsGapsAndBadBatchesAndIgnoresResends) {
  TempDir tmp;
  auto primary = open_ok(tmp / "primary");
  ASSERT_TRUE(primary);
  ASSERT_TRUE(primary->database().checkpoint(tmp / "replica"));
  fill(*primary, 1, 6, 3);
  auto replica = open_ok(tmp / "replica");
  ASSERT_TRUE(replica);
  ReplicaApplier applier{replica->database()};
  ChangeLog log{primary->database(), applier.applied_sequence() + 1};
  auto r = log.read();
  ASSERT_TRUE(r);
  ASSERT_GE(r->batches.size(), 6u);
  const auto& bs = r->batches;
  const uint64_t start = applier.applied_sequence();

  // A gap: batch 1 missing.
  std::vector<ChangeBatch> gap{bs[0], bs[2]};
  auto st = applier.apply(gap);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::wrong_state);
  EXPECT_THAT(st.error().message, HasSubstr("leaves a gap"));
  EXPECT_EQ(applier.applied_sequence(), start) << "part of a rejected apply was applied";

  // Bad data: wrong count, truncated, unknown column family.
  auto wrong_count = bs[0];
  wrong_count.count += 1;
  st = applier.apply(std::span{&wrong_count, 1});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::corrupt);
  auto truncated = bs[0];
  truncated.data.resize(truncated.data.size() - 3);
  st = applier.apply(std::span{&truncated, 1});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::corrupt);
  {
    rocksdb::WriteBatch wb;
    wb.Put("to-default", "x");  // column family 0, which no store writes
    ChangeBatch foreign;
    foreign.sequence = start + 1;
    foreign.count = 1;
    foreign.data = wb.Data();
    // Give it the right sequence in its header, as a primary's log would.
    for (int i = 0; i < 8; ++i)
      foreign.data[static_cast<size_t>(i)] = static_cast<char>((foreign.sequence >> (8 * i)) & 0xFF);
    st = applier.apply(std::span{&foreign, 1});
    ASSERT_FALSE(st);
    EXPECT_THAT(st.error().message, HasSubstr("unknown column family"));
  }
  EXPECT_EQ(applier.applied_sequence(), start);

  // In order: fine; the same again (a resend): ignored.
  ASSERT_OK(applier.apply(bs));
  ASSERT_OK(applier.apply(bs));
  EXPECT_EQ(applier.applied_sequence(), bs.back().last_sequence());
  // A replica's writer is stopped: nothing else can write to it.
  auto b = replica->batch();
  b.put_job(stored_job(99));
  EXPECT_FALSE(replica->write(std::move(b)));
  expect_equal(primary->database(), replica->database());
}

TEST(Replication, CompareStoresReportsEachDifference) {
  TempDir tmp;
  auto a = open_ok(tmp / "a");
  auto b = open_ok(tmp / "b");
  ASSERT_TRUE(a && b);
  fill(*a, 1, 3, 3);
  fill(*b, 1, 3, 3);
  {
    auto x = a->batch();
    x.put_task(core::JobId{2}, 1, stored_task(9, core::TaskState::failed));
    x.put_job(stored_job(50));
    ASSERT_OK(a->write(std::move(x)));
    auto y = b->batch();
    y.put_node(stored_node(4));
    ASSERT_OK(b->write(std::move(y)));
  }
  auto diff = compare_stores(a->database(), b->database());
  ASSERT_TRUE(diff) << diff.error().to_string();
  // jobs, tasks, nodes, and meta's task_version (a wrote one more task record).
  ASSERT_EQ(diff->size(), 4u);
  EXPECT_EQ((*diff)[3].column_family, "meta");
  EXPECT_THAT((*diff)[3].key, HasSubstr("task_version"));
  EXPECT_EQ((*diff)[0].column_family, "jobs");
  EXPECT_THAT((*diff)[0].key, HasSubstr("job 50"));
  EXPECT_THAT((*diff)[0].what, HasSubstr("only in " + tmp / "a"));
  EXPECT_EQ((*diff)[1].column_family, "tasks");
  EXPECT_THAT((*diff)[1].key, HasSubstr("job 2 task 1"));
  EXPECT_EQ((*diff)[1].what, "values differ");
  EXPECT_EQ((*diff)[2].column_family, "nodes");
  EXPECT_THAT((*diff)[2].what, HasSubstr("only in " + tmp / "b"));

  auto ns = NodeStore::open(tmp / "n", NodeStoreIdentity{"c1", "h"});
  ASSERT_TRUE(ns);
  EXPECT_FALSE(compare_stores(a->database(), (*ns)->database()));
}

TEST(Replication, NodeStoresReplicateToo) {
  TempDir tmp;
  auto primary = NodeStore::open(tmp / "p", NodeStoreIdentity{"c1", "h"});
  ASSERT_TRUE(primary);
  ASSERT_TRUE((*primary)->database().checkpoint(tmp / "r"));
  for (uint32_t n = 1; n <= 20; ++n) {
    auto b = (*primary)->batch();
    StoredNodeHeader h;
    h.spec = node_spec(n);
    h.generation = n;
    b.put_header(h);
    ASSERT_OK((*primary)->write(std::move(b)));
  }
  auto replica = NodeStore::open(tmp / "r", NodeStoreIdentity{"c1", "h"});
  ASSERT_TRUE(replica);
  ReplicaApplier applier{(*replica)->database()};
  ChangeLog log{(*primary)->database(), applier.applied_sequence() + 1};
  ASSERT_TRUE(follow_once(log, applier));
  expect_equal((*primary)->database(), (*replica)->database());
}

}  // namespace
}  // namespace claimsched::storage
