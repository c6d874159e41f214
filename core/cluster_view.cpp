#include "core/cluster_view.hpp"

namespace claimsched::core {

uint32_t ClusterView::add_pool(const std::string& name, std::optional<uint32_t> parent) {
  if (auto p = find_pool(name)) return *p;
  PoolView pool;
  pool.name = name;
  pool.parent = parent;
  auto index = static_cast<uint32_t>(pools_.size());
  pools_.push_back(std::move(pool));
  for (auto a = parent; a; a = pools_[*a].parent) pools_[*a].descendants.push_back(index);
  return index;
}

std::optional<uint32_t> ClusterView::find_pool(std::string_view name) const {
  for (size_t i = 0; i < pools_.size(); ++i)
    if (pools_[i].name == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

NodeIndex ClusterView::add_node(const NodeSpec& spec, uint32_t pool, const NodeSnapshot& snapshot) {
  if (auto existing = find_node(spec.id)) {
    NodeView& v = nodes_[*existing];
    v.labels = spec.labels;
    v.max_starting = spec.max_starting;
    // A re-registration restarts the generation sequence from the node's report.
    v.generation = 0;
    apply_snapshot(*existing, snapshot);
    return *existing;
  }
  NodeIndex n = static_cast<NodeIndex>(nodes_.size());
  NodeView v;
  v.id = spec.id;
  v.pool = pool;
  v.labels = spec.labels;
  v.max_starting = spec.max_starting;
  v.capacity = snapshot.capacity;
  v.generation = snapshot.generation;
  v.state = snapshot.state;
  v.reported_free = snapshot.free;
  v.reported_starting = snapshot.starting;
  PoolView& p = pools_[pool];
  v.slot = static_cast<uint32_t>(p.index.add(CapacityIndex::unavailable()));
  p.nodes.push_back(n);
  p.max_capacity = p.nodes.size() == 1 ? v.capacity : p.max_capacity.max(v.capacity);
  p.total_capacity += v.capacity;
  nodes_.push_back(std::move(v));
  by_id_.emplace(spec.id, n);
  reindex(n);
  return n;
}

std::optional<NodeIndex> ClusterView::find_node(NodeId id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

bool ClusterView::apply_snapshot(NodeIndex n, const NodeSnapshot& s) {
  NodeView& v = nodes_[n];
  if (s.generation < v.generation) return false;
  v.generation = s.generation;
  v.state = s.state;
  if (!(v.capacity == s.capacity)) {
    PoolView& p = pools_[v.pool];
    p.total_capacity -= v.capacity;
    p.total_capacity += s.capacity;
    p.max_capacity = p.max_capacity.max(s.capacity);
    v.capacity = s.capacity;
  }
  v.reported_free = s.free;
  v.reported_starting = s.starting;
  reindex(n);
  return true;
}

void ClusterView::add_in_flight(NodeIndex n, const Resources& total, uint32_t tasks) {
  NodeView& v = nodes_[n];
  v.in_flight += total;
  v.in_flight_tasks += tasks;
  ++v.in_flight_changes;
  reindex(n);
}

void ClusterView::remove_in_flight(NodeIndex n, const Resources& total, uint32_t tasks) {
  NodeView& v = nodes_[n];
  v.in_flight -= total;
  v.in_flight_tasks -= tasks;
  --v.in_flight_changes;
  reindex(n);
}

void ClusterView::add_change_in_flight(NodeIndex n) {
  ++nodes_[n].in_flight_changes;
  reindex(n);
}

void ClusterView::remove_change_in_flight(NodeIndex n) {
  if (nodes_[n].in_flight_changes > 0) --nodes_[n].in_flight_changes;
  reindex(n);
}

void ClusterView::reindex(NodeIndex n) {
  const NodeView& v = nodes_[n];
  bool usable = v.state == NodeState::up;
  if (usable && v.max_starting > 0 && v.reported_starting + v.in_flight_tasks >= v.max_starting)
    usable = false;
  if (one_change_in_flight_ && v.in_flight_changes > 0) usable = false;
  PoolView& pool = pools_[v.pool];
  auto& index = pool.index;
  Resources now_available = usable ? v.available() : CapacityIndex::unavailable();
  const Resources& before = index.available(v.slot);
  if (!now_available.fits_in(before)) grew_ = true;
  // Unusable slots hold unavailable() (negative): they add nothing.
  if (!(before == CapacityIndex::unavailable())) pool.total_available -= before;
  if (usable) pool.total_available += now_available;
  index.update(v.slot, now_available);
}

}  // namespace claimsched::core
