#pragma once

// The persisted records (messages/records.proto) as plain values, and their
// codec. storage/ keeps these in RocksDB; the replica stream ships
// ChangeBatch. Decoding follows codec.hpp's contract: a malformed or
// out-of-range field is an Error (Errc::corrupt) naming the field by its path
// ("StoredTask.state: unknown enum value 42"), never a crash, never a silently
// defaulted value; the output is untouched on error.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/job.hpp"
#include "core/node.hpp"
#include "core/protocol.hpp"
#include "messages/records.pb.h"

namespace claimsched::messages {

// -- partition store ----------------------------------------------------------

/// Where an accepted job stands as a whole.
enum class JobStatus : uint8_t {
  /// Accepted; some tasks may still be pending or running.
  active = 0,
  /// The user cancelled it.
  cancelled,
  /// Every task reached a final state.
  finished,
};

std::string_view to_string(JobStatus s);

/// `jobs` record: a job the partition accepted (acknowledged to its submitter
/// only once this record is durable).
struct StoredJob {
  core::JobSpec spec;
  JobStatus status = JobStatus::active;
  core::TimePoint accepted_at{0};
  /// Zero while active.
  core::TimePoint finished_at{0};

  friend bool operator==(const StoredJob&, const StoredJob&) = default;
};

/// `tasks` record: the state of a task that was placed at least once. Stored
/// under (job, task index), or once for a claim's tasks (storage/
/// partition_store.hpp); tasks never placed have no record (the job's count
/// says how many there are).
struct StoredTask {
  core::TaskState state = core::TaskState::pending;
  /// Zero when not on a node.
  core::NodeId node;
  /// Zero when no claim.
  core::ClaimId claim_id;
  /// The scheduler's epoch when it wrote the record.
  core::Epoch epoch = 0;
  uint32_t attempts = 0;
  int32_t exit_code = 0;
  core::TimePoint updated_at{0};
  /// Final states: why the run ended (reason none in older records).
  core::TaskEnd end;

  friend bool operator==(const StoredTask&, const StoredTask&) = default;
};

/// `nodes` record: a node registered with the partition.
struct StoredNode {
  core::NodeSpec spec;
  core::NodeState state = core::NodeState::up;
  core::TimePoint registered_at{0};

  friend bool operator==(const StoredNode&, const StoredNode&) = default;
};

// -- both stores --------------------------------------------------------------

enum class StoreKind : uint8_t {
  partition = 0,
  nodes,
};

std::string_view to_string(StoreKind k);

/// `meta` record "identity": whom a database belongs to.
struct StoreIdentity {
  StoreKind kind = StoreKind::partition;
  std::string cluster_id;
  /// Partition stores only.
  core::PartitionId partition;
  /// Node stores only.
  std::string host;
  uint32_t format_version = 1;

  /// "cluster 'c1' partition 3" / "cluster 'c1' host 'a7'": for error messages.
  std::string describe() const;
  friend bool operator==(const StoreIdentity&, const StoreIdentity&) = default;
};

// -- node store ---------------------------------------------------------------

/// `node_headers` record: one hosted node's identity, state, generation and
/// the highest epoch seen per partition.
struct StoredNodeHeader {
  core::NodeSpec spec;
  core::NodeState state = core::NodeState::up;
  core::Generation generation = 0;
  std::vector<std::pair<core::PartitionId, core::Epoch>> epochs;

  friend bool operator==(const StoredNodeHeader&, const StoredNodeHeader&) = default;
};

// -- replica stream -----------------------------------------------------------

/// One RocksDB write batch of a primary's change log: its changes have
/// sequence numbers sequence .. sequence + count - 1; `data` is the batch's
/// WAL record (rocksdb::WriteBatch::Data()).
struct ChangeBatch {
  uint64_t sequence = 0;
  uint32_t count = 0;
  std::string data;

  uint64_t last_sequence() const { return sequence + count - 1; }
  friend bool operator==(const ChangeBatch&, const ChangeBatch&) = default;
};

// -- codec --------------------------------------------------------------------

#define CLAIMSCHED_RECORD_CODEC(Type)                           \
  void to_proto(const Type& in, pb::Type& out);                 \
  core::Status from_proto(const pb::Type& in, Type& out);       \
  std::string encode(const Type& in);                           \
  void encode_to(const Type& in, std::string& out);             \
  core::Status decode(std::string_view bytes, Type& out);

CLAIMSCHED_RECORD_CODEC(StoredJob)
CLAIMSCHED_RECORD_CODEC(StoredTask)
CLAIMSCHED_RECORD_CODEC(StoredNode)
CLAIMSCHED_RECORD_CODEC(StoreIdentity)
CLAIMSCHED_RECORD_CODEC(StoredNodeHeader)
CLAIMSCHED_RECORD_CODEC(ChangeBatch)

#undef CLAIMSCHED_RECORD_CODEC

/// `meta` records "epoch" and "applied_sequence": one unsigned number.
std::string encode_counter(uint64_t value);
core::Status decode_counter(std::string_view bytes, uint64_t& out);

}  // namespace claimsched::messages
