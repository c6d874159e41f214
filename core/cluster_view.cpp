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
  if (static_cast<size_t>(v.state) < nodes_by_state_.size()) ++nodes_by_state_[static_cast<size_t>(v.state)];
  nodes_.push_back(std::move(v));
  by_id_.insert(spec.id, n);
  reindex(n);
  return n;
}

std::optional<NodeIndex> ClusterView::find_node(NodeId id) const { return by_id_.find(id); }

void ClusterView::Nodes::push_back(NodeView v) {
  if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<std::array<NodeView, kChunk>>());
  (*this)[size_++] = std::move(v);
}

size_t ClusterView::IdMap::slot_of(NodeId id) const {
  // Fibonacci hashing: node ids of agents are hashes, of sims dense.
  uint64_t h = static_cast<uint64_t>(id.value) * 0x9E3779B97F4A7C15ULL;
  return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
}

std::optional<NodeIndex> ClusterView::IdMap::find(NodeId id) const {
  if (slots_.empty()) return std::nullopt;
  for (size_t i = slot_of(id);; i = (i + 1) & (slots_.size() - 1)) {
    const auto& [key, n] = slots_[i];
    if (key == id) return n;
    if (key.value == 0 && n == UINT32_MAX) return std::nullopt;
  }
}

void ClusterView::IdMap::insert(NodeId id, NodeIndex n) {
  // Empty slots hold (0, UINT32_MAX); at most half are used.
  if (2 * (used_ + 1) > slots_.size()) {
    std::vector<std::pair<NodeId, NodeIndex>> old(std::max<size_t>(16, 2 * slots_.size()),
                                                  {NodeId{0}, UINT32_MAX});
    old.swap(slots_);
    used_ = 0;
    for (const auto& [k, v] : old)
      if (!(k.value == 0 && v == UINT32_MAX)) insert(k, v);
  }
  size_t i = slot_of(id);
  while (!(slots_[i].first.value == 0 && slots_[i].second == UINT32_MAX)) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = {id, n};
  ++used_;
}

bool ClusterView::apply_snapshot(NodeIndex n, const NodeSnapshot& s) {
  NodeView& v = nodes_[n];
  if (s.generation < v.generation) return false;
  v.generation = s.generation;
  if (v.state != s.state) {
    if (static_cast<size_t>(v.state) < nodes_by_state_.size()) --nodes_by_state_[static_cast<size_t>(v.state)];
    if (static_cast<size_t>(s.state) < nodes_by_state_.size()) ++nodes_by_state_[static_cast<size_t>(s.state)];
  }
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

void ClusterView::withhold(NodeIndex n, const Resources& room) {
  nodes_[n].in_flight += room;
  reindex(n);
}

void ClusterView::unwithhold(NodeIndex n, const Resources& room) {
  nodes_[n].in_flight -= room;
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
  // Unusable slots hold unavailable() (negative): they add nothing. A node
  // briefly below zero in some dimension (its report and our claims both
  // count a claim) adds nothing there either: the total bounds what the
  // pool's nodes can take, and a negative part would lower it under that.
  if (!(before == CapacityIndex::unavailable())) pool.total_available -= before.max(Resources{});
  if (usable) pool.total_available += now_available.max(Resources{});
  index.update(v.slot, now_available);
}

}  // namespace claimsched::core
