#pragma once

// Every key storage/ writes, in one place (LevelDB's db/dbformat.h). Keys are
// fixed-width big-endian unsigned integers, so RocksDB's bytewise order is the
// numeric order: a range of a job's tasks, or of a node's claims, is one
// contiguous key range, and recovery iterates in id order.
//
// | store     | column family     | key                                  | bytes |
// |-----------|-------------------|--------------------------------------|-------|
// | partition | jobs              | job id (u64)                         | 8     |
// | partition | tasks             | job id (u64), task index (u32)       | 12    |
// | partition | tasks (a claim's) | job id (u64), first index (u32), version (u64) | 20 |
// | partition | nodes             | node id (u64)                        | 8     |
// | both      | meta              | "identity", "epoch", "applied_sequence" | -  |
// | partition | meta              | "removed_pool/" + pool name          | -     |
// | node      | node_headers      | node id (u64)                        | 8     |
// | node      | node_claims       | node id (u64), claim id (u64)        | 16    |
// | node      | node_allocations  | node id (u64), job id (u64), task index (u32) | 20 |
// | node      | node_allocations (a claim's) | node id (u64), claim id (u64) | 16 |
//
// Node ids are 32-bit in the core but take 8 bytes here (like the Protobuf
// schema's uint64 ids), so a wider id later is not a format break. Task
// indices stay 32-bit (core::kMaxTasksPerJob is far below 2^32).
//
// Each parse_* is the exact inverse of its encoder and rejects any other
// length or an id that does not fit its core type; describe_* renders a key
// for error messages ("job 42 task 7 [000000000000002a00000007]").

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/ids.hpp"

namespace claimsched::storage::keys {

// -- column families ----------------------------------------------------------

namespace cf {
inline constexpr std::string_view kJobs = "jobs";
inline constexpr std::string_view kTasks = "tasks";
inline constexpr std::string_view kNodes = "nodes";
inline constexpr std::string_view kMeta = "meta";
inline constexpr std::string_view kNodeHeaders = "node_headers";
inline constexpr std::string_view kNodeClaims = "node_claims";
inline constexpr std::string_view kNodeAllocations = "node_allocations";
inline constexpr std::string_view kNodeFinished = "node_finished";
}  // namespace cf

// -- big-endian integers ------------------------------------------------------

inline void put_u32(char* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
}

inline void put_u64(char* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
}

inline uint32_t get_u32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

inline uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

/// A key on the stack: no allocation per record written.
template <size_t N>
struct FixedKey {
  std::array<char, N> bytes{};

  std::string_view view() const { return {bytes.data(), N}; }
  operator std::string_view() const { return view(); }
  std::string str() const { return std::string{view()}; }
};

inline constexpr size_t kJobKeySize = 8;
inline constexpr size_t kJobCopiesKeySize = 12;
inline constexpr size_t kTaskKeySize = 12;
inline constexpr size_t kTaskGroupKeySize = 20;
inline constexpr size_t kNodeKeySize = 8;
inline constexpr size_t kNodeClaimKeySize = 16;
inline constexpr size_t kNodeAllocationKeySize = 20;
inline constexpr size_t kNodeAllocationGroupKeySize = 16;
inline constexpr size_t kNodeFinishedKeySize = 12;

// -- partition store ----------------------------------------------------------

inline FixedKey<kJobKeySize> job(core::JobId id) {
  FixedKey<kJobKeySize> k;
  put_u64(k.bytes.data(), id.value);
  return k;
}

/// Copies of one spec under consecutive ids from `first` (`submit --repeat`):
/// one record. Its key follows the first copy's own key and precedes the next
/// id's, so a later record of one copy (a cancel) sorts inside the range the
/// copies cover.
inline FixedKey<kJobCopiesKeySize> job_copies(core::JobId first, uint32_t count) {
  FixedKey<kJobCopiesKeySize> k;
  put_u64(k.bytes.data(), first.value);
  put_u32(k.bytes.data() + 8, count);
  return k;
}

inline FixedKey<kTaskKeySize> task(core::JobId job, core::TaskIndex index) {
  FixedKey<kTaskKeySize> k;
  put_u64(k.bytes.data(), job.value);
  put_u32(k.bytes.data() + 8, index);
  return k;
}

/// One record for several tasks of a job (a claim's): after the task key of
/// its first index, so a job's records stay one range, and with the record's
/// version, so a later claim starting at the same index never overwrites it.
inline FixedKey<kTaskGroupKeySize> task_group(core::JobId job, core::TaskIndex first, uint64_t version) {
  FixedKey<kTaskGroupKeySize> k;
  put_u64(k.bytes.data(), job.value);
  put_u32(k.bytes.data() + 8, first);
  put_u64(k.bytes.data() + 12, version);
  return k;
}

/// The first task key of `job`; the job's tasks are [task_begin(j), task_end(j)).
inline FixedKey<kTaskKeySize> task_begin(core::JobId job) { return task(job, 0); }

/// One past the last possible task key of `job`. For the largest job id this
/// is 12 bytes of 0xFF, which sorts after every real task key of that job
/// except index 0xFFFFFFFF (never used: core::kMaxTasksPerJob).
inline std::string task_end(core::JobId job) {
  if (job.value == UINT64_MAX) return std::string(kTaskKeySize, '\xFF');
  return task(core::JobId{job.value + 1}, 0).str();
}

inline FixedKey<kNodeKeySize> node(core::NodeId id) {
  FixedKey<kNodeKeySize> k;
  put_u64(k.bytes.data(), id.value);
  return k;
}

struct TaskKey {
  core::JobId job;
  core::TaskIndex index = 0;
  friend auto operator<=>(const TaskKey&, const TaskKey&) = default;
};

inline std::optional<core::JobId> parse_job(std::string_view k) {
  if (k.size() != kJobKeySize) return std::nullopt;
  return core::JobId{get_u64(k.data())};
}

struct JobCopiesKey {
  core::JobId first;
  uint32_t count = 0;
};

inline std::optional<JobCopiesKey> parse_job_copies(std::string_view k) {
  if (k.size() != kJobCopiesKeySize) return std::nullopt;
  return JobCopiesKey{core::JobId{get_u64(k.data())}, get_u32(k.data() + 8)};
}

inline std::optional<TaskKey> parse_task(std::string_view k) {
  if (k.size() != kTaskKeySize) return std::nullopt;
  return TaskKey{core::JobId{get_u64(k.data())}, get_u32(k.data() + 8)};
}

struct TaskGroupKey {
  core::JobId job;
  core::TaskIndex first = 0;
  uint64_t version = 0;
};

inline std::optional<TaskGroupKey> parse_task_group(std::string_view k) {
  if (k.size() != kTaskGroupKeySize) return std::nullopt;
  return TaskGroupKey{core::JobId{get_u64(k.data())}, get_u32(k.data() + 8), get_u64(k.data() + 12)};
}

inline std::optional<core::NodeId> parse_node(std::string_view k) {
  if (k.size() != kNodeKeySize) return std::nullopt;
  uint64_t v = get_u64(k.data());
  if (v > UINT32_MAX) return std::nullopt;
  return core::NodeId{static_cast<uint32_t>(v)};
}

// -- meta (both stores) -------------------------------------------------------

inline constexpr std::string_view kIdentity = "identity";
inline constexpr std::string_view kEpoch = "epoch";
inline constexpr std::string_view kAppliedSequence = "applied_sequence";
/// Partition store: the highest task record version written.
inline constexpr std::string_view kTaskVersion = "task_version";
/// Partition store: one key per pool removed (`claimsched pool remove`),
/// the prefix then the pool's name; the value is when (a counter, wall ms).
inline constexpr std::string_view kRemovedPoolPrefix = "removed_pool/";
inline std::string removed_pool(std::string_view pool) { return std::string(kRemovedPoolPrefix) + std::string(pool); }
/// Partition store (HA): the campaign records of the cluster's campaigns
/// (storage/campaign_store.hpp) live in the meta family of the partition whose
/// owner runs them, behind this prefix, so they reach its standbys with the
/// partition's own changes.
inline constexpr std::string_view kCampaignPrefix = "campaign/";

// -- node store ---------------------------------------------------------------

inline FixedKey<kNodeKeySize> node_header(core::NodeId id) { return node(id); }

inline FixedKey<kNodeClaimKeySize> node_claim(core::NodeId node, core::ClaimId claim) {
  FixedKey<kNodeClaimKeySize> k;
  put_u64(k.bytes.data(), node.value);
  put_u64(k.bytes.data() + 8, claim.value);
  return k;
}

inline FixedKey<kNodeAllocationKeySize> node_allocation(core::NodeId node, core::TaskRef task) {
  FixedKey<kNodeAllocationKeySize> k;
  put_u64(k.bytes.data(), node.value);
  put_u64(k.bytes.data() + 8, task.job.value);
  put_u32(k.bytes.data() + 16, task.index);
  return k;
}

/// One record for every allocation a claim holds on the node (the same
/// width as node_claim, in the node_allocations family).
inline FixedKey<kNodeAllocationGroupKeySize> node_allocation_group(core::NodeId node, core::ClaimId claim) {
  auto k = node_claim(node, claim);
  return FixedKey<kNodeAllocationGroupKeySize>{k.bytes};
}

/// A slot of the node's ring of recent task ends (NodeLedger::recent_finished).
inline FixedKey<kNodeFinishedKeySize> node_finished(core::NodeId node, uint32_t slot) {
  FixedKey<kNodeFinishedKeySize> k;
  put_u64(k.bytes.data(), node.value);
  put_u32(k.bytes.data() + 8, slot);
  return k;
}

/// Every node-store key of `node` (in any node column family) starts with
/// node_prefix(node) and sorts below node_prefix_end(node).
inline FixedKey<kNodeKeySize> node_prefix(core::NodeId node) { return keys::node(node); }
inline FixedKey<kNodeKeySize> node_prefix_end(core::NodeId node) {
  FixedKey<kNodeKeySize> k;
  put_u64(k.bytes.data(), uint64_t{node.value} + 1);  // node ids are 32-bit: no overflow
  return k;
}

struct NodeClaimKey {
  core::NodeId node;
  core::ClaimId claim;
};
struct NodeAllocationKey {
  core::NodeId node;
  core::TaskRef task;
};

inline std::optional<NodeClaimKey> parse_node_claim(std::string_view k) {
  if (k.size() != kNodeClaimKeySize) return std::nullopt;
  auto n = parse_node(k.substr(0, 8));
  if (!n) return std::nullopt;
  return NodeClaimKey{*n, core::ClaimId{get_u64(k.data() + 8)}};
}

struct NodeFinishedKey {
  core::NodeId node;
  uint32_t slot = 0;
};

inline std::optional<NodeFinishedKey> parse_node_finished(std::string_view k) {
  if (k.size() != kNodeFinishedKeySize) return std::nullopt;
  auto n = parse_node(k.substr(0, 8));
  if (!n) return std::nullopt;
  return NodeFinishedKey{*n, get_u32(k.data() + 8)};
}

inline std::optional<NodeAllocationKey> parse_node_allocation(std::string_view k) {
  if (k.size() != kNodeAllocationKeySize) return std::nullopt;
  auto n = parse_node(k.substr(0, 8));
  if (!n) return std::nullopt;
  return NodeAllocationKey{*n, core::TaskRef{core::JobId{get_u64(k.data() + 8)}, get_u32(k.data() + 16)}};
}

// -- rendering ----------------------------------------------------------------

/// Lower-case hex of every byte.
inline std::string hex(std::string_view k) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(k.size() * 2);
  for (unsigned char c : k) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xF];
  }
  return out;
}

/// What a key of column family `cf` means, then its bytes: "job 42 task 7
/// [000000000000002a00000007]"; a key that does not parse is "malformed key
/// [...] (5 bytes)". Unknown column families show the bytes only.
std::string describe(std::string_view cf, std::string_view key);

}  // namespace claimsched::storage::keys
