// storage/ benchmarks (issue 5):
// - BM_DurableWrites: durable task records/s through the group-commit writer,
//   sync = always | batch | none, with 1, 8, 64 concurrent submitters, each
//   submitting 100-record batches and waiting for each batch's durability
//   callback before the next (one batch in flight per submitter).
// - BM_Recover1M: opening a partition that holds 1,000,000 task records (plus
//   10,000 jobs and 1,000 nodes) and reading all of it back through
//   PartitionStore::recover, as a restart does. "wal": the records are still
//   in the write-ahead log (a killed process, or a clean close: RocksDB does
//   not flush on close), so the open replays it; "tables": the records are in
//   table files (after a flush / compaction).
// Directories live under /tmp and are removed at exit. Run with
// --benchmark_counters_tabular=true for a readable table.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/partition_store.hpp"

namespace claimsched::storage {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string make_temp_dir() {
  std::string tmpl = "/tmp/claimsched-storage-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
  return tmpl;
}

struct TempDir {
  std::string path = make_temp_dir();
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

PartitionIdentity bench_partition() { return {"bench", core::PartitionId{1}}; }

StoredTask task_record(uint32_t node, uint64_t claim) {
  StoredTask t;
  t.state = core::TaskState::running;
  t.node = core::NodeId{node};
  t.claim_id = core::ClaimId{claim};
  t.epoch = 1;
  t.attempts = 1;
  t.updated_at = core::TimePoint{std::chrono::nanoseconds(1'700'000'000'000'000'000)};
  return t;
}

StoredJob job_record(uint64_t id, uint32_t count) {
  StoredJob j;
  j.spec.id = core::JobId{id};
  j.spec.name = "job-" + std::to_string(id);
  j.spec.user = "user-" + std::to_string(id % 50);
  j.spec.job_class = "batch";
  j.spec.pool = "default";
  j.spec.count = count;
  j.spec.per_task = core::Resources::cpu_memory(500, int64_t{1} << 30);
  j.accepted_at = core::TimePoint{std::chrono::nanoseconds(id)};
  return j;
}

StoredNode node_record(uint32_t id) {
  StoredNode n;
  n.spec.id = core::NodeId{id};
  n.spec.name = "node-" + std::to_string(id);
  n.spec.pool = "default";
  n.spec.capacity = core::Resources::cpu_memory(64000, int64_t{256} << 30);
  n.spec.labels = {"ssd"};
  return n;
}

// -- the disk's own fsync cost: the context for every durable figure ----------

/// Appends 4 KiB to a file and fdatasyncs it: what one synced WAL write costs
/// at the least on this disk, now.
void BM_FsyncBaseline(benchmark::State& state) {
  TempDir dir;
  std::string path = dir.path + "/probe";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) {
    state.SkipWithError("cannot create the probe file");
    return;
  }
  std::string block(4096, 'x');
  for (auto _ : state) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) std::abort();
    if (::fdatasync(fd) != 0) std::abort();
  }
  ::close(fd);
  state.counters["fsyncs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_FsyncBaseline)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// -- durable writes -----------------------------------------------------------

constexpr int kRecordsPerBatch = 100;

void BM_DurableWrites(benchmark::State& state) {
  const auto mode = static_cast<SyncMode>(state.range(0));
  const int submitters = static_cast<int>(state.range(1));
  // Enough batches per iteration to amortize thread start-up; fewer under
  // sync=always, where every batch costs an fsync.
  const int total = mode == SyncMode::always ? 1200 : 6000;
  const int per_submitter = std::max(1, total / submitters);

  TempDir dir;
  StoreOptions o;
  o.sync = mode;
  auto opened = PartitionStore::open(dir.path, bench_partition(), o);
  if (!opened) {
    state.SkipWithError(opened.error().to_string().c_str());
    return;
  }
  auto& store = **opened;
  std::atomic<uint64_t> next_job{1};
  uint64_t batches = 0;

  for (auto _ : state) {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(submitters));
    for (int s = 0; s < submitters; ++s) {
      threads.emplace_back([&] {
        std::mutex m;
        std::condition_variable cv;
        for (int i = 0; i < per_submitter; ++i) {
          auto b = store.batch();
          uint64_t job = next_job.fetch_add(1);
          for (int r = 0; r < kRecordsPerBatch; ++r)
            b.put_task(core::JobId{job}, static_cast<core::TaskIndex>(r),
                       task_record(static_cast<uint32_t>(r), job));
          bool done = false;
          store.submit(std::move(b), [&](core::Status st) {
            if (!st) std::abort();
            std::lock_guard<std::mutex> g{m};
            done = true;
            cv.notify_one();
          });
          std::unique_lock<std::mutex> lock{m};
          cv.wait(lock, [&] { return done; });
        }
      });
    }
    for (auto& t : threads) t.join();
    batches += static_cast<uint64_t>(submitters) * static_cast<uint64_t>(per_submitter);
  }
  auto stats = store.writer_stats();
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(batches * kRecordsPerBatch), benchmark::Counter::kIsRate);
  state.counters["batches/write"] =
      static_cast<double>(stats.batches) / static_cast<double>(std::max<uint64_t>(1, stats.writes));
  state.counters["us/write"] =
      std::chrono::duration<double, std::micro>(stats.write_time).count() /
      static_cast<double>(std::max<uint64_t>(1, stats.writes));
  state.SetLabel(std::string{"sync="} + std::string{to_string(mode)});
}

BENCHMARK(BM_DurableWrites)
    ->ArgNames({"sync", "submitters"})
    ->ArgsProduct({{static_cast<int64_t>(SyncMode::always), static_cast<int64_t>(SyncMode::batch),
                    static_cast<int64_t>(SyncMode::none)},
                   {1, 8, 64}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// -- recovery of 1M task records ----------------------------------------------

constexpr uint64_t kJobs = 10'000;
constexpr uint32_t kTasksPerJob = 100;  // 1,000,000 task records
constexpr uint32_t kNodes = 1'000;

/// The partition to recover, built once per process in two flavours.
struct RecoveryFixture {
  TempDir dir;
  std::string wal;     // records in the write-ahead log
  std::string tables;  // records in table files

  RecoveryFixture() {
    wal = dir.path + "/wal";
    tables = dir.path + "/tables";
    build(wal, false);
    build(tables, true);
  }

  static void build(const std::string& path, bool flush) {
    StoreOptions o;
    o.sync = SyncMode::none;
    // Large enough that 1M records stay in memtables (= in the log) until closed.
    o.write_buffer_size = size_t{256} << 20;
    auto s = PartitionStore::open(path, bench_partition(), o);
    if (!s) std::abort();
    auto& store = **s;
    for (uint32_t n = 1; n <= kNodes; n += 100) {
      auto b = store.batch();
      for (uint32_t k = n; k < n + 100; ++k) b.put_node(node_record(k));
      store.submit(std::move(b), [](core::Status st) {
        if (!st) std::abort();
      });
    }
    for (uint64_t j = 1; j <= kJobs; ++j) {
      auto b = store.batch();
      b.put_job(job_record(j, kTasksPerJob));
      for (uint32_t t = 0; t < kTasksPerJob; ++t)
        b.put_task(core::JobId{j}, t, task_record(1 + (t * 7 + static_cast<uint32_t>(j)) % kNodes, j));
      store.submit(std::move(b), [](core::Status st) {
        if (!st) std::abort();
      });
    }
    if (!store.write(store.batch())) std::abort();  // barrier
    if (flush && !store.database().flush()) std::abort();
  }

  /// A fresh copy of `src` for one iteration (recovery of a WAL-resident
  /// partition flushes it, so every iteration needs the original).
  std::string copy_of(const std::string& src) {
    std::string dst = dir.path + "/run";
    fs::remove_all(dst);
    fs::copy(src, dst, fs::copy_options::recursive);
    return dst;
  }
};

RecoveryFixture& recovery_fixture() {
  static RecoveryFixture f;
  return f;
}

void BM_Recover1M(benchmark::State& state) {
  const bool from_wal = state.range(0) == 0;
  auto& f = recovery_fixture();
  double open_ms = 0;
  double scan_ms = 0;
  uint64_t tasks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // The copy is in the page cache, as after a process restart (not after a
    // machine reboot).
    std::string path = f.copy_of(from_wal ? f.wal : f.tables);
    state.ResumeTiming();

    auto t0 = Clock::now();
    auto s = PartitionStore::open(path, bench_partition());
    if (!s) {
      state.SkipWithError(s.error().to_string().c_str());
      return;
    }
    auto t1 = Clock::now();
    // What a scheduler does with the records: count per job and state.
    std::vector<uint32_t> running(kJobs + 1, 0);
    uint64_t n = 0;
    RecoveryVisitor v;
    v.node = [&](const StoredNode&) { return core::Status::ok(); };
    v.job = [&](const StoredJob& j) {
      benchmark::DoNotOptimize(j.spec.count);
      return core::Status::ok();
    };
    v.task = [&](core::JobId j, core::TaskIndex, const StoredTask& t) {
      if (t.state == core::TaskState::running && j.value < running.size()) ++running[j.value];
      ++n;
      return core::Status::ok();
    };
    auto st = (*s)->recover(v);
    if (!st) {
      state.SkipWithError(st.error().to_string().c_str());
      return;
    }
    auto t2 = Clock::now();
    s->reset();
    open_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    scan_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    tasks = n;
  }
  auto iters = static_cast<double>(state.iterations());
  state.counters["open_ms"] = open_ms / iters;
  state.counters["recover_ms"] = scan_ms / iters;
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["tasks/s"] =
      benchmark::Counter(static_cast<double>(tasks) * iters, benchmark::Counter::kIsRate);
  state.SetLabel(from_wal ? "records in the WAL" : "records in table files");
}

BENCHMARK(BM_Recover1M)
    ->ArgName("tables")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace claimsched::storage

BENCHMARK_MAIN();
