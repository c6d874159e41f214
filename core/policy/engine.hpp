#pragma once

// The policy's working form of a snapshot: names resolved to indices, the pool
// tree in order, accounted (quantum-rounded) resources, and the results of each
// phase as they are computed. policy.hpp is the interface; this header is for
// the phases, their tests and the benchmark.
//
// Phases (each a pure function of the model and what came before):
//   build_model          index and validate the snapshot; DUCC job caps
//   compute_fair_shares  the how-much phase (DUCC tiers, DRF water-filling)
//   compute_statuses     YTsaurus statuses, starvation timers, allocation classes
//   plan_cycle           corrections, placements, preemptive stages, defragmentation

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/policy/model.hpp"
#include "core/policy/result.hpp"

namespace claimsched::core::policy {

inline constexpr uint32_t kNone = UINT32_MAX;

/// The indices [first, last), for `for (uint32_t i : range)`. Not
/// std::views::iota: clang 14, which builds the fuzz targets (tests/fuzz),
/// cannot compile libstdc++ 12's iota_view.
struct IndexRange {
  struct iterator {
    uint32_t i;
    uint32_t operator*() const { return i; }
    iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator==(const iterator&) const = default;
  };
  uint32_t first = 0;
  uint32_t last = 0;
  iterator begin() const { return {first}; }
  iterator end() const { return {last}; }
};

struct ModelPool {
  const PoolSpec* spec = nullptr;
  uint32_t parent = kNone;
  /// Subpools by name.
  std::vector<uint32_t> children;
  uint32_t depth = 0;
  /// Up nodes directly in this pool / in its subtree (memory floored to quanta).
  Resources own_capacity;
  Resources scope_capacity;
  /// Own nodes by id.
  std::vector<uint32_t> nodes;
  /// Pareto front of the capacities of own schedulable nodes / of the subtree's.
  std::vector<Resources> own_shapes;
  std::vector<Resources> scope_shapes;
  /// Classes bound here, best priority first, then name.
  std::vector<uint32_t> classes;
  /// Effective settings (tree-wide values with this pool's and its ancestors' overrides).
  Duration starvation_timeout{0};
  Duration aggressive_starvation_timeout{0};
  double tolerance = 0.8;
  bool aggressive_enabled = false;
  // Statuses: demand, fair share and usage of the work bound to the subtree.
  Resources demand_vec;
  Resources fair_vec;
  Resources usage_vec;
  Share demand_share = 0;
  Share fair_share = 0;
  Share usage_share = 0;
  SchedulingStatus scheduling = SchedulingStatus::normal;
  StarvationStatus starvation = StarvationStatus::non_starving;
  TimePoint below_since = kNever;
};

struct ModelClass {
  const ClassSpec* spec = nullptr;
  uint32_t pool = 0;
  /// (class, user) groups of this class, by user name.
  std::vector<uint32_t> groups;
};

/// The jobs of one user in one class.
struct ModelGroup {
  uint32_t cls = 0;
  uint32_t user = 0;
  /// Job indices by id: its part of Model::packed_job.
  std::span<const uint32_t> jobs;
  /// Its jobs' positions in the packed arrays (see Model).
  uint32_t packed_begin = 0;
  uint32_t packed_end = 0;
};

struct ModelUser {
  std::string_view name;
  /// Over all non-preemptible classes (global allotment or the user's override).
  const Limits* allotment = nullptr;
};

struct ModelNode {
  const NodeInfo* info = nullptr;
  uint32_t pool = 0;
  /// Up: takes new work; its capacity counts.
  bool schedulable = false;
  /// Not down: its allocations count.
  bool alive = false;
  /// Capacity minus the accounted allocations on it, or what the node reported.
  Resources free;
  bool reports_free = false;
  /// Allocations on it (alive nodes only): its part of Model::node_allocs.
  std::span<const uint32_t> allocs;
  /// Runs non-preemptible work / a reserve.
  bool has_non_preemptible = false;
  bool reserved = false;
};

struct ModelAlloc {
  uint32_t job = 0;
  uint32_t node = 0;
  const AllocationInfo* info = nullptr;
  /// Accounted resources (a reserve holds its whole machine).
  Resources res;
  bool lost = false;
  bool squatter = false;
  /// Not in a pool the job may use: evicted.
  bool outside = false;
  AllocationClass cls = AllocationClass::non_preemptible;
};

struct ModelJob {
  const JobInfo* info = nullptr;
  uint32_t cls = 0;
  uint32_t user = 0;
  uint32_t group = 0;
  /// The class's pool (shares are computed there).
  uint32_t pool = 0;
  /// Where its tasks may run: JobInfo::pool (in the class pool's subtree) or
  /// the class's pool, and for preemptible work the subpools below it.
  uint32_t domain = 0;
  ClassPolicy policy = ClassPolicy::fair_share;
  /// fair_share class and the job allows it.
  bool preemptible = true;
  bool initialized = false;
  /// Per-task resources as accounted (memory rounded up to quanta; a reserve's machine).
  Resources per_task;
  /// Dominant share of one task in the scope of its pool; 0 when unresolvable.
  Share delta = 0;
  uint32_t running = 0;
  /// Of those, the ones that run already (not landing this cycle).
  uint32_t started = 0;
  uint32_t pending = 0;
  /// DUCC cap on running + pending (tasks).
  uint32_t cap = 0;
  CapReason cap_reason = CapReason::none;
  /// No node the job may use could ever hold one task.
  bool unresolvable = false;
  std::string unresolvable_reason;
  /// Its allocations are model.allocs[alloc_begin, alloc_end), by (start, index).
  uint32_t alloc_begin = 0;
  uint32_t alloc_end = 0;
  IndexRange allocs() const { return {alloc_begin, alloc_end}; }
  /// Capped demand (cap tasks), clamped to the whole pool.
  Share demand = 0;
  /// The how-much phase's result (a copy of Model::fair made by compute_statuses).
  Share fair = 0;
  /// Non-preemptible: the pending request was granted (fits room and allotments).
  bool granted = false;
  std::string grant_reason;
  uint32_t reserve_node = kNone;
  // Statuses.
  Share usage = 0;
  SchedulingStatus scheduling = SchedulingStatus::normal;
  StarvationStatus own_starvation = StarvationStatus::non_starving;
  StarvationStatus starvation = StarvationStatus::non_starving;
  TimePoint below_since = kNever;
};

/// Indexes into its own vectors (ModelGroup::jobs, ModelNode::allocs): it
/// moves, it is not copied. One flat vector per kind rather than one per node
/// or group: a policy cycle builds a model, and allocating hundreds of small
/// vectors each time was a tenth of a replay's time.
struct Model {
  Model() = default;
  Model(Model&&) = default;
  Model& operator=(Model&&) = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Snapshot* snapshot = nullptr;
  TimePoint now{0};
  std::vector<ModelPool> pools;
  /// Pool indices in pre-order (parents first) and post-order (subpools first).
  std::vector<uint32_t> preorder;
  std::vector<uint32_t> postorder;
  std::vector<ModelClass> classes;
  std::vector<ModelGroup> groups;
  std::vector<ModelUser> users;
  std::vector<ModelNode> nodes;
  std::vector<ModelAlloc> allocs;
  /// Allocation indices by node (each node's ModelNode::allocs), in allocation order.
  std::vector<uint32_t> node_allocs;
  /// By id.
  std::vector<ModelJob> jobs;
  /// Dimensions any node or job uses, ascending.
  std::vector<DimensionId> dims;
  /// The how-much phase's output, by job.
  std::vector<Share> fair;
  /// What the fair-share solver reads of every job, packed in (class, user,
  /// id) order so that it streams: the job index, per-task resources in
  /// `dims` (dims.size() values per job), task share, demand (0 for
  /// non-preemptible policies and unresolvable jobs).
  std::vector<uint32_t> packed_job;
  std::vector<int64_t> packed_r;
  std::vector<Share> packed_delta;
  std::vector<Share> packed_demand;
  /// Jobs of fixed_share and reserve classes.
  std::vector<uint32_t> np_jobs;
  /// What non-preemptible work holds already, per user and per (class, user) group.
  std::vector<Resources> np_user_usage;
  std::vector<Resources> np_group_usage;
  Share tolerance_default = 0;
  Share preemption_threshold = 0;
  Share aggressive_threshold = 0;

  bool in_subtree(uint32_t pool, uint32_t ancestor) const;
  uint32_t find_job(JobId id) const;

  /// Empties the model for build_model to fill again, keeping the storage
  /// of its vectors (a stage refills one model every cycle).
  void clear();

  /// build_model's working vectors and indices, kept with the model so a
  /// model built again reuses them rather than allocating them each cycle.
  struct Scratch {
    std::vector<const PoolSpec*> pool_specs;
    std::map<std::string_view, uint32_t> pool_index;
    std::vector<uint32_t> roots;
    std::vector<std::pair<uint32_t, size_t>> stack;
    std::vector<const ClassSpec*> class_specs;
    std::unordered_map<std::string_view, uint32_t> class_index;
    std::unordered_map<std::string_view, uint32_t> user_index;
    std::vector<std::string_view> user_names;
    std::vector<const uint32_t*> user_slot;
    std::vector<const NodeInfo*> node_specs;
    std::vector<uint32_t> node_table;
    std::vector<const JobInfo*> job_specs;
    std::vector<uint32_t> start, next, by_user, count, ccount;
  };
  Scratch scratch;
};

/// Indexes and validates `snapshot` (which must outlive the model).
Expected<Model> build_model(const Snapshot& snapshot);
/// The same into `model`, whatever it held (its storage is reused).
Status build_model(const Snapshot& snapshot, Model& model);

/// The how-much phase: fills ModelJob::demand, fair, granted, reserve_node.
void compute_fair_shares(Model& model);

/// Usage shares, scheduling and starvation statuses (with the timers of
/// `state`), allocation classes. Returns the timers of the next state.
void compute_statuses(Model& model, const PolicyState& state, PolicyState& next);

/// Corrections, preemptive stages, defragmentation: removals and where the
/// room they make goes, asking the placement engine over `view` (the
/// scheduler's, or one built from the snapshot). Updates the node backoff
/// timers of `next`. Without `reasons`, `pending_reasons` stays empty (no
/// words are built: nobody will read them, as in a replay).
Plan plan_cycle(const Model& model, const ClusterView& view, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons, bool reasons = true);
struct PlanBuffers;
/// The same, working in `buffers` (whatever they held).
Plan plan_cycle(const Model& model, const ClusterView& view, const PolicyState& state, PolicyState& next,
                std::vector<std::string>& pending_reasons, bool reasons, PlanBuffers& buffers);

/// The planner's working vectors (plan_cycle), kept from one cycle to the
/// next with the rest of CycleBuffers: each is sized and set again by the
/// planner, only their storage carries over.
struct PlanBuffers {
  std::vector<Resources> free, pool_free, pool_usage;
  std::vector<int64_t> running, pending;
  std::vector<int32_t> priority;
  std::vector<Share> usage;
  std::vector<uint32_t> placed, removed_count, preorder_pos, subtree_end, stage_ran, vnode;
  std::vector<std::string> notes;
  std::vector<char> removed, node_sorted, fragmented;
  std::vector<std::vector<uint32_t>> node_order;
  std::vector<std::tuple<Resources, uint32_t, bool, bool>> room_cache;
  // The preemptive stages'.
  std::vector<uint32_t> starving, tried_nodes, backoff_nodes;
  std::vector<char> candidate;
  std::vector<std::vector<uint32_t>> by_pool, constrained_by_pool;
};

/// What run_cycle works in, kept by a stage from one cycle to the next so
/// that a cycle reuses the last one's storage rather than allocating it.
struct CycleBuffers {
  CycleBuffers() = default;
  CycleBuffers(CycleBuffers&&) = default;
  CycleBuffers& operator=(CycleBuffers&&) = default;
  // Scratch that a cycle sets again whole: a copy (of a stage, say) starts
  // empty and decides what the original would.
  CycleBuffers(const CycleBuffers&) {}
  CycleBuffers& operator=(const CycleBuffers&) { return *this; }

  Model model;
  std::vector<std::string> pending_reasons;
  std::vector<Resources> job_usage, job_fair, job_demand;
  std::vector<uint32_t> pool_jobs;
  PlanBuffers plan;
};

/// run_cycle (policy.hpp) into `out`, whatever it held, working in `buffers`.
Status run_cycle(const Snapshot& snapshot, const ClusterView& view, const PolicyState& state, CycleResult& out,
                 CycleBuffers& buffers, bool allocation_rows = true, bool reasons = true);

/// Exact resource vector of a job's fair share.
Resources fair_share_vector(const ModelJob& job);

/// Rounds a ratio setting to fixed point.
Share ratio_to_share(double ratio);

}  // namespace claimsched::core::policy
