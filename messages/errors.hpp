#pragma once

// core::Errc as a CAF error category, so errors cross actor (and process)
// boundaries as values with their message intact.

#include <caf/error.hpp>

#include "core/error.hpp"

namespace claimsched::messages {

/// The atom naming our error category in caf::error.
inline constexpr caf::atom_value kErrorCategory = caf::atom("claimsched");

/// Wraps an Error (code and message) in a caf::error of our category.
caf::error to_caf_error(const core::Error& e);
/// The inverse for errors of our category; other categories become io_error
/// with CAF's rendering of the error as the message.
core::Error from_caf_error(const caf::error& e, const caf::actor_system* sys = nullptr);

}  // namespace claimsched::messages
