#pragma once

// What this process uses, for reports: heap in use (glibc's mallinfo2) and the
// peak resident set size (/proc/self/status).

#include <cstdint>

namespace claimsched::apps {

/// Bytes currently allocated through malloc (including mmapped blocks).
uint64_t heap_in_use();
/// Peak resident set size in bytes (VmHWM), 0 if unknown.
uint64_t peak_rss();
/// CPU time this process used so far (user + system, every thread), in
/// seconds; 0 if unknown.
double process_cpu_seconds();

/// Raises this process's soft limit on open files to its hard limit (at most
/// `cap`) and returns the limit now in force (0 if unknown). A server holds a
/// descriptor per connection, and CAF 0.17 neither caps its connections nor
/// times out one that never completes its handshake: at the usual soft limit
/// of 1024, a flood of idle connections locks every client out until it ends.
uint64_t raise_open_file_limit(uint64_t cap);

/// Ignores SIGPIPE in this long-running process: OpenSSL writes with write(2)
/// (cpp-httplib's HTTPS, to etcd or from the HTTP endpoint), so a peer that
/// goes away mid-answer would otherwise end the whole server or agent. A
/// write then fails with EPIPE, which every caller handles. Tasks do not
/// inherit it (the supervisor resets every signal disposition).
void ignore_broken_pipes();

}  // namespace claimsched::apps
