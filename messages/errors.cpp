#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/message.hpp>

namespace claimsched::messages {

namespace {

/// True if `code` is one of core::Errc's values. Asks core's own to_string,
/// so a code added to core::Errc is known here without touching this file.
bool is_known_code(uint8_t code) {
  return code != 0 && core::to_string(static_cast<core::Errc>(code)) != "unknown error";
}

/// The human message a to_caf_error put in the context; anything else a peer
/// may have put there is rendered rather than dropped.
std::string context_message(const caf::message& ctx) {
  if (ctx.empty()) return {};
  if (ctx.match_elements<std::string>()) return ctx.get_as<std::string>(0);
  return caf::to_string(ctx);
}

}  // namespace

caf::error to_caf_error(const core::Error& e) {
  return caf::error{static_cast<uint8_t>(e.code), kErrorCategory, caf::make_message(e.message)};
}

core::Error from_caf_error(const caf::error& e, const caf::actor_system* sys) {
  if (!e) return core::Error{core::Errc::io_error, "no error (an empty caf::error)"};
  if (e.category() == kErrorCategory) {
    auto message = context_message(e.context());
    if (!is_known_code(e.code())) {
      std::string text = "unknown claimsched error code " + std::to_string(e.code());
      if (!message.empty()) text += ": " + message;
      return core::Error{core::Errc::corrupt, std::move(text)};
    }
    return core::Error{static_cast<core::Errc>(e.code()), std::move(message)};
  }
  return core::Error{core::Errc::io_error, sys != nullptr ? sys->render(e) : caf::to_string(e)};
}

}  // namespace claimsched::messages
