#include "storage/partition_store.hpp"

#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>

#include "storage/crash_point.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Expected;
using core::Status;

namespace {

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

// -- decoding one record, checked against its key -----------------------------

/// A job record, or a copies record (`copies` is then their count, else 1).
Status decode_job(const Database& db, std::string_view key, std::string_view value, StoredJob& out,
                  uint32_t& copies) {
  auto id = keys::parse_job(key);
  auto run = id ? std::nullopt : keys::parse_job_copies(key);
  if (!id && !run) return db.record_error(PartitionStore::kJobs, key, "not a job key");
  copies = 1;
  if (run) {
    if (run->count < 2 || run->count > kMaxJobCopiesPerRecord)
      return db.record_error(PartitionStore::kJobs, key,
                             "a copies record of " + std::to_string(run->count) + " jobs (2 to " +
                                 std::to_string(kMaxJobCopiesPerRecord) + ")");
    if (run->first.value > UINT64_MAX - run->count)
      return db.record_error(PartitionStore::kJobs, key, "copies past the last job id");
    id = run->first;
    copies = run->count;
  }
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(PartitionStore::kJobs, key, st.error());
  if (out.spec.id != *id)
    return db.record_error(PartitionStore::kJobs, key,
                           "holds job " + std::to_string(out.spec.id.value));
  return Status::ok();
}

/// Reads job records in key order and emits each job once, in id order: every
/// copy of a copies record as a job of its own, unless a record under the
/// copy's own id (a later cancel) says otherwise. A copy's own record sorts
/// inside its copies' range, or just before it for the first copy.
class JobResolver {
 public:
  using Emit = std::function<Status(const StoredJob&)>;
  explicit JobResolver(const Emit& emit) : emit_(emit) {}

  Status add(StoredJob&& job, uint32_t copies) {
    uint64_t id = job.spec.id.value;
    if (auto st = emit_copies_before(id); !st) return st;
    if (copies > 1) {
      next_ = emitted_any_ && last_ == id ? id + 1 : id;
      first_ = id;
      end_ = id + copies;
      copies_ = std::move(job);
      return Status::ok();
    }
    if (copies_ && id >= next_ && id < end_) next_ = id + 1;
    return emit(job);
  }

  Status flush() { return emit_copies_before(UINT64_MAX); }

  /// The first copy of the open copies record whose range holds `id` (no
  /// store of ours writes one copies record inside another's range).
  std::optional<uint64_t> copies_holding(uint64_t id) const {
    if (copies_ && id >= first_ && id < end_) return first_;
    return std::nullopt;
  }

 private:
  Status emit(const StoredJob& job) {
    emitted_any_ = true;
    last_ = job.spec.id.value;
    return emit_(job);
  }

  Status emit_copies_before(uint64_t id) {
    if (!copies_) return Status::ok();
    for (uint64_t stop = std::min(id, end_); next_ < stop; ++next_) {
      copies_->spec.id = core::JobId{next_};
      if (auto st = emit(*copies_); !st) return st;
    }
    if (next_ >= end_) copies_.reset();
    return Status::ok();
  }

  const Emit& emit_;
  std::optional<StoredJob> copies_;
  uint64_t first_ = 0;
  uint64_t next_ = 0;
  uint64_t end_ = 0;
  bool emitted_any_ = false;
  uint64_t last_ = 0;
};

/// One record of the tasks family: one task's (key (job, index)), or a
/// claim's (key (job, first index, version), its indices in the value).
struct TaskRecord {
  core::JobId job;
  uint64_t version = 0;
  /// The tasks it covers: the key's index alone for one task's record.
  std::vector<core::TaskIndex> indices;
  StoredTask task;
};

Status decode_task(const Database& db, std::string_view key, std::string_view value, TaskRecord& out) {
  constexpr auto cf = PartitionStore::kTasks;
  auto one = keys::parse_task(key);
  auto group = one ? std::nullopt : keys::parse_task_group(key);
  if (!one && !group) return db.record_error(cf, key, "not a task key");
  pb::StoredTask p;
  if (!p.ParseFromArray(value.data(), static_cast<int>(value.size())))
    return db.record_error(cf, key,
                           "StoredTask: not a valid StoredTask encoding (" + std::to_string(value.size()) + " bytes)");
  if (auto st = messages::from_proto(p, out.task); !st) return db.record_error(cf, key, st.error());
  out.version = p.version();
  out.indices.clear();
  if (one) {
    if (p.indices_size() != 0) return db.record_error(cf, key, "a claim's record under one task's key");
    out.job = one->job;
    out.indices.push_back(one->index);
    return Status::ok();
  }
  out.job = group->job;
  if (p.indices_size() == 0 || p.indices(0) != group->first || out.version != group->version || out.version == 0)
    return db.record_error(cf, key, "a claim's record whose indices or version differ from its key");
  for (int i = 0; i < p.indices_size(); ++i) {
    if (i > 0 && p.indices(i) <= p.indices(i - 1))
      return db.record_error(cf, key, "a claim's record whose indices are not ascending");
    out.indices.push_back(p.indices(i));
  }
  return Status::ok();
}

/// Resolves the records of one job at a time: each task takes the newest
/// record covering it. Records arrive in key order (a job's are contiguous).
class TaskResolver {
 public:
  using Emit = std::function<Status(core::JobId, core::TaskIndex, const StoredTask&)>;
  explicit TaskResolver(const Emit& emit) : emit_(emit) {}

  Status add(TaskRecord&& r) {
    if (!records_.empty() && r.job != job_)
      if (auto st = flush(); !st) return st;
    job_ = r.job;
    highest_ = std::max(highest_, r.version);
    for (auto index : r.indices) entries_.push_back({index, r.version, records_.size()});
    records_.push_back(std::move(r.task));
    return Status::ok();
  }

  Status flush() {
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return a.index != b.index ? a.index < b.index : a.version > b.version;
    });
    Status st = Status::ok();
    for (size_t i = 0; i < entries_.size() && st; ++i)
      if (i == 0 || entries_[i].index != entries_[i - 1].index)
        st = emit_(job_, entries_[i].index, records_[entries_[i].record]);
    entries_.clear();
    records_.clear();
    return st;
  }

  uint64_t highest_version() const { return highest_; }

 private:
  struct Entry {
    core::TaskIndex index;
    uint64_t version;
    size_t record;
  };
  const Emit& emit_;
  core::JobId job_;
  std::vector<Entry> entries_;
  std::vector<StoredTask> records_;
  uint64_t highest_ = 0;
};

Status decode_node(const Database& db, std::string_view key, std::string_view value,
                   StoredNode& out) {
  auto id = keys::parse_node(key);
  if (!id) return db.record_error(PartitionStore::kNodes, key, "not a node key");
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(PartitionStore::kNodes, key, st.error());
  if (out.spec.id != *id)
    return db.record_error(PartitionStore::kNodes, key,
                           "holds node " + std::to_string(out.spec.id.value));
  return Status::ok();
}

/// Meta records: identity, epoch, applied_sequence, removed pools, campaign
/// records (read and checked by the campaign store, kept here as they are);
/// anything else is corrupt.
Status decode_meta(const Database& db, std::string_view key, std::string_view value,
                   PartitionMeta& meta, std::string* canonical) {
  if (key == keys::kIdentity) {
    messages::StoreIdentity id;
    if (auto st = messages::decode(value, id); !st)
      return db.record_error(PartitionStore::kMeta, key, st.error());
    meta.cluster_id = id.cluster_id;
    meta.partition = id.partition;
    if (canonical) *canonical = messages::encode(id);
    return Status::ok();
  }
  if (key.starts_with(keys::kRemovedPoolPrefix) && key.size() > keys::kRemovedPoolPrefix.size()) {
    uint64_t when = 0;
    if (auto st = messages::decode_counter(value, when); !st)
      return db.record_error(PartitionStore::kMeta, key, st.error());
    meta.removed_pools.emplace_back(key.substr(keys::kRemovedPoolPrefix.size()));
    if (canonical) *canonical = messages::encode_counter(when);
    return Status::ok();
  }
  if (key.starts_with(keys::kCampaignPrefix) && key.size() > keys::kCampaignPrefix.size()) {
    if (canonical) *canonical = std::string(value);
    return Status::ok();
  }
  uint64_t* target = key == keys::kEpoch             ? &meta.epoch
                     : key == keys::kAppliedSequence ? &meta.applied_sequence
                     : key == keys::kTaskVersion     ? &meta.task_version
                                                     : nullptr;
  if (target == nullptr) return db.record_error(PartitionStore::kMeta, key, "unknown meta record");
  if (auto st = messages::decode_counter(value, *target); !st)
    return db.record_error(PartitionStore::kMeta, key, st.error());
  if (canonical) *canonical = messages::encode_counter(*target);
  return Status::ok();
}

}  // namespace

// -- layout and open ----------------------------------------------------------

const Database::Layout& PartitionStore::layout() {
  // Order = the Cf enum. Unsorted memtables: a partition store is read only
  // when it is opened (recovery, the campaigns it holds, a replica compared),
  // and its skip-list inserts were ~3% of a durable sim's CPU.
  static const Database::Layout kLayout{
      messages::StoreKind::partition,
      {keys::cf::kJobs, keys::cf::kTasks, keys::cf::kNodes, keys::cf::kMeta},
      /*unsorted_memtable=*/true};
  return kLayout;
}

Expected<std::unique_ptr<PartitionStore>> PartitionStore::open(const std::string& dir,
                                                               const PartitionIdentity& identity,
                                                               const StoreOptions& options) {
  messages::StoreIdentity id;
  id.kind = messages::StoreKind::partition;
  id.cluster_id = identity.cluster_id;
  id.partition = identity.partition;
  auto db = Database::open(dir, layout(), id, options);
  if (!db) return db.error();
  std::unique_ptr<PartitionStore> store{new PartitionStore{std::move(*db)}};
  auto stored = store->db_->get(kMeta, keys::kTaskVersion);
  if (!stored) return stored.error();
  if (stored->has_value()) {
    uint64_t version = 0;
    if (auto st = messages::decode_counter(**stored, version); !st)
      return store->db_->record_error(kMeta, keys::kTaskVersion, st.error());
    store->raise_versions(version);
  }
  return store;
}

void PartitionStore::raise_versions(uint64_t stored) const {
  uint64_t v = versions_.load();
  while (v < stored && !versions_.compare_exchange_weak(v, stored)) {
  }
}

void PartitionStore::seal(Batch& batch) {
  if (!batch.versioned_) return;
  batch.put(kMeta, keys::kTaskVersion, messages::encode_counter(versions_.load()));
}

// -- batches ------------------------------------------------------------------

void PartitionStore::Batch::put(Cf cf, std::string_view key, std::string_view value) {
  // A WriteBatch only fails on a size limit, and ours has none.
  batch_.Put(db_->handle(cf), slice(key), slice(value)).PermitUncheckedError();
}

void PartitionStore::Batch::put_job(const StoredJob& job) {
  messages::encode_to(job, scratch_);
  put(kJobs, keys::job(job.spec.id), scratch_);
}

void PartitionStore::Batch::put_job_copies(const StoredJob& first, uint32_t count) {
  if (count <= 1) {
    if (count == 1) put_job(first);
    return;
  }
  StoredJob part = first;
  while (count > 0) {
    uint32_t n = std::min(count, kMaxJobCopiesPerRecord);
    messages::encode_to(part, scratch_);
    if (n == 1)
      put(kJobs, keys::job(part.spec.id), scratch_);
    else
      put(kJobs, keys::job_copies(part.spec.id, n), scratch_);
    part.spec.id.value += n;
    count -= n;
  }
}

void PartitionStore::Batch::erase_job(core::JobId job) {
  // The job's own record and a copies record starting at it.
  std::string end = job.value == UINT64_MAX ? std::string(keys::kJobCopiesKeySize, '\xFF')
                                            : keys::job(core::JobId{job.value + 1}).str();
  batch_.DeleteRange(db_->handle(kJobs), slice(keys::job(job)), end).PermitUncheckedError();
  batch_.DeleteRange(db_->handle(kTasks), slice(keys::task_begin(job)), keys::task_end(job))
      .PermitUncheckedError();
}

uint64_t PartitionStore::Batch::encode_task(const StoredTask& task, std::span<const core::TaskIndex> group) {
  thread_local pb::StoredTask p;
  p.Clear();
  messages::to_proto(task, p);
  uint64_t version = versions_->fetch_add(1) + 1;
  versioned_ = true;
  p.set_version(version);
  for (auto index : group) p.add_indices(index);
  scratch_.clear();
  p.SerializeToString(&scratch_);
  return version;
}

void PartitionStore::Batch::put_task(core::JobId job, core::TaskIndex index,
                                     const StoredTask& task) {
  encode_task(task, {});
  put(kTasks, keys::task(job, index), scratch_);
}

void PartitionStore::Batch::put_tasks(core::JobId job, std::span<const core::TaskIndex> indices,
                                      const StoredTask& task) {
  if (indices.empty()) return;
  if (indices.size() == 1) return put_task(job, indices.front(), task);
  // A claim's indices come ascending: no copy then (one allocation per claim).
  std::span<const core::TaskIndex> sorted = indices;
  if (std::adjacent_find(indices.begin(), indices.end(), std::greater_equal<>{}) != indices.end()) {
    thread_local std::vector<core::TaskIndex> copy;
    copy.assign(indices.begin(), indices.end());
    std::sort(copy.begin(), copy.end());
    copy.erase(std::unique(copy.begin(), copy.end()), copy.end());
    sorted = copy;
  }
  auto version = encode_task(task, sorted);
  put(kTasks, keys::task_group(job, sorted.front(), version), scratch_);
}

void PartitionStore::Batch::erase_task(core::JobId job, core::TaskIndex index) {
  batch_.Delete(db_->handle(kTasks), slice(keys::task(job, index))).PermitUncheckedError();
}

void PartitionStore::Batch::put_node(const StoredNode& node) {
  messages::encode_to(node, scratch_);
  put(kNodes, keys::node(node.spec.id), scratch_);
}

void PartitionStore::Batch::erase_node(core::NodeId node) {
  batch_.Delete(db_->handle(kNodes), slice(keys::node(node))).PermitUncheckedError();
}

void PartitionStore::Batch::set_epoch(core::Epoch epoch) {
  put(kMeta, keys::kEpoch, messages::encode_counter(epoch));
}

void PartitionStore::Batch::set_applied_sequence(uint64_t sequence) {
  put(kMeta, keys::kAppliedSequence, messages::encode_counter(sequence));
}

void PartitionStore::Batch::remove_pool(std::string_view pool, core::TimePoint when) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when).count();
  put(kMeta, keys::removed_pool(pool), messages::encode_counter(static_cast<uint64_t>(std::max<int64_t>(ms, 0))));
}

void PartitionStore::submit(Batch batch, DurableCallback on_durable) {
  std::lock_guard<std::mutex> guard(submit_mutex_);
  seal(batch);
  db_->submit(std::move(batch.batch_), std::move(on_durable));
}

Status PartitionStore::write(Batch batch) {
  std::promise<Status> done;
  auto result = done.get_future();
  submit(std::move(batch), [&done](Status st) { done.set_value(std::move(st)); });
  return result.get();
}

// -- reads --------------------------------------------------------------------

Expected<PartitionMeta> PartitionStore::read_meta() const {
  PartitionMeta meta;
  auto st = db_->scan(kMeta, {}, {}, [&](std::string_view key, std::string_view value) {
    return decode_meta(*db_, key, value, meta, nullptr);
  });
  if (!st) return st.error();
  return meta;
}

Status PartitionStore::for_each_node(const std::function<Status(const StoredNode&)>& f) const {
  StoredNode node;
  return db_->scan(kNodes, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (auto st = decode_node(*db_, key, value, node); !st) return st;
    return f(node);
  });
}

Status PartitionStore::for_each_job(const std::function<Status(const StoredJob&)>& f) const {
  StoredJob job;
  uint32_t copies = 1;
  JobResolver resolver(f);
  auto st = db_->scan(kJobs, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (auto s2 = decode_job(*db_, key, value, job, copies); !s2) return s2;
    if (auto holder = copies > 1 ? resolver.copies_holding(job.spec.id.value) : std::nullopt)
      return db_->record_error(kJobs, key, "overlaps the copies of job " + std::to_string(*holder));
    return resolver.add(std::move(job), copies);
  });
  if (!st) return st;
  return resolver.flush();
}

Status PartitionStore::for_each_task(
    const std::function<Status(core::JobId, core::TaskIndex, const StoredTask&)>& f) const {
  TaskRecord record;
  TaskResolver resolver(f);
  auto st = db_->scan(kTasks, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (auto s2 = decode_task(*db_, key, value, record); !s2) return s2;
    return resolver.add(std::move(record));
  });
  if (!st) return st;
  raise_versions(resolver.highest_version());
  return resolver.flush();
}

Status PartitionStore::for_each_task_of(
    core::JobId job, const std::function<Status(core::TaskIndex, const StoredTask&)>& f) const {
  TaskRecord record;
  TaskResolver::Emit emit = [&](core::JobId, core::TaskIndex index, const StoredTask& task) { return f(index, task); };
  TaskResolver resolver(emit);
  std::string end = keys::task_end(job);
  auto st = db_->scan(kTasks, keys::task_begin(job), end, [&](std::string_view key, std::string_view value) -> Status {
    if (auto s2 = decode_task(*db_, key, value, record); !s2) return s2;
    return resolver.add(std::move(record));
  });
  if (!st) return st;
  return resolver.flush();
}

Status PartitionStore::recover(const RecoveryVisitor& v) const {
  crash::point(crash::kRecoverStarted);
  auto meta = read_meta();
  if (!meta) return meta.error();
  // A standby's records came through the replica applier, not this object.
  raise_versions(meta->task_version);
  if (v.meta) {
    if (auto st = v.meta(*meta); !st) return st;
  }
  if (auto st = for_each_node(v.node ? v.node : [](const StoredNode&) { return Status::ok(); });
      !st)
    return st;
  if (auto st = for_each_job(v.job ? v.job : [](const StoredJob&) { return Status::ok(); }); !st)
    return st;
  auto st = for_each_task(v.task ? v.task : [](core::JobId, core::TaskIndex, const StoredTask&) {
    return Status::ok();
  });
  if (st) crash::point(crash::kRecoverFinished);
  return st;
}

Expected<std::optional<StoredJob>> PartitionStore::get_job(core::JobId id) const {
  auto k = keys::job(id);
  auto v = db_->get(kJobs, k);
  if (!v) return v.error();
  StoredJob job;
  uint32_t copies = 1;
  if (v->has_value()) {
    if (auto st = decode_job(*db_, k, **v, job, copies); !st) return st.error();
    return std::optional<StoredJob>{std::move(job)};
  }
  // Not a record of its own: a copy, if a copies record that starts at most
  // kMaxJobCopiesPerRecord - 1 ids before it (or at it: that key follows
  // the id's own) covers it.
  core::JobId lowest{id.value - std::min<uint64_t>(id.value, kMaxJobCopiesPerRecord - 1)};
  std::string upper = id.value == UINT64_MAX ? std::string(keys::kJobCopiesKeySize, '\xFF')
                                             : keys::job(core::JobId{id.value + 1}).str();
  std::optional<StoredJob> out;
  auto st = db_->scan(kJobs, keys::job(lowest), upper, [&](std::string_view key, std::string_view value) -> Status {
    auto run = keys::parse_job_copies(key);
    if (!run || id.value - run->first.value >= run->count) return Status::ok();
    if (auto s2 = decode_job(*db_, key, value, job, copies); !s2) return s2;
    job.spec.id = id;
    out = std::move(job);
    return Status::ok();
  });
  if (!st) return st.error();
  return out;
}

Expected<std::optional<StoredTask>> PartitionStore::get_task(core::JobId job,
                                                             core::TaskIndex index) const {
  // The task may be in a claim's record that starts at a lower index: read the job's.
  std::optional<StoredTask> out;
  auto st = for_each_task_of(job, [&](core::TaskIndex i, const StoredTask& task) {
    if (i == index) out = task;
    return Status::ok();
  });
  if (!st) return st.error();
  return out;
}

Expected<std::optional<StoredNode>> PartitionStore::get_node(core::NodeId id) const {
  auto k = keys::node(id);
  auto v = db_->get(kNodes, k);
  if (!v) return v.error();
  if (!v->has_value()) return std::optional<StoredNode>{};
  StoredNode node;
  if (auto st = decode_node(*db_, k, **v, node); !st) return st.error();
  return std::optional<StoredNode>{std::move(node)};
}

Expected<RecordCounts> PartitionStore::count() const {
  RecordCounts n;
  RecoveryVisitor v;
  v.node = [&](const StoredNode&) {
    ++n.nodes;
    return Status::ok();
  };
  v.job = [&](const StoredJob&) {
    ++n.jobs;
    return Status::ok();
  };
  v.task = [&](core::JobId, core::TaskIndex, const StoredTask&) {
    ++n.tasks;
    return Status::ok();
  };
  if (auto st = recover(v); !st) return st.error();
  return n;
}

Status canonical_partition_record(const Database& db, size_t cf, std::string_view key,
                                  std::string_view value, std::string& canonical) {
  switch (cf) {
    case PartitionStore::kJobs: {
      StoredJob job;
      uint32_t copies = 1;
      if (auto st = decode_job(db, key, value, job, copies); !st) return st;
      canonical = messages::encode(job);
      return Status::ok();
    }
    case PartitionStore::kTasks: {
      TaskRecord record;
      if (auto st = decode_task(db, key, value, record); !st) return st;
      pb::StoredTask p;
      messages::to_proto(record.task, p);
      p.set_version(record.version);
      if (keys::parse_task_group(key))
        for (auto index : record.indices) p.add_indices(index);
      canonical = p.SerializeAsString();
      return Status::ok();
    }
    case PartitionStore::kNodes: {
      StoredNode node;
      if (auto st = decode_node(db, key, value, node); !st) return st;
      canonical = messages::encode(node);
      return Status::ok();
    }
    case PartitionStore::kMeta: {
      PartitionMeta meta;
      return decode_meta(db, key, value, meta, &canonical);
    }
    default:
      return db.record_error(cf, key, "unknown column family");
  }
}

}  // namespace claimsched::storage
