#include "storage/change_log.hpp"

#include <rocksdb/db.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include "storage/keys.hpp"
#include "storage/node_store.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Expected;
using core::Status;

namespace {

std::string seq_range(uint64_t first, uint64_t count) {
  return std::to_string(first) + ".." + std::to_string(first + count - 1);
}

}  // namespace

// -- ChangeLog ----------------------------------------------------------------

ChangeLog::ChangeLog(const Database& primary, uint64_t next) : db_(&primary), next_(next) {
  if (next_ == 0) next_ = 1;  // sequence numbers start at 1
}
ChangeLog::~ChangeLog() = default;
ChangeLog::ChangeLog(ChangeLog&&) noexcept = default;
ChangeLog& ChangeLog::operator=(ChangeLog&&) noexcept = default;

void ChangeLog::seek(uint64_t next) {
  next_ = next == 0 ? 1 : next;
  it_.reset();
}

Status ChangeLog::open_iterator() {
  it_.reset();
  ++opens_;
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  rocksdb::Status s = db_->rocksdb()->GetUpdatesSince(
      next_, &it, rocksdb::TransactionLogIterator::ReadOptions{true});
  if (!s.ok()) return from_rocksdb(s, "reading the change log of", db_->path());
  it_ = std::move(it);
  return Status::ok();
}

Expected<ChangeRead> ChangeLog::read(size_t max_batches, size_t max_bytes) {
  ChangeRead out;
  out.primary_latest = db_->latest_sequence();
  if (next_ > out.primary_latest + 1) {
    it_.reset();
    out.need_bootstrap = true;
    out.why = "the follower needs sequence " + std::to_string(next_) + " but " + db_->path() +
              " ends at " + std::to_string(out.primary_latest) +
              ": the follower is ahead of the primary (the primary lost changes, or they are "
              "different databases)";
    return out;
  }
  if (next_ == out.primary_latest + 1) return out;  // up to date

  // Reuse the open iterator: past its end it tails the live log file. When it
  // cannot (the log rolled over to a new file, or it hit an error), open a
  // fresh one at next_.
  bool fresh = false;
  if (it_ && !it_->Valid()) {
    if (it_->status().ok()) it_->Next();
    if (!it_->Valid()) it_.reset();
  }
  if (!it_) {
    if (auto st = open_iterator(); !st) return st.error();
    fresh = true;
  }

  size_t bytes = 0;
  while (it_->Valid() && out.batches.size() < max_batches &&
         (out.batches.empty() || bytes < max_bytes)) {
    rocksdb::BatchResult r = it_->GetBatch();
    const uint64_t seq = r.sequence;
    const uint32_t count = r.writeBatchPtr->Count();
    if (count == 0) {  // an empty batch holds no sequence number
      it_->Next();
      continue;
    }
    const uint64_t last = seq + count - 1;
    if (last < next_) {  // wholly before what the follower needs
      it_->Next();
      continue;
    }
    if (seq != next_) {
      it_.reset();
      if (!out.batches.empty()) break;  // hand over what is contiguous; the next read reports it
      out.need_bootstrap = true;
      if (seq > next_)
        out.why = "the change log of " + db_->path() + " continues at sequence " +
                  std::to_string(seq) + " but the follower needs " + std::to_string(next_) +
                  ": sequences " + seq_range(next_, seq - next_) +
                  " are no longer in the write-ahead log";
      else
        out.why = "the follower's position " + std::to_string(next_ - 1) +
                  " lies inside the primary's batch " + seq_range(seq, count);
      return out;
    }
    ChangeBatch b;
    b.sequence = seq;
    b.count = count;
    b.data = r.writeBatchPtr->Data();
    bytes += b.data.size();
    next_ = last + 1;
    out.batches.push_back(std::move(b));
    it_->Next();
  }

  if (it_ && !it_->Valid() && !it_->status().ok()) {
    rocksdb::Status s = it_->status();
    it_.reset();
    if (!out.batches.empty() || s.IsTryAgain()) return out;  // reopened at the next read
    if (!fresh) return read(max_batches, max_bytes);         // retry once from a fresh iterator
    if (s.IsCorruption() || s.IsNotFound() || s.IsPathNotFound()) {
      // A gap, or a log file that vanished under the reader.
      out.need_bootstrap = true;
      out.why = "the change log of " + db_->path() + " cannot be read from sequence " +
                std::to_string(next_) + ": " + s.ToString();
      return out;
    }
    return from_rocksdb(s, "reading the change log of", db_->path());
  }
  if (out.batches.empty() && fresh && next_ <= out.primary_latest && it_ && !it_->Valid()) {
    // A fresh iterator with nothing to return although changes exist: the
    // log files that held them are gone.
    it_.reset();
    out.need_bootstrap = true;
    out.why = "the change log of " + db_->path() + " no longer holds sequence " +
              std::to_string(next_) + " (latest " + std::to_string(out.primary_latest) + ")";
  }
  return out;
}

// -- ReplicaApplier -----------------------------------------------------------

namespace {

/// Checks a shipped batch before it reaches the replica's log: every change
/// must name a column family the replica has, and the count must match.
class Validator : public rocksdb::WriteBatch::Handler {
 public:
  explicit Validator(const Database& db) : db_(db) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice&, const rocksdb::Slice&) override {
    return check(cf);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice&) override { return check(cf); }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice&) override { return check(cf); }
  rocksdb::Status DeleteRangeCF(uint32_t cf, const rocksdb::Slice&, const rocksdb::Slice&) override {
    return check(cf);
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice&, const rocksdb::Slice&) override {
    return check(cf);
  }

  uint32_t changes = 0;

 private:
  rocksdb::Status check(uint32_t cf) {
    ++changes;
    // Id 0 is "default", which our stores never write.
    if (cf == 0 || !db_.cf_index_by_id(cf))
      return rocksdb::Status::InvalidArgument("unknown column family id " + std::to_string(cf));
    return rocksdb::Status::OK();
  }
  const Database& db_;
};

}  // namespace

ReplicaApplier::ReplicaApplier(Database& replica) : db_(&replica) { db_->close_writer(); }

uint64_t ReplicaApplier::applied_sequence() const { return db_->latest_sequence(); }

Status ReplicaApplier::apply(std::span<const ChangeBatch> batches) {
  uint64_t expected = applied_sequence() + 1;
  std::vector<std::string_view> reps;
  reps.reserve(batches.size());
  for (const auto& b : batches) {
    auto where = [&] {
      return "replica " + db_->path() + ": shipped batch " + seq_range(b.sequence, b.count);
    };
    if (b.count == 0 || b.sequence == 0)
      return core::make_error(Errc::corrupt, where() + ": empty or unnumbered");
    if (b.last_sequence() < expected) continue;  // already applied (a resend)
    if (b.sequence > expected)
      return core::make_error(Errc::wrong_state,
                              where() + " leaves a gap: the replica is at " +
                                  std::to_string(expected - 1) + " and needs " +
                                  std::to_string(expected) + " next");
    if (b.sequence < expected)
      return core::make_error(Errc::wrong_state, where() + " straddles the replica's position " +
                                                     std::to_string(expected - 1));
    uint64_t header_seq = 0;
    uint32_t header_count = 0;
    if (!batch_header(b.data, header_seq, header_count))
      return core::make_error(Errc::corrupt, where() + ": data shorter than a batch header");
    if (header_count != b.count || header_seq != b.sequence)
      return core::make_error(Errc::corrupt,
                              where() + ": its data holds batch " +
                                  (header_count == 0 ? std::to_string(header_seq) + " (empty)"
                                                     : seq_range(header_seq, header_count)));
    rocksdb::WriteBatch wb{b.data};
    Validator v{*db_};
    rocksdb::Status s = wb.Iterate(&v);
    if (!s.ok()) return core::make_error(Errc::corrupt, where() + ": " + s.ToString());
    if (v.changes != b.count)
      return core::make_error(Errc::corrupt, where() + ": holds " + std::to_string(v.changes) +
                                                 " changes, not " + std::to_string(b.count));
    reps.emplace_back(b.data);
    expected = b.last_sequence() + 1;
  }
  if (reps.empty()) return Status::ok();

  rocksdb::WriteBatch merged = concatenate_batches(reps);
  rocksdb::WriteOptions wo;
  wo.sync = db_->sync_mode() != SyncMode::none;
  rocksdb::Status s = db_->rocksdb()->Write(wo, &merged);
  if (!s.ok()) return from_rocksdb(s, "applying replicated changes to", db_->path());
  if (applied_sequence() != expected - 1)
    return core::make_error(Errc::wrong_state,
                            "replica " + db_->path() + " is at sequence " +
                                std::to_string(applied_sequence()) + " after applying up to " +
                                std::to_string(expected - 1) +
                                ": something else writes to it; re-bootstrap it");
  return Status::ok();
}

// -- compare_stores -----------------------------------------------------------

Expected<std::vector<Difference>> compare_stores(const Database& a, const Database& b,
                                                 size_t max_differences) {
  if (a.identity().kind != b.identity().kind || a.column_family_count() != b.column_family_count())
    return core::make_error(Errc::invalid_argument, a.path() + " and " + b.path() +
                                                        " are not stores of the same kind");
  auto canonical = a.identity().kind == messages::StoreKind::partition ? canonical_partition_record
                                                                       : canonical_node_record;
  std::vector<Difference> out;
  std::string ca;
  std::string cb;
  for (size_t cf = 0; cf < a.column_family_count() && out.size() < max_differences; ++cf) {
    const std::string& name = a.cf_name(cf);
    auto ia = a.cursor(cf, {}, {});
    auto ib = b.cursor(cf, {}, {});
    auto only = [&](const Database& db, std::string_view key) {
      out.push_back(Difference{name, keys::describe(name, key), "only in " + db.path()});
    };
    while ((ia.valid() || ib.valid()) && out.size() < max_differences) {
      int order = !ia.valid() ? 1 : !ib.valid() ? -1 : ia.key().compare(ib.key());
      if (order < 0) {
        if (auto st = canonical(a, cf, ia.key(), ia.value(), ca); !st) return st.error();
        only(a, ia.key());
        ia.next();
      } else if (order > 0) {
        if (auto st = canonical(b, cf, ib.key(), ib.value(), cb); !st) return st.error();
        only(b, ib.key());
        ib.next();
      } else {
        if (auto st = canonical(a, cf, ia.key(), ia.value(), ca); !st) return st.error();
        if (auto st = canonical(b, cf, ib.key(), ib.value(), cb); !st) return st.error();
        if (ca != cb)
          out.push_back(Difference{name, keys::describe(name, ia.key()), "values differ"});
        ia.next();
        ib.next();
      }
    }
    if (auto st = ia.status(); !st) return st.error();
    if (auto st = ib.status(); !st) return st.error();
  }
  return out;
}

}  // namespace claimsched::storage
