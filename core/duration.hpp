#pragma once

// Durations as operators write them: "250ms", "10s", "1.5s", "5m", "2h", "1d"
// (also "us", "ns"). A bare number is rejected: the unit is never guessed.
// Read exactly (never rounded: "0.2ns" is an error), at most kMaxDuration.

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::core {

Expected<Duration> parse_duration(std::string_view text);
/// The inverse of parse_duration, using the largest unit that is exact.
std::string format_duration(Duration d);
/// Rounded for people to read at a glance: "850ms", "12.5s", "3m 05s",
/// "2h 07m", "3d 04h" (the sign is dropped: it is how long, not when).
std::string human_duration(Duration d);

}  // namespace claimsched::core
