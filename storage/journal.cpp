#include "storage/journal.hpp"

#include <map>

namespace claimsched::storage {

namespace {

/// Jobs of one spec under consecutive ids (a `submit --repeat` message's
/// copies) go in as one record: a run ends at the first job whose id or
/// spec breaks it. Comparing against the run's spec, renumbered, costs no
/// allocation per job.
void append_accepted_jobs(const std::vector<core::JobSpec>& jobs, core::TimePoint wall_now,
                          PartitionStore::Batch& batch) {
  size_t i = 0;
  while (i < jobs.size()) {
    StoredJob run{jobs[i], JobStatus::active, wall_now, core::TimePoint{0}};
    uint32_t count = 1;
    for (; i + count < jobs.size() && count < kMaxJobCopiesPerRecord; ++count) {
      const auto& next = jobs[i + count];
      if (next.id.value != jobs[i].id.value + count) break;
      run.spec.id = next.id;
      bool same = run.spec == next;
      run.spec.id = jobs[i].id;
      if (!same) break;
    }
    batch.put_job_copies(run, count);
    i += count;
  }
}

}  // namespace

void append_journal(const core::Journal& journal, core::Epoch epoch, core::TimePoint wall_now,
                    PartitionStore::Batch& batch) {
  for (const auto& node : journal.nodes_registered)
    batch.put_node(StoredNode{node, core::NodeState::up, wall_now});
  append_accepted_jobs(journal.jobs_accepted, wall_now, batch);
  for (const auto& job : journal.jobs_cancelled)
    batch.put_job(StoredJob{job, JobStatus::cancelled, wall_now, wall_now});
  for (const auto& pool : journal.pools_removed) batch.remove_pool(pool, wall_now);
  for (const auto& change : journal.task_changes) {
    StoredTask t;
    t.state = change.state;
    t.node = change.node;
    t.claim_id = change.claim_id;
    t.epoch = epoch;
    t.exit_code = change.exit_code;
    t.end = change.end;
    t.updated_at = wall_now;
    batch.put_tasks(change.job, change.tasks, t);
  }
}

core::Expected<RecoveredPartition> recover_partition(PartitionStore& store,
                                                     core::SchedulerConfig config,
                                                     core::TimePoint now) {
  auto started = std::chrono::steady_clock::now();
  RecoveredPartition out;
  struct Job {
    core::JobSpec spec;
    std::vector<core::RestoredTask> tasks;
    bool cancelled = false;
  };
  std::map<core::JobId, Job> jobs;
  core::Epoch stored_epoch = 0;
  std::vector<std::string> removed_pools;
  std::vector<core::NodeSpec> nodes;
  RecoveryVisitor visitor;
  visitor.node = [&](const StoredNode& node) {
    nodes.push_back(node.spec);
    return core::Status::ok();
  };
  visitor.meta = [&](const PartitionMeta& meta) {
    stored_epoch = meta.epoch;
    removed_pools = meta.removed_pools;
    return core::Status::ok();
  };
  visitor.job = [&](const StoredJob& job) {
    auto& j = jobs[job.spec.id];
    j.spec = job.spec;
    j.cancelled = job.status == JobStatus::cancelled;
    return core::Status::ok();
  };
  visitor.task = [&](core::JobId job, core::TaskIndex index, const StoredTask& task) {
    ++out.task_records;
    auto it = jobs.find(job);
    // Tasks of a job whose record a crash lost with the rest of its batch
    // have nothing to rebuild.
    if (it == jobs.end()) return core::Status::ok();
    it->second.tasks.push_back(core::RestoredTask{index, task.state, task.node, task.exit_code, task.end});
    return core::Status::ok();
  };
  if (auto st = store.recover(visitor); !st) return st.error();

  config.epoch = std::max(config.epoch, stored_epoch + 1);
  config.journal = true;
  if (auto st = config.validate(); !st) return st.error();
  auto fence = store.batch();
  fence.set_epoch(config.epoch);
  if (auto st = store.write(std::move(fence)); !st) return st.error();

  out.epoch = config.epoch;
  out.scheduler = std::make_unique<core::Scheduler>(std::move(config));
  // Before the nodes: a node of a removed pool stays out.
  for (const auto& pool : removed_pools) out.scheduler->restore_removed_pool(pool);
  out.removed_pools = std::move(removed_pools);
  // The partition's nodes are known again, as down until each reports: what
  // ran where stays on record, and the pools are not empty to admission.
  for (const auto& spec : nodes) {
    core::NodeSnapshot down;
    down.node = spec.id;
    down.state = core::NodeState::down;
    down.capacity = spec.capacity;
    down.free = spec.capacity;
    // A pool this partition no longer owns: the node re-registers elsewhere.
    (void)out.scheduler->add_node(spec, down);
  }
  (void)out.scheduler->take_journal();  // they are on record already
  for (auto& [id, entry] : jobs) {
    if (auto st = out.scheduler->restore_job(std::move(entry.spec), std::move(entry.tasks), now,
                                             entry.cancelled);
        !st)
      return core::make_error(st.error().code, "recovering job " + std::to_string(id.value) +
                                                   " from " + store.path() + ": " +
                                                   st.error().message);
    ++out.jobs;
  }
  out.unverified_tasks = out.scheduler->unverified_tasks();
  out.duration = std::chrono::steady_clock::now() - started;
  return out;
}

}  // namespace claimsched::storage
