#include "storage/node_store.hpp"

#include <google/protobuf/arena.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstddef>
#include <map>

#include "messages/codec.hpp"
#include "storage/crash_point.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Expected;
using core::Status;

namespace {

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

Status decode_header(const Database& db, std::string_view key, std::string_view value,
                     core::NodeId& id, StoredNodeHeader& out) {
  auto parsed = keys::parse_node(key);
  if (!parsed) return db.record_error(NodeStore::kHeaders, key, "not a node key");
  id = *parsed;
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(NodeStore::kHeaders, key, st.error());
  if (out.spec.id != id)
    return db.record_error(NodeStore::kHeaders, key,
                           "holds node " + std::to_string(out.spec.id.value));
  return Status::ok();
}

Status decode_claim(const Database& db, std::string_view key, std::string_view value,
                    core::NodeId& node, core::LiveClaim& out) {
  auto parsed = keys::parse_node_claim(key);
  if (!parsed) return db.record_error(NodeStore::kClaims, key, "not a node claim key");
  node = parsed->node;
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(NodeStore::kClaims, key, st.error());
  if (out.id != parsed->claim)
    return db.record_error(NodeStore::kClaims, key, "holds claim " + std::to_string(out.id.value));
  return Status::ok();
}

Status decode_allocation(const Database& db, std::string_view key, std::string_view value,
                         core::NodeId& node, core::Allocation& out) {
  auto parsed = keys::parse_node_allocation(key);
  if (!parsed) return db.record_error(NodeStore::kAllocations, key, "not a node allocation key");
  node = parsed->node;
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(NodeStore::kAllocations, key, st.error());
  if (out.task != parsed->task)
    return db.record_error(NodeStore::kAllocations, key,
                           "holds job " + std::to_string(out.task.job.value) + " task " +
                               std::to_string(out.task.index));
  return Status::ok();
}

// -- a claim's allocations, compact form ------------------------------------------
//
// A claim's record is written in a flat form rather than as StoredAllocations
// (Protobuf): a simulated node store took 84 bytes per placement that way, 5x
// the partition store, and its encoding and volume were most of the node
// store's cost. The form: 0x00 (never the first byte of a Protobuf message:
// field number 0 does not exist), a format byte, the count, then per
// allocation a flag word, its task index and the fields that differ from the
// allocation before it (the first one's from zero), all as varints. The claim
// id is the key's. Allocations this form cannot hold (a launch, an
// operator-defined resource dimension, a negative quantity, another claim's
// id) are written as StoredAllocations, and both forms are read.
constexpr char kCompactMagic = '\0';
constexpr char kCompactFormat = 1;
constexpr core::DimensionId kCompactDimensions = 4;  // cpu, memory, gpu, disk: ids fixed in every build
// Bits of an allocation's flag word.
constexpr uint64_t kNewJob = 1;
constexpr uint64_t kNewPartition = 2;
constexpr uint64_t kRunning = 4;
constexpr uint64_t kNewResources = 8;
constexpr uint64_t kNewConfirmedAt = 16;
constexpr uint64_t kNewFinishesAt = 32;
constexpr uint64_t kAllFlags = 63;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

bool compact_holds(core::ClaimId claim, std::span<const core::Allocation> allocations) {
  for (const auto& a : allocations) {
    if (a.claim_id != claim || a.launch) return false;
    for (core::DimensionId d = 0; d < core::kMaxDimensions; ++d)
      if (a.resources[d] < 0 || (d >= kCompactDimensions && a.resources[d] != 0)) return false;
  }
  return true;
}

void encode_compact(std::span<const core::Allocation> allocations, std::string& out) {
  out.clear();
  out.push_back(kCompactMagic);
  out.push_back(kCompactFormat);
  put_varint(out, allocations.size());
  core::Allocation prev;
  prev.finishes_at = core::TimePoint{0};
  for (const auto& a : allocations) {
    uint64_t flags = a.running ? kRunning : 0;
    if (a.task.job != prev.task.job) flags |= kNewJob;
    if (a.partition != prev.partition) flags |= kNewPartition;
    if (a.resources != prev.resources) flags |= kNewResources;
    if (a.confirmed_at != prev.confirmed_at) flags |= kNewConfirmedAt;
    if (a.finishes_at != prev.finishes_at) flags |= kNewFinishesAt;
    put_varint(out, flags);
    put_varint(out, a.task.index);
    if (flags & kNewJob) put_varint(out, a.task.job.value);
    if (flags & kNewPartition) put_varint(out, a.partition.value);
    if (flags & kNewResources) {
      uint64_t mask = 0;
      for (core::DimensionId d = 0; d < kCompactDimensions; ++d)
        if (a.resources[d] != 0) mask |= uint64_t{1} << d;
      put_varint(out, mask);
      for (core::DimensionId d = 0; d < kCompactDimensions; ++d)
        if (mask & (uint64_t{1} << d)) put_varint(out, static_cast<uint64_t>(a.resources[d]));
    }
    if (flags & kNewConfirmedAt) put_varint(out, zigzag(a.confirmed_at.count()));
    if (flags & kNewFinishesAt) put_varint(out, zigzag(a.finishes_at.count()));
    prev = a;
  }
}

/// Reads the compact form; the error says what is wrong (the caller names the record).
Status decode_compact(std::string_view value, core::ClaimId claim, std::vector<core::Allocation>& out) {
  size_t at = 2;
  auto bad = [](const std::string& what) { return core::make_error(Errc::corrupt, "compact allocations: " + what); };
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && at < value.size(); shift += 7) {
      auto byte = static_cast<uint8_t>(value[at++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  if (value.size() < 2 || value[1] != kCompactFormat)
    return bad("unknown format " + std::to_string(value.size() < 2 ? -1 : static_cast<int>(value[1])));
  uint64_t count = 0;
  // Every allocation takes at least two bytes.
  if (!varint(count) || count == 0 || count > (value.size() - at) / 2)
    return bad("bad count of " + std::to_string(count) + " in " + std::to_string(value.size()) + " bytes");
  core::Allocation a;
  a.claim_id = claim;
  a.finishes_at = core::TimePoint{0};
  for (uint64_t i = 0; i < count; ++i) {
    // Made only for an error: a load decodes every allocation of the node.
    auto which = [i] { return "allocation " + std::to_string(i) + ": "; };
    uint64_t flags = 0, v = 0;
    if (!varint(flags) || (flags & ~kAllFlags) != 0) return bad(which() + "bad flags");
    if (!varint(v) || v > UINT32_MAX) return bad(which() + "bad task index");
    a.task.index = static_cast<core::TaskIndex>(v);
    a.running = (flags & kRunning) != 0;
    if (flags & kNewJob) {
      if (!varint(v)) return bad(which() + "truncated job");
      a.task.job = core::JobId{v};
    }
    if (flags & kNewPartition) {
      if (!varint(v) || v > UINT32_MAX) return bad(which() + "bad partition");
      a.partition = core::PartitionId{static_cast<uint32_t>(v)};
    }
    if (flags & kNewResources) {
      uint64_t mask = 0;
      if (!varint(mask) || mask >= (uint64_t{1} << kCompactDimensions)) return bad(which() + "bad resource dimensions");
      a.resources = core::Resources{};
      for (core::DimensionId d = 0; d < kCompactDimensions; ++d) {
        if (!(mask & (uint64_t{1} << d))) continue;
        if (!varint(v) || v > static_cast<uint64_t>(INT64_MAX)) return bad(which() + "bad resource quantity");
        a.resources.set(d, static_cast<int64_t>(v));
      }
    }
    if (flags & kNewConfirmedAt) {
      if (!varint(v)) return bad(which() + "truncated confirmed_at");
      a.confirmed_at = core::TimePoint{unzigzag(v)};
    }
    if (flags & kNewFinishesAt) {
      if (!varint(v)) return bad(which() + "truncated finishes_at");
      a.finishes_at = core::TimePoint{unzigzag(v)};
    }
    out.push_back(a);
  }
  if (at != value.size()) return bad(std::to_string(value.size() - at) + " byte(s) after the last allocation");
  return Status::ok();
}

/// A claim's allocations (key (node, claim)): each must be the claim's.
Status decode_allocation_group(const Database& db, std::string_view key, std::string_view value, core::NodeId& node,
                               std::vector<core::Allocation>& out) {
  auto parsed = keys::parse_node_claim(key);
  if (!parsed) return db.record_error(NodeStore::kAllocations, key, "not a node allocation key");
  node = parsed->node;
  if (!value.empty() && value[0] == kCompactMagic) {
    if (auto st = decode_compact(value, parsed->claim, out); !st)
      return db.record_error(NodeStore::kAllocations, key, st.error());
    return Status::ok();
  }
  pb::StoredAllocations p;
  if (!p.ParseFromArray(value.data(), static_cast<int>(value.size())))
    return db.record_error(NodeStore::kAllocations, key,
                           "StoredAllocations: not a valid encoding (" + std::to_string(value.size()) + " bytes)");
  if (p.allocations_size() == 0)
    return db.record_error(NodeStore::kAllocations, key, "a claim's record of no allocation");
  for (const auto& pa : p.allocations()) {
    core::Allocation a;
    if (auto st = messages::from_proto(pa, a); !st) return db.record_error(NodeStore::kAllocations, key, st.error());
    if (a.claim_id != parsed->claim)
      return db.record_error(NodeStore::kAllocations, key, "holds claim " + std::to_string(a.claim_id.value));
    out.push_back(std::move(a));
  }
  return Status::ok();
}

/// Either form of a node_allocations record: a claim's (16-byte key) or one task's.
Status decode_allocations(const Database& db, std::string_view key, std::string_view value, core::NodeId& node,
                          std::vector<core::Allocation>& out) {
  if (key.size() == keys::kNodeAllocationGroupKeySize) return decode_allocation_group(db, key, value, node, out);
  core::Allocation a;
  if (auto st = decode_allocation(db, key, value, node, a); !st) return st;
  out.push_back(std::move(a));
  return Status::ok();
}

Status decode_finished(const Database& db, std::string_view key, std::string_view value, core::NodeId& node,
                       uint64_t& sequence, core::NodeEvent& out) {
  auto parsed = keys::parse_node_finished(key);
  if (!parsed) return db.record_error(NodeStore::kFinished, key, "not a node finished key");
  node = parsed->node;
  if (value.size() < 8) return db.record_error(NodeStore::kFinished, key, "no sequence number");
  sequence = keys::get_u64(value.data());
  if (auto st = messages::decode(value.substr(8), out); !st)
    return db.record_error(NodeStore::kFinished, key, st.error());
  if (out.kind != core::NodeEvent::Kind::task_finished)
    return db.record_error(NodeStore::kFinished, key, "holds an event that is not a task's end");
  return Status::ok();
}

/// Encodes into `out` the protobuf message `fill` sets, built on this
/// thread's arena, reset after each record: the arena keeps its first block (a
/// buffer of its own), so a record that fits in it allocates nothing (a
/// claim's allocations, up to max_tasks_per_claim of them, too). A message on
/// the heap allocates its parts every time (Clear() deletes its sub-messages).
template <class Proto, class Fill>
void encode_with_arena(Fill&& fill, std::string& out) {
  struct ThreadArena {
    alignas(std::max_align_t) char block[32768];
    google::protobuf::Arena arena{options(block)};
    static google::protobuf::ArenaOptions options(char* block) {
      google::protobuf::ArenaOptions o;
      o.initial_block = block;
      o.initial_block_size = sizeof ThreadArena::block;
      return o;
    }
  };
  thread_local ThreadArena t;
  auto* p = google::protobuf::Arena::CreateMessage<Proto>(&t.arena);
  fill(*p);
  out.clear();
  p->SerializeToString(&out);
  t.arena.Reset();
}

template <class Proto, class Value>
void encode_on_arena(const Value& in, std::string& out) {
  encode_with_arena<Proto>([&](Proto& p) { messages::to_proto(in, p); }, out);
}

/// The node id a claim/allocation key starts with, or nullopt if malformed.
std::optional<core::NodeId> node_of(std::string_view key) {
  if (key.size() < keys::kNodeKeySize) return std::nullopt;
  return keys::parse_node(key.substr(0, keys::kNodeKeySize));
}

}  // namespace

const Database::Layout& NodeStore::layout() {
  // Order = the Cf enum.
  static const Database::Layout kLayout{
      messages::StoreKind::nodes,
      {keys::cf::kNodeHeaders, keys::cf::kNodeClaims, keys::cf::kNodeAllocations, keys::cf::kMeta,
       keys::cf::kNodeFinished},
      /*unsorted_memtable=*/true};
  return kLayout;
}

Expected<std::unique_ptr<NodeStore>> NodeStore::open(const std::string& dir,
                                                     const NodeStoreIdentity& identity,
                                                     const StoreOptions& options) {
  messages::StoreIdentity id;
  id.kind = messages::StoreKind::nodes;
  id.cluster_id = identity.cluster_id;
  id.host = identity.host;
  StoreOptions with_interval = options;
  if (!with_interval.sync_interval) with_interval.sync_interval = kNodeStoreSyncInterval;
  auto db = Database::open(dir, layout(), id, with_interval);
  if (!db) return db.error();
  std::unique_ptr<NodeStore> store{new NodeStore{std::move(*db)}};
  {
    auto claims = store->db_->cursor(kClaims, {}, {});
    if (auto st = claims.status(); !st) return st.error();
    store->claims_.store(claims.valid());
  }
  if (!options.read_only)
    if (auto st = store->upgrade_allocations(); !st) return st.error();
  return store;
}

Status NodeStore::upgrade_allocations() {
  // (node, claim) -> the claim's allocations, and the per-task keys they came from.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<core::Allocation>> claims;
  std::vector<std::string> old_keys;
  auto st = db_->scan(kAllocations, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (key.size() == keys::kNodeAllocationGroupKeySize) return Status::ok();  // a claim's: read at load
    core::NodeId node;
    core::Allocation a;
    if (auto s2 = decode_allocation(*db_, key, value, node, a); !s2) return s2;
    if (a.claim_id.value == 0) return Status::ok();  // stays one record per task
    old_keys.emplace_back(key);
    claims[{node.value, a.claim_id.value}].push_back(std::move(a));
    return Status::ok();
  });
  if (!st || old_keys.empty()) return st;
  auto b = batch();
  for (const auto& k : old_keys) b.batch_.Delete(db_->handle(kAllocations), slice(k)).PermitUncheckedError();
  for (auto& [id, held] : claims) {
    // A claim's record of the new format beside them (never written so, but
    // merged rather than lost).
    auto key = keys::node_allocation_group(core::NodeId{id.first}, core::ClaimId{id.second});
    auto existing = db_->get(kAllocations, key);
    if (!existing) return existing.error();
    if (existing->has_value()) {
      core::NodeId node;
      if (auto s2 = decode_allocation_group(*db_, key, **existing, node, held); !s2) return s2;
    }
    b.put_allocations(core::NodeId{id.first}, core::ClaimId{id.second}, held);
  }
  return write(std::move(b));
}

// -- batches ------------------------------------------------------------------

void NodeStore::Batch::put(Cf cf, std::string_view key, std::string_view value) {
  batch_.Put(db_->handle(cf), slice(key), slice(value)).PermitUncheckedError();
}

void NodeStore::Batch::erase_range(Cf cf, core::NodeId node) {
  batch_.DeleteRange(db_->handle(cf), slice(keys::node_prefix(node)),
                     slice(keys::node_prefix_end(node)))
      .PermitUncheckedError();
}

void NodeStore::Batch::put_header(const StoredNodeHeader& header) {
  messages::encode_to(header, scratch_);
  put(kHeaders, keys::node_header(header.spec.id), scratch_);
}

void NodeStore::Batch::put_claim(core::NodeId node, const core::LiveClaim& claim) {
  claims_->store(true, std::memory_order_release);
  encode_on_arena<pb::LiveClaim>(claim, scratch_);
  put(kClaims, keys::node_claim(node, claim.id), scratch_);
}

void NodeStore::Batch::erase_claim(core::NodeId node, core::ClaimId claim) {
  if (!claims_->load(std::memory_order_acquire)) return;
  batch_.Delete(db_->handle(kClaims), slice(keys::node_claim(node, claim))).PermitUncheckedError();
}

void NodeStore::Batch::put_allocation(core::NodeId node, const core::Allocation& allocation) {
  // A confirm writes one record per task.
  encode_on_arena<pb::Allocation>(allocation, scratch_);
  put(kAllocations, keys::node_allocation(node, allocation.task), scratch_);
}

void NodeStore::Batch::put_allocations(core::NodeId node, core::ClaimId claim,
                                       std::span<const core::Allocation> allocations) {
  auto key = keys::node_allocation_group(node, claim);
  if (allocations.empty()) {
    batch_.Delete(db_->handle(kAllocations), slice(key)).PermitUncheckedError();
    return;
  }
  if (compact_holds(claim, allocations)) {
    encode_compact(allocations, scratch_);
    put(kAllocations, key, scratch_);
    return;
  }
  encode_with_arena<pb::StoredAllocations>(
      [&](pb::StoredAllocations& p) {
        p.mutable_allocations()->Reserve(static_cast<int>(allocations.size()));
        for (const auto& a : allocations) messages::to_proto(a, *p.add_allocations());
      },
      scratch_);
  put(kAllocations, key, scratch_);
}

void NodeStore::Batch::erase_allocation(core::NodeId node, core::TaskRef task) {
  batch_.Delete(db_->handle(kAllocations), slice(keys::node_allocation(node, task)))
      .PermitUncheckedError();
}

void NodeStore::Batch::put_finished(core::NodeId node, uint32_t slot, uint64_t sequence,
                                    const core::NodeEvent& event) {
  scratch_.assign(8, '\0');
  keys::put_u64(scratch_.data(), sequence);
  scratch_ += messages::encode(event);
  put(kFinished, keys::node_finished(node, slot), scratch_);
}

void NodeStore::Batch::erase_node(core::NodeId node) {
  batch_.Delete(db_->handle(kHeaders), slice(keys::node_header(node))).PermitUncheckedError();
  erase_range(kClaims, node);
  erase_range(kAllocations, node);
  erase_range(kFinished, node);
}

void NodeStore::Batch::put_report(const core::NodeReport& report) {
  const core::NodeId node = report.spec.id;
  erase_range(kClaims, node);
  erase_range(kAllocations, node);
  StoredNodeHeader header;
  header.spec = report.spec;
  header.state = report.snapshot.state;
  header.generation = report.snapshot.generation;
  header.epochs = report.epochs;
  put_header(header);
  for (const auto& c : report.claims) put_claim(node, c);
  std::map<uint64_t, std::vector<core::Allocation>> by_claim;
  for (const auto& a : report.allocations) {
    if (a.claim_id.value == 0)
      put_allocation(node, a);
    else
      by_claim[a.claim_id.value].push_back(a);
  }
  for (const auto& [claim, held] : by_claim) put_allocations(node, core::ClaimId{claim}, held);
}

void NodeStore::submit(Batch batch, DurableCallback on_durable) {
  db_->submit(std::move(batch.batch_), std::move(on_durable));
}

Status NodeStore::write(Batch batch) { return db_->write(std::move(batch.batch_)); }

// -- loading ------------------------------------------------------------------

Status NodeStore::load_range(std::string_view lower, std::string_view upper,
                             const std::function<Status(LoadedNode&&)>& f) const {
  // A merge join of the node column families, all keyed by node id first.
  auto headers = db_->cursor(kHeaders, lower, upper);
  auto claims = db_->cursor(kClaims, lower, upper);
  auto allocations = db_->cursor(kAllocations, lower, upper);
  auto finished = db_->cursor(kFinished, lower, upper);

  auto orphan = [&](size_t cf, std::string_view key) {
    return db_->record_error(cf, key, "no node_headers record for its node");
  };
  // Appends the records of `cf` that belong to `node`; a key of an earlier
  // node that has no header is an orphan.
  auto take = [&](Database::Cursor& c, size_t cf, core::NodeId node, auto&& decode_one) -> Status {
    for (; c.valid(); c.next()) {
      auto owner = node_of(c.key());
      if (!owner)
        return db_->record_error(cf, c.key(), "malformed key");
      if (*owner > node) break;
      if (*owner < node) return orphan(cf, c.key());
      if (auto st = decode_one(c.key(), c.value()); !st) return st;
    }
    return c.status();
  };

  for (; headers.valid(); headers.next()) {
    LoadedNode loaded;
    core::NodeId id;
    if (auto st = decode_header(*db_, headers.key(), headers.value(), id, loaded.header); !st)
      return st;
    core::NodeId owner;
    auto st = take(claims, kClaims, id, [&](std::string_view k, std::string_view v) -> Status {
      core::LiveClaim c;
      if (auto s2 = decode_claim(*db_, k, v, owner, c); !s2) return s2;
      loaded.claims.push_back(std::move(c));
      return Status::ok();
    });
    if (!st) return st;
    st = take(allocations, kAllocations, id, [&](std::string_view k, std::string_view v) -> Status {
      return decode_allocations(*db_, k, v, owner, loaded.allocations);
    });
    if (!st) return st;
    std::sort(loaded.allocations.begin(), loaded.allocations.end(),
              [](const core::Allocation& a, const core::Allocation& b) { return a.task < b.task; });
    st = take(finished, kFinished, id, [&](std::string_view k, std::string_view v) -> Status {
      uint64_t sequence = 0;
      core::NodeEvent ev;
      if (auto s2 = decode_finished(*db_, k, v, owner, sequence, ev); !s2) return s2;
      loaded.finished.emplace_back(sequence, std::move(ev));
      return Status::ok();
    });
    if (!st) return st;
    if (auto s3 = f(std::move(loaded)); !s3) return s3;
  }
  if (auto st = headers.status(); !st) return st;
  if (claims.valid()) return orphan(kClaims, claims.key());
  if (auto st = claims.status(); !st) return st;
  if (allocations.valid()) return orphan(kAllocations, allocations.key());
  if (auto st = allocations.status(); !st) return st;
  if (finished.valid()) return orphan(kFinished, finished.key());
  return finished.status();
}

Status NodeStore::load(const std::function<Status(LoadedNode&&)>& f) const {
  crash::point(crash::kRecoverStarted);
  auto st = load_range({}, {}, f);
  if (st) crash::point(crash::kRecoverFinished);
  return st;
}

Expected<std::optional<LoadedNode>> NodeStore::load_node(core::NodeId node) const {
  std::optional<LoadedNode> out;
  auto lower = keys::node_prefix(node);
  auto upper = keys::node_prefix_end(node);
  auto st = load_range(lower, upper, [&](LoadedNode&& n) {
    out = std::move(n);
    return Status::ok();
  });
  if (!st) return st.error();
  return out;
}

Status canonical_node_record(const Database& db, size_t cf, std::string_view key,
                             std::string_view value, std::string& canonical) {
  core::NodeId node;
  switch (cf) {
    case NodeStore::kHeaders: {
      StoredNodeHeader h;
      if (auto st = decode_header(db, key, value, node, h); !st) return st;
      canonical = messages::encode(h);
      return Status::ok();
    }
    case NodeStore::kClaims: {
      core::LiveClaim c;
      if (auto st = decode_claim(db, key, value, node, c); !st) return st;
      canonical = messages::encode(c);
      return Status::ok();
    }
    case NodeStore::kAllocations: {
      std::vector<core::Allocation> held;
      if (auto st = decode_allocations(db, key, value, node, held); !st) return st;
      canonical.clear();
      for (const auto& a : held) canonical += messages::encode(a);
      return Status::ok();
    }
    case NodeStore::kFinished: {
      uint64_t sequence = 0;
      core::NodeEvent ev;
      if (auto st = decode_finished(db, key, value, node, sequence, ev); !st) return st;
      canonical.assign(8, '\0');
      keys::put_u64(canonical.data(), sequence);
      canonical += messages::encode(ev);
      return Status::ok();
    }
    case NodeStore::kMeta: {
      if (key == keys::kIdentity) {
        messages::StoreIdentity id;
        if (auto st = messages::decode(value, id); !st) return db.record_error(cf, key, st.error());
        canonical = messages::encode(id);
        return Status::ok();
      }
      return db.record_error(cf, key, "unknown meta record");
    }
    default:
      return db.record_error(cf, key, "unknown column family");
  }
}

}  // namespace claimsched::storage
