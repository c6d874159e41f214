#pragma once

// An index over a pool's nodes by what is available on them, so that one
// placement decision does not scan every node. A segment tree keeps, for
// every range of slots, the element-wise maximum of available resources; a
// subtree whose maximum cannot hold the request is skipped whole. With
// correlated dimensions a decision costs O(log n) node visits.
//
// The tree's leaves are buckets of kBucket slots, scanned in a row: a tree
// down to single slots costs two maxima (128 bytes) per slot, and up to
// twice that when the slot count is just past a power of two, which in a
// sim of 100k nodes is as much as the node's whole view. Slots grow by an
// eighth, not by doubling, for the same reason.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <queue>
#include <vector>

#include "core/resources.hpp"

namespace claimsched::core {

class CapacityIndex {
 public:
  /// Available resources of a slot that must never be chosen (a node that is
  /// down or removed): negative everywhere, so no request fits.
  static Resources unavailable();

  /// Adds a slot and returns its number (slots are 0, 1, 2, ... in order).
  size_t add(const Resources& available);
  void update(size_t slot, const Resources& available);
  size_t size() const { return slots_.size(); }
  const Resources& available(size_t slot) const { return slots_[slot]; }
  /// Element-wise maximum over all slots.
  Resources max_available() const { return slots_.empty() ? unavailable() : tree_[1]; }

  /// The first slot in [from, to) whose available resources fit `request` and
  /// for which `accept(slot)` is true.
  template <class Accept>
  std::optional<size_t> find_first(const Resources& request, size_t from, size_t to,
                                   Accept&& accept) const {
    if (slots_.empty() || from >= to) return std::nullopt;
    size_t first_fit = size();
    return find_first_in(1, 0, leaves_ * kBucket, request, from, std::min(to, size()), accept, first_fit);
  }

  /// The last slot in [from, to) whose available resources fit `request` and
  /// for which `accept(slot)` is true (a scan downward).
  template <class Accept>
  std::optional<size_t> find_last(const Resources& request, size_t from, size_t to, Accept&& accept) const {
    if (slots_.empty() || from >= to) return std::nullopt;
    return find_last_in(1, 0, leaves_ * kBucket, request, from, std::min(to, size()), accept, nullptr);
  }

  /// find_first for scans that start at the same slot again and again (a
  /// scheduler's fill-first scan). The element-wise maximum cannot prune a
  /// range where one node has the cpu and another the memory, so a filled
  /// prefix of fragmented nodes would be walked on every decision; instead the
  /// index remembers, per request shape and start, how far nothing fits, and
  /// forgets it as soon as a slot in that range grows.
  template <class Accept>
  std::optional<size_t> find_first_remembered(const Resources& request, size_t from, size_t to,
                                              Accept&& accept) const {
    if (slots_.empty() || from >= to) return std::nullopt;
    to = std::min(to, size());
    Hint& hint = hint_for(request, from, false);
    size_t begin = std::max(from, hint.bound);
    size_t first_fit = to;
    auto found = find_first_in(1, 0, leaves_ * kBucket, request, begin, to, accept, first_fit);
    if (first_fit > hint.bound) hint.bound = std::min(first_fit, to);
    return found;
  }

  /// find_last for scans that go down from the same slot again and again:
  /// remembers, per request shape and end, from where on nothing fits.
  template <class Accept>
  std::optional<size_t> find_last_remembered(const Resources& request, size_t from, size_t to,
                                             Accept&& accept) const {
    if (slots_.empty() || from >= to) return std::nullopt;
    to = std::min(to, size());
    Hint& hint = hint_for(request, to, true);
    size_t end = std::min(to, hint.bound);
    size_t last_fit = from;  // one past the highest slot that fits (from: none)
    auto found = find_last_in(1, 0, leaves_ * kBucket, request, from, end, accept, &last_fit);
    if (last_fit < hint.bound) hint.bound = std::max(last_fit, from);
    return found;
  }

  /// Visits slots that fit `request` in descending order of available[d];
  /// `visit(slot)` returns false to stop.
  template <class Visit>
  void visit_descending(DimensionId d, const Resources& request, Visit&& visit) const {
    if (slots_.empty()) return;
    // Ties go to the subtree whose first slot is lowest, and between a
    // subtree and its own descendants to the deeper one: with many equal
    // values (an empty cluster) the search then walks down to the lowest
    // slot instead of expanding every equal subtree first. A single slot is
    // an entry of height 0 (`node` is then the slot).
    struct Entry {
      int64_t value;
      size_t first_slot;
      size_t height;
      size_t node;
    };
    auto worse = [](const Entry& a, const Entry& b) {
      if (a.value != b.value) return a.value < b.value;
      if (a.first_slot != b.first_slot) return a.first_slot > b.first_slot;
      return a.height > b.height;
    };
    auto entry = [&](size_t node) {
      size_t height = 1;
      size_t leaf = node;
      while (leaf < leaves_) {
        leaf <<= 1;
        ++height;
      }
      return Entry{tree_[node][d], (leaf - leaves_) * kBucket, height, node};
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> frontier(worse);
    frontier.push(entry(1));
    while (!frontier.empty()) {
      Entry top = frontier.top();
      frontier.pop();
      if (top.height == 0) {
        if (request.fits_in(slots_[top.node]) && !visit(top.node)) return;
        continue;
      }
      if (!request.fits_in(tree_[top.node])) continue;
      if (top.node >= leaves_) {
        size_t end = std::min(top.first_slot + kBucket, size());
        for (size_t slot = top.first_slot; slot < end; ++slot)
          frontier.push(Entry{slots_[slot][d], slot, 0, slot});
        continue;
      }
      frontier.push(entry(2 * top.node));
      frontier.push(entry(2 * top.node + 1));
    }
  }

 private:
  template <class Accept>
  std::optional<size_t> find_last_in(size_t node, size_t lo, size_t hi, const Resources& request, size_t from,
                                     size_t to, Accept& accept, size_t* last_fit) const {
    if (hi <= from || lo >= to || !request.fits_in(tree_[node])) return std::nullopt;
    if (node >= leaves_) {
      for (size_t slot = std::min(hi, to); slot-- > std::max(lo, from);) {
        if (!request.fits_in(slots_[slot])) continue;
        if (last_fit) *last_fit = std::max(*last_fit, slot + 1);
        if (accept(slot)) return slot;
      }
      return std::nullopt;
    }
    size_t mid = lo + (hi - lo) / 2;
    if (auto right = find_last_in(2 * node + 1, mid, hi, request, from, to, accept, last_fit)) return right;
    return find_last_in(2 * node, lo, mid, request, from, to, accept, last_fit);
  }

  template <class Accept>
  std::optional<size_t> find_first_in(size_t node, size_t lo, size_t hi, const Resources& request,
                                      size_t from, size_t to, Accept& accept,
                                      size_t& first_fit) const {
    if (hi <= from || lo >= to || !request.fits_in(tree_[node])) return std::nullopt;
    if (node >= leaves_) {
      for (size_t slot = std::max(lo, from), end = std::min(hi, to); slot < end; ++slot) {
        if (!request.fits_in(slots_[slot])) continue;
        first_fit = std::min(first_fit, slot);
        if (accept(slot)) return slot;
      }
      return std::nullopt;
    }
    size_t mid = lo + (hi - lo) / 2;
    if (auto left = find_first_in(2 * node, lo, mid, request, from, to, accept, first_fit))
      return left;
    return find_first_in(2 * node + 1, mid, hi, request, from, to, accept, first_fit);
  }

  /// What the remembered scans know: slots [anchor, bound) (upward scans) or
  /// [bound, anchor) (downward) cannot hold `shape`.
  struct Hint {
    Resources shape;
    size_t anchor = 0;
    bool down = false;
    size_t bound = 0;
    uint64_t last_used = 0;
  };
  static constexpr size_t kMaxHints = 64;
  Hint& hint_for(const Resources& shape, size_t anchor, bool down) const;

  /// Slots per leaf of the tree.
  static constexpr size_t kBucket = 8;

  void grow();
  void pull_up(size_t node);
  /// Element-wise maximum over the slots of bucket `bucket`.
  Resources bucket_max(size_t bucket) const;

  /// Available resources per slot.
  std::vector<Resources> slots_;
  /// Buckets the tree has room for (a power of two).
  size_t leaves_ = 0;
  /// 1-based heap layout: node i has children 2i and 2i+1; bucket b is the
  /// leaf leaves_ + b.
  std::vector<Resources> tree_;
  /// A cache, not state: losing it changes no answer, only its cost.
  mutable std::vector<Hint> hints_;
  mutable uint64_t hint_clock_ = 0;
};

}  // namespace claimsched::core
