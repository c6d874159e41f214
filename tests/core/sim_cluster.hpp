#pragma once

// A tiny simulated cluster for driving core::Scheduler by hand: real
// NodeLedgers play the nodes, a "network" of FIFO channels (one per
// scheduler->node and per node->scheduler pair) carries the Outbox's messages
// and the replies, and the clock moves only when the test says so.
//
// The node side mirrors what the node actor does (actors/ is not written yet):
// before each message it calls ledger.advance(now) and publishes what changed
// to every subscriber; after a message that changed the ledger it publishes a
// NodeDelta to every subscriber except the requester, who gets the reply.
//
// The cluster also watches the protocol's invariants as messages are handled
// (a fenced epoch accepted, a fenced scheduler still claiming, a job finished
// twice) and offers checks of each ledger's state; violations are collected in
// `violations()` so a test can report all of them with context.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/node_ledger.hpp"
#include "core/policy/stage.hpp"
#include "core/scheduler.hpp"

namespace claimsched::core::testing {

/// A scheduler that saw a generation gap asks the node for a full snapshot.
struct SnapshotRequest {
  NodeId node;
};

using ToNode = std::variant<ClaimRequest, ConfirmRequest, ReleaseRequest, SnapshotRequest>;
using ToScheduler = std::variant<ClaimReply, ConfirmReply, ReleaseReply, NodeDelta>;

std::string describe(const ToNode& m);
std::string describe(const ToScheduler& m);

class SimCluster {
 public:
  /// Channel keys: which scheduler, which node, which direction.
  struct Channel {
    size_t scheduler = 0;
    size_t node = 0;
    bool to_node = true;
    friend auto operator<=>(const Channel&, const Channel&) = default;
  };

  explicit SimCluster(LedgerConfig ledger_config = {});

  // --- nodes (node index n has NodeId n + 1) ---
  /// Adds a node; its id must be node_count() + 1. Registers it with every
  /// scheduler that owns its pool.
  size_t add_node(const NodeSpec& spec);
  NodeLedger& ledger(size_t n) { return ledgers_[n]; }
  const NodeLedger& ledger(size_t n) const { return ledgers_[n]; }
  const NodeSpec& spec(size_t n) const { return specs_[n]; }
  size_t node_count() const { return ledgers_.size(); }
  /// Node-side events that publish a delta to every subscriber.
  void set_node_state(size_t n, NodeState state);
  bool finish_task(size_t n, TaskRef task, TaskState final_state, int32_t exit_code, const TaskEnd& end = {});
  /// Node n says how a task it already freed ended (a task_exited event).
  void report_exit(size_t n, PartitionId partition, TaskRef task, const TaskEnd& end);

  /// Changes node n on behalf of someone the cluster does not model (another
  /// partition's scheduler). With `publish`, subscribers get the delta the
  /// node actor would send; without it their views silently go stale.
  ClaimReply foreign_claim(size_t n, const ClaimRequest& c, bool publish);
  ReleaseReply foreign_release(size_t n, const ReleaseRequest& r, bool publish);

  // --- schedulers ---
  /// Adds a scheduler and registers every known node of its pools with the
  /// node's current snapshot; it is subscribed to those nodes from now on.
  size_t add_scheduler(SchedulerConfig config);
  /// A new owner of `old`'s partition with a higher epoch (and its own claim
  /// id space). With `announce`, its first message to every node is an empty
  /// release that carries the new epoch (what a takeover's reconciliation does).
  size_t take_over(size_t old, bool announce);
  Scheduler& scheduler(size_t s) { return *schedulers_[s].scheduler; }
  const Scheduler& scheduler(size_t s) const { return *schedulers_[s].scheduler; }
  size_t scheduler_count() const { return schedulers_.size(); }
  /// Jobs the scheduler reported finished (Outbox::finished_jobs), in order.
  const std::vector<JobId>& finished_jobs(size_t s) const { return schedulers_[s].finished; }
  /// Jobs the scheduler reported started (Outbox::started_jobs), in order.
  const std::vector<JobId>& started_jobs(size_t s) const { return schedulers_[s].started; }
  /// Operator operations the scheduler sent out (Outbox::operations), in
  /// order; the test carries them out and calls finish_operation.
  std::vector<std::pair<JobId, Operation>>& operations(size_t s) { return schedulers_[s].operations; }
  /// Operations the scheduler carried out itself (Outbox::operations_ended).
  std::vector<OperationEnd>& operations_ended(size_t s) { return schedulers_[s].operations_ended; }

  Status submit(size_t s, JobSpec job);
  /// on_tick then schedule, as the actor's timer would.
  void tick(size_t s);

  // --- time ---
  TimePoint now() const { return now_; }
  /// Moves the clock and fires what timers would: every ledger advances (and
  /// publishes), then every scheduler ticks.
  void advance_to(TimePoint t);
  void advance_by(Duration d) { advance_to(now_ + d); }

  // --- network ---
  std::deque<ToNode>& to_node(size_t s, size_t n) { return to_node_[{s, n, true}]; }
  std::deque<ToScheduler>& to_scheduler(size_t n, size_t s) { return to_sched_[{s, n, false}]; }
  /// Channels with messages waiting (refresh_busy() after editing a queue by hand).
  const std::vector<Channel>& busy() const { return busy_; }
  void refresh_busy();
  size_t messages_in_flight() const;
  /// Delivers the oldest message of one channel; false if it was empty.
  bool deliver(Channel c);  // by value: it may name an element of busy()
  bool deliver_to_node(size_t s, size_t n) { return deliver({s, n, true}); }
  bool deliver_to_scheduler(size_t n, size_t s) { return deliver({s, n, false}); }
  /// Removes the oldest message of a channel without delivering it (to drop,
  /// hold or duplicate it); nullopt if the channel is empty.
  std::optional<ToNode> take_to_node(size_t s, size_t n);
  std::optional<ToScheduler> take_to_scheduler(size_t n, size_t s);
  /// Puts a message at the back of a channel (a retransmission, a forgery).
  void send_to_node(size_t s, size_t n, ToNode m);
  void send_to_scheduler(size_t n, size_t s, ToScheduler m);
  /// Delivers everything, lowest channel first, until the network is quiet.
  /// Returns the number of messages delivered.
  size_t run(size_t limit = 1'000'000);
  /// Handles a message as if it had just arrived (for held or forged messages).
  void node_receive(size_t s, size_t n, const ToNode& m);
  void scheduler_receive(size_t n, size_t s, const ToScheduler& m);

  // --- observation ---
  /// Invariant violations seen while handling messages, with context.
  const std::vector<std::string>& violations() const { return violations_; }
  /// Checks one ledger: accounting agrees with its claims and allocations,
  /// allocated + claimed <= capacity, no task held twice, no claim older than
  /// the ttl (every ledger has been advanced to now). Returns "" when fine.
  std::string check_ledger(size_t n) const;
  /// Updates the cluster-wide count of allocations per task from ledger n
  /// and reports a task allocated on two nodes. Returns "" when fine.
  std::string check_allocations_unique(size_t n);
  /// Everything: every ledger, uniqueness over all ledgers, every
  /// scheduler's check_accounting(). Returns "" when fine.
  std::string check_all();
  /// How many times each task was turned into an allocation by a confirm.
  const std::map<TaskRef, uint32_t>& confirmations() const { return confirmations_; }
  /// Optional: called with one line per handled message.
  std::function<void(const std::string&)> trace;

 private:
  struct Slot {
    std::unique_ptr<Scheduler> scheduler;
    std::vector<JobId> finished;
    std::set<JobId> finished_set;
    std::vector<JobId> started;
    std::set<JobId> started_set;
    std::vector<std::pair<JobId, Operation>> operations;
    std::vector<OperationEnd> operations_ended;
  };

  bool subscribed(size_t s, size_t n) const;
  void publish(size_t n, std::vector<NodeEvent> events, std::optional<size_t> except);
  void advance_ledger(size_t n);
  void route(size_t s, Outbox& out);
  void push(const Channel& c);
  void settle(const Channel& c);
  void violation(std::string what);
  Epoch& seen_epoch(size_t n, PartitionId p) { return seen_epochs_[{n, p.value}]; }

  LedgerConfig ledger_config_;
  TimePoint now_{0};
  std::vector<NodeLedger> ledgers_;
  std::vector<NodeSpec> specs_;
  std::vector<Slot> schedulers_;
  std::map<Channel, std::deque<ToNode>> to_node_;
  std::map<Channel, std::deque<ToScheduler>> to_sched_;
  std::vector<Channel> busy_;
  std::set<Channel> busy_set_;
  std::vector<std::string> violations_;
  std::map<std::pair<size_t, uint32_t>, Epoch> seen_epochs_;
  /// (node, partition, claim id) -> when the node accepted the claim.
  std::map<std::tuple<size_t, uint32_t, uint64_t>, TimePoint> claim_born_;
  std::map<TaskRef, uint32_t> confirmations_;
  std::vector<std::vector<TaskRef>> last_allocated_;
  std::map<TaskRef, uint32_t> allocated_count_;
};

/// One partition of pool "default" with classes batch (the default) and
/// prod of one priority: the shape the policy tests share.
inline SchedulerConfig batch_and_prod_partition() {
  SchedulerConfig c;
  c.partition = PartitionId{1};
  c.pools = {"default"};
  c.classes = {ClassConfig::named("batch"), ClassConfig::named("prod")};
  c.default_class = "batch";
  c.unpark_interval = std::chrono::milliseconds(5);
  return c;
}

/// The policy over batch_and_prod_partition(): pool "default" with both
/// classes in it, default settings (a test sets its timers).
inline policy::PolicyConfig batch_and_prod_policy() {
  policy::PolicyConfig p;
  p.pools.push_back(policy::PoolSpec{"default", "", {}, {}});
  for (const char* name : {"batch", "prod"}) {
    policy::ClassSpec cls;
    cls.name = name;
    cls.pool = "default";
    p.classes.push_back(cls);
  }
  return p;
}


}  // namespace claimsched::core::testing
