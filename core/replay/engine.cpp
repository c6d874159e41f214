#include "core/replay/engine.hpp"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/resources.hpp"

namespace claimsched::core::replay {

namespace {

constexpr size_t kMaxRefusalsKept = 20;
/// Wake-ups and policy cycles allowed once nothing runs and nothing is left
/// to arrive or end (see Engine::run).
constexpr uint64_t kIdleStepsBeforeGivingUp = 1000;
/// A task killed at its requested time: as an agent reports SIGKILL.
constexpr int kKillSignal = 9;

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
int64_t whole_seconds(TimePoint t) { return std::chrono::duration_cast<std::chrono::seconds>(t + std::chrono::milliseconds(500)).count(); }

/// A task's end on its node, due at `at`: the run it belongs to is `run`
/// (a task preempted and placed again has a later run, and the earlier
/// run's end must not end it).
struct TaskEndEvent {
  TimePoint at;
  uint64_t order;  // ties: in the order they were made
  TaskRef task;
  uint32_t node;   // ledger index
  uint32_t run;
  bool killed;
  bool operator>(const TaskEndEvent& o) const { return at != o.at ? at > o.at : order > o.order; }
};

/// A task placed and running: since when, where, which run.
struct Run {
  TimePoint started;
  uint32_t node;
  uint32_t number;
  double cpus;
};

/// A claim a ledger accepted: what its confirm starts.
struct AcceptedClaim {
  JobId job;
  std::vector<TaskIndex> tasks;
  double cpus;
};

struct JobProgress {
  size_t outcome;  // index in ReplayResult::outcomes
  Duration run;
  Duration limit;
  /// Per task, how many times it was started (a run's number; empty until
  /// the first start): kept with the job rather than in a map of every task.
  std::vector<uint32_t> runs;
};

class Engine {
 public:
  Engine(const ReplaySetup& setup, ReplayResult& result) : setup_(setup), result_(result) {}

  Status build() {
    for (const auto& config : setup_.partitions) {
      partitions_.push_back(Partition{std::make_unique<Scheduler>(config), nullptr, kNever, kNever});
      if (setup_.policy) {
        partitions_.back().policy = std::make_unique<policy::PolicyStage>(*setup_.policy);
        // Nothing explains a replayed job: the pending reasons would be words nobody reads.
        partitions_.back().policy->set_reasons(false);
      }
      for (const auto& pool : config.pools) owner_of_pool_[pool] = partitions_.size() - 1;
    }
    LedgerConfig ledger;
    ledger.recent_finished = 8;
    for (const auto& spec : setup_.nodes) {
      auto it = owner_of_pool_.find(spec.pool);
      if (it == owner_of_pool_.end())
        return make_error(Errc::unknown_name, "node " + spec.name + ": no partition owns pool '" + spec.pool + "'");
      ledgers_.emplace_back(spec.id, spec.capacity, ledger);
      deadline_set_.push_back(kNever);
      node_owner_.push_back(it->second);
      if (auto st = partitions_[it->second].scheduler->add_node(spec, ledgers_.back().snapshot()); !st) return st;
    }
    return Status::ok();
  }

  Status run(const std::vector<ReplayJob>& jobs, const std::function<void(const ReplayProgress&)>& progress) {
    total_ = jobs.size();
    TimePoint start = jobs.empty() ? TimePoint{0} : jobs.front().spec.submit_time;
    origin_ = start;
    for (auto& p : partitions_) p.scheduler->start(start);
    size_t next_job = 0;
    uint64_t steps = 0;
    uint64_t idle_steps = 0;
    for (;;) {
      TimePoint now = kNever;
      if (next_job < jobs.size()) now = jobs[next_job].spec.submit_time;
      if (!ends_.empty()) now = std::min(now, ends_.top().at);
      for (const auto& p : partitions_) now = std::min({now, p.wake, p.policy_due});
      if (!ledger_deadlines_.empty()) now = std::min(now, ledger_deadlines_.begin()->first);
      if (now == kNever) break;
      // Nothing left to arrive or end and nothing running: what still waits
      // can never run (wider than what is up, say). A scheduler's wake-ups
      // and the policy's cycles would go on for ever; a few more are allowed
      // in case a backoff was all that held a job.
      if (next_job == jobs.size() && ends_.empty() && idle()) {
        if (++idle_steps > kIdleStepsBeforeGivingUp) break;
      } else {
        idle_steps = 0;
      }
      now_ = now;
      ++result_.events;

      while (next_job < jobs.size() && jobs[next_job].spec.submit_time <= now) arrive(jobs[next_job++]);
      while (!ends_.empty() && ends_.top().at <= now) {
        TaskEndEvent ev = ends_.top();
        ends_.pop();
        end_task(ev);
      }
      while (!ledger_deadlines_.empty() && ledger_deadlines_.begin()->first <= now) {
        uint32_t n = ledger_deadlines_.begin()->second;
        ledger_deadlines_.erase(ledger_deadlines_.begin());
        deadline_set_[n] = kNever;
        std::vector<NodeEvent> events;
        if (ledgers_[n].advance(now, events)) deliver_delta(n, std::move(events));
        note_deadline(n);
      }
      for (size_t s = 0; s < partitions_.size(); ++s) {
        auto& p = partitions_[s];
        if (p.policy_due <= now) run_policy(s);
        if (p.wake <= now) {
          p.wake = kNever;
          Outbox out;
          p.scheduler->on_tick(now, out);
          dirty_.insert(s);
          drain(s, out);
        }
      }
      for (size_t s : std::exchange(dirty_, {})) flush(s);
      if (!result_.problem.empty()) return Status::ok();
      if (progress && (++steps & 0x3fff) == 0) progress(ReplayProgress{now, ended_, total_});
    }
    result_.end = now_;
    for (auto& p : partitions_) {
      result_.stats.merge(p.scheduler->stats());
      if (auto st = p.scheduler->check_accounting(); !st && result_.problem.empty())
        result_.problem = "partition " + std::to_string(p.scheduler->config().partition.value) +
                          ": " + st.error().message;
    }
    for (const auto& [job, index] : by_job_) {
      JobOutcome& o = result_.outcomes[index.outcome];
      if (!o.end_s) ++result_.unfinished;
    }
    for (size_t n = 0; n < ledgers_.size() && result_.problem.empty(); ++n)
      if (ledgers_[n].free().any_negative())
        result_.problem = "node " + std::to_string(n + 1) + " is over its capacity";
    if (progress) progress(ReplayProgress{now_, ended_, total_});
    return Status::ok();
  }

 private:
  struct Partition {
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<policy::PolicyStage> policy;
    TimePoint wake;
    TimePoint policy_due;
  };

  /// No task runs or is being claimed anywhere.
  bool idle() const {
    for (const auto& p : partitions_)
      if (p.scheduler->running_tasks() > 0 || p.scheduler->claims_in_flight() > 0) return false;
    return true;
  }

  /// The partition a job goes to: its pool's owner, as the gateway routes
  /// it. A pool no partition owns goes to the first partition, whose
  /// admission refuses it with the reason (counted as refused).
  size_t route(const JobSpec& spec) const {
    if (auto it = owner_of_pool_.find(spec.pool); it != owner_of_pool_.end()) return it->second;
    return 0;
  }

  void arrive(const ReplayJob& job) {
    const JobSpec& spec = job.spec;
    size_t s = route(spec);
    Scheduler& sched = *partitions_[s].scheduler;
    if (auto st = sched.submit(spec, now_); !st) {
      // "invalid argument" -> "invalid_argument": a key in the report's JSON.
      std::string reason(to_string(st.error().code));
      std::replace(reason.begin(), reason.end(), ' ', '_');
      ++result_.refused[reason];
      if (result_.refusals.size() < kMaxRefusalsKept)
        result_.refusals.push_back(Refusal{spec.id, reason, st.error().message});
      return;
    }
    JobOutcome o;
    o.number = spec.id.value;
    o.user = spec.user;
    const JobRecord* record = sched.job(spec.id);
    o.job_class = record ? sched.config().classes[record->class_index].name : spec.job_class;
    o.pool = spec.pool;
    o.tasks = spec.count;
    o.cpus_per_task = static_cast<double>(spec.per_task[dim::cpu]) / 1000.0;
    o.submit_s = whole_seconds(spec.submit_time - origin_);
    by_job_[spec.id] = JobProgress{result_.outcomes.size(), job.run, spec.max_run_time, {}};
    result_.outcomes.push_back(std::move(o));
    mark(s);
  }

  /// Something happened to partition s: its pipeline takes a pass (flush).
  void mark(size_t s) { dirty_.insert(s); }

  /// The first policy tick after t (ticks every interval from the start).
  TimePoint next_tick(size_t s, TimePoint t) const {
    Duration interval = partitions_[s].policy->config().interval;
    auto k = (t - origin_) / interval + 1;
    return origin_ + k * interval;
  }

  /// A policy tick of partition s: a cycle when the stage says one could
  /// decide anything (PolicyStage::due, the server's rule too); then the
  /// next tick after the stage's next timer, or sooner when something
  /// happens to the partition (flush).
  void run_policy(size_t s) {
    auto& p = partitions_[s];
    auto& stage = *p.policy;
    if (auto checked = stage.check(*p.scheduler, now_); checked.due) {
      Outbox out;
      auto summary = stage.cycle(*p.scheduler, now_, out, &checked);
      ++result_.policy_cycles;
      if (!summary) {
        result_.problem = "policy cycle failed: " + summary.error().message;
        p.policy_due = kNever;
        return;
      }
      dirty_.insert(s);
      drain(s, out);
    }
    TimePoint timer = stage.next_timer();
    p.policy_due = timer == kNever ? kNever : std::max(next_tick(s, timer - Duration{1}), next_tick(s, now_));
  }

  /// A pass of partition s's pipeline and everything it sends, until it has
  /// nothing more to send; then its wake-up for work that waits for time.
  void flush(size_t s) {
    auto& p = partitions_[s];
    for (int round = 0; round < 64; ++round) {
      Outbox out;
      p.scheduler->schedule(now_, out);
      if (out.empty()) break;
      drain(s, out);
    }
    // Something happened to it: the policy looks at the next tick whether
    // its input changed (PolicyStage::due).
    if (p.policy) p.policy_due = std::min(p.policy_due, next_tick(s, now_));
    TimePoint wake = p.scheduler->next_wakeup();
    p.wake = wake <= now_ ? now_ + Duration{1} : wake;
  }

  /// Delivers what partition s sent to its nodes, and their replies back to
  /// it, until the exchange is quiet.
  void drain(size_t s, Outbox& first) {
    Scheduler& sched = *partitions_[s].scheduler;
    Outbox out = std::move(first);
    while (!out.empty()) {
      Outbox batch = std::exchange(out, Outbox{});
      std::vector<ClaimReply> claim_replies;
      std::vector<ConfirmReply> confirm_replies;
      std::vector<ReleaseReply> release_replies;
      for (const auto& c : batch.claims) {
        uint32_t n = static_cast<uint32_t>(c.node.value - 1);
        claim_replies.push_back(ledgers_[n].claim(c, now_));
        if (claim_replies.back().outcome == ClaimOutcome::accepted) {
          accepted_[{c.partition.value, c.claim_id.value}] =
              AcceptedClaim{c.job, c.tasks, static_cast<double>(c.per_task[dim::cpu]) / 1000.0};
          claimed_on_.push_back(n);
        }
      }
      for (const auto& c : batch.confirms) {
        uint32_t n = static_cast<uint32_t>(c.node.value - 1);
        confirm_replies.push_back(ledgers_[n].confirm(c, now_));
        auto it = accepted_.find({c.partition.value, c.claim_id.value});
        if (it == accepted_.end()) continue;
        if (confirm_replies.back().outcome == ConfirmOutcome::confirmed) start_tasks(it->second, n);
        accepted_.erase(it);
      }
      for (const auto& r : batch.releases) {
        uint32_t n = static_cast<uint32_t>(r.node.value - 1);
        take_away(r, n);
        release_replies.push_back(ledgers_[n].release(r, now_));
        if (r.claim_id.value != 0) accepted_.erase({r.partition.value, r.claim_id.value});
      }
      for (NodeId id : batch.snapshot_requests) {
        const NodeLedger& l = ledgers_[id.value - 1];
        NodeDelta d;
        d.snapshot = l.snapshot();
        d.full = true;
        d.events = l.recent_finished();
        d.allocations = l.allocations();
        sched.on_node_delta(d, now_, out);
      }
      for (JobId job : batch.finished_jobs) job_ended(sched, job);
      for (const auto& r : claim_replies) sched.on_claim_reply(r, now_, out);
      for (const auto& r : confirm_replies) sched.on_confirm_reply(r, now_, out);
      for (const auto& r : release_replies) sched.on_release_reply(r, now_, out);
      // Operator operations do not occur in a trace; a lock-queue operation
      // the core hands out is finished at once so its locks go on.
      for (const auto& [id, op] : batch.operations) sched.finish_operation(id);
    }
    // A claim is confirmed or released in the same exchange; one left
    // unconfirmed expires on its node at its deadline, as on a live node.
    for (uint32_t n : std::exchange(claimed_on_, {}))
      if (!ledgers_[n].claims().empty()) note_deadline(n);
  }

  void start_tasks(const AcceptedClaim& claim, uint32_t n) {
    auto it = by_job_.find(claim.job);
    if (it == by_job_.end()) return;
    JobProgress& job = it->second;
    JobOutcome& o = result_.outcomes[job.outcome];
    if (!o.start_s) o.start_s = whole_seconds(now_ - origin_);
    bool killed = job.limit.count() > 0 && job.run > job.limit;
    Duration lasts = killed ? job.limit : job.run;
    for (TaskIndex t : claim.tasks) {
      TaskRef task{claim.job, t};
      if (job.runs.size() <= t) job.runs.resize(static_cast<size_t>(t) + 1, 0);
      uint32_t number = ++job.runs[t];
      runs_[task] = Run{now_, n, number, claim.cpus};
      ends_.push(TaskEndEvent{now_ + lasts, next_order_++, task, n, number, killed});
    }
  }

  /// A release: a running task taken away (preempted, evicted) loses the
  /// work it did; its pending end no longer applies.
  void take_away(const ReleaseRequest& r, uint32_t n) {
    for (TaskIndex t : r.tasks) {
      auto it = runs_.find(TaskRef{r.job, t});
      if (it == runs_.end() || it->second.node != n) continue;
      auto job = by_job_.find(r.job);
      if (job != by_job_.end()) {
        JobOutcome& o = result_.outcomes[job->second.outcome];
        double done = seconds(now_ - it->second.started) * it->second.cpus;
        o.busy_cpu_s += done;
        if (r.reason == TaskState::preempted || r.reason == TaskState::evicted) {
          ++o.preemptions;
          o.lost_cpu_s += done;
        }
      }
      runs_.erase(it);
    }
  }

  void end_task(const TaskEndEvent& ev) {
    auto it = runs_.find(ev.task);
    if (it == runs_.end() || it->second.number != ev.run) return;  // taken away meanwhile
    auto job = by_job_.find(ev.task.job);
    if (job != by_job_.end()) {
      JobOutcome& o = result_.outcomes[job->second.outcome];
      o.busy_cpu_s += seconds(now_ - it->second.started) * it->second.cpus;
      if (ev.killed) o.killed_at_limit = true;
    }
    runs_.erase(it);
    std::vector<NodeEvent> events;
    bool ended = ev.killed ? ledgers_[ev.node].finish_task(ev.task, TaskState::failed, -1, events,
                                                          TaskEnd::observed(EndReason::max_run_time, -1, kKillSignal))
                           : ledgers_[ev.node].finish_task(ev.task, TaskState::succeeded, 0, events, TaskEnd::exited(0));
    if (ended) deliver_delta(ev.node, std::move(events));
  }

  /// Node n changed on its own (a task ended, a claim expired): its owner hears of it.
  void deliver_delta(uint32_t n, std::vector<NodeEvent> events) {
    size_t s = node_owner_[n];
    NodeDelta d;
    d.snapshot = ledgers_[n].snapshot();
    d.events = std::move(events);
    Outbox out;
    partitions_[s].scheduler->on_node_delta(d, now_, out);
    mark(s);
    drain(s, out);
  }

  /// Wakes node n at its ledger's next deadline (a claim's expiry); one wake-up per node at a time.
  void note_deadline(uint32_t n) {
    if (ledgers_[n].claims().empty()) return;
    TimePoint at = ledgers_[n].next_deadline();
    if (at == kNever || at >= deadline_set_[n]) return;
    deadline_set_[n] = at;
    ledger_deadlines_.emplace(at, n);
  }

  void job_ended(const Scheduler& sched, JobId id) {
    auto it = by_job_.find(id);
    if (it == by_job_.end()) return;
    JobOutcome& o = result_.outcomes[it->second.outcome];
    if (o.end_s) return;
    o.end_s = whole_seconds(now_ - origin_);
    if (const JobRecord* j = sched.job(id); j && j->first_running == kNever) o.start_s.reset();
    ++ended_;
  }

  const ReplaySetup& setup_;
  ReplayResult& result_;
  std::vector<Partition> partitions_;
  std::map<std::string, size_t, std::less<>> owner_of_pool_;
  std::vector<NodeLedger> ledgers_;
  std::vector<size_t> node_owner_;
  std::set<size_t> dirty_;
  std::priority_queue<TaskEndEvent, std::vector<TaskEndEvent>, std::greater<>> ends_;
  std::multimap<TimePoint, uint32_t> ledger_deadlines_;
  /// Per node, the wake-up in ledger_deadlines_ (kNever: none).
  std::vector<TimePoint> deadline_set_;
  std::vector<uint32_t> claimed_on_;
  std::map<std::pair<uint32_t, uint64_t>, AcceptedClaim> accepted_;
  std::unordered_map<TaskRef, Run> runs_;
  std::unordered_map<JobId, JobProgress> by_job_;
  TimePoint now_{0};
  TimePoint origin_{0};
  uint64_t next_order_ = 0;
  uint64_t ended_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

Status ReplaySetup::validate() const {
  if (partitions.empty()) return make_error(Errc::invalid_argument, "replay: no partition");
  if (nodes.empty()) return make_error(Errc::invalid_argument, "replay: the machine has no nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id.value != i + 1)
      return make_error(Errc::invalid_argument, "replay: node ids must be 1..N in order");
  for (const auto& p : partitions)
    if (auto st = p.validate(); !st) return st;
  if (policy)
    if (auto st = policy->validate(); !st) return st;
  return Status::ok();
}

Expected<ReplayResult> replay(const ReplaySetup& setup, const std::vector<ReplayJob>& jobs,
                              const std::function<void(const ReplayProgress&)>& progress) {
  if (auto st = setup.validate(); !st) return st.error();
  for (size_t i = 1; i < jobs.size(); ++i)
    if (jobs[i].spec.submit_time < jobs[i - 1].spec.submit_time)
      return make_error(Errc::invalid_argument, "replay: jobs must be sorted by submit time");
  ReplayResult result;
  Engine engine(setup, result);
  if (auto st = engine.build(); !st) return st.error();
  if (auto st = engine.run(jobs, progress); !st) return st.error();
  return result;
}

}  // namespace claimsched::core::replay
