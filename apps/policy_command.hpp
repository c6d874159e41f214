#pragma once

// `claimsched policy eval SNAPSHOT.toml [--json]`: a dry run of the fair-share
// and preemption policy (core/policy) on a cluster snapshot. Nothing runs: it
// prints the fair share and usage of every pool, class, user and job, their
// statuses, the class of every allocation, and what the next cycle would place,
// preempt and evict. The snapshot format is deploy/POLICY.md.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/policy/model.hpp"
#include "core/policy/result.hpp"

namespace CLI {
class App;
}

namespace claimsched::apps {

struct PolicyOptions {
  /// The snapshot file (TOML).
  std::string snapshot;
  /// JSON instead of tables.
  bool json = false;
  /// Jobs to explain in words after the tables.
  std::vector<uint64_t> explain;
  /// Cycles to simulate: after each, the plan is taken as done (victims gone,
  /// placements running) and time moves by `step`. The last one is printed in
  /// full, the ones before as their plans.
  uint32_t cycles = 1;
  core::Duration step = std::chrono::seconds(10);
  /// Where to write the [state] of the next cycle (TOML), to feed it back.
  std::string state_out;

  core::Status validate() const;
};

/// Adds `policy eval` to `app`; the options land in `out`.
void add_policy_commands(CLI::App& app, PolicyOptions& out);

/// Runs `policy eval`; returns the process exit code (0, or 1 for a bad
/// snapshot or an unreadable file, with the reason on stderr).
int run_policy_eval(const PolicyOptions& options);

/// Parses a snapshot. Errors say `source:line: field: what`.
core::Expected<core::policy::Snapshot> parse_policy_snapshot(std::string_view toml, std::string_view source,
                                                             core::policy::PolicyState* state = nullptr);

/// The cycle as JSON (the same content as render_text).
std::string render_policy_json(const core::policy::CycleResult& result);

/// A [state] table that parse_policy_snapshot reads back.
std::string render_policy_state(const core::policy::PolicyState& state);

}  // namespace claimsched::apps
