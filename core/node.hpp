#pragma once

// The node model: what a machine offers and how the rest of the cluster sees
// it at one generation.

#include <string>
#include <string_view>
#include <vector>

#include "core/ids.hpp"
#include "core/resources.hpp"

namespace claimsched::core {

enum class NodeState : uint8_t {
  /// Accepts claims.
  up = 0,
  /// Keeps what runs, accepts no new claims (an operator drains it).
  draining = 1,
  /// Unreachable or stopped; its tasks are lost.
  down = 2,
};

std::string_view to_string(NodeState s);
Expected<NodeState> parse_node_state(std::string_view s);

struct NodeSpec {
  NodeId id;
  std::string name;
  /// The leaf pool the node belongs to.
  std::string pool;
  Resources capacity;
  /// `key=value` or bare `key` labels, e.g. `ssd`, `os=windows`.
  std::vector<std::string> labels;
  /// Nova's IO-ops filter: at most this many tasks may be starting at once on
  /// the node (claimed or confirmed but not yet running). 0 = no limit.
  uint32_t max_starting = 0;

  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

/// What a node reports about itself: enough for a scheduler to correct its view
/// without another round trip.
struct NodeSnapshot {
  NodeId node;
  Generation generation = 0;
  NodeState state = NodeState::up;
  Resources capacity;
  /// capacity - allocated - claimed.
  Resources free;
  /// Claimed tasks plus confirmed tasks that have not started yet.
  uint32_t starting = 0;

  friend bool operator==(const NodeSnapshot&, const NodeSnapshot&) = default;
};

/// True if `labels` satisfies one selector: `key` (present), `key=value`
/// (present with that value) or `!key` (absent).
bool label_selector_matches(std::string_view selector, const std::vector<std::string>& labels);
/// True if `labels` satisfies every selector.
bool label_selectors_match(const std::vector<std::string>& selectors,
                           const std::vector<std::string>& labels);
/// Checks a selector's syntax; the error names it.
Status validate_label_selector(std::string_view selector);

}  // namespace claimsched::core
