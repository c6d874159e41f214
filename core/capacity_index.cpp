#include "core/capacity_index.hpp"

namespace claimsched::core {

Resources CapacityIndex::unavailable() {
  Resources r;
  for (size_t d = 0; d < kMaxDimensions; ++d) r.set(static_cast<DimensionId>(d), -1);
  return r;
}

void CapacityIndex::grow() {
  size_t new_leaves = leaves_ == 0 ? 2 : leaves_ * 2;
  std::vector<Resources> tree(2 * new_leaves, unavailable());
  for (size_t b = 0; b < leaves_; ++b) tree[new_leaves + b] = tree_[leaves_ + b];
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

Resources CapacityIndex::bucket_max(size_t bucket) const {
  Resources merged = unavailable();
  size_t end = std::min((bucket + 1) * kBucket, slots_.size());
  for (size_t slot = bucket * kBucket; slot < end; ++slot) merged = merged.max(slots_[slot]);
  return merged;
}

size_t CapacityIndex::add(const Resources& available) {
  if (slots_.size() == leaves_ * kBucket) grow();
  if (slots_.size() == slots_.capacity()) slots_.reserve(slots_.size() + std::max(kBucket, slots_.size() / 8));
  size_t slot = slots_.size();
  slots_.push_back(unavailable());
  update(slot, available);
  return slot;
}

void CapacityIndex::update(size_t slot, const Resources& available) {
  const Resources before = slots_[slot];
  if (!available.fits_in(before)) {
    // The slot grew: whatever was known not to fit there may fit now.
    for (auto& h : hints_) {
      if (!h.down && h.anchor <= slot && slot < h.bound) h.bound = slot;
      if (h.down && h.bound <= slot && slot < h.anchor) h.bound = slot + 1;
    }
  }
  slots_[slot] = available;
  size_t node = leaves_ + slot / kBucket;
  // A slot raises its bucket's maximum where it grew; where it shrank it
  // lowers it only if it held the maximum there, which only its bucket can
  // tell (withholding and claims shrink slots that seldom hold it).
  bool held_top = false;
  for (size_t d = 0; d < kMaxDimensions && !held_top; ++d)
    held_top = available.values()[d] < before.values()[d] && before.values()[d] >= tree_[node].values()[d];
  Resources merged = held_top ? bucket_max(slot / kBucket) : tree_[node].max(available);
  if (merged == tree_[node]) return;
  tree_[node] = merged;
  for (node /= 2; node >= 1; node /= 2) {
    merged = tree_[2 * node].max(tree_[2 * node + 1]);
    if (merged == tree_[node]) break;  // ancestors already agree
    tree_[node] = merged;
  }
}

}  // namespace claimsched::core
