#pragma once

// `claimsched replay TRACE --config cluster.toml [--config b.toml ...]`: a
// workload trace (SWF or CSV, gzip or plain) through each configuration's
// own pipeline in virtual time (core/replay/engine.hpp), with the report:
// text, --json, a CSV per job, plots.

#include <string>
#include <vector>

namespace claimsched::apps {

struct ReplayOptions {
  std::string trace;
  /// Cluster configurations to compare; none: the default one-pool cluster.
  std::vector<std::string> configs;
  /// The machine, `N:RESOURCES[@POOL]` per group of nodes; none: from the
  /// trace's header (MaxNodes nodes sharing MaxProcs CPUs) in the first leaf pool.
  std::vector<std::string> machines;
  /// `FIELD=VALUE:class=C,pool=P` rules (core/replay/mapping.hpp).
  std::vector<std::string> maps;
  bool strict = false;
  /// Jobs may be preempted (and restarted from the beginning); off by
  /// default: a trace's parallel jobs are HPC jobs that do not survive it.
  bool preemptible = false;
  bool json = false;
  bool quiet = false;
  /// Replay only the first N jobs of the trace (0: all).
  uint64_t limit = 0;
  /// A CSV with a row per job (one file per configuration when several:
  /// `-LABEL` before the extension).
  std::string csv;
  /// Write the plots' data and PNGs (scripts/replay-plot.sh) here.
  std::string plot_dir;
  /// Bounded slowdown's threshold, seconds.
  double tau_s = 10;
};

int run_replay(const ReplayOptions& options);

}  // namespace claimsched::apps
