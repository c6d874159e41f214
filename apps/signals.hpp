#pragma once

// Waiting for SIGINT / SIGTERM in the main thread of a long-running process
// (server, agent): the signals are blocked in every thread (call
// block_stop_signals() before starting any), then one thread waits for them.

#include <chrono>

namespace claimsched::apps {

/// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts.
void block_stop_signals();
/// Waits up to `timeout` for SIGINT or SIGTERM; true if one arrived.
bool wait_for_stop_signal(std::chrono::milliseconds timeout);

}  // namespace claimsched::apps
