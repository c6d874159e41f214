#include "storage/partition_store.hpp"

#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>

#include "storage/crash_point.hpp"

namespace claimsched::storage {

using core::Errc;
using core::Error;
using core::Expected;
using core::Status;

namespace {

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

// -- decoding one record, checked against its key -----------------------------

Status decode_job(const Database& db, std::string_view key, std::string_view value,
                  StoredJob& out) {
  auto id = keys::parse_job(key);
  if (!id) return db.record_error(PartitionStore::kJobs, key, "not a job key");
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(PartitionStore::kJobs, key, st.error());
  if (out.spec.id != *id)
    return db.record_error(PartitionStore::kJobs, key,
                           "holds job " + std::to_string(out.spec.id.value));
  return Status::ok();
}

Status decode_task(const Database& db, std::string_view key, std::string_view value,
                   keys::TaskKey& k, StoredTask& out) {
  auto parsed = keys::parse_task(key);
  if (!parsed) return db.record_error(PartitionStore::kTasks, key, "not a task key");
  k = *parsed;
  if (auto st = messages::decode(value, out); !st)
    return db.record_error(PartitionStore::kTasks, key, st.error());
  return Status::ok();
}

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
  uint64_t* target = key == keys::kEpoch              ? &meta.epoch
                     : key == keys::kAppliedSequence ? &meta.applied_sequence
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
  // Order = the Cf enum.
  static const Database::Layout kLayout{
      messages::StoreKind::partition,
      {keys::cf::kJobs, keys::cf::kTasks, keys::cf::kNodes, keys::cf::kMeta}};
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
  return std::unique_ptr<PartitionStore>{new PartitionStore{std::move(*db)}};
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

void PartitionStore::Batch::erase_job(core::JobId job) {
  batch_.Delete(db_->handle(kJobs), slice(keys::job(job))).PermitUncheckedError();
  batch_.DeleteRange(db_->handle(kTasks), slice(keys::task_begin(job)), keys::task_end(job))
      .PermitUncheckedError();
}

void PartitionStore::Batch::put_task(core::JobId job, core::TaskIndex index,
                                     const StoredTask& task) {
  messages::encode_to(task, scratch_);
  put(kTasks, keys::task(job, index), scratch_);
}

void PartitionStore::Batch::put_tasks(core::JobId job, std::span<const core::TaskIndex> indices,
                                      const StoredTask& task) {
  messages::encode_to(task, scratch_);
  for (auto index : indices) put(kTasks, keys::task(job, index), scratch_);
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
  db_->submit(std::move(batch.batch_), std::move(on_durable));
}

Status PartitionStore::write(Batch batch) { return db_->write(std::move(batch.batch_)); }

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
  return db_->scan(kJobs, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (auto st = decode_job(*db_, key, value, job); !st) return st;
    return f(job);
  });
}

Status PartitionStore::for_each_task(
    const std::function<Status(core::JobId, core::TaskIndex, const StoredTask&)>& f) const {
  keys::TaskKey k;
  StoredTask task;
  return db_->scan(kTasks, {}, {}, [&](std::string_view key, std::string_view value) -> Status {
    if (auto st = decode_task(*db_, key, value, k, task); !st) return st;
    return f(k.job, k.index, task);
  });
}

Status PartitionStore::for_each_task_of(
    core::JobId job, const std::function<Status(core::TaskIndex, const StoredTask&)>& f) const {
  keys::TaskKey k;
  StoredTask task;
  std::string end = keys::task_end(job);
  return db_->scan(kTasks, keys::task_begin(job), end,
                   [&](std::string_view key, std::string_view value) -> Status {
                     if (auto st = decode_task(*db_, key, value, k, task); !st) return st;
                     return f(k.index, task);
                   });
}

Status PartitionStore::recover(const RecoveryVisitor& v) const {
  crash::point(crash::kRecoverStarted);
  auto meta = read_meta();
  if (!meta) return meta.error();
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
  if (!v->has_value()) return std::optional<StoredJob>{};
  StoredJob job;
  if (auto st = decode_job(*db_, k, **v, job); !st) return st.error();
  return std::optional<StoredJob>{std::move(job)};
}

Expected<std::optional<StoredTask>> PartitionStore::get_task(core::JobId job,
                                                             core::TaskIndex index) const {
  auto k = keys::task(job, index);
  auto v = db_->get(kTasks, k);
  if (!v) return v.error();
  if (!v->has_value()) return std::optional<StoredTask>{};
  keys::TaskKey parsed;
  StoredTask task;
  if (auto st = decode_task(*db_, k, **v, parsed, task); !st) return st.error();
  return std::optional<StoredTask>{task};
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
      if (auto st = decode_job(db, key, value, job); !st) return st;
      canonical = messages::encode(job);
      return Status::ok();
    }
    case PartitionStore::kTasks: {
      keys::TaskKey k;
      StoredTask task;
      if (auto st = decode_task(db, key, value, k, task); !st) return st;
      canonical = messages::encode(task);
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
