#pragma once

// Non-negative decimal numbers as operators write them ("12", "1.5", ".25"),
// read exactly: never through a double, never rounded. One reader for every
// quantity with a unit (resources, durations).

#include <cstdint>
#include <string_view>

#include "core/error.hpp"

namespace claimsched::core {

/// `text` times `scale` as an integer: "1.5" with scale 1000 is 1500. Errors
/// (Errc::parse_error): not a number, a result that is not a whole number of
/// units ("0.1" with scale 1: "too many decimals"), a result above INT64_MAX.
Expected<int64_t> parse_scaled_decimal(std::string_view text, int64_t scale);

}  // namespace claimsched::core
