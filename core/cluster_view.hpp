#pragma once

// A scheduler's view of the nodes of its partition: the last snapshot each node
// reported, minus what this scheduler has claimed there and not yet heard
// back about. Nodes are numbered densely (0..n-1) in the order they joined.

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/capacity_index.hpp"
#include "core/node.hpp"

namespace claimsched::core {

using NodeIndex = uint32_t;

struct NodeView {
  NodeId id;
  uint32_t pool = 0;
  /// Position in the pool's capacity index.
  uint32_t slot = 0;
  NodeState state = NodeState::up;
  Generation generation = 0;
  Resources capacity;
  /// Free as last reported by the node.
  Resources reported_free;
  /// Claimed by this scheduler and not yet answered.
  Resources in_flight;
  uint32_t reported_starting = 0;
  uint32_t in_flight_tasks = 0;
  /// Requests sent to the node that move its generation when they succeed.
  uint32_t in_flight_changes = 0;
  uint32_t max_starting = 0;
  std::vector<std::string> labels;

  Resources available() const { return reported_free - in_flight; }
};

struct PoolView {
  std::string name;
  /// The pool tree (DUCC nodepools): the parent (none for a root) and every
  /// pool below, parents before their children.
  std::optional<uint32_t> parent;
  std::vector<uint32_t> descendants;
  std::vector<NodeIndex> nodes;  // by slot
  CapacityIndex index;
  /// Element-wise maximum capacity of the pool's nodes (for "can never fit").
  Resources max_capacity;
  Resources total_capacity;
  /// Sum of what is available on its usable nodes.
  Resources total_available;
};

class ClusterView {
 public:
  /// Strict CAS: a node with a change of ours in flight is not offered for
  /// another claim, because that claim's expected generation would be a guess
  /// (it depends on whether the first is accepted).
  void set_one_change_in_flight(bool on) { one_change_in_flight_ = on; }

  /// Declares a pool (below `parent`, which must be declared already);
  /// returns its index (idempotent by name).
  uint32_t add_pool(const std::string& name, std::optional<uint32_t> parent = std::nullopt);
  std::optional<uint32_t> find_pool(std::string_view name) const;

  /// Adds a node to its pool (which must exist); returns its dense index, or the
  /// existing index if the node is known (its spec and snapshot are refreshed).
  NodeIndex add_node(const NodeSpec& spec, uint32_t pool, const NodeSnapshot& snapshot);
  std::optional<NodeIndex> find_node(NodeId id) const;

  /// Applies a node's report if it is not older than what the view has.
  /// Returns false for a stale report.
  bool apply_snapshot(NodeIndex n, const NodeSnapshot& snapshot);
  /// Records a claim sent to node n / its answer.
  void add_in_flight(NodeIndex n, const Resources& total, uint32_t tasks);
  void remove_in_flight(NodeIndex n, const Resources& total, uint32_t tasks);
  /// Withholds room on node n from placement for a while (backfilling keeps
  /// a later reservation's room from jobs that would delay it), or gives it
  /// back: available() shrinks by `room`, without counting as a claim (no
  /// task, no change of generation in flight).
  void withhold(NodeIndex n, const Resources& room);
  void unwithhold(NodeIndex n, const Resources& room);
  /// Records a confirm or release sent to node n (it moves the generation) /
  /// its answer.
  void add_change_in_flight(NodeIndex n);
  void remove_change_in_flight(NodeIndex n);

  const NodeView& node(NodeIndex n) const { return nodes_[n]; }
  /// Re-reads a node's availability into its pool's index (after node_mut).
  void reindex(NodeIndex n);
  /// True if some node's availability grew in any dimension (or it became
  /// usable) since the last call: work waiting for capacity may fit now.
  bool take_grew() { return std::exchange(grew_, false); }
  bool grew_pending() const { return grew_; }
  size_t node_count() const { return nodes_.size(); }
  /// Nodes in each NodeState (up, draining, down), kept as states change:
  /// a metrics scrape reads it without walking every node.
  const std::array<uint32_t, 3>& nodes_by_state() const { return nodes_by_state_; }
  const PoolView& pool(uint32_t p) const { return pools_[p]; }
  size_t pool_count() const { return pools_.size(); }

 private:
  /// Node views in chunks: growth never copies them, and leaves at most a
  /// chunk unused (a vector doubling would leave up to half).
  class Nodes {
   public:
    static constexpr size_t kChunk = 256;
    Nodes() = default;
    Nodes(const Nodes& o) : size_(o.size_) {
      for (const auto& c : o.chunks_) chunks_.push_back(std::make_unique<std::array<NodeView, kChunk>>(*c));
    }
    Nodes& operator=(const Nodes& o) {
      if (this != &o) *this = Nodes(o);
      return *this;
    }
    Nodes(Nodes&&) = default;
    Nodes& operator=(Nodes&&) = default;
    NodeView& operator[](size_t i) { return (*chunks_[i / kChunk])[i % kChunk]; }
    const NodeView& operator[](size_t i) const { return (*chunks_[i / kChunk])[i % kChunk]; }
    size_t size() const { return size_; }
    void push_back(NodeView v);

   private:
    std::vector<std::unique_ptr<std::array<NodeView, kChunk>>> chunks_;
    size_t size_ = 0;
  };
  /// NodeId -> index, open addressing (ids are never removed).
  class IdMap {
   public:
    std::optional<NodeIndex> find(NodeId id) const;
    void insert(NodeId id, NodeIndex n);

   private:
    size_t slot_of(NodeId id) const;
    std::vector<std::pair<NodeId, NodeIndex>> slots_;
    size_t used_ = 0;
  };
  Nodes nodes_;
  std::array<uint32_t, 3> nodes_by_state_{};
  std::vector<PoolView> pools_;
  IdMap by_id_;
  bool one_change_in_flight_ = false;
  bool grew_ = false;
};

}  // namespace claimsched::core
