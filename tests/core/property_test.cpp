// The claim protocol's invariants under random interleavings (DESIGN.md, "The
// claim protocol"): several schedulers share one set of nodes (real
// NodeLedgers) and a seeded engine picks, at each step, one of: deliver one
// message (the only ordering guarantee is FIFO per scheduler-node pair and
// direction), advance virtual time (ledgers advance, schedulers tick), submit
// a job, let a task exit, drain or undrain a node, drop or duplicate a
// message, or hand a partition to a new scheduler with a higher epoch.
//
// After every step: for every ledger allocated + claimed <= capacity; no task
// is allocated on two nodes or held twice on one; no claim or confirm of a
// fenced epoch succeeds; a fenced scheduler sends no claims; no claim outlives
// its ttl; every scheduler's check_accounting() holds. At the end the network
// is drained and each live scheduler must agree with the nodes about what runs.
//
// Reproduce one seed: CLAIMSCHED_PROPERTY_SEED=<seed> ./core_tests
// --gtest_filter='ClaimProtocolProperty.*'; add CLAIMSCHED_PROPERTY_TRACE=1 to
// print the last messages before a failure (CLAIMSCHED_PROPERTY_TRACE_FILE=
// <path> writes all of them). CLAIMSCHED_PROPERTY_SCALE=<n> runs n times as
// many seeds, CLAIMSCHED_PROPERTY_STEPS=<n> n steps per seed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>

#include "core/random.hpp"
#include "core/scheduler.hpp"
#include "tests/core/builders.hpp"
#include "tests/core/sim_cluster.hpp"

namespace claimsched::core {
namespace {

using testing::SimCluster;
using testing::ToNode;
using testing::ToScheduler;

struct Profile {
  const char* name;
  /// Per delivered message: chance to lose it, chance to deliver it twice.
  double drop = 0.0;
  double duplicate = 0.0;
  /// Chance per step that a partition changes owner.
  double takeover = 0.0;
  /// Chance that a scheduler uses strict CAS.
  double strict_cas = 0.25;
  /// Chance of a gang job.
  double gang = 0.2;
  int steps = 2000;
};

std::optional<uint64_t> env_u64(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::strtoull(v, nullptr, 10);
}

class World {
 public:
  World(uint64_t seed, const Profile& profile)
      : seed_(seed), profile_(profile), rng_(mix64(seed)), cluster_(ledger_config()) {
    cluster_.trace = [this](const std::string& line) { remember(line); };
    build();
  }

  /// Runs the random steps, then drains; returns "" or what went wrong.
  std::string run() {
    for (step_ = 0; step_ < profile_.steps; ++step_) {
      touched_nodes_.clear();
      touched_schedulers_.clear();
      all_touched_ = false;
      one_step();
      if (auto p = check_step(); !p.empty()) return failure(p);
      if (step_ % 256 == 255)
        if (auto p = cluster_.check_all(); !p.empty()) return failure(p);
    }
    if (auto p = drain(); !p.empty()) return failure(p);
    return "";
  }

  uint64_t gang_reruns() const { return gang_reruns_; }

 private:
  LedgerConfig ledger_config() {
    LedgerConfig c;
    c.claim_ttl = std::chrono::milliseconds(200 + rng_.below(1800));
    c.start_delay = rng_.chance(0.3) ? std::chrono::milliseconds(10 + rng_.below(40)) : Duration{0};
    return c;
  }

  void build() {
    // Two pools; each partition owns one or both, so ownership overlaps.
    uint32_t nodes = 5 + static_cast<uint32_t>(rng_.below(26));
    for (uint32_t i = 1; i <= nodes; ++i) {
      testing::NodeBuilder b(i);
      b.pool(rng_.chance(0.7) ? "a" : "b");
      b.capacity("");
      b.cpu(std::to_string(1 + rng_.below(8)));
      b.memory(std::to_string(1 + rng_.below(8)) + "Gi");
      if (rng_.chance(0.4)) b.label("ssd");
      if (rng_.chance(0.2)) b.max_starting(1 + static_cast<uint32_t>(rng_.below(4)));
      cluster_.add_node(b.build());
    }
    uint32_t partitions = 2 + static_cast<uint32_t>(rng_.below(7));
    for (uint32_t p = 1; p <= partitions; ++p) {
      SchedulerConfig c;
      c.partition = PartitionId{p};
      c.epoch = 1;
      uint64_t which = rng_.below(4);
      c.pools = which == 0   ? std::vector<std::string>{"b"}
                : which == 1 ? std::vector<std::string>{"a", "b"}
                             : std::vector<std::string>{"a"};
      c.max_claims_in_flight = 1 + static_cast<uint32_t>(rng_.below(16));
      c.max_tasks_per_claim = 1 + static_cast<uint32_t>(rng_.below(8));
      c.max_claim_attempts = 1 + static_cast<uint32_t>(rng_.below(4));
      c.reply_timeout = std::chrono::milliseconds(30 + rng_.below(500));  // sometimes > ttl
      c.strict_cas = rng_.chance(profile_.strict_cas);
      c.rotation = rng_.below(64);
      c.unpark_interval = std::chrono::milliseconds(rng_.below(20));
      PlacementPolicy policy;
      policy.scorers = {{rng_.chance(0.5) ? ScorerKind::fill_first : ScorerKind::spread, 1.0}};
      if (rng_.chance(0.3)) policy.scorers.push_back({ScorerKind::spread, 0.5});
      policy.candidates = 1 + static_cast<uint32_t>(rng_.below(3));
      c.classes = {ClassConfig::named("batch"), ClassConfig::named("urgent", 5)};
      c.classes[0].placement = policy;
      owner_.push_back(cluster_.add_scheduler(c));
    }
  }

  void one_step() {
    uint64_t r = rng_.below(100);
    if (r < 62 && !cluster_.busy().empty()) {
      deliver_one();
    } else if (r < 78) {
      advance_time();
    } else if (r < 91) {
      submit_job();
    } else if (r < 98) {
      node_event();
    } else if (rng_.chance(profile_.takeover * 50)) {
      size_t p = rng_.below(owner_.size());
      size_t old = owner_[p];
      owner_[p] = cluster_.take_over(old, rng_.chance(0.5));
      touched_schedulers_.push_back(owner_[p]);
      remember("takeover of partition " + std::to_string(p + 1) + ": scheduler " +
               std::to_string(old) + " -> " + std::to_string(owner_[p]));
    } else {
      advance_time();
    }
  }

  void deliver_one() {
    SimCluster::Channel c = cluster_.busy()[rng_.below(cluster_.busy().size())];
    if (c.to_node) {
      touched_nodes_.push_back(c.node);
      auto m = cluster_.take_to_node(c.scheduler, c.node);
      if (!m) return;
      // Requests are lost now and then, and claims and confirms repeated (a
      // retransmission). Releases are not repeated out of order: the
      // scheduler resends its own, behind them on the same FIFO channel.
      bool resendable =
          std::holds_alternative<ClaimRequest>(*m) || std::holds_alternative<ConfirmRequest>(*m);
      if (rng_.chance(profile_.drop)) {
        remember("lost s" + std::to_string(c.scheduler) + "->n" + std::to_string(c.node + 1) + " " +
                 testing::describe(*m));
        return;
      }
      cluster_.node_receive(c.scheduler, c.node, *m);
      if (resendable && rng_.chance(profile_.duplicate))
        cluster_.send_to_node(c.scheduler, c.node, *m);
      return;
    }
    touched_schedulers_.push_back(c.scheduler);
    auto m = cluster_.take_to_scheduler(c.node, c.scheduler);
    if (!m) return;
    // Replies are lost and repeated; deltas are not: a lost delta loses its
    // events (task_finished) for good, and a full snapshot does not carry them.
    bool is_reply = !std::holds_alternative<NodeDelta>(*m);
    if (is_reply && rng_.chance(profile_.drop)) {
      remember("lost n" + std::to_string(c.node + 1) + "->s" + std::to_string(c.scheduler) + " " +
               testing::describe(*m));
      return;
    }
    cluster_.scheduler_receive(c.node, c.scheduler, *m);
    stale_reply_check(c.scheduler, *m);
    if (is_reply && rng_.chance(profile_.duplicate)) {
      if (rng_.chance(0.5)) {
        cluster_.scheduler_receive(c.node, c.scheduler, *m);
      } else {
        cluster_.send_to_scheduler(c.node, c.scheduler, *m);
      }
    }
  }

  // "The old one must get stale_epoch": a scheduler told so is fenced at once.
  void stale_reply_check(size_t s, const ToScheduler& m) {
    bool stale = false;
    if (auto* r = std::get_if<ClaimReply>(&m)) stale = r->outcome == ClaimOutcome::stale_epoch;
    if (auto* r = std::get_if<ConfirmReply>(&m)) stale = r->outcome == ConfirmOutcome::stale_epoch;
    if (stale && !cluster_.scheduler(s).fenced())
      extra_problem_ = "scheduler " + std::to_string(s) + " got stale_epoch but is not fenced";
  }

  void advance_time() {
    all_touched_ = true;
    TimePoint next = kNever;
    for (size_t n = 0; n < cluster_.node_count(); ++n)
      next = std::min(next, cluster_.ledger(n).next_deadline());
    Duration dt = std::chrono::milliseconds(1 + rng_.below(100));
    if (next != kNever && next > cluster_.now() && rng_.chance(0.3)) dt = next - cluster_.now();
    cluster_.advance_by(dt);
    remember("time -> " + std::to_string(cluster_.now().count() / 1'000'000) + "ms");
  }

  void submit_job() {
    // Mostly to a current owner; sometimes to a deposed one (it must not place it).
    size_t s = rng_.chance(0.95) ? owner_[rng_.below(owner_.size())]
                                 : rng_.below(cluster_.scheduler_count());
    const auto& pools = cluster_.scheduler(s).config().pools;
    testing::JobBuilder b(next_job_++);
    b.user("u" + std::to_string(rng_.below(4)));
    b.pool(pools[rng_.below(pools.size())]);
    b.count(1 + static_cast<uint32_t>(rng_.below(6)));
    b.resources("");
    b.cpu(std::to_string(250 * (1 + rng_.below(12))) + "m");
    if (rng_.chance(0.7)) b.memory(std::to_string(256 * rng_.below(9)) + "Mi");
    if (rng_.chance(0.02)) b.cpu("64");  // never fits anywhere
    if (rng_.chance(profile_.gang)) b.gang();
    if (rng_.chance(0.1)) b.constraint("ssd");
    if (rng_.chance(0.05)) b.constraint("!ssd");
    if (rng_.chance(0.1)) b.job_class("urgent");
    b.runtime(rng_.chance(0.1) ? Duration{0} : std::chrono::milliseconds(20 + rng_.below(1500)));
    b.submitted(cluster_.now());
    JobSpec job = b.build();
    // Held (submit --hold): jobs that never fit must wait parked here, not be
    // refused at the door, so the protocol is exercised with them too.
    job.wait_for_nodes = true;
    if (job.gang) gangs_.insert(job.id);
    remember("submit job " + std::to_string(job.id.value) + " x" + std::to_string(job.count) + " " +
             job.per_task.to_string() + (job.gang ? " gang" : "") + " to s" + std::to_string(s));
    auto st = cluster_.submit(s, std::move(job));
    if (!st) extra_problem_ = "submit refused: " + st.error().to_string();
    touched_schedulers_.push_back(s);
  }

  void node_event() {
    size_t n = rng_.below(cluster_.node_count());
    touched_nodes_.push_back(n);
    const NodeLedger& l = cluster_.ledger(n);
    if (rng_.chance(0.15)) {
      NodeState s = l.state() == NodeState::up ? NodeState::draining : NodeState::up;
      cluster_.set_node_state(n, s);
      remember("node " + std::to_string(n + 1) + " -> " + std::string(to_string(s)));
      return;
    }
    if (l.allocations().empty()) return;
    TaskRef t = l.allocations()[rng_.below(l.allocations().size())].task;
    bool ok = rng_.chance(0.7);
    cluster_.finish_task(n, t, ok ? TaskState::succeeded : TaskState::failed, ok ? 0 : 1);
    remember("task " + std::to_string(t.job.value) + "." + std::to_string(t.index) + " exits on n" +
             std::to_string(n + 1));
  }

  std::string check_step() {
    if (!extra_problem_.empty()) return extra_problem_;
    if (!cluster_.violations().empty()) return cluster_.violations().front();
    if (all_touched_) {
      for (size_t n = 0; n < cluster_.node_count(); ++n) touched_nodes_.push_back(n);
      for (size_t s = 0; s < cluster_.scheduler_count(); ++s) touched_schedulers_.push_back(s);
    }
    for (size_t n : touched_nodes_) {
      if (auto p = cluster_.check_ledger(n); !p.empty()) return p;
      if (auto p = cluster_.check_allocations_unique(n); !p.empty()) return p;
    }
    for (size_t s : touched_schedulers_)
      if (auto st = cluster_.scheduler(s).check_accounting(); !st)
        return "scheduler " + std::to_string(s) + ": " + st.error().to_string();
    return "";
  }

  /// No more faults: deliver everything, let claims expire, and check that
  /// the live schedulers and the nodes agree about what runs where.
  std::string drain() {
    remember("--- drain ---");
    for (size_t n = 0; n < cluster_.node_count(); ++n) cluster_.set_node_state(n, NodeState::up);
    // Settled = a whole timer round (ledgers advance, schedulers tick: parked
    // jobs are retried, backoffs end, confirms are resent) sends nothing.
    bool quiet = false;
    int quiet_rounds = 0;
    for (int round = 0; round < 1000 && quiet_rounds < 2; ++round) {
      cluster_.advance_by(std::chrono::milliseconds(97));
      // Messages cost no virtual time: a storm at one instant is a livelock.
      // Random order, as in the run: a fixed one starves some schedulers.
      // (The bound grows with the backlog: every job may place once.)
      const size_t bound = 100'000 + 1'000 * static_cast<size_t>(next_job_);
      size_t delivered = 0;
      while (!cluster_.busy().empty() && delivered < bound)
        delivered += cluster_.deliver(cluster_.busy()[rng_.below(cluster_.busy().size())]);
      if (delivered == bound)
        return "livelock: " + std::to_string(bound) +
               " messages at t=" + std::to_string(cluster_.now().count() / 1'000'000) +
               "ms without time passing";
      if (auto p = cluster_.check_all(); !p.empty()) return p;
      quiet = delivered == 0;
      // (A fenced scheduler schedules nothing more: its backoffs never end.)
      for (size_t s = 0; s < cluster_.scheduler_count(); ++s)
        quiet &= cluster_.scheduler(s).claims_in_flight() == 0 &&
                 (cluster_.scheduler(s).fenced() || cluster_.scheduler(s).backing_off_jobs() == 0);
      for (size_t n = 0; n < cluster_.node_count(); ++n)
        quiet &= cluster_.ledger(n).claims().empty();
      quiet_rounds = quiet ? quiet_rounds + 1 : 0;
    }
    if (!quiet) {
      std::string why = "the cluster did not settle after the faults stopped:";
      for (size_t s = 0; s < cluster_.scheduler_count(); ++s) {
        const Scheduler& sched = cluster_.scheduler(s);
        if (sched.claims_in_flight() || (!sched.fenced() && sched.backing_off_jobs()))
          why += " scheduler " + std::to_string(s) + (sched.fenced() ? " (fenced)" : "") + " has " +
                 std::to_string(sched.claims_in_flight()) + " claims in flight and " +
                 std::to_string(sched.backing_off_jobs()) + " jobs backing off;";
      }
      for (size_t n = 0; n < cluster_.node_count(); ++n)
        if (!cluster_.ledger(n).claims().empty())
          why += " node " + std::to_string(n + 1) + " holds claims;";
      return why;
    }

    // Who holds what, according to the nodes.
    std::map<TaskRef, std::pair<size_t, PartitionId>> on_nodes;
    for (size_t n = 0; n < cluster_.node_count(); ++n)
      for (const auto& a : cluster_.ledger(n).allocations()) on_nodes[a.task] = {n, a.partition};
    for (size_t s = 0; s < cluster_.scheduler_count(); ++s) {
      const Scheduler& sched = cluster_.scheduler(s);
      // A deposed scheduler's word is not trusted: its successor reconciles.
      if (sched.fenced() || std::find(owner_.begin(), owner_.end(), s) == owner_.end()) continue;
      std::string problem;
      sched.for_each_job([&](const JobRecord& j) {
        for (TaskIndex i = 0; i < j.tasks.size() && problem.empty(); ++i) {
          TaskRef t{j.spec.id, i};
          auto it = on_nodes.find(t);
          bool running = j.tasks[i].state == TaskState::running;
          std::string name = "task " + std::to_string(t.job.value) + "." + std::to_string(i);
          if (running && it == on_nodes.end())
            problem =
                "scheduler " + std::to_string(s) + " thinks " + name + " runs but no node holds it";
          else if (running &&
                   sched.view().node(*j.tasks[i].node).id.value != it->second.first + 1)
            problem = "scheduler " + std::to_string(s) + " thinks " + name + " runs on node " +
                      std::to_string(sched.view().node(*j.tasks[i].node).id.value) +
                      ", it is on node " + std::to_string(it->second.first + 1);
          else if (!running && it != on_nodes.end())
            problem = name + " is allocated on node " + std::to_string(it->second.first + 1) +
                      " but scheduler " + std::to_string(s) + " has it " +
                      std::string(to_string(j.tasks[i].state));
        }
      });
      if (!problem.empty()) return problem;
    }
    // A task runs once: only an aborted gang places its tasks again.
    for (const auto& [task, times] : cluster_.confirmations()) {
      if (times <= 1) continue;
      if (!gangs_.contains(task.job))
        return "task " + std::to_string(task.job.value) + "." + std::to_string(task.index) +
               " was confirmed " + std::to_string(times) + " times";
      gang_reruns_ += times - 1;
    }
    if (profile_.drop == 0 && profile_.duplicate == 0) return check_converged();
    return "";
  }

  /// Without lost messages: every live scheduler's view equals the nodes, it
  /// never saw a generation gap, and no waiting job could be placed now.
  std::string check_converged() {
    for (size_t s = 0; s < cluster_.scheduler_count(); ++s) {
      const Scheduler& sched = cluster_.scheduler(s);
      if (sched.fenced() || std::find(owner_.begin(), owner_.end(), s) == owner_.end()) continue;
      std::string who = "scheduler " + std::to_string(s) + ": ";
      if (sched.stats().generation_gaps != 0) return who + "saw generation gaps without losses";
      const ClusterView& view = sched.view();
      for (NodeIndex i = 0; i < view.node_count(); ++i) {
        const NodeView& v = view.node(i);
        const NodeLedger& l = cluster_.ledger(v.id.value - 1);
        if (v.generation != l.generation() || !(v.reported_free == l.free()) ||
            v.state != l.state() || v.reported_starting != l.snapshot().starting)
          return who + "its view of node " + std::to_string(v.id.value) + " (g" +
                 std::to_string(v.generation) + ", free " + v.reported_free.to_string() +
                 ") differs from the node (g" + std::to_string(l.generation()) + ", free " +
                 l.free().to_string() + ")";
        if (!v.in_flight.is_zero() || v.in_flight_tasks != 0 || v.in_flight_changes != 0)
          return who + "still counts " + std::to_string(v.in_flight_tasks) + " tasks and " +
                 std::to_string(v.in_flight_changes) + " changes in flight to node " +
                 std::to_string(v.id.value);
      }
      // A job that waits while it would fit has lost its wake-up.
      std::string problem;
      sched.for_each_job([&](const JobRecord& j) {
        if (!problem.empty() || j.pending() == 0) return;
        const PoolView& pool = view.pool(j.pool);
        uint64_t room = 0;
        for (NodeIndex i : pool.nodes) {
          const NodeView& v = view.node(i);
          if (v.state != NodeState::up || !label_selectors_match(j.spec.constraints, v.labels))
            continue;
          uint32_t fit = tasks_that_fit(v, j.spec.per_task, j.pending());
          // With strict CAS a node takes one claim at a time: one part of a gang.
          if (sched.config().strict_cas && j.spec.gang)
            fit = std::min(fit, sched.config().max_tasks_per_claim);
          room += fit;
        }
        if (room >= (j.spec.gang ? j.pending() : 1))
          problem = who + "job " + std::to_string(j.spec.id.value) + " waits with " +
                    std::to_string(j.pending()) + " pending tasks but room for " +
                    std::to_string(room) + " (" + sched.explain(j.spec.id) + ")";
      });
      if (!problem.empty()) return problem;
    }
    return "";
  }

  void remember(std::string line) {
    line = "[" + std::to_string(step_) +
           " t=" + std::to_string(cluster_.now().count() / 1'000'000) + "] " + line;
    if (trace_file_) std::fprintf(trace_file_, "%s\n", line.c_str());
    recent_.push_back(std::move(line));
    if (recent_.size() > 40) recent_.pop_front();
  }

  std::string failure(const std::string& problem) {
    std::string out = "seed " + std::to_string(seed_) + " (" + profile_.name + "), step " +
                      std::to_string(step_) + ": " + problem;
    if (env_u64("CLAIMSCHED_PROPERTY_TRACE"))
      for (const auto& l : recent_) out += "\n  " + l;
    else
      out += "\n  (CLAIMSCHED_PROPERTY_TRACE=1 prints the last messages)";
    return out;
  }

  uint64_t seed_;
  Profile profile_;
  Rng rng_;
  SimCluster cluster_;
  std::vector<size_t> owner_;  // partition index -> current owner's scheduler slot
  std::set<JobId> gangs_;
  uint64_t next_job_ = 1;
  int step_ = 0;
  std::vector<size_t> touched_nodes_;
  std::vector<size_t> touched_schedulers_;
  bool all_touched_ = false;
  std::string extra_problem_;
  std::deque<std::string> recent_;
  uint64_t gang_reruns_ = 0;
  std::FILE* trace_file_ = nullptr;

 public:
  ~World() {
    if (trace_file_) std::fclose(trace_file_);
  }
  /// Writes every handled message to `path` (CLAIMSCHED_PROPERTY_TRACE_FILE).
  void trace_to(const char* path) { trace_file_ = std::fopen(path, "w"); }
};

void run_seeds(Profile profile, uint64_t first_seed, uint64_t seeds) {
  if (auto steps = env_u64("CLAIMSCHED_PROPERTY_STEPS")) profile.steps = static_cast<int>(*steps);
  if (auto only = env_u64("CLAIMSCHED_PROPERTY_SEED")) {
    first_seed = *only;
    seeds = 1;
  } else if (auto scale = env_u64("CLAIMSCHED_PROPERTY_SCALE")) {
    seeds *= *scale;
  }
  uint64_t gang_reruns = 0;
  for (uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
    World world(seed, profile);
    if (const char* path = std::getenv("CLAIMSCHED_PROPERTY_TRACE_FILE")) world.trace_to(path);
    std::string problem = world.run();
    ASSERT_EQ(problem, "") << problem;
    gang_reruns += world.gang_reruns();
  }
  ::testing::Test::RecordProperty("gang_task_reruns", static_cast<int>(gang_reruns));
}

TEST(ClaimProtocolProperty, ManySchedulersNoFaults) {
  run_seeds(Profile{"no faults", 0.0, 0.0, 0.0, 0.25, 0.2, 2000}, 1, 60);
}

TEST(ClaimProtocolProperty, ManySchedulersWithLostAndRepeatedMessages) {
  run_seeds(Profile{"faults", 0.03, 0.03, 0.0, 0.25, 0.2, 2000}, 1001, 60);
}

TEST(ClaimProtocolProperty, TakeoversFenceOldOwners) {
  run_seeds(Profile{"takeovers", 0.02, 0.02, 0.01, 0.25, 0.2, 2000}, 2001, 50);
}

TEST(ClaimProtocolProperty, StrictCasAndGangs) {
  run_seeds(Profile{"strict cas + gangs", 0.02, 0.02, 0.005, 1.0, 0.6, 2000}, 3001, 30);
}

}  // namespace
}  // namespace claimsched::core
