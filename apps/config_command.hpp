#pragma once

// `claimsched config check FILE [--json]`: validates a cluster configuration
// (apps/cluster_config.hpp, deploy/CONFIG.md) without starting anything.
//
//   exit 0  valid: a one-paragraph summary of what the file configures
//           (--json: the effective configuration, defaults filled in);
//   exit 1  invalid: one line per problem on stderr, `FILE:LINE: field: message`
//           (--json: the problems as JSON on stdout as well);
//   exit 2  the file cannot be read.

#include <string>

#include "apps/cluster_config.hpp"

namespace CLI {
class App;
}

namespace claimsched::apps {

struct ConfigCheckOptions {
  /// The file to check.
  std::string file;
  /// JSON on stdout instead of the summary.
  bool json = false;
};

/// Adds `config check` to `app`; the options land in `out`.
void add_config_commands(CLI::App& app, ConfigCheckOptions& out);

/// Runs `config check`; returns the exit code (0 valid, 1 problems, 2 unreadable).
int run_config_check(const ConfigCheckOptions& options);

/// The summary `config check` prints for a valid file: one paragraph, in words.
std::string summarize_cluster_config(const ClusterConfig& config, std::string_view source);

/// The effective configuration and the problems as JSON (what --json prints).
std::string cluster_config_json(const ConfigReport& report, std::string_view source);

}  // namespace claimsched::apps
