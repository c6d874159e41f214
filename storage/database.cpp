#include "storage/database.hpp"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "storage/crash_point.hpp"
#include "storage/database_writer.hpp"
#include "storage/keys.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Expected;
using core::Status;

namespace {

/// The oldest and newest on-disk format this code reads (StoreIdentity.format_version).
constexpr uint32_t kFormatVersion = 1;

/// rocksdb::WriteBatch's header: 8-byte sequence, 4-byte little-endian count.
constexpr size_t kBatchHeader = 12;

std::string_view sv(const rocksdb::Slice& s) { return {s.data(), s.size()}; }
rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

/// RocksDB's info log, sent to a sink instead of a LOG file on the data disk
/// (see StoreOptions::log).
class SinkLogger : public rocksdb::Logger {
 public:
  SinkLogger(std::string path, RocksLogSink sink, RocksLogLevel level)
      : rocksdb::Logger(static_cast<rocksdb::InfoLogLevel>(level)),
        path_(std::move(path)),
        sink_(std::move(sink)) {}

  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    // Header lines (version, options dump at every open) count as info.
    auto effective = level >= rocksdb::InfoLogLevel::HEADER_LEVEL ? rocksdb::InfoLogLevel::INFO_LEVEL
                                                                 : level;
    if (effective < GetInfoLogLevel()) return;
    char small[512];
    va_list copy;
    va_copy(copy, ap);
    int n = std::vsnprintf(small, sizeof small, format, copy);
    va_end(copy);
    if (n < 0) return;
    std::string line;
    if (static_cast<size_t>(n) < sizeof small) {
      line.assign(small, static_cast<size_t>(n));
    } else {
      line.resize(static_cast<size_t>(n) + 1);
      std::vsnprintf(line.data(), line.size(), format, ap);
      line.resize(static_cast<size_t>(n));
    }
    auto lvl = static_cast<RocksLogLevel>(std::min<int>(level, rocksdb::InfoLogLevel::HEADER_LEVEL));
    if (sink_) {
      sink_(lvl, path_, line);
    } else {
      std::fprintf(stderr, "rocksdb %s: %.*s\n", path_.c_str(), static_cast<int>(line.size()),
                   line.data());
    }
  }

 private:
  std::string path_;
  RocksLogSink sink_;
};


messages::StoreIdentity versioned(const messages::StoreIdentity& identity) {
  messages::StoreIdentity id = identity;
  id.format_version = kFormatVersion;
  return id;
}

/// Removes `dir` and everything under it (a store keeps its write-ahead
/// log archive in a subdirectory).
rocksdb::Status remove_tree(rocksdb::Env* env, const std::string& dir) {
  std::vector<std::string> children;
  rocksdb::Status s = env->GetChildren(dir, &children);
  if (!s.ok()) return s;
  for (const auto& c : children) {
    if (c == "." || c == "..") continue;
    const std::string child = dir + "/" + c;
    bool is_dir = false;
    if (s = env->IsDirectory(child, &is_dir); !s.ok()) return s;
    if (s = is_dir ? remove_tree(env, child) : env->DeleteFile(child); !s.ok()) return s;
  }
  return env->DeleteDir(dir);
}

rocksdb::Status sync_dir(rocksdb::Env* env, const std::string& dir) {
  std::unique_ptr<rocksdb::Directory> d;
  rocksdb::Status s = env->NewDirectory(dir, &d);
  return s.ok() ? d->Fsync() : s;
}

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Makes a complete new database at `path`, which holds none: every column
/// family and the synced identity record under `path`.creating, then renamed
/// into place (an empty directory at `path` is replaced) and the parent
/// synced. A leftover `path`.creating is an earlier attempt killed midway and
/// is removed first. The crash points mark each step.
Status create_whole(const std::string& path, const std::vector<std::string>& column_families,
                    const messages::StoreIdentity& identity, rocksdb::Options ro,
                    const rocksdb::ColumnFamilyOptions& cfo) {
  const std::string tmp = path + ".creating";
  rocksdb::Env* env = ro.env;
  if (env->FileExists(tmp).ok())
    if (rocksdb::Status s = remove_tree(env, tmp); !s.ok())
      return from_rocksdb(s, "removing the half-made database", tmp);
  // Create the directory first: RocksDB would log an error for the missing
  // directory at every creation, and this names a file in the way clearly.
  if (rocksdb::Status s = env->CreateDirIfMissing(tmp); !s.ok())
    return from_rocksdb(s, "creating the database directory", tmp);
  ro.create_if_missing = true;
  ro.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : column_families) descs.emplace_back(n, cfo);
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  rocksdb::DB* raw = nullptr;
  if (rocksdb::Status s = rocksdb::DB::Open(ro, tmp, descs, &hs, &raw); !s.ok())
    return from_rocksdb(s, "creating a database in", tmp);
  std::unique_ptr<rocksdb::DB> db{raw};
  auto close = [&] {
    for (auto* h : hs) db->DestroyColumnFamilyHandle(h);
    return db->Close();
  };
  crash::point(crash::kCreateColumnFamilies);
  size_t meta = static_cast<size_t>(
      std::find(column_families.begin(), column_families.end(), std::string{keys::cf::kMeta}) -
      column_families.begin());
  rocksdb::Status s = db->Put(rocksdb::WriteOptions{}, hs[meta], slice(keys::kIdentity),
                              slice(messages::encode(versioned(identity))));
  if (s.ok()) {
    crash::point(crash::kCreateIdentityUnsynced);
    s = db->SyncWAL();
  }
  rocksdb::Status closed = close();
  if (!s.ok()) return from_rocksdb(s, "writing the identity of", tmp);
  if (!closed.ok()) return from_rocksdb(closed, "closing the new database", tmp);
  if (s = sync_dir(env, tmp); !s.ok()) return from_rocksdb(s, "syncing the new database", tmp);
  crash::point(crash::kCreateBeforeRename);
  if (s = env->RenameFile(tmp, path); !s.ok())
    return from_rocksdb(s, "moving the new database " + tmp + " into place (is it a non-empty directory?):", path);
  crash::point(crash::kCreateRenamed);
  if (s = sync_dir(env, parent_of(path)); !s.ok())
    return from_rocksdb(s, "syncing the directory of", path);
  return Status::ok();
}

}  // namespace

bool batch_header(std::string_view rep, uint64_t& sequence, uint32_t& count) {
  if (rep.size() < kBatchHeader) return false;
  sequence = 0;
  count = 0;
  for (int i = 7; i >= 0; --i) sequence = (sequence << 8) | static_cast<unsigned char>(rep[i]);
  for (int i = 3; i >= 0; --i) count = (count << 8) | static_cast<unsigned char>(rep[8 + i]);
  return true;
}

rocksdb::WriteBatch concatenate_batches(std::span<const std::string_view> reps) {
  size_t bytes = kBatchHeader;
  for (auto r : reps) bytes += r.size() > kBatchHeader ? r.size() - kBatchHeader : 0;
  std::string rep;
  rep.reserve(bytes);
  rep.append(kBatchHeader, '\0');
  uint32_t count = 0;
  for (auto r : reps) {
    uint64_t seq = 0;
    uint32_t n = 0;
    if (!batch_header(r, seq, n)) continue;
    count += n;
    rep.append(r.substr(kBatchHeader));
  }
  for (int i = 0; i < 4; ++i) rep[8 + i] = static_cast<char>((count >> (8 * i)) & 0xFF);
  return rocksdb::WriteBatch{std::move(rep)};
}

Error from_rocksdb(const rocksdb::Status& s, std::string_view action, std::string_view path) {
  std::string msg{action};
  msg += ' ';
  msg += path;
  msg += ": ";
  msg += s.ToString();
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kNoSpace) msg += " (the disk is full)";
  return Error{s.IsCorruption() ? Errc::corrupt : Errc::io_error, std::move(msg)};
}

// -- options ------------------------------------------------------------------

std::string_view to_string(SyncMode m) {
  switch (m) {
    case SyncMode::always:
      return "always";
    case SyncMode::batch:
      return "batch";
    case SyncMode::none:
      return "none";
  }
  return "unknown";
}

Expected<SyncMode> parse_sync_mode(std::string_view text) {
  if (text == "always") return SyncMode::always;
  if (text == "batch") return SyncMode::batch;
  if (text == "none") return SyncMode::none;
  return core::make_error(Errc::parse_error, "sync mode '" + std::string{text} +
                                                 "': expected always, batch or none");
}

Status StoreOptions::validate() const {
  if (max_burst_bytes == 0)
    return core::make_error(Errc::invalid_argument, "storage max_burst_bytes: must be > 0");
  if (write_buffer_size < (size_t{64} << 10))
    return core::make_error(Errc::invalid_argument,
                            "storage write_buffer_size: must be at least 64 KiB");
  if (sync_interval && (sync_interval->count() < 0 || *sync_interval > std::chrono::seconds(1)))
    return core::make_error(Errc::invalid_argument, "storage sync_interval: must be in [0, 1s]");
  return Status::ok();
}

// -- open ---------------------------------------------------------------------

Expected<std::unique_ptr<Database>> Database::open(const std::string& path, const Layout& layout,
                                                   const messages::StoreIdentity& identity,
                                                   const StoreOptions& options) {
  if (auto st = options.validate(); !st) return st.error();
  if (path.empty()) return core::make_error(Errc::invalid_argument, "storage directory: empty path");
  const std::string what{messages::to_string(layout.kind)};

  rocksdb::Options ro;
  ro.env = options.env != nullptr ? options.env : rocksdb::Env::Default();
  ro.create_if_missing = false;
  ro.create_missing_column_families = false;
  ro.WAL_ttl_seconds = options.wal_ttl_seconds;
  ro.WAL_size_limit_MB = options.wal_size_limit_mb;
  ro.max_background_jobs = 2;
  ro.bytes_per_sync = 1 << 20;
  ro.info_log = std::make_shared<SinkLogger>(path, options.log, options.log_level);
  rocksdb::ColumnFamilyOptions cfo;
  cfo.write_buffer_size = options.write_buffer_size;
  if (layout.unsorted_memtable) {
    cfo.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
    // The vector memtable takes one writer at a time (ours: one thread).
    ro.allow_concurrent_memtable_write = false;
  }

  std::vector<std::string> wanted{rocksdb::kDefaultColumnFamilyName};
  for (auto name : layout.column_families) wanted.emplace_back(name);

  // A new database is made whole under a temporary name and renamed into
  // place, so a crash at any instant leaves it absent or complete.
  rocksdb::Status exists = ro.env->FileExists(path + "/CURRENT");
  if (!exists.ok() && !exists.IsNotFound()) return from_rocksdb(exists, "looking for a database in", path);
  if (exists.IsNotFound()) {
    if (options.read_only)
      return core::make_error(Errc::io_error, "no database in " + path + " (opened read-only)");
    if (!options.create_if_missing)
      return core::make_error(Errc::io_error, "no database in " + path);
    if (auto st = create_whole(path, wanted, identity, ro, cfo); !st) return st.error();
  }
  {
    std::vector<std::string> found;
    rocksdb::Status s = rocksdb::DB::ListColumnFamilies(ro, path, &found);
    if (!s.ok()) return from_rocksdb(s, "listing the column families of", path);
    if (std::set<std::string>(found.begin(), found.end()) !=
        std::set<std::string>(wanted.begin(), wanted.end())) {
      // Someone else's database: say whose if it has our identity record.
      std::string owner;
      if (std::find(found.begin(), found.end(), std::string{keys::cf::kMeta}) != found.end()) {
        std::vector<rocksdb::ColumnFamilyDescriptor> descs;
        for (const auto& n : found) descs.emplace_back(n, cfo);
        std::vector<rocksdb::ColumnFamilyHandle*> hs;
        rocksdb::DB* raw = nullptr;
        if (rocksdb::DB::OpenForReadOnly(ro, path, descs, &hs, &raw).ok()) {
          std::unique_ptr<rocksdb::DB> other{raw};
          size_t meta = static_cast<size_t>(
              std::find(found.begin(), found.end(), std::string{keys::cf::kMeta}) - found.begin());
          std::string value;
          messages::StoreIdentity id;
          if (other->Get(rocksdb::ReadOptions{}, hs[meta], slice(keys::kIdentity), &value).ok() &&
              messages::decode(value, id))
            owner = std::string{messages::to_string(id.kind)} + " of " + id.describe();
          for (auto* h : hs) other->DestroyColumnFamilyHandle(h);
        }
      }
      if (owner.empty()) owner = "a database with column families [" + join(found) + "]";
      return core::make_error(Errc::invalid_argument, path + " holds " + owner + ", not the " +
                                                          what + " of " + identity.describe());
    }
  }

  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : wanted) descs.emplace_back(n, cfo);
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = options.read_only
                          ? rocksdb::DB::OpenForReadOnly(ro, path, descs, &hs, &raw)
                          : rocksdb::DB::Open(ro, path, descs, &hs, &raw);
  if (!s.ok()) return from_rocksdb(s, "opening", path);

  std::unique_ptr<Database> db{new Database};
  db->path_ = path;
  db->options_ = options;
  db->db_.reset(raw);
  db->default_handle_ = hs[0];
  db->names_.assign(wanted.begin() + 1, wanted.end());
  db->handles_.assign(hs.begin() + 1, hs.end());
  db->meta_ = *db->cf_index(keys::cf::kMeta);
  if (auto st = db->check_identity(identity); !st) return st.error();
  if (!options.read_only) db->writer_ = std::make_unique<Writer>(raw, path, options, *db->commit_metrics_);
  return db;
}

Status Database::check_identity(const messages::StoreIdentity& expected) {
  auto current = get(meta_, keys::kIdentity);
  if (!current) return current.error();
  const std::string what{messages::to_string(expected.kind)};
  if (!current->has_value()) {
    if (options_.read_only || db_->GetLatestSequenceNumber() != 0)
      return record_error(meta_, keys::kIdentity,
                          "missing: " + path_ + " holds data but no identity record");
    // Our column families and nothing in them: made by a build that wrote the
    // identity after creating the database, killed in between. Finish it.
    messages::StoreIdentity id = versioned(expected);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s =
        db_->Put(wo, handles_[meta_], slice(keys::kIdentity), slice(messages::encode(id)));
    if (!s.ok()) return from_rocksdb(s, "writing the identity of", path_);
    identity_ = id;
    return Status::ok();
  }
  messages::StoreIdentity found;
  if (auto st = messages::decode(**current, found); !st)
    return record_error(meta_, keys::kIdentity, st.error());
  if (found.format_version > kFormatVersion)
    return core::make_error(Errc::wrong_state,
                            path_ + " has format version " + std::to_string(found.format_version) +
                                "; this build reads up to " + std::to_string(kFormatVersion));
  bool same = found.kind == expected.kind && found.cluster_id == expected.cluster_id &&
              (expected.kind == messages::StoreKind::partition ? found.partition == expected.partition
                                                                : found.host == expected.host);
  if (!same)
    return core::make_error(Errc::invalid_argument,
                            path_ + " belongs to the " + std::string{messages::to_string(found.kind)} +
                                " of " + found.describe() + ", not the " + what + " of " +
                                expected.describe());
  identity_ = found;
  return Status::ok();
}

Database::~Database() {
  close_writer();
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    if (default_handle_ != nullptr) db_->DestroyColumnFamilyHandle(default_handle_);
    db_->Close().PermitUncheckedError();
  }
}

// -- writes -------------------------------------------------------------------

void Database::submit(rocksdb::WriteBatch batch, DurableCallback on_durable) {
  if (!writer_) {
    on_durable(core::make_error(Errc::wrong_state,
                                "store " + path_ + " was opened read-only: it takes no writes"));
    return;
  }
  writer_->submit(batch, std::move(on_durable));
}

Status Database::write(rocksdb::WriteBatch batch) {
  std::promise<Status> done;
  auto result = done.get_future();
  submit(std::move(batch), [&done](Status st) { done.set_value(std::move(st)); });
  return result.get();
}

void Database::close_writer() {
  if (writer_) writer_->stop();
}

WriterStats Database::writer_stats() const { return writer_ ? writer_->stats() : WriterStats{}; }

std::optional<Error> Database::write_failure() const {
  return writer_ ? writer_->failure() : std::nullopt;
}

// -- reads --------------------------------------------------------------------

struct Database::Cursor::Impl {
  const Database* db = nullptr;
  size_t cf = 0;
  std::string upper;
  rocksdb::Slice upper_slice;
  std::unique_ptr<rocksdb::Iterator> it;
  std::string last;
  bool any = false;
};

Database::Cursor::Cursor(Cursor&&) noexcept = default;
Database::Cursor& Database::Cursor::operator=(Cursor&&) noexcept = default;
Database::Cursor::~Cursor() = default;

bool Database::Cursor::valid() const { return impl_->it->Valid(); }
std::string_view Database::Cursor::key() const { return sv(impl_->it->key()); }
std::string_view Database::Cursor::value() const { return sv(impl_->it->value()); }

void Database::Cursor::next() {
  impl_->last.assign(impl_->it->key().data(), impl_->it->key().size());
  impl_->any = true;
  impl_->it->Next();
}

Status Database::Cursor::status() const {
  const rocksdb::Status& s = impl_->it->status();
  if (s.ok()) return Status::ok();
  // Name where reading stopped: the damage lies after the last good key.
  const std::string& name = impl_->db->names_[impl_->cf];
  std::string where =
      "column family '" + name + "' (after " +
      (impl_->any ? "key " + keys::describe(name, impl_->last) : std::string{"its start"}) + ") of";
  return from_rocksdb(s, "reading " + where, impl_->db->path_);
}

Database::Cursor Database::cursor(size_t cf, std::string_view lower, std::string_view upper) const {
  Cursor c;
  c.impl_ = std::make_unique<Cursor::Impl>();
  auto& impl = *c.impl_;
  impl.db = this;
  impl.cf = cf;
  impl.upper.assign(upper);
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = size_t{2} << 20;
  if (!impl.upper.empty()) {
    impl.upper_slice = slice(impl.upper);
    ro.iterate_upper_bound = &impl.upper_slice;
  }
  impl.it.reset(db_->NewIterator(ro, handles_[cf]));
  impl.it->Seek(slice(lower));
  return c;
}

Status Database::scan(size_t cf, std::string_view lower, std::string_view upper,
                      const RecordFn& f) const {
  Cursor c = cursor(cf, lower, upper);
  for (; c.valid(); c.next()) {
    if (auto st = f(c.key(), c.value()); !st) return st;
  }
  return c.status();
}

Expected<std::optional<std::string>> Database::get(size_t cf, std::string_view key) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions{}, handles_[cf], slice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>{};
  if (!s.ok())
    return from_rocksdb(s, "reading " + keys::describe(names_[cf], key) + " of column family '" +
                               names_[cf] + "' in",
                        path_);
  return std::optional<std::string>{std::move(value)};
}

Error Database::record_error(size_t cf, std::string_view key, const Error& cause) const {
  return record_error(cf, key, cause.message);
}

Error Database::record_error(size_t cf, std::string_view key, std::string_view cause) const {
  std::string msg = "corrupt record in " + path_ + " (column family '" + names_[cf] + "', key " +
                    keys::describe(names_[cf], key) + "): ";
  msg += cause;
  return Error{Errc::corrupt, std::move(msg)};
}

// -- introspection ------------------------------------------------------------

uint64_t Database::latest_sequence() const { return db_->GetLatestSequenceNumber(); }

std::optional<size_t> Database::cf_index(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return i;
  return std::nullopt;
}

std::optional<size_t> Database::cf_index_by_id(uint32_t id) const {
  for (size_t i = 0; i < handles_.size(); ++i)
    if (handles_[i]->GetID() == id) return i;
  return std::nullopt;
}

Status Database::flush() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> all = handles_;
  rocksdb::Status s = db_->Flush(fo, all);
  if (!s.ok()) return from_rocksdb(s, "flushing", path_);
  return Status::ok();
}

Expected<uint64_t> Database::checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!s.ok()) return from_rocksdb(s, "preparing a checkpoint of", path_);
  std::unique_ptr<rocksdb::Checkpoint> cp{raw};
  uint64_t sequence = 0;
  s = cp->CreateCheckpoint(dir, 0, &sequence);
  if (!s.ok()) return from_rocksdb(s, "creating checkpoint " + dir + " of", path_);
  return sequence;
}

}  // namespace claimsched::storage
