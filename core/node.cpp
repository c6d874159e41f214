#include "core/node.hpp"

namespace claimsched::core {

std::string_view to_string(NodeState s) {
  switch (s) {
    case NodeState::up:
      return "up";
    case NodeState::draining:
      return "draining";
    case NodeState::down:
      return "down";
  }
  return "unknown";
}

Expected<NodeState> parse_node_state(std::string_view s) {
  if (s == "up") return NodeState::up;
  if (s == "draining") return NodeState::draining;
  if (s == "down") return NodeState::down;
  return make_error(Errc::parse_error,
                    "unknown node state '" + std::string(s) + "' (up, draining, down)");
}

namespace {

std::string_view label_key(std::string_view label) { return label.substr(0, label.find('=')); }

}  // namespace

bool label_selector_matches(std::string_view selector, const std::vector<std::string>& labels) {
  bool negate = !selector.empty() && selector.front() == '!';
  if (negate) selector.remove_prefix(1);
  bool has_value = selector.find('=') != std::string_view::npos;
  bool found = false;
  for (const auto& label : labels) {
    if (has_value ? label == selector : label_key(label) == selector) {
      found = true;
      break;
    }
  }
  return found != negate;
}

bool label_selectors_match(const std::vector<std::string>& selectors,
                           const std::vector<std::string>& labels) {
  for (const auto& s : selectors)
    if (!label_selector_matches(s, labels)) return false;
  return true;
}

Status validate_label_selector(std::string_view selector) {
  std::string_view body = selector;
  if (!body.empty() && body.front() == '!') body.remove_prefix(1);
  auto key = label_key(body);
  if (key.empty())
    return make_error(Errc::invalid_argument, "label selector '" + std::string(selector) +
                                                  "' has an empty key");
  if (selector.front() == '!' && body.find('=') != std::string_view::npos)
    return make_error(Errc::invalid_argument, "label selector '" + std::string(selector) +
                                                  "': '!' takes a key, not key=value");
  for (char c : body)
    if (c == ',' || c == ' ' || c == '\t' || c == '\n')
      return make_error(Errc::invalid_argument,
                        "label selector '" + std::string(selector) + "' contains whitespace or ','");
  return Status::ok();
}

}  // namespace claimsched::core
