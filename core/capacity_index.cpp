#include "core/capacity_index.hpp"

namespace claimsched::core {

Resources CapacityIndex::unavailable() {
  Resources r;
  for (size_t d = 0; d < kMaxDimensions; ++d) r.set(static_cast<DimensionId>(d), -1);
  return r;
}

void CapacityIndex::grow() {
  size_t new_leaves = leaves_ == 0 ? 16 : leaves_ * 2;
  std::vector<Resources> tree(2 * new_leaves, unavailable());
  for (size_t i = 0; i < size_; ++i) tree[new_leaves + i] = tree_[leaves_ + i];
  tree_ = std::move(tree);
  leaves_ = new_leaves;
  for (size_t node = leaves_ - 1; node >= 1; --node) pull_up(node);
}

CapacityIndex::Hint& CapacityIndex::hint_for(const Resources& shape, size_t anchor, bool down) const {
  ++hint_clock_;
  for (auto& h : hints_) {
    if (h.anchor == anchor && h.down == down && h.shape == shape) {
      h.last_used = hint_clock_;
      return h;
    }
  }
  if (hints_.size() < kMaxHints) {
    hints_.push_back(Hint{shape, anchor, down, anchor, hint_clock_});
    return hints_.back();
  }
  auto oldest = std::min_element(hints_.begin(), hints_.end(), [](const Hint& a, const Hint& b) {
    return a.last_used < b.last_used;
  });
  *oldest = Hint{shape, anchor, down, anchor, hint_clock_};
  return *oldest;
}

void CapacityIndex::pull_up(size_t node) { tree_[node] = tree_[2 * node].max(tree_[2 * node + 1]); }

size_t CapacityIndex::add(const Resources& available) {
  if (size_ == leaves_) grow();
  size_t slot = size_++;
  update(slot, available);
  return slot;
}

void CapacityIndex::update(size_t slot, const Resources& available) {
  size_t node = leaves_ + slot;
  if (!available.fits_in(tree_[node])) {
    // The slot grew: whatever was known not to fit there may fit now.
    for (auto& h : hints_) {
      if (!h.down && h.anchor <= slot && slot < h.bound) h.bound = slot;
      if (h.down && h.bound <= slot && slot < h.anchor) h.bound = slot + 1;
    }
  }
  tree_[node] = available;
  for (node /= 2; node >= 1; node /= 2) {
    Resources merged = tree_[2 * node].max(tree_[2 * node + 1]);
    if (merged == tree_[node]) break;  // ancestors already agree
    tree_[node] = merged;
  }
}

}  // namespace claimsched::core
