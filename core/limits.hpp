#pragma once

// Size limits on everything that crosses a process boundary or is read back
// from disk, in one place. The decoders (messages/codec.cpp,
// messages/record_codec.cpp) refuse a message, record or list above its limit
// with Errc::corrupt naming the field and the limit ("NodeReport.claims:
// 1000001 entries, above the limit of 1000000 (kMaxTasksPerNode)"), before
// building anything from it; the senders' own checks (core::validate for
// jobs, the job-file and config parsers) apply the same limits, so a value a
// process accepts from a user is never one its peer would refuse.
//
// Why a limit on every list and not only on the message: Protobuf and the
// core types cost more memory than the bytes they came from (an empty string
// is 2 bytes on the wire, 32 in a std::vector<std::string>), so the message
// limit alone bounds memory only up to that factor. Each limit is far above
// what a working cluster sends.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "core/ids.hpp"

namespace claimsched::core {

// -- whole messages -----------------------------------------------------------

/// One encoded message or record: requests, replies, job and node specs,
/// updates, stored records.
inline constexpr size_t kMaxMessageBytes = size_t{16} << 20;
/// One encoded message carrying a whole node's or job's state: NodeReport,
/// NodeDelta (full snapshots list every allocation with its launch), JobView
/// (one entry per task) and ChangeBatch (one RocksDB write of the replica
/// stream; the writer merges batches up to 16 MiB).
inline constexpr size_t kMaxBulkMessageBytes = size_t{256} << 20;

// -- lists --------------------------------------------------------------------

/// Entries of any list about one node's tasks: the tasks of a claim or a
/// release, and a node's claims, allocations and finished-task events.
inline constexpr size_t kMaxTasksPerNode = 1'000'000;
/// A node's labels; a job's constraints.
inline constexpr size_t kMaxLabels = 1'024;
/// A task's command-line arguments; its environment variables.
inline constexpr size_t kMaxArguments = 65'536;
inline constexpr size_t kMaxEnvironment = 65'536;
/// The partitions whose epochs a node remembers.
inline constexpr size_t kMaxPartitions = 65'536;

// -- jobs (core::validate) ----------------------------------------------------

/// The text of one job together: name, user, class, pool, constraints,
/// command, environment and working directory. Linux's exec takes at most
/// 2 MiB of arguments and environment (ARG_MAX with the default 8 MiB stack),
/// so a job beyond that could not run anyway; and so a job, or a claim that
/// carries its command, stays far below kMaxMessageBytes.
inline constexpr size_t kMaxJobTextBytes = size_t{2} << 20;
// Each string adds at most 16 bytes of framing on the wire.
static_assert(kMaxJobTextBytes + 16 * (kMaxLabels + kMaxArguments + 2 * kMaxEnvironment) + 4096 <=
              kMaxMessageBytes);

// -- values -------------------------------------------------------------------

/// Any duration (a timeout, a run time, a simulated runtime): 100 years. Time
/// points count nanoseconds from an origin no earlier than the Unix epoch, so
/// a time point plus any duration stays far below INT64_MAX (292 years).
inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 36'500);

}  // namespace claimsched::core
