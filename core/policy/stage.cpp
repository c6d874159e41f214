#include "core/policy/stage.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "core/policy/engine.hpp"
#include "core/random.hpp"
#include "core/policy/util.hpp"
#include "core/policy/policy.hpp"

namespace claimsched::core::policy {

Status PolicyConfig::validate() const {
  if (interval.count() <= 0) return make_error(Errc::invalid_argument, "policy interval must be positive");
  Snapshot probe;
  probe.settings = settings;
  probe.pools = pools;
  probe.classes = classes;
  probe.users = users;
  return policy::validate(probe);
}

PolicyStage::PolicyStage(PolicyConfig config) : config_(std::move(config)) {}

int64_t queue_rank(const JobRow& row) {
  // DESIGN.md's order within a priority: by deficit below fair share. Jobs
  // above their share go last, so room freed by preemption (or by tasks
  // ending) reaches the jobs it was freed for, not the ones it came from.
  if (row.usage_share > row.fair_share_share) return -2;
  if (row.fair_share_share <= 0) return 0;
  // The deficit as a fraction of the fair share, in 2^-32 units, above a
  // level per starvation status.
  constexpr int64_t kLevel = int64_t{1} << 33;
  Share deficit = row.fair_share_share - row.usage_share;
  auto fraction = mul_div_floor(deficit, int64_t{1} << 32, row.fair_share_share);
  int64_t level = row.starvation == StarvationStatus::aggressively_starving ? 3
                  : row.starvation == StarvationStatus::starving           ? 2
                                                                           : 1;
  return level * kLevel + fraction;
}

namespace {

/// The pool a class of the scheduler is bound to in the policy's tree.
std::string class_pool(const ClassConfig& c, const PolicyConfig& config, const std::vector<PoolSpec>& pools) {
  if (!c.pool.empty()) return c.pool;
  for (const auto& k : config.classes)
    if (k.name == c.name && !k.pool.empty()) return k.pool;
  for (const auto& p : pools)
    if (p.parent.empty()) return p.name;
  return pools.empty() ? std::string() : pools.front().name;
}

/// "node-<id>", a node's name when none was observed: written in place
/// (short enough to need no allocation; this runs per node per cycle).
void set_default_name(std::string& name, NodeId id) {
  char buf[32] = "node-";
  auto end = std::to_chars(buf + 5, buf + sizeof buf, id.value).ptr;
  name.assign(buf, end);
}

bool below(const std::vector<PoolSpec>& pools, const std::string& pool, const std::string& ancestor) {
  std::string at = pool;
  for (size_t steps = 0; steps <= pools.size(); ++steps) {
    if (at == ancestor) return true;
    auto it = std::find_if(pools.begin(), pools.end(), [&](const PoolSpec& p) { return p.name == at; });
    if (it == pools.end() || it->parent.empty()) return false;
    at = it->parent;
  }
  return false;
}

}  // namespace

void PolicyStage::observe(JobId job, bool initialized, std::optional<PredictionInfo> prediction) {
  observed_[job] = {initialized, std::move(prediction)};
  observed_since_cycle_ = true;
}

namespace {

/// A 64-bit hash of a sequence of values: each value is mixed with its
/// position on its own and the results summed, so the values hash in
/// parallel rather than in one chain (this runs at every policy tick).
class InputHash {
 public:
  void add(uint64_t v) { sum_ += mix64(v ^ (position_++ * 0x9e3779b97f4a7c15ULL)); }
  /// A vector as one value: each dimension times its own odd constant,
  /// summed (multiplying by an odd number is one-to-one modulo 2^64, so a
  /// change in any one dimension changes the value), then mixed once. Not
  /// a mix per dimension: this runs for every node twice at every tick.
  void add(const Resources& r) {
    static constexpr uint64_t kOdd[] = {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL,
                                        0xd6e8feb86659fd93ULL, 0xa0761d6478bd642fULL, 0xe7037ed1a0b428dbULL,
                                        0x8ebc6af09c88c6e3ULL, 0x589965cc75374cc3ULL};
    static_assert(sizeof kOdd / sizeof kOdd[0] >= kMaxDimensions);
    // Dimensions at zero (most of them) add nothing: they are not multiplied.
    uint64_t v = 0;
    for (size_t d = 0; d < kMaxDimensions; ++d)
      if (int64_t x = r[static_cast<DimensionId>(d)]; x != 0) v += static_cast<uint64_t>(x) * kOdd[d];
    add(v);
  }
  void add(const std::string& s) { add(std::hash<std::string>{}(s)); }
  uint64_t value() const { return mix64(sum_ ^ position_); }

 private:
  uint64_t sum_ = 0;
  uint64_t position_ = 0;
};

}  // namespace

uint64_t PolicyStage::input_fingerprint(const Scheduler& scheduler) const {
  // Field by field what snapshot_of reads, in its order; the configuration
  // is fixed for the stage's life and the clock is left out on purpose.
  const ClusterView& view = scheduler.view();
  InputHash h;
  scheduler.for_each_releasing([&](TaskRef task, NodeId node, const Resources& r) {
    h.add(task.job.value);
    h.add(task.index);
    h.add(node.value);
    h.add(r);
  });
  for (const auto& [id, c] : scheduler.window().claims()) {
    h.add(c.request.job.value);
    h.add(c.request.node.value);
    for (auto t : c.request.tasks) h.add(t);
  }
  for (const auto& [job, hold] : scheduler.reservations().all()) {
    h.add(job.value);
    for (const auto& p : hold.parts) {
      h.add(p.node);
      h.add(p.tasks);
    }
  }
  for (NodeIndex n = 0; n < view.node_count(); ++n) {
    const NodeView& v = view.node(n);
    h.add(v.id.value);
    // Pool, state and how many labels in one value (each well below 2^24).
    h.add(uint64_t{v.pool} << 32 | uint64_t{static_cast<uint8_t>(v.state)} << 24 | v.labels.size());
    h.add(v.capacity);
    h.add(v.available());
    for (const auto& label : v.labels) h.add(label);
  }
  const SchedulerConfig& sc = scheduler.config();
  scheduler.for_each_unfinished_job([&](const JobRecord& j) {
    if (j.cancelled) return;
    // Small fields two or more to a value (this runs for every job at every
    // policy tick), one-to-one for the values that occur (times below 2^62 ns).
    h.add(j.spec.id.value);
    h.add(uint64_t{j.pending()} << 32 | j.held());
    h.add(uint64_t{j.queue.state == QueueState::gated} << 1 | uint64_t{j.initialized});
    if (sc.classes[j.class_index].prediction) {
      h.add(j.observed.starts);
      h.add(j.observed.successes);
      h.add(static_cast<uint64_t>(j.observed.start_time.count()));
      h.add(static_cast<uint64_t>(j.observed.run_time.count()));
    }
    if (const JobNotes* n = scheduler.notes(j.spec.id))
      h.add(n->fragmented && n->waits == WaitCause::no_room && j.queue.state == QueueState::waiting_for_capacity);
    // Only running tasks count: the walk ends after the last of them (a
    // waiting job, most of the jobs here, has none and is not walked).
    uint32_t running = j.count_in(TaskState::running);
    for (TaskIndex t = 0; running > 0 && t < j.tasks.size(); ++t) {
      const TaskRecord& r = j.tasks[t];
      if (r.state != TaskState::running) continue;
      --running;
      if (!r.node) continue;
      h.add(uint64_t{t} << 32 | *r.node);
      h.add(static_cast<uint64_t>(r.started.count()) << 1 | uint64_t{r.initialized});
    }
  });
  return h.value();
}

PolicyStage::Check PolicyStage::check(const Scheduler& scheduler, TimePoint now) const {
  Check c;
  c.input = input_fingerprint(scheduler);
  c.due = !ran_ || acted_ || observed_since_cycle_ || c.input != input_seen_ || next_timer() <= now;
  return c;
}

TimePoint PolicyStage::next_timer() const {
  const auto& pre = config_.settings.preemption;
  TimePoint next = kNever;
  auto consider = [&](TimePoint at) {
    if (at > last_cycle_) next = std::min(next, at);
  };
  // Every timeout of the settings and the pools' overrides (a repeat changes
  // no minimum: no set is made, this runs at every policy tick).
  auto after_timeouts = [&](TimePoint since) {
    consider(since + pre.fair_share_starvation_timeout);
    consider(since + pre.fair_share_aggressive_starvation_timeout);
    for (const auto& pool : config_.pools) {
      if (auto t = pool.overrides.fair_share_starvation_timeout) consider(since + *t);
      if (auto t = pool.overrides.fair_share_aggressive_starvation_timeout) consider(since + *t);
    }
  };
  for (const auto& [_, since] : state_.job_below_fair_share_since) after_timeouts(since);
  for (const auto& [_, since] : state_.pool_below_fair_share_since) after_timeouts(since);
  for (const auto& [_, since] : state_.node_last_preemptive_scheduling)
    if (since < input_since_) consider(since + pre.preemptive_scheduling_backoff);
  return next;
}

Snapshot PolicyStage::snapshot_of(const Scheduler& scheduler, TimePoint now) const {
  Snapshot snap;
  std::vector<Resources> freeing;
  fill_snapshot(scheduler, now, snap, freeing);
  return snap;
}

void PolicyStage::fill_snapshot(const Scheduler& scheduler, TimePoint now, Snapshot& snap,
                                std::vector<Resources>& freeing) const {
  // Every field of `snap` is written (it may hold the last cycle's): its
  // vectors and strings are reused rather than made again each cycle.
  const SchedulerConfig& sc = scheduler.config();
  const ClusterView& view = scheduler.view();
  snap.now = now;
  snap.settings = config_.settings;
  // One class model: the scheduler's classes, allotments and quantum.
  snap.settings.default_class = sc.default_class;
  snap.settings.quantum = sc.quantum;
  snap.settings.global_allotment = sc.global_allotment;
  snap.pools = config_.pools;
  for (size_t p = 0; p < view.pool_count(); ++p) {
    const std::string& name = view.pool(static_cast<uint32_t>(p)).name;
    if (std::none_of(snap.pools.begin(), snap.pools.end(), [&](const PoolSpec& s) { return s.name == name; })) {
      PoolSpec spec;
      spec.name = name;
      if (auto parent = view.pool(static_cast<uint32_t>(p)).parent) spec.parent = view.pool(*parent).name;
      snap.pools.push_back(std::move(spec));
    }
  }
  snap.classes.resize(sc.classes.size());
  for (size_t c = 0; c < sc.classes.size(); ++c) {
    snap.classes[c] = sc.classes[c];
    snap.classes[c].pool = class_pool(sc.classes[c], config_, snap.pools);
  }
  snap.users.resize(sc.user_allotments.size());
  for (size_t u = 0; u < sc.user_allotments.size(); ++u) {
    snap.users[u].name = sc.user_allotments[u].first;
    snap.users[u].allotment = sc.user_allotments[u].second;
  }

  // The policy sees the partition as it will be once what is under way
  // lands: tasks being taken away already gone (their room free), claims in
  // flight and held room already running. Otherwise every cycle until the
  // nodes answer would see the preemptor still starving and preempt again.
  // Mostly nothing is being taken away: then no room per node is zeroed or added.
  bool any_freeing = false;
  std::set<TaskRef> leaving;
  scheduler.for_each_releasing([&](TaskRef task, NodeId node, const Resources& r) {
    if (!any_freeing) freeing.assign(view.node_count(), Resources{});
    any_freeing = true;
    if (auto n = view.find_node(node)) freeing[*n] += r;
    leaving.insert(task);
  });
  std::map<JobId, std::vector<AllocationInfo>> landing;
  for (const auto& [id, c] : scheduler.window().claims())
    for (auto t : c.request.tasks) landing[c.request.job].push_back(AllocationInfo{t, c.request.node, now, false, false, true});
  std::map<JobId, uint32_t> held;
  for (const auto& [job, h] : scheduler.reservations().all()) {
    const JobRecord* j = scheduler.job(job);
    if (!j) continue;
    // Held tasks have no index yet: they are named past the job's count.
    TaskIndex next = j->spec.count;
    for (const auto& p : h.parts)
      for (uint32_t k = 0; k < p.tasks; ++k)
        landing[job].push_back(AllocationInfo{next++, view.node(p.node).id, now, false, false, true});
    held[job] = h.tasks();
  }
  snap.nodes.resize(view.node_count());
  // About as many jobs as the last cycle saw: the vector grows once, if at all.
  if (last_) snap.jobs.reserve(last_->jobs.size() + 16);
  for (NodeIndex n = 0; n < view.node_count(); ++n) {
    const NodeView& v = view.node(n);
    NodeInfo& info = snap.nodes[n];
    // A name observed is never forgotten: a node that had none last cycle
    // and has none now keeps the default name written then.
    bool was_this_node = info.id == v.id && !info.name.empty();
    info.id = v.id;
    auto named = names_.empty() ? names_.end() : names_.find(v.id);
    if (named != names_.end())
      info.name = named->second;
    else if (!was_this_node)
      set_default_name(info.name, v.id);
    info.pool = view.pool(v.pool).name;
    info.capacity = v.capacity;
    Resources room = v.available();
    if (any_freeing) room += freeing[n];
    info.free = room.min(v.capacity);
    info.state = v.state;
    info.labels = v.labels;
  }
  size_t jobs = 0;
  bool below_known = false;
  std::string_view below_pool;
  size_t below_class = 0;
  bool below_answer = false;
  scheduler.for_each_unfinished_job([&](const JobRecord& j) {
    if (j.cancelled) return;
    if (jobs == snap.jobs.size()) snap.jobs.emplace_back();
    JobInfo& info = snap.jobs[jobs++];
    info.id = j.spec.id;
    info.name = j.spec.name;
    info.user = j.spec.user;
    info.job_class = j.spec.job_class;
    const ClassConfig& cls = sc.classes[j.class_index];
    // Where its tasks may run, when that is below its class's pool (asked
    // again only when the pool or the class differs from the last job's:
    // jobs come in runs of one).
    if (!below_known || j.spec.pool != below_pool || j.class_index != below_class) {
      below_known = true;
      below_pool = j.spec.pool;
      below_class = j.class_index;
      below_answer = below(snap.pools, j.spec.pool, snap.classes[j.class_index].pool);
    }
    if (below_answer)
      info.pool = j.spec.pool;
    else
      info.pool.clear();
    info.per_task = j.spec.per_task;
    uint32_t h = held.count(j.spec.id) ? held[j.spec.id] : 0;
    info.pending = j.pending() - std::min(h, j.pending());
    // In its class's lock queue it cannot start yet: room made for it would idle.
    if (j.queue.state == QueueState::gated) info.pending = 0;
    info.preemptible = j.spec.preemptible;
    info.submit_time = j.spec.submit_time;
    info.constraints = j.spec.constraints;
    // DUCC's inputs: what the tasks showed (a task that started passed
    // initialization; tasks are the work items a prediction counts).
    info.initialized = j.initialized;
    info.prediction.reset();
    if (cls.prediction && j.observed.successes > 0) {
      PredictionInfo p;
      p.remaining_work = j.pending() + j.held();
      p.time_per_item = j.observed.run_time / j.observed.successes;
      if (j.observed.starts > 0) p.init_time = j.observed.start_time / j.observed.starts;
      info.prediction = p;
    }
    if (auto it = observed_.find(j.spec.id); it != observed_.end()) {
      info.initialized = it->second.first;
      info.prediction = it->second.second;
    }
    // Only a job waiting for capacity can be fragmented: the others' notes are not looked up.
    info.fragmented = false;
    if (j.queue.state == QueueState::waiting_for_capacity)
      if (const JobNotes* n = scheduler.notes(j.spec.id))
        info.fragmented = n->fragmented && n->waits == WaitCause::no_room;
    auto lands = landing.find(j.spec.id);
    info.allocations.clear();
    info.allocations.reserve(j.count_in(TaskState::running) + (lands != landing.end() ? lands->second.size() : 0));
    // As in input_fingerprint, the walk ends after the last running task.
    uint32_t running = j.count_in(TaskState::running);
    for (TaskIndex t = 0; running > 0 && t < j.tasks.size(); ++t) {
      const TaskRecord& r = j.tasks[t];
      if (r.state != TaskState::running) continue;
      --running;
      if (!r.node || leaving.count(TaskRef{j.spec.id, t})) continue;
      AllocationInfo a;
      a.index = t;
      a.node = view.node(*r.node).id;
      a.start = std::min(r.started, now);
      a.initialized = r.initialized;
      a.interruptible = interruptible_.count(TaskRef{j.spec.id, t}) > 0;
      info.allocations.push_back(a);
    }
    if (lands != landing.end())
      info.allocations.insert(info.allocations.end(), lands->second.begin(), lands->second.end());
  });
  snap.jobs.resize(jobs);
}

void PolicyStage::apply_marks(Scheduler& scheduler, const CycleResult& result, CycleSummary& summary) const {
  for (const JobRow& row : result.jobs) {
    int64_t rank = queue_rank(row);
    if (rank > 0) ++summary.boosted;
    // Whole tasks up to its fair share (DUCC), at least one when it has any.
    uint32_t fair_tasks = row.fair_tasks > 0 ? std::max<uint32_t>(1, static_cast<uint32_t>(row.fair_tasks)) : 0;
    scheduler.set_fair_share(row.id, rank, fair_tasks);
    if (row.cap_reason != CapReason::none && row.cap < row.running + row.pending)
      scheduler.set_cap(row.id, row.cap, std::string(to_string(row.cap_reason)) + " (" + std::to_string(row.cap) + " tasks)");
    else
      scheduler.set_cap(row.id, std::nullopt, "");
  }
}

Expected<CycleResult> PolicyStage::rank(Scheduler& scheduler, TimePoint now) {
  auto result = run_cycle(snapshot_of(scheduler, now), scheduler.view(), state_);
  if (!result) return result.error();
  CycleSummary ignored;
  apply_marks(scheduler, *result, ignored);
  return result;
}

Expected<CycleSummary> PolicyStage::cycle(Scheduler& scheduler, TimePoint now, Outbox& out, const Check* checked) {
  uint64_t input = checked ? checked->input : input_fingerprint(scheduler);
  fill_snapshot(scheduler, now, snap_, freeing_);
  // Into the result before the last one (spare_), in the last cycle's buffers.
  if (auto st = run_cycle(snap_, scheduler.view(), state_, spare_, buffers_, false, reasons_); !st) return st.error();
  CycleResult* result = &spare_;
  state_ = result->next_state;
  if (!ran_ || input != input_seen_ || observed_since_cycle_) input_since_ = now;
  ran_ = true;
  input_seen_ = input;
  last_cycle_ = now;
  observed_since_cycle_ = false;
  CycleSummary summary;
  std::set<TaskRef> taken;
  for (const Removal& r : result->plan.removals) {
    TaskState kind = r.kind == RemovalKind::preemption ? TaskState::preempted : TaskState::evicted;
    if (scheduler.preempt(r.task, kind, describe(r), now, out, r.preemptor)) {
      ++(kind == TaskState::preempted ? summary.preemptions : summary.evictions);
      taken.insert(r.task);
    } else {
      ++summary.skipped;
    }
  }
  // Where the room goes: one hold per job (a non-preemptible request's parts
  // are claimed together).
  const ClusterView& view = scheduler.view();
  std::map<JobId, Hold> holds;
  for (const Placement& p : result->plan.placements) {
    const JobRecord* j = scheduler.job(p.job);
    auto node = view.find_node(p.node);
    if (!j || !node) continue;
    const ClassConfig& cls = scheduler.config().classes[j->class_index];
    Hold& h = holds[p.job];
    h.job = p.job;
    h.whole = cls.policy == ClassPolicy::fixed_share || j->spec.gang;
    // The job's own size; a reservation claims its whole machine.
    h.per_task = cls.policy == ClassPolicy::reserve ? view.node(*node).capacity : j->spec.per_task;
    Hold::Part part{*node, p.count, {}};
    for (const auto& v : p.waits_for)
      if (taken.count(v)) part.waiting_for.push_back(v);
    h.parts.push_back(std::move(part));
    h.why = std::string(to_string(p.stage)) + " placement of the policy";
  }
  for (auto& [job, h] : holds) {
    // A gang is placed whole by the queue; a part of it cannot be held.
    const JobRecord* j = scheduler.job(job);
    if (j->spec.gang && h.tasks() < j->pending()) {
      ++summary.skipped;
      continue;
    }
    if (scheduler.hold(std::move(h)))
      ++summary.held;
    else
      ++summary.skipped;
  }
  apply_marks(scheduler, *result, summary);
  acted_ = summary.preemptions + summary.evictions + summary.held > 0;
  if (last_)
    std::swap(*last_, spare_);
  else
    last_ = std::move(spare_);
  return summary;
}

}  // namespace claimsched::core::policy
