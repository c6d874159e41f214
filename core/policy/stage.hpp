#pragma once

// The policy stage of a partition's pipeline (core/README.md): fair share,
// starvation, preemption and DUCC's caps over a live Scheduler.
//
// Each cycle it takes a Snapshot of the scheduler (what runs, what lands,
// what is being taken away), runs the policy (run_cycle: how much each job,
// class and pool should get; which tasks to take away; where the room goes,
// asked of the placement engine over the scheduler's own view), and hands the
// decisions back to the scheduler's stages:
//   - ranks: jobs below their fair share are looked at first (the queue);
//   - caps: DUCC's initialization cap, expand-by-doubling, prediction;
//   - removals: Scheduler::preempt (preempted or evicted, with the reason and
//     the preemptor in words);
//   - where the freed room goes: Scheduler::hold, claimed once the victims
//     are freed (a starving job's task, a non-preemptible request, a
//     reservation's machine, defragmentation's hole).
// The scheduler's queue fills free room itself between cycles; evaluate()
// runs the same pipeline on a snapshot (claimsched policy eval).
//
// Pure like the rest of core/: time and the scheduler are parameters.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/pipeline/scheduler.hpp"
#include "core/policy/engine.hpp"
#include "core/policy/model.hpp"
#include "core/policy/result.hpp"

namespace claimsched::core::policy {

struct PolicyConfig {
  /// The pool tree; must hold every pool the scheduler's nodes are in
  /// (pools it lacks are added as roots).
  std::vector<PoolSpec> pools;
  /// The configuration file's classes and users. The stage reads classes,
  /// allotments and the quantum from the scheduler's configuration (one
  /// class model for the live path and the policy): a class there without a
  /// pool is bound to the pool of the class of the same name here, else to
  /// the first root pool.
  std::vector<ClassSpec> classes;
  std::vector<UserSpec> users;
  PolicySettings settings;
  /// How often a cycle runs.
  Duration interval = std::chrono::seconds(1);

  Status validate() const;
};

struct CycleSummary {
  uint32_t preemptions = 0;
  uint32_t evictions = 0;
  /// Jobs ranked ahead because they are below their fair share.
  uint32_t boosted = 0;
  /// Room held for jobs (placements that wait for victims, or none).
  uint32_t held = 0;
  /// Removals or holds the scheduler refused (the task ended meanwhile).
  uint32_t skipped = 0;
};

/// Where a job goes within its priority in the scheduler's queue (higher
/// first): below its fair share by how far below, plus a level when starving
/// and another when aggressively starving; 0 at its share, -2 above it (the
/// scheduler itself moves a job that reaches its fair share in tasks to -1:
/// behind those below their share, ahead of those above it).
int64_t queue_rank(const JobRow& row);

class PolicyStage {
 public:
  explicit PolicyStage(PolicyConfig config);

  const PolicyConfig& config() const { return config_; }
  const PolicyState& state() const { return state_; }
  void set_state(PolicyState state) { state_ = std::move(state); }

  /// The policy's view of `scheduler` at `now`: what runs (tasks being taken
  /// away already gone, their room free), what lands (claims in flight and
  /// held room, as running).
  Snapshot snapshot_of(const Scheduler& scheduler, TimePoint now) const;

  /// Whether a cycle is due (see due()), and the hash of the input it would
  /// see, which cycle() takes rather than hashing it again.
  struct Check {
    bool due = true;
    uint64_t input = 0;
  };
  Check check(const Scheduler& scheduler, TimePoint now) const;

  /// One cycle: snapshot, run_cycle, hand the decisions to the scheduler
  /// (releases go to `out`). `checked`: check() of the scheduler as it is
  /// now (nothing changed it since), to spare hashing its input again.
  Expected<CycleSummary> cycle(Scheduler& scheduler, TimePoint now, Outbox& out, const Check* checked = nullptr);

  /// Whether a cycle at `now` could decide anything: the first cycle, one
  /// after a cycle that acted, or one whose input (what snapshot_of reads,
  /// or what was observed) differs from the last cycle's, or a timer of the
  /// state passed since (next_timer). Otherwise it would decide what the
  /// last one did, and the server and the replay both skip it: a partition
  /// where nothing happens costs no cycles, and both skip the same ones.
  bool due(const Scheduler& scheduler, TimePoint now) const { return check(scheduler, now).due; }
  /// When the state's timers can next change a decision with the input as
  /// it is: a job or pool below its fair share reaches a starvation timeout,
  /// or the preemptive backoff ends of a node last looked at with another
  /// input (one looked at with this input would find what it found). kNever
  /// when none can.
  TimePoint next_timer() const;
  /// Ranks and caps only (no removals, no holds), without moving the timers:
  /// what a scheduler that ran the policy before would order its queue by.
  /// Returns the cycle's result (shares and statuses of the state as it is).
  Expected<CycleResult> rank(Scheduler& scheduler, TimePoint now);

  /// The snapshot the last cycle() ran on (refilled in place by the next).
  const Snapshot& last_snapshot() const { return snap_; }
  /// The last cycle's result (shares, statuses, plan), for reports and explain.
  const std::optional<CycleResult>& last() const { return last_; }
  /// Whether cycle() words why each waiting job waits (last()'s
  /// pending_reason, for explain). On by default; a replay, which never
  /// explains, turns it off: the words cost more than some decisions.
  void set_reasons(bool on) { reasons_ = on; }

  /// What is known about a job beyond its tasks, in place of what the
  /// scheduler observed (policy eval takes it from the snapshot): whether it
  /// passed initialization, and DUCC's prediction inputs.
  void observe(JobId job, bool initialized, std::optional<PredictionInfo> prediction);
  /// The task supports interruption (YTsaurus: a preempted one gets a signal
  /// and allocation_preemption_timeout to finish).
  void observe_interruptible(TaskRef task) {
    observed_since_cycle_ |= interruptible_.insert(task).second;
  }
  /// A node's name (the view keeps ids only).
  void observe_name(NodeId node, std::string name) {
    auto& known = names_[node];
    observed_since_cycle_ |= known != name;
    known = std::move(name);
  }

 private:
  void apply_marks(Scheduler& scheduler, const CycleResult& result, CycleSummary& summary) const;
  /// snapshot_of into `snap`, every field written: a cycle refills the last
  /// cycle's (its strings and vectors reused, not made again each cycle).
  /// `freeing`: scratch, the room being freed per node.
  void fill_snapshot(const Scheduler& scheduler, TimePoint now, Snapshot& snap, std::vector<Resources>& freeing) const;
  /// A hash of everything snapshot_of reads but the clock (mirrors it).
  uint64_t input_fingerprint(const Scheduler& scheduler) const;

  PolicyConfig config_;
  PolicyState state_;
  /// The last cycle (run by cycle()): when, on which input, whether it
  /// took or held anything, and since when the input has been that one.
  bool ran_ = false;
  bool acted_ = false;
  uint64_t input_seen_ = 0;
  TimePoint last_cycle_{0};
  TimePoint input_since_{0};
  /// observe*() was called since the last cycle.
  bool observed_since_cycle_ = false;
  bool reasons_ = true;
  std::optional<CycleResult> last_;
  /// What a cycle works in and the result before last_, refilled by the
  /// next cycle (their storage reused rather than allocated each cycle).
  CycleBuffers buffers_;
  CycleResult spare_;
  /// The snapshot cycle() ran on, refilled by the next (fill_snapshot).
  Snapshot snap_;
  std::vector<Resources> freeing_;
  std::map<JobId, std::pair<bool, std::optional<PredictionInfo>>> observed_;
  std::set<TaskRef> interruptible_;
  std::map<NodeId, std::string> names_;
};

/// The name it had before the pipeline was split into stages.
using PolicyDriver = PolicyStage;

/// `claimsched policy eval`: the partition's pipeline on a snapshot, with a
/// virtual clock and nothing sent. A scheduler is rebuilt from the snapshot
/// (its nodes, and its jobs with their allocations), ranked as the last cycle
/// would have left it, its queue placed into free room (regular), and then one
/// policy cycle run: the result's plan is what the cluster would do next with
/// that state — the queue's placements, then the policy's removals and where
/// their room goes.
Expected<CycleResult> evaluate(const Snapshot& snapshot, const PolicyState& state = {});

}  // namespace claimsched::core::policy
