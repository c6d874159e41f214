#pragma once

// What this process uses, for reports: heap in use (glibc's mallinfo2) and the
// peak resident set size (/proc/self/status).

#include <cstdint>

namespace claimsched::apps {

/// Bytes currently allocated through malloc (including mmapped blocks).
uint64_t heap_in_use();
/// Peak resident set size in bytes (VmHWM), 0 if unknown.
uint64_t peak_rss();

}  // namespace claimsched::apps
