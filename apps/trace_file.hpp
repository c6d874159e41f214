#pragma once

// Reads a workload trace file for `claimsched replay`: plain or gzip (by its
// magic bytes, whatever its name), parsed as SWF or CSV (core/replay/trace.hpp).

#include <string>

#include "core/replay/trace.hpp"

namespace claimsched::apps {

/// The file's text, decompressed if it is gzip. Errors name the file and why
/// (missing, unreadable, a corrupt or truncated gzip stream).
core::Expected<std::string> read_trace_text(const std::string& path);

/// read_trace_text, then core::replay::parse_trace; errors name the file.
core::Expected<core::replay::Trace> load_trace(const std::string& path, const core::replay::TraceOptions& options);

}  // namespace claimsched::apps
