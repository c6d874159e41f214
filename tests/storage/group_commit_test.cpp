// The group-commit writer: many concurrent submitters; every callback fires
// exactly once, only after the write-ahead log holding its batch is synced
// (sync=always|batch), in submission order per submitter; sync=batch merges
// bursts (fewer fsyncs than batches), sync=always fsyncs every batch,
// sync=none never; everything acknowledged is there after a reopen.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "storage/partition_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::HasSubstr;

struct Outcome {
  uint64_t batches = 0;
  uint64_t syncs = 0;
  WriterStats stats;
  core::HistogramCounts commit_records;
};

/// `submitters` threads each submit `per_thread` batches of `records` task
/// records as fast as they can, keeping up to `window` in flight.
Outcome run(SyncMode mode, int submitters, int per_thread, int records, int window,
            std::optional<std::chrono::microseconds> sync_interval = std::nullopt) {
  TempDir tmp;
  FaultEnv fault;
  StoreOptions o;
  o.sync = mode;
  o.sync_interval = sync_interval;
  o.env = fault.env.get();
  std::atomic<uint64_t> commits{0};
  o.on_commit = [&](const CommitInfo& info) {
    ++commits;
    // With a commit delay a write is synced later, with the writes after it.
    EXPECT_EQ(info.synced, mode != SyncMode::none && !sync_interval);
    EXPECT_EQ(info.last_sequence - info.first_sequence + 1, info.records);
  };
  auto opened = PartitionStore::open(tmp.path(), partition_id(), o);
  EXPECT_TRUE(opened) << opened.error().to_string();
  auto& store = **opened;
  const uint64_t syncs_before = fault.fs->wal_syncs();

  // fired[t][i]: times callback i of thread t fired; last[t]: the last seen.
  std::vector<std::vector<std::atomic<int>>> fired(static_cast<size_t>(submitters));
  for (auto& f : fired) f = std::vector<std::atomic<int>>(static_cast<size_t>(per_thread));
  std::vector<int> last(static_cast<size_t>(submitters), -1);
  std::atomic<int> not_durable{0};
  std::atomic<int> out_of_order{0};
  std::atomic<int> failed{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < submitters; ++t) {
    threads.emplace_back([&, t] {
      std::mutex m;
      std::condition_variable cv;
      int in_flight = 0;
      for (int i = 0; i < per_thread; ++i) {
        {
          std::unique_lock<std::mutex> lock{m};
          cv.wait(lock, [&] { return in_flight < window; });
          ++in_flight;
        }
        auto b = store.batch();
        uint64_t job = static_cast<uint64_t>(t) * 1'000'000 + static_cast<uint64_t>(i);
        // records - 1 task records; the store adds its task_version record.
        for (int r = 0; r + 1 < records; ++r)
          b.put_task(core::JobId{job}, static_cast<core::TaskIndex>(r), stored_task(1));
        store.submit(std::move(b), [&, t, i](core::Status st) {
          if (!st) ++failed;
          // Callbacks run on the writer thread, after the write: under
          // always/batch nothing appended to the log may be unsynced now.
          if (mode != SyncMode::none && fault.fs->unsynced_wal_bytes() != 0) ++not_durable;
          auto& slot = fired[static_cast<size_t>(t)][static_cast<size_t>(i)];
          slot.fetch_add(1);
          if (last[static_cast<size_t>(t)] != i - 1) ++out_of_order;
          last[static_cast<size_t>(t)] = i;
          std::lock_guard<std::mutex> guard{m};
          --in_flight;
          cv.notify_one();
        });
      }
      std::unique_lock<std::mutex> lock{m};
      cv.wait(lock, [&] { return in_flight == 0; });
    });
  }
  for (auto& th : threads) th.join();

  for (int t = 0; t < submitters; ++t)
    for (int i = 0; i < per_thread; ++i)
      EXPECT_EQ(fired[static_cast<size_t>(t)][static_cast<size_t>(i)].load(), 1)
          << "callback " << t << "/" << i;
  EXPECT_EQ(not_durable.load(), 0) << "callbacks fired before the log was synced";
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(failed.load(), 0);

  Outcome out;
  out.batches = static_cast<uint64_t>(submitters) * static_cast<uint64_t>(per_thread);
  out.syncs = fault.fs->wal_syncs() - syncs_before;
  out.stats = store.writer_stats();
  EXPECT_EQ(out.stats.batches, out.batches);
  EXPECT_EQ(out.stats.records, out.batches * static_cast<uint64_t>(records));
  EXPECT_EQ(commits.load(), out.stats.writes);
  EXPECT_EQ(out.stats.queued_batches, 0u);
  // What /metrics shows: one observation per RocksDB write, and every record
  // submitted counted once.
  const auto& metrics = store.database().commit_metrics();
  auto seconds = metrics.seconds.snapshot();
  out.commit_records = metrics.records.snapshot();
  EXPECT_EQ(seconds.count, out.stats.writes);
  EXPECT_NEAR(seconds.sum, std::chrono::duration<double>(out.stats.write_time).count(), 1e-6);
  EXPECT_EQ(out.commit_records.count, out.stats.writes);
  EXPECT_EQ(out.commit_records.sum, static_cast<double>(out.batches * static_cast<uint64_t>(records)));
  opened->reset();

  // Everything acknowledged is there after a reopen.
  auto again = PartitionStore::open(tmp.path(), partition_id());
  EXPECT_TRUE(again);
  if (again) {
    auto counts = (*again)->count();
    EXPECT_TRUE(counts);
    if (counts) {
      EXPECT_EQ(counts->tasks, out.batches * static_cast<uint64_t>(records - 1));
    }
  }
  return out;
}

TEST(GroupCommit, BatchModeMergesBurstsAndAcknowledgesAfterTheFsync) {
  auto o = run(SyncMode::batch, 16, 150, 20, 4);
  EXPECT_LT(o.stats.writes, o.batches) << "no burst was merged";
  EXPECT_GT(o.stats.max_batches_per_write, 1u);
  EXPECT_EQ(o.stats.syncs, o.stats.writes);
  EXPECT_GE(o.syncs, o.stats.writes);  // the log was really synced (at least) that often
  EXPECT_LT(o.syncs, o.batches);
  // A merged burst holds more than one batch's 20 records: the histogram
  // has writes above its bucket of 20.
  auto at_20 = std::find(o.commit_records.bounds.begin(), o.commit_records.bounds.end(), 20.0);
  ASSERT_NE(at_20, o.commit_records.bounds.end());
  EXPECT_LT(o.commit_records.at_most[static_cast<size_t>(at_20 - o.commit_records.bounds.begin())],
            o.commit_records.count);
}

TEST(GroupCommit, AlwaysModeFsyncsEveryBatch) {
  auto o = run(SyncMode::always, 8, 40, 10, 2);
  EXPECT_EQ(o.stats.writes, o.batches);
  // Every write holds one batch of 10 records: all in the bucket of 10, none
  // at 5 or below.
  const auto& h = o.commit_records;
  auto at = [&](double bound) {
    auto it = std::find(h.bounds.begin(), h.bounds.end(), bound);
    return it == h.bounds.end() ? UINT64_MAX : h.at_most[static_cast<size_t>(it - h.bounds.begin())];
  };
  EXPECT_EQ(at(5), 0u);
  EXPECT_EQ(at(10), o.batches);
  EXPECT_EQ(o.stats.syncs, o.batches);
  EXPECT_GE(o.syncs, o.batches);
}

TEST(GroupCommit, NoneModeNeverFsyncs) {
  auto o = run(SyncMode::none, 8, 200, 10, 8);
  EXPECT_EQ(o.stats.syncs, 0u);
  EXPECT_EQ(o.syncs, 0u);
}

TEST(GroupCommit, SyncIntervalSpacesTheFsyncsAndStillAcknowledgesAfterThem) {
  // run() checks every callback fires once, in order, after the log is synced,
  // and that everything acknowledged is there after a reopen.
  constexpr auto kInterval = std::chrono::milliseconds(20);
  auto started = std::chrono::steady_clock::now();
  auto o = run(SyncMode::batch, 8, 50, 10, 4, kInterval);
  auto took = std::chrono::steady_clock::now() - started;
  // Batches are written as they come (a crash of the process loses none of
  // them); each fsync of the log follows the one before by the interval.
  EXPECT_GE(o.stats.writes, o.stats.syncs);
  EXPECT_GE(took, kInterval * (o.stats.syncs - 1));
  // 8 submitters with 4 in flight each refill their windows within the
  // interval: an fsync covers most of the 32 batches that can wait.
  EXPECT_LE(o.stats.syncs, o.batches / 8) << "the interval did not gather batches";
}

TEST(GroupCommit, SyncIntervalDelaysOnlyAWriteThatFollowsAnother) {
  TempDir tmp;
  StoreOptions o;
  o.sync_interval = std::chrono::seconds(1);
  auto store = PartitionStore::open(tmp.path(), partition_id(), o);
  ASSERT_TRUE(store);
  auto put = [&](uint64_t id) {
    auto b = (*store)->batch();
    b.put_job(stored_job(id));
    return (*store)->write(std::move(b));
  };
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(put(1));
  auto first = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(first, std::chrono::milliseconds(900)) << "a write after an idle interval waited for it";
  ASSERT_OK(put(2));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ((*store)->count()->jobs, 2u);
}

TEST(GroupCommit, SyncIntervalIsBounded) {
  StoreOptions o;
  o.sync_interval = std::chrono::milliseconds(1001);
  auto st = o.validate();
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message, HasSubstr("sync_interval"));
  o.sync_interval = std::chrono::microseconds(-1);
  EXPECT_FALSE(o.validate());
  o.sync_interval = std::chrono::microseconds(0);
  EXPECT_TRUE(o.validate());
}

TEST(GroupCommit, ClosingEndsASyncIntervalsWait) {
  TempDir tmp;
  StoreOptions o;
  o.sync_interval = std::chrono::seconds(1);
  std::atomic<int> fired{0};
  auto t0 = std::chrono::steady_clock::now();
  {
    auto store = PartitionStore::open(tmp.path(), partition_id(), o);
    ASSERT_TRUE(store);
    for (uint64_t i = 1; i <= 3; ++i) {
      auto b = (*store)->batch();
      b.put_job(stored_job(i));
      (*store)->submit(std::move(b), [&](core::Status st) {
        EXPECT_TRUE(st);
        ++fired;
      });
    }
  }  // closed while the writer waits for the interval: it writes what is queued at once
  EXPECT_EQ(fired.load(), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto store = PartitionStore::open(tmp.path(), partition_id());
  ASSERT_TRUE(store);
  EXPECT_EQ((*store)->count()->jobs, 3u);
}

TEST(GroupCommit, CallbacksFireInSubmissionOrderAcrossSubmitters) {
  TempDir tmp;
  auto store = PartitionStore::open(tmp.path(), partition_id());
  ASSERT_TRUE(store);
  // Hold the writer inside a callback so that a burst piles up behind it.
  std::promise<void> release;
  auto released = release.get_future().share();
  std::vector<int> order;
  std::mutex m;
  auto b0 = (*store)->batch();
  b0.put_job(stored_job(1));
  (*store)->submit(std::move(b0), [&, released](core::Status) {
    released.wait();
    std::lock_guard<std::mutex> g{m};
    order.push_back(0);
  });
  for (int i = 1; i <= 50; ++i) {
    auto b = (*store)->batch();
    b.put_job(stored_job(static_cast<uint64_t>(i) + 1));
    (*store)->submit(std::move(b), [&, i](core::Status st) {
      EXPECT_TRUE(st);
      std::lock_guard<std::mutex> g{m};
      order.push_back(i);
    });
  }
  release.set_value();
  ASSERT_OK((*store)->write((*store)->batch()));  // an empty batch is a barrier
  std::lock_guard<std::mutex> g{m};
  ASSERT_EQ(order.size(), 51u);
  for (int i = 0; i <= 50; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_LE((*store)->writer_stats().writes, 4u) << "the 50 queued batches were not merged";
}

TEST(GroupCommit, SubmitAfterCloseFailsAtOnce) {
  TempDir tmp;
  auto store = PartitionStore::open(tmp.path(), partition_id());
  ASSERT_TRUE(store);
  (*store)->database().close_writer();
  bool fired = false;
  auto b = (*store)->batch();
  b.put_job(stored_job(1));
  (*store)->submit(std::move(b), [&](core::Status st) {
    fired = true;
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, core::Errc::wrong_state);
    EXPECT_THAT(st.error().message, HasSubstr("closed"));
  });
  EXPECT_TRUE(fired);
}

TEST(GroupCommit, ClosingDrainsTheQueue) {
  TempDir tmp;
  std::atomic<int> fired{0};
  {
    auto store = PartitionStore::open(tmp.path(), partition_id());
    ASSERT_TRUE(store);
    for (int i = 1; i <= 200; ++i) {
      auto b = (*store)->batch();
      b.put_job(stored_job(static_cast<uint64_t>(i)));
      (*store)->submit(std::move(b), [&](core::Status st) {
        EXPECT_TRUE(st);
        ++fired;
      });
    }
  }  // destroyed with batches still queued
  EXPECT_EQ(fired.load(), 200);
  auto store = PartitionStore::open(tmp.path(), partition_id());
  ASSERT_TRUE(store);
  EXPECT_EQ((*store)->count()->jobs, 200u);
}

}  // namespace
}  // namespace claimsched::storage
