// Writes the binary seed corpora of the `wire`, `records` and `recovery`
// targets from real values (tests/messages/samples.hpp, storage/keys.hpp, and
// for the forms only a store's writer makes, records a real store wrote):
//   build-fuzz/tests/fuzz/fuzz_seeds tests/fuzz/corpus
// Each file is named after what it holds. The text targets' seeds (configs,
// job files, resource strings, durations) are written by hand.

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "storage/keys.hpp"
#include "storage/node_store.hpp"
#include "storage/partition_store.hpp"
#include "tests/fuzz/wire_types.hpp"
#include "tests/messages/samples.hpp"

using namespace claimsched;
namespace samples = messages::samples;

namespace {

std::filesystem::path g_root;

void put(const std::string& target, const std::string& name, std::string_view bytes) {
  auto dir = g_root / target;
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

std::string with_selector(size_t index, const std::string& bytes) {
  return std::string(1, static_cast<char>(index)) + bytes;
}

messages::StoredJob stored_job() {
  return {samples::sample_job(), messages::JobStatus::active, core::TimePoint{1'700'000'000'000'000'000LL},
          core::TimePoint{0}};
}

messages::StoredTask stored_task() {
  messages::StoredTask t;
  t.state = core::TaskState::running;
  t.node = core::NodeId{17};
  t.claim_id = core::ClaimId{(uint64_t{3} << 40) | 99};
  t.epoch = 3;
  t.attempts = 1;
  t.exit_code = 0;
  t.updated_at = core::TimePoint{1'700'000'000'500'000'000LL};
  return t;
}

messages::StoredNode stored_node() {
  return {samples::sample_node_spec(), core::NodeState::up, core::TimePoint{1'700'000'000'000'000'000LL}};
}

messages::StoredNodeHeader node_header() {
  messages::StoredNodeHeader h;
  h.spec = samples::sample_node_spec();
  h.state = core::NodeState::draining;
  h.generation = 12;
  h.epochs = {{core::PartitionId{1}, 3}, {core::PartitionId{2}, 9}};
  return h;
}

void wire() {
  size_t index = 0;
  for (; index < fuzz::kWireTypes; ++index)
    fuzz::visit_wire_type(index, [&](auto named) {
      using T = typename decltype(named)::type;
      put("wire", std::string(named.root), with_selector(index, messages::encode(samples::sample<T>())));
    });
  // A synthetic claim (no launch, no expected generation) and a delta that is not full.
  core::ClaimRequest synthetic = samples::sample_claim();
  synthetic.launch = core::LaunchRef{};
  synthetic.expected_generation.reset();
  put("wire", "ClaimRequest.synthetic", with_selector(3, messages::encode(synthetic)));
  core::NodeDelta delta = samples::sample_delta();
  delta.full = false;
  delta.allocations.clear();
  put("wire", "NodeDelta.incremental", with_selector(10, messages::encode(delta)));
}

void records() {
  put("records", "StoredJob", with_selector(0, messages::encode(stored_job())));
  put("records", "StoredTask", with_selector(1, messages::encode(stored_task())));
  put("records", "StoredNode", with_selector(2, messages::encode(stored_node())));
  messages::StoreIdentity partition{messages::StoreKind::partition, "c1", core::PartitionId{3}, "", 1};
  messages::StoreIdentity nodes{messages::StoreKind::nodes, "c1", core::PartitionId{}, "host-7", 1};
  put("records", "StoreIdentity.partition", with_selector(3, messages::encode(partition)));
  put("records", "StoreIdentity.nodes", with_selector(3, messages::encode(nodes)));
  put("records", "StoredNodeHeader", with_selector(4, messages::encode(node_header())));
  messages::ChangeBatch batch{41, 3, std::string("\x29\0\0\0\0\0\0\0\x03\0\0\0", 12) + "payload"};
  put("records", "ChangeBatch", with_selector(5, messages::encode(batch)));
  put("records", "MetaCounter", with_selector(fuzz::kRecordTypes, messages::encode_counter(42)));
}

/// One record of a `recovery` input (recovery_fuzz.cpp has the format).
std::string record(bool node_store, size_t cf, std::string_view key, std::string_view value) {
  std::string out;
  out += static_cast<char>((node_store ? 0x80 : 0) | cf);
  out += static_cast<char>(key.size());
  out += key;
  out += static_cast<char>(value.size() & 0xFF);
  out += static_cast<char>(value.size() >> 8);
  out += value;
  return out;
}

/// Fails the seed writer with what went wrong.
template <class T>
T must(core::Expected<T> value, const char* what) {
  if (!value) {
    std::fprintf(stderr, "%s: %s\n", what, value.error().message.c_str());
    std::exit(1);
  }
  return std::move(*value);
}

void must(const core::Status& status, const char* what) {
  if (!status) {
    std::fprintf(stderr, "%s: %s\n", what, status.error().message.c_str());
    std::exit(1);
  }
}

/// Every record of `db` but its meta column family, as `recovery` records.
std::string records_of(const storage::Database& db, bool node_store, size_t meta_cf) {
  std::string out;
  for (size_t cf = 0; cf < meta_cf; ++cf)
    for (auto c = db.cursor(cf, {}, {}); c.valid(); c.next()) out += record(node_store, cf, c.key(), c.value());
  return out;
}

/// The forms only the stores' own writers make, taken from real stores in a
/// scratch directory rather than spelled out here: a copies record (one job
/// record for a run of copies under consecutive ids, PartitionStore) and a
/// claim's allocations in the compact form (NodeStore).
void written_forms() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_seeds.XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s failed\n", dir.c_str());
    std::exit(1);
  }
  storage::StoreOptions options;
  options.sync = storage::SyncMode::none;
  {
    auto store = must(storage::PartitionStore::open(dir + "/partition", {"fuzz", core::PartitionId{1}}, options),
                      "cannot open a partition store");
    auto batch = store->batch();
    auto job = stored_job();
    batch.put_job_copies(job, 3);
    auto cancelled = job;
    cancelled.spec.id = core::JobId{job.spec.id.value + 1};
    cancelled.status = messages::JobStatus::cancelled;
    batch.put_job(cancelled);
    must(store->write(std::move(batch)), "cannot write the partition store");
    put("recovery", "partition_store.copies", records_of(store->database(), false, storage::PartitionStore::kMeta));
  }
  {
    auto store =
        must(storage::NodeStore::open(dir + "/nodes", {"fuzz", "host-1"}, options), "cannot open a node store");
    auto batch = store->batch();
    auto header = node_header();
    batch.put_header(header);
    std::vector<core::Allocation> allocations{samples::sample_allocation(0), samples::sample_allocation(1)};
    for (auto& a : allocations) {  // a launch or an operator-defined dimension keeps the Protobuf form
      a.launch = core::LaunchRef{};
      a.resources.set(samples::fpga(), 0);
    }
    batch.put_allocations(header.spec.id, allocations.front().claim_id, allocations);
    must(store->write(std::move(batch)), "cannot write the node store");
    put("recovery", "node_store.compact", records_of(store->database(), true, storage::NodeStore::kMeta));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void recovery() {
  namespace keys = storage::keys;
  // Partition store: column families jobs, tasks, nodes, meta (PartitionStore::Cf).
  auto job = stored_job();
  auto node = stored_node();
  std::string partition = record(false, 2, keys::node(node.spec.id), messages::encode(node)) +
                          record(false, 0, keys::job(job.spec.id), messages::encode(job)) +
                          record(false, 1, keys::task(job.spec.id, 0), messages::encode(stored_task())) +
                          record(false, 1, keys::task(job.spec.id, 7), messages::encode(stored_task())) +
                          record(false, 3, keys::kEpoch, messages::encode_counter(3)) +
                          record(false, 3, keys::kAppliedSequence, messages::encode_counter(1200));
  put("recovery", "partition_store", partition);
  // Node store: node_headers, node_claims, node_allocations, meta (NodeStore::Cf).
  auto header = node_header();
  auto claim = samples::sample_live_claim();
  auto allocation = samples::sample_allocation();
  std::string nodes =
      record(true, 0, keys::node_header(header.spec.id), messages::encode(header)) +
      record(true, 1, keys::node_claim(header.spec.id, claim.id), messages::encode(claim)) +
      record(true, 2, keys::node_allocation(header.spec.id, allocation.task), messages::encode(allocation));
  put("recovery", "node_store", nodes);
  put("recovery", "both_stores", partition + nodes);
  written_forms();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  wire();
  records();
  recovery();
  return 0;
}
