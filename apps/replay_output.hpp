#pragma once

// What `claimsched replay` prints and writes: the report as text (one
// column per configuration, the recorded schedule beside them) or --json, a
// CSV per job, and the plots' data for scripts/replay-plot.sh.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/replay/engine.hpp"
#include "core/replay/report.hpp"
#include "core/error.hpp"

namespace claimsched::apps {

/// One configuration's replay.
struct ConfigRun {
  std::string label;
  std::string config_path;
  size_t nodes = 0;
  double capacity_cpus = 0;
  double wall_s = 0;
  /// Trace lines skipped and jobs the cluster refused, by reason.
  std::map<std::string, uint64_t> skipped;
  core::replay::ReplayResult result;
  core::replay::ScheduleFigures figures;

  double jobs_per_wall_sec() const;
};

struct ReplayReport {
  std::string trace;
  double tau_s = 10;
  std::map<std::string, uint64_t> skipped;
  std::vector<ConfigRun> runs;
  /// The trace's own schedule, where it records waits.
  std::optional<core::replay::ScheduleFigures> recorded;
  std::vector<core::replay::JobOutcome> recorded_outcomes;
};

void print_replay_report(const ReplayReport& report, bool json);
/// One CSV per configuration: `path` itself for one, `STEM-LABEL.EXT` for several.
core::Status write_job_csvs(const ReplayReport& report, const std::string& path);
/// The plots' data in `dir` and the PNGs drawn from it by scripts/replay-plot.sh.
core::Status write_plots(const ReplayReport& report, const std::string& dir);

}  // namespace claimsched::apps
