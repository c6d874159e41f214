#pragma once

// Replication (DESIGN.md, "Replica stream"): a standby follows a primary's
// change log - RocksDB's own sequence numbers and write batches, read through
// GetUpdatesSince - and applies it to its own database, which keeps the
// replica's sequence numbers identical to the primary's. A follower whose
// changes are no longer in the primary's write-ahead log bootstraps from a
// checkpoint (Database::checkpoint) and follows from there.
//
//   primary side                         replica side
//   ChangeLog log{primary.database(), replica_applied + 1};
//   auto r = log.read();                 // ship r->batches (pb::ChangeBatch)
//   if (r->need_bootstrap) ...checkpoint ReplicaApplier applier{replica.database()};
//                                        applier.apply(batches);
//   lag = r->primary_latest - applier.applied_sequence()  (sequence_lag)
//
// Neither class is thread-safe; each belongs to one thread (or actor). Neither
// knows CAF: ChangeBatch has a Protobuf encoding in messages/record_codec.hpp.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "messages/record_codec.hpp"
#include "storage/database.hpp"

namespace rocksdb {
class TransactionLogIterator;
}

namespace claimsched::storage {

using messages::ChangeBatch;

/// What one ChangeLog::read returns.
struct ChangeRead {
  /// Whole write batches, consecutive, the first starting at the sequence
  /// asked for. Empty when the follower is up to date (or need_bootstrap).
  std::vector<ChangeBatch> batches;
  /// The primary's latest sequence number at the time of the read.
  uint64_t primary_latest = 0;
  /// The follower cannot continue from the log: the changes it needs are no
  /// longer in the primary's write-ahead log (RocksDB's GetUpdatesSince
  /// silently starts later; this is that case detected), or the follower is
  /// ahead of the primary. It must bootstrap from a checkpoint. An outcome,
  /// not an error: `why` says which, with the sequence numbers.
  bool need_bootstrap = false;
  std::string why;
};

/// A cursor over a primary's change log, from a sequence number on. It keeps
/// RocksDB's log iterator open between reads and tails the live log file, so
/// a follower that keeps up costs no rescans.
class ChangeLog {
 public:
  /// Reads `primary`'s changes from sequence `next` (a follower's applied
  /// sequence + 1). `primary` must outlive the ChangeLog.
  ChangeLog(const Database& primary, uint64_t next);
  ~ChangeLog();
  ChangeLog(ChangeLog&&) noexcept;
  ChangeLog& operator=(ChangeLog&&) noexcept;

  /// Up to `max_batches` whole batches (and about `max_bytes`, at least one
  /// batch) from next_sequence(), advancing past them. Errors are real read
  /// failures (io_error, corrupt), naming the directory.
  core::Expected<ChangeRead> read(size_t max_batches = 1024, size_t max_bytes = size_t{4} << 20);

  const Database& primary() const { return *db_; }
  /// The next sequence number the cursor will return.
  uint64_t next_sequence() const { return next_; }
  /// Moves the cursor (after the follower bootstrapped, or reconnected).
  void seek(uint64_t next);

  /// How often RocksDB's log iterator was (re)opened: each open scans the
  /// log file from its start up to next_sequence(), so a follower that keeps
  /// up should see few (one per log file switch), not one per read.
  uint64_t iterator_opens() const { return opens_; }

 private:
  core::Status open_iterator();
  const Database* db_;
  uint64_t next_;
  uint64_t opens_ = 0;
  std::unique_ptr<rocksdb::TransactionLogIterator> it_;
};

/// Applies a primary's change batches to a replica database, in order.
class ReplicaApplier {
 public:
  /// `replica` is a store opened on a checkpoint of the primary (or on this
  /// replica's own directory after a restart). The applier stops the store's
  /// writer: nothing else may write to a replica, or its sequence numbers
  /// would no longer match the primary's (a promoted replica is reopened).
  explicit ReplicaApplier(Database& replica);

  /// Validates `batches` and applies them as one RocksDB write, fsynced
  /// unless the replica's sync mode is none. Batches wholly at or below
  /// applied_sequence() are ignored (a resend). Nothing is applied, and the
  /// Error says why, if a batch: leaves a gap after applied_sequence()
  /// (wrong_state), straddles it, does not parse, has a count or sequence
  /// that does not match its data, or names an unknown column family
  /// (corrupt).
  core::Status apply(std::span<const ChangeBatch> batches);

  /// The last sequence number applied: the replica database's latest.
  uint64_t applied_sequence() const;

 private:
  Database* db_;
};

/// Sequence numbers the follower is behind (0 when caught up or ahead).
inline uint64_t sequence_lag(uint64_t primary_latest, uint64_t applied) {
  return primary_latest > applied ? primary_latest - applied : 0;
}

/// One record where two stores differ.
struct Difference {
  std::string column_family;
  /// keys::describe of the key.
  std::string key;
  /// "only in <path>", or "values differ".
  std::string what;
};

/// Compares two stores of the same kind record by record, by decoded value
/// (logical equality: encodings may differ byte-wise, values may not). Up to
/// `max_differences` are returned; empty means equal. A record that does not
/// decode is an Error (corrupt, naming it), not a difference.
core::Expected<std::vector<Difference>> compare_stores(const Database& a, const Database& b,
                                                       size_t max_differences = 16);

}  // namespace claimsched::storage
