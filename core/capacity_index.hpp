#pragma once

// An index over a pool's nodes by what is available on them, so that one
// placement decision does not scan every node. A segment tree keeps, for
// every range of slots, the element-wise maximum of available resources; a
// subtree whose maximum cannot hold the request is skipped whole. With
// correlated dimensions a decision costs O(log n) node visits.

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
  size_t size() const { return size_; }
  const Resources& available(size_t slot) const { return tree_[leaves_ + slot]; }
  /// Element-wise maximum over all slots.
  Resources max_available() const { return size_ == 0 ? unavailable() : tree_[1]; }

  /// The first slot in [from, to) whose available resources fit `request` and
  /// for which `accept(slot)` is true.
  template <class Accept>
  std::optional<size_t> find_first(const Resources& request, size_t from, size_t to,
                                   Accept&& accept) const {
    if (size_ == 0 || from >= to) return std::nullopt;
    return find_first_in(1, 0, leaves_, request, from, std::min(to, size_), accept);
  }

  /// Visits slots that fit `request` in descending order of available[d];
  /// `visit(slot)` returns false to stop.
  template <class Visit>
  void visit_descending(DimensionId d, const Resources& request, Visit&& visit) const {
    if (size_ == 0) return;
    using Entry = std::pair<int64_t, size_t>;
    // Ties on the key go to the lower tree position, i.e. the lower slot.
    auto cmp = [](const Entry& a, const Entry& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(cmp)> frontier(cmp);
    frontier.emplace(tree_[1][d], 1);
    while (!frontier.empty()) {
      size_t node = frontier.top().second;
      frontier.pop();
      if (!request.fits_in(tree_[node])) continue;
      if (node >= leaves_) {
        if (!visit(node - leaves_)) return;
        continue;
      }
      frontier.emplace(tree_[2 * node][d], 2 * node);
      frontier.emplace(tree_[2 * node + 1][d], 2 * node + 1);
    }
  }

 private:
  template <class Accept>
  std::optional<size_t> find_first_in(size_t node, size_t lo, size_t hi, const Resources& request,
                                      size_t from, size_t to, Accept& accept) const {
    if (hi <= from || lo >= to || !request.fits_in(tree_[node])) return std::nullopt;
    if (node >= leaves_) {
      size_t slot = node - leaves_;
      if (accept(slot)) return slot;
      return std::nullopt;
    }
    size_t mid = lo + (hi - lo) / 2;
    if (auto left = find_first_in(2 * node, lo, mid, request, from, to, accept)) return left;
    return find_first_in(2 * node + 1, mid, hi, request, from, to, accept);
  }

  void grow();
  void pull_up(size_t node);

  size_t size_ = 0;
  size_t leaves_ = 0;
  /// 1-based heap layout: node i has children 2i and 2i+1; leaves start at leaves_.
  std::vector<Resources> tree_;
};

}  // namespace claimsched::core
