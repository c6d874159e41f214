#include "core/protocol.hpp"

namespace claimsched::core {

std::string_view to_string(ClaimOutcome o) {
  switch (o) {
    case ClaimOutcome::accepted:
      return "accepted";
    case ClaimOutcome::stale_epoch:
      return "stale_epoch";
    case ClaimOutcome::conflict:
      return "conflict";
    case ClaimOutcome::insufficient:
      return "insufficient";
    case ClaimOutcome::not_schedulable:
      return "not_schedulable";
    case ClaimOutcome::invalid:
      return "invalid";
  }
  return "unknown";
}

std::string_view to_string(ConfirmOutcome o) {
  switch (o) {
    case ConfirmOutcome::confirmed:
      return "confirmed";
    case ConfirmOutcome::unknown_claim:
      return "unknown_claim";
    case ConfirmOutcome::stale_epoch:
      return "stale_epoch";
  }
  return "unknown";
}

std::string_view to_string(NodeEvent::Kind k) {
  switch (k) {
    case NodeEvent::Kind::claim_expired:
      return "claim_expired";
    case NodeEvent::Kind::task_finished:
      return "task_finished";
    case NodeEvent::Kind::task_started:
      return "task_started";
    case NodeEvent::Kind::task_exited:
      return "task_exited";
  }
  return "unknown";
}

}  // namespace claimsched::core
