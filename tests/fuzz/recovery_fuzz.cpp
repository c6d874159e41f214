// Fuzz target `recovery`: what a restart reads from disk. The input is a set
// of raw RocksDB records (any column family, any key, any value) written into
// a partition store and a node store, which are then recovered the way a
// restarting server and agent do (PartitionStore::recover, NodeStore::load).
// Beyond "never a crash": a record that does not decode, or does not match
// its key, stops recovery with Errc::corrupt naming the store, the column
// family and the key; a recovery that succeeds skipped nothing.
//
// Input: records, each
//   [where: 1 byte: bit 7 = node store, low bits % 4 = column family index]
//   [key length: 1 byte][key][value length: 2 bytes, little-endian][value]
// (a truncated last record is ignored). Both stores are opened once, in a
// fresh directory under $TMPDIR (RocksDB's in-memory Env cannot create a
// store: it has no SyncWAL), removed at exit; each run writes its records
// (unsynced), recovers, then deletes them and restores the stores' own meta
// records.

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <stdlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "storage/node_store.hpp"
#include "storage/partition_store.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

using namespace claimsched;
using storage::Database;

namespace {

constexpr size_t kColumnFamilies = 4;  // both stores: three record kinds and meta

struct Stores {
  std::string dir;
  std::unique_ptr<storage::PartitionStore> partition;
  std::unique_ptr<storage::NodeStore> nodes;
  // The meta records each store was created with, restored after every run.
  std::vector<std::pair<std::string, std::string>> partition_meta;
  std::vector<std::pair<std::string, std::string>> node_meta;
};

/// Never destroyed: the stores are closed by an exit handler registered after
/// RocksDB's own statics exist, so it runs before they are torn down.
Stores& stores() {
  static Stores* s = new Stores;
  return *s;
}

rocksdb::WriteOptions unlogged() {
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // nothing here needs to survive the process
  return wo;
}

std::vector<std::pair<std::string, std::string>> read_all(const Database& db, size_t cf) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto c = db.cursor(cf, {}, {}); c.valid(); c.next()) out.emplace_back(c.key(), c.value());
  return out;
}

/// The records of one run, per store and column family: key -> last value.
using Written = std::map<std::string, std::string>;

void write(Database& db, const std::array<Written, kColumnFamilies>& records) {
  rocksdb::WriteBatch wb;
  for (size_t cf = 0; cf < kColumnFamilies; ++cf)
    for (const auto& [k, v] : records[cf]) {
      if (!wb.Put(db.handle(cf), k, v).ok()) claimsched::fuzz::fail("WriteBatch::Put failed");
    }
  if (!db.rocksdb()->Write(unlogged(), &wb).ok()) fuzz::fail("write failed");
}

void erase(Database& db, const std::array<Written, kColumnFamilies>& records, size_t meta_cf,
           const std::vector<std::pair<std::string, std::string>>& meta) {
  rocksdb::WriteBatch wb;
  for (size_t cf = 0; cf < kColumnFamilies; ++cf)
    for (const auto& [k, v] : records[cf]) {
      if (!wb.Delete(db.handle(cf), k).ok()) fuzz::fail("WriteBatch::Delete failed");
    }
  for (const auto& [k, v] : meta)
    if (!wb.Put(db.handle(meta_cf), k, v).ok()) fuzz::fail("WriteBatch::Put failed");
  if (!db.rocksdb()->Write(unlogged(), &wb).ok()) fuzz::fail("cleanup failed");
}

/// Every run leaves tombstones behind, which every later scan steps over:
/// compacting them away now and then keeps the runs equally fast.
void compact(Database& db) {
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (size_t cf = 0; cf < kColumnFamilies; ++cf)
    if (!db.rocksdb()->CompactRange(options, db.handle(cf), nullptr, nullptr).ok())
      fuzz::fail("compaction failed");
}

/// A failed recovery is Errc::corrupt and names the store's directory.
void require_corrupt(const core::Error& e, const std::string& path) {
  fuzz::require(e.code == core::Errc::corrupt, "recovery failed without Errc::corrupt", e.message);
  fuzz::require(e.message.find(path) != std::string::npos, "error does not name the store",
                e.message);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  fuzz::quiet_protobuf();
  auto& s = stores();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_recovery.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) fuzz::fail("mkdtemp failed", pattern);
  s.dir = pattern;
  storage::StoreOptions options;
  options.sync = storage::SyncMode::none;
  options.wal_ttl_seconds = 0;
  options.wal_size_limit_mb = 0;
  options.write_buffer_size = size_t{4} << 20;
  auto p = storage::PartitionStore::open(s.dir + "/partition", {"fuzz", core::PartitionId{1}}, options);
  if (!p) fuzz::fail("cannot open the partition store", p.error().message);
  auto n = storage::NodeStore::open(s.dir + "/nodes", {"fuzz", "host-1"}, options);
  if (!n) fuzz::fail("cannot open the node store", n.error().message);
  s.partition = std::move(*p);
  s.nodes = std::move(*n);
  s.partition_meta = read_all(s.partition->database(), storage::PartitionStore::kMeta);
  s.node_meta = read_all(s.nodes->database(), storage::NodeStore::kMeta);
  std::atexit([] {
    stores().partition.reset();
    stores().nodes.reset();
    std::error_code ec;
    std::filesystem::remove_all(stores().dir, ec);
  });
  return 0;
}

/// The jobs recovery yields for these records when it accepts them all: one
/// per job key, one per copy of a copies record, each job once.
size_t covered_jobs(const Written& jobs) {
  std::set<uint64_t> covered;
  for (const auto& [key, value] : jobs) {
    if (auto one = storage::keys::parse_job(key)) {
      covered.insert(one->value);
    } else if (auto run = storage::keys::parse_job_copies(key)) {
      for (uint64_t i = 0; i < run->count && run->first.value + i >= run->first.value; ++i)
        covered.insert(run->first.value + i);
    }
  }
  return covered.size();
}

/// The tasks recovery yields for these records when it accepts them all: one
/// per task key, one per index of a claim's record, each task once.
size_t covered_tasks(const Written& tasks) {
  std::set<std::pair<uint64_t, uint32_t>> covered;
  for (const auto& [key, value] : tasks) {
    if (auto one = storage::keys::parse_task(key)) {
      covered.emplace(one->job.value, one->index);
      continue;
    }
    auto group = storage::keys::parse_task_group(key);
    pb::StoredTask p;
    if (!group || !p.ParseFromString(value)) continue;  // then recovery refused it
    for (auto index : p.indices()) covered.emplace(group->job.value, index);
  }
  return covered.size();
}

/// The count a claim's record in the compact form starts with (0x00, the
/// format byte, then the count as a varint: storage/node_store.cpp); 0 if it
/// is not one. A load that accepted the record yielded exactly that many.
size_t compact_count(std::string_view value) {
  if (value.size() < 3 || value[0] != '\0') return 0;
  uint64_t count = 0;
  for (size_t at = 2, shift = 0; at < value.size() && shift < 64; ++at, shift += 7) {
    count |= static_cast<uint64_t>(static_cast<uint8_t>(value[at]) & 0x7f) << shift;
    if ((static_cast<uint8_t>(value[at]) & 0x80) == 0) return static_cast<size_t>(count);
  }
  return 0;
}

/// The allocations a node store load yields for these records when it
/// accepts them all: a claim's record holds several.
size_t held_allocations(const Written& allocations) {
  size_t n = 0;
  for (const auto& [key, value] : allocations) {
    bool group_key = key.size() == storage::keys::kNodeAllocationGroupKeySize;
    if (size_t compact = group_key ? compact_count(value) : 0; compact > 0) {
      n += compact;
      continue;
    }
    pb::StoredAllocations p;
    bool group = group_key && p.ParseFromString(value);
    n += group ? static_cast<size_t>(p.allocations_size()) : 1;
  }
  return n;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<Written, kColumnFamilies> partition{};
  std::array<Written, kColumnFamilies> nodes{};
  size_t at = 0;
  while (at + 2 <= size) {
    uint8_t where = data[at];
    size_t key_size = data[at + 1];
    at += 2;
    if (at + key_size + 2 > size) break;
    std::string key(reinterpret_cast<const char*>(data + at), key_size);
    at += key_size;
    size_t value_size = data[at] | (size_t{data[at + 1]} << 8);
    at += 2;
    if (at + value_size > size) break;
    std::string value(reinterpret_cast<const char*>(data + at), value_size);
    at += value_size;
    auto& target = (where & 0x80) ? nodes : partition;
    target[(where & 0x7F) % kColumnFamilies][std::move(key)] = std::move(value);
  }

  auto& s = stores();
  write(s.partition->database(), partition);
  write(s.nodes->database(), nodes);

  using PS = storage::PartitionStore;
  size_t jobs = 0;
  size_t tasks = 0;
  size_t node_records = 0;
  storage::RecoveryVisitor visitor;
  visitor.node = [&](const storage::StoredNode&) {
    ++node_records;
    return core::Status::ok();
  };
  visitor.job = [&](const storage::StoredJob&) {
    ++jobs;
    return core::Status::ok();
  };
  visitor.task = [&](core::JobId, core::TaskIndex, const storage::StoredTask&) {
    ++tasks;
    return core::Status::ok();
  };
  if (auto st = s.partition->recover(visitor); !st) {
    require_corrupt(st.error(), s.partition->path());
  } else {
    fuzz::require(jobs == covered_jobs(partition[PS::kJobs]) && tasks == covered_tasks(partition[PS::kTasks]) &&
                      node_records == partition[PS::kNodes].size(),
                  "partition recovery succeeded but skipped records");
  }

  using NS = storage::NodeStore;
  size_t headers = 0;
  size_t claims = 0;
  size_t allocations = 0;
  auto st = s.nodes->load([&](storage::LoadedNode&& n) {
    ++headers;
    claims += n.claims.size();
    allocations += n.allocations.size();
    return core::Status::ok();
  });
  if (!st) {
    require_corrupt(st.error(), s.nodes->database().path());
  } else {
    fuzz::require(headers == nodes[NS::kHeaders].size() && claims == nodes[NS::kClaims].size() &&
                      allocations == held_allocations(nodes[NS::kAllocations]),
                  "node store load succeeded but skipped records");
  }

  erase(s.partition->database(), partition, PS::kMeta, s.partition_meta);
  erase(s.nodes->database(), nodes, NS::kMeta, s.node_meta);
  static uint32_t runs = 0;
  if (++runs % 1024 == 0) {
    compact(s.partition->database());
    compact(s.nodes->database());
  }
  return 0;
}
