#pragma once

// --log-format: spdlog's lines as text (the default, for people) or as one
// JSON object per line (for log shippers: Vector, Fluent Bit, Loki):
//   {"time":"2026-01-02T12:00:03.123Z","level":"info","logger":"claimsched",
//    "pid":4242,"thread":4243,"message":"partition 1: recovered 3 job(s) ..."}
// Times are UTC; the message is escaped as JSON strings are.

#include <string>
#include <string_view>

namespace claimsched::apps {

/// Sets the default logger's format: "text" or "json" (anything else is a
/// usage error the command line refuses before this is called).
void set_log_format(std::string_view format);

}  // namespace claimsched::apps
