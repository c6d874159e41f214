#pragma once

// JSON string escaping as nlohmann's dump() writes it (its `replace` error
// handler for bytes that are not UTF-8), for the places that write JSON
// text directly: the job list's writer (client_json.cpp) and log lines
// (log_format.cpp).

#include <string>
#include <string_view>

namespace claimsched::apps {

/// Appends `text` as the inside of a JSON string: quotes, backslashes and
/// control characters escaped, UTF-8 as is, invalid bytes as U+FFFD.
void append_json_escaped(std::string& out, std::string_view text);

}  // namespace claimsched::apps
