#include "messages/record_codec.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/limits.hpp"
#include "messages/codec.hpp"
#include "messages/codec_detail.hpp"  // CLAIMSCHED_TRY

// Decoding contract: see record_codec.hpp and codec.cpp. Errors name the field
// from the top-level record ("StoredJob.spec.count: ..."); a nested core type
// is decoded by codec.hpp and its error's root ("JobSpec") is replaced by the
// field's path. Sizes are bounded as on the wire (core/limits.hpp).

namespace claimsched::messages {

namespace {

using core::Errc;
using core::Error;
using core::Status;

static_assert(pb::JOB_STATUS_ACTIVE == static_cast<int>(JobStatus::active) + 1);
static_assert(pb::JOB_STATUS_CANCELLED == static_cast<int>(JobStatus::cancelled) + 1);
static_assert(pb::JOB_STATUS_FINISHED == static_cast<int>(JobStatus::finished) + 1);
static_assert(pb::JobStatus_MAX == static_cast<int>(JobStatus::finished) + 1);
static_assert(pb::STORE_KIND_PARTITION == static_cast<int>(StoreKind::partition) + 1);
static_assert(pb::STORE_KIND_NODES == static_cast<int>(StoreKind::nodes) + 1);
static_assert(pb::StoreKind_MAX == static_cast<int>(StoreKind::nodes) + 1);
static_assert(pb::NodeState_MAX == static_cast<int>(core::NodeState::down) + 1);
static_assert(pb::TaskState_MAX == static_cast<int>(core::TaskState::cancelled) + 1);

Error corrupt(std::string_view path, std::string_view what) {
  std::string msg{path};
  msg += ": ";
  msg += what;
  return Error{Errc::corrupt, std::move(msg)};
}

/// Re-roots a nested decoder's error: "JobSpec.count: x" -> "StoredJob.spec.count: x".
Status reroot(Status st, std::string_view nested_root, std::string_view path) {
  if (st) return st;
  Error e = st.error();
  if (e.message.starts_with(nested_root))
    e.message = std::string{path} + e.message.substr(nested_root.size());
  else
    e.message = std::string{path} + ": " + e.message;
  return e;
}

template <class E>
Status read_enum(int wire, E last, std::string_view path, E& out) {
  if (wire == 0) return corrupt(path, "missing (unspecified)");
  if (wire < 0 || wire > static_cast<int>(last) + 1)
    return corrupt(path, "unknown enum value " + std::to_string(wire));
  out = static_cast<E>(wire - 1);
  return Status::ok();
}

template <class E>
int to_wire(E value) {
  return static_cast<int>(value) + 1;
}

Status read_u32(uint64_t in, std::string_view path, uint32_t& out) {
  if (in > std::numeric_limits<uint32_t>::max())
    return corrupt(path, "value " + std::to_string(in) + " does not fit in 32 bits");
  out = static_cast<uint32_t>(in);
  return Status::ok();
}

Status read_i32(int64_t in, std::string_view path, int32_t& out) {
  if (in < std::numeric_limits<int32_t>::min() || in > std::numeric_limits<int32_t>::max())
    return corrupt(path, "value " + std::to_string(in) + " does not fit in 32 bits");
  out = static_cast<int32_t>(in);
  return Status::ok();
}

template <class Proto>
Status parse(std::string_view bytes, std::string_view root, Proto& out) {
  // A ChangeBatch is one RocksDB write of the replica stream (merged bursts).
  constexpr bool bulk = std::is_same_v<Proto, pb::ChangeBatch>;
  constexpr size_t limit = bulk ? core::kMaxBulkMessageBytes : core::kMaxMessageBytes;
  static_assert(limit <= static_cast<size_t>(std::numeric_limits<int>::max()));
  if (bytes.size() > limit)
    return corrupt(root, std::to_string(bytes.size()) + " bytes, above the limit of " +
                             std::to_string(limit) +
                             (bulk ? " (kMaxBulkMessageBytes)" : " (kMaxMessageBytes)"));
  if (!out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return corrupt(root, "not a valid " + std::string{root} + " encoding (" +
                             std::to_string(bytes.size()) + " bytes)");
  return Status::ok();
}

template <class Proto>
std::string serialize(const Proto& p) {
  std::string out;
  p.SerializeToString(&out);
  return out;
}

}  // namespace

std::string_view to_string(JobStatus s) {
  switch (s) {
    case JobStatus::active:
      return "active";
    case JobStatus::cancelled:
      return "cancelled";
    case JobStatus::finished:
      return "finished";
  }
  return "unknown";
}

std::string_view to_string(StoreKind k) {
  switch (k) {
    case StoreKind::partition:
      return "partition store";
    case StoreKind::nodes:
      return "node store";
  }
  return "unknown store";
}

std::string StoreIdentity::describe() const {
  std::string out = "cluster '" + cluster_id + "' ";
  if (kind == StoreKind::partition)
    out += "partition " + std::to_string(partition.value);
  else
    out += "host '" + host + "'";
  return out;
}

// -- StoredJob ----------------------------------------------------------------

void to_proto(const StoredJob& in, pb::StoredJob& out) {
  to_proto(in.spec, *out.mutable_spec());
  out.set_status(static_cast<pb::JobStatus>(to_wire(in.status)));
  out.set_accepted_ns(in.accepted_at.count());
  out.set_finished_ns(in.finished_at.count());
}

Status from_proto(const pb::StoredJob& in, StoredJob& out) {
  StoredJob r;
  if (!in.has_spec()) return corrupt("StoredJob.spec", "missing");
  CLAIMSCHED_TRY(reroot(from_proto(in.spec(), r.spec), "JobSpec", "StoredJob.spec"));
  CLAIMSCHED_TRY(read_enum(in.status(), JobStatus::finished, "StoredJob.status", r.status));
  r.accepted_at = core::TimePoint{in.accepted_ns()};
  r.finished_at = core::TimePoint{in.finished_ns()};
  out = std::move(r);
  return Status::ok();
}

// -- StoredTask ---------------------------------------------------------------

void to_proto(const StoredTask& in, pb::StoredTask& out) {
  out.set_state(static_cast<pb::TaskState>(to_wire(in.state)));
  out.set_node(in.node.value);
  out.set_claim_id(in.claim_id.value);
  out.set_epoch(in.epoch);
  out.set_attempts(in.attempts);
  out.set_exit_code(in.exit_code);
  out.set_updated_ns(in.updated_at.count());
  if (!(in.end == core::TaskEnd{})) to_proto(in.end, *out.mutable_end());  // all a decode accepted
}

Status from_proto(const pb::StoredTask& in, StoredTask& out) {
  StoredTask r;
  CLAIMSCHED_TRY(read_enum(in.state(), core::TaskState::cancelled, "StoredTask.state", r.state));
  CLAIMSCHED_TRY(read_u32(in.node(), "StoredTask.node", r.node.value));
  r.claim_id.value = in.claim_id();
  r.epoch = in.epoch();
  CLAIMSCHED_TRY(read_u32(in.attempts(), "StoredTask.attempts", r.attempts));
  CLAIMSCHED_TRY(read_i32(in.exit_code(), "StoredTask.exit_code", r.exit_code));
  r.updated_at = core::TimePoint{in.updated_ns()};
  if (in.has_end()) CLAIMSCHED_TRY(reroot(from_proto(in.end(), r.end), "TaskEnd", "StoredTask.end"));
  out = r;
  return Status::ok();
}

// -- StoredNode ---------------------------------------------------------------

void to_proto(const StoredNode& in, pb::StoredNode& out) {
  to_proto(in.spec, *out.mutable_spec());
  out.set_state(static_cast<pb::NodeState>(to_wire(in.state)));
  out.set_registered_ns(in.registered_at.count());
}

Status from_proto(const pb::StoredNode& in, StoredNode& out) {
  StoredNode r;
  if (!in.has_spec()) return corrupt("StoredNode.spec", "missing");
  CLAIMSCHED_TRY(reroot(from_proto(in.spec(), r.spec), "NodeSpec", "StoredNode.spec"));
  CLAIMSCHED_TRY(read_enum(in.state(), core::NodeState::down, "StoredNode.state", r.state));
  r.registered_at = core::TimePoint{in.registered_ns()};
  out = std::move(r);
  return Status::ok();
}

// -- StoreIdentity ------------------------------------------------------------

void to_proto(const StoreIdentity& in, pb::StoreIdentity& out) {
  out.set_kind(static_cast<pb::StoreKind>(to_wire(in.kind)));
  out.set_cluster_id(in.cluster_id);
  out.set_partition(in.partition.value);
  out.set_host(in.host);
  out.set_format_version(in.format_version);
}

Status from_proto(const pb::StoreIdentity& in, StoreIdentity& out) {
  StoreIdentity r;
  CLAIMSCHED_TRY(read_enum(in.kind(), StoreKind::nodes, "StoreIdentity.kind", r.kind));
  r.cluster_id = in.cluster_id();
  CLAIMSCHED_TRY(read_u32(in.partition(), "StoreIdentity.partition", r.partition.value));
  r.host = in.host();
  if (in.format_version() == 0) return corrupt("StoreIdentity.format_version", "missing");
  CLAIMSCHED_TRY(read_u32(in.format_version(), "StoreIdentity.format_version", r.format_version));
  out = std::move(r);
  return Status::ok();
}

// -- StoredNodeHeader ---------------------------------------------------------

void to_proto(const StoredNodeHeader& in, pb::StoredNodeHeader& out) {
  to_proto(in.spec, *out.mutable_spec());
  out.set_state(static_cast<pb::NodeState>(to_wire(in.state)));
  out.set_generation(in.generation);
  out.clear_epochs();
  for (const auto& [partition, epoch] : in.epochs) {
    auto* e = out.add_epochs();
    e->set_partition(partition.value);
    e->set_epoch(epoch);
  }
}

Status from_proto(const pb::StoredNodeHeader& in, StoredNodeHeader& out) {
  StoredNodeHeader r;
  if (!in.has_spec()) return corrupt("StoredNodeHeader.spec", "missing");
  CLAIMSCHED_TRY(reroot(from_proto(in.spec(), r.spec), "NodeSpec", "StoredNodeHeader.spec"));
  CLAIMSCHED_TRY(read_enum(in.state(), core::NodeState::down, "StoredNodeHeader.state", r.state));
  r.generation = in.generation();
  if (static_cast<size_t>(in.epochs_size()) > core::kMaxPartitions)
    return corrupt("StoredNodeHeader.epochs", std::to_string(in.epochs_size()) +
                                                  " entries, above the limit of " +
                                                  std::to_string(core::kMaxPartitions) + " (kMaxPartitions)");
  r.epochs.reserve(static_cast<size_t>(in.epochs_size()));
  for (int i = 0; i < in.epochs_size(); ++i) {
    const auto& e = in.epochs(i);
    core::PartitionId partition;
    std::string path = "StoredNodeHeader.epochs[" + std::to_string(i) + "].partition";
    CLAIMSCHED_TRY(read_u32(e.partition(), path, partition.value));
    r.epochs.emplace_back(partition, e.epoch());
  }
  // Sorted, not pairwise: a pairwise check is quadratic in a list a corrupt
  // record chooses.
  std::vector<core::PartitionId> partitions;
  partitions.reserve(r.epochs.size());
  for (const auto& [partition, epoch] : r.epochs) partitions.push_back(partition);
  std::sort(partitions.begin(), partitions.end());
  if (auto dup = std::adjacent_find(partitions.begin(), partitions.end()); dup != partitions.end()) {
    size_t second = 0;  // the entry that repeats an earlier one, for the error's path
    for (bool seen = false; second < r.epochs.size(); ++second)
      if (r.epochs[second].first == *dup && std::exchange(seen, true)) break;
    return corrupt("StoredNodeHeader.epochs[" + std::to_string(second) + "].partition",
                   "duplicate partition " + std::to_string(dup->value));
  }
  out = std::move(r);
  return Status::ok();
}

// -- ChangeBatch --------------------------------------------------------------

void to_proto(const ChangeBatch& in, pb::ChangeBatch& out) {
  out.set_sequence(in.sequence);
  out.set_count(in.count);
  out.set_data(in.data);
}

Status from_proto(const pb::ChangeBatch& in, ChangeBatch& out) {
  ChangeBatch r;
  // Sequence 0 is never assigned by RocksDB: the first change is 1.
  if (in.sequence() == 0) return corrupt("ChangeBatch.sequence", "missing (sequences start at 1)");
  if (in.count() == 0) return corrupt("ChangeBatch.count", "missing (a batch holds a change)");
  CLAIMSCHED_TRY(read_u32(in.count(), "ChangeBatch.count", r.count));
  if (in.sequence() > std::numeric_limits<uint64_t>::max() - in.count())
    return corrupt("ChangeBatch.sequence", "sequence + count overflows");
  r.sequence = in.sequence();
  r.data = in.data();
  out = std::move(r);
  return Status::ok();
}

// -- bytes --------------------------------------------------------------------

#define CLAIMSCHED_RECORD_BYTES(Type)                         \
  std::string encode(const Type& in) {                        \
    pb::Type p;                                               \
    to_proto(in, p);                                          \
    return serialize(p);                                      \
  }                                                           \
  void encode_to(const Type& in, std::string& out) {          \
    pb::Type p;                                               \
    to_proto(in, p);                                          \
    out.clear();                                              \
    p.SerializeToString(&out);                                \
  }                                                           \
  Status decode(std::string_view bytes, Type& out) {          \
    pb::Type p;                                               \
    CLAIMSCHED_TRY(parse(bytes, #Type, p));                   \
    return from_proto(p, out);                                \
  }

CLAIMSCHED_RECORD_BYTES(StoredJob)
CLAIMSCHED_RECORD_BYTES(StoredTask)
CLAIMSCHED_RECORD_BYTES(StoredNode)
CLAIMSCHED_RECORD_BYTES(StoreIdentity)
CLAIMSCHED_RECORD_BYTES(StoredNodeHeader)
CLAIMSCHED_RECORD_BYTES(ChangeBatch)

#undef CLAIMSCHED_RECORD_BYTES

std::string encode_counter(uint64_t value) {
  pb::MetaCounter p;
  p.set_value(value);
  return serialize(p);
}

Status decode_counter(std::string_view bytes, uint64_t& out) {
  pb::MetaCounter p;
  CLAIMSCHED_TRY(parse(bytes, "MetaCounter", p));
  out = p.value();
  return Status::ok();
}

}  // namespace claimsched::messages
