#pragma once

// The directory of a durable `claimsched sim` run (--data-dir): the run's
// parameters (sim.json, so --resume continues the same load), one partition
// store per scheduler, the process's node store, and the log of jobs the run
// acknowledged (acked.log, read back by a resumed run to check that every
// acknowledged job survived).

#include <string>
#include <vector>

#include "apps/sim.hpp"
#include "core/error.hpp"
#include "core/ids.hpp"

namespace claimsched::apps {

class SimDataDir {
 public:
  /// Prepares `dir` for a new run: refuses a directory that holds a run.
  static core::Expected<SimDataDir> create(const SimOptions& options);
  /// Opens `dir` of an earlier run and replaces the load-defining fields of
  /// `options` by the run's own.
  static core::Expected<SimDataDir> resume(SimOptions& options);

  SimDataDir(SimDataDir&&) noexcept;
  SimDataDir& operator=(SimDataDir&&) noexcept;
  SimDataDir(const SimDataDir&) = delete;
  ~SimDataDir();

  const std::string& cluster_id() const { return cluster_id_; }
  std::string partition_dir(uint32_t partition) const;
  std::string node_dir() const;
  std::string replica_dir(uint32_t partition) const;

  /// Appends an acknowledged job id (one write(2): survives a killed process).
  void append_acknowledged(core::JobId id);
  /// Every id appended so far, by this run and the ones before it.
  core::Expected<std::vector<core::JobId>> read_acknowledged() const;

 private:
  SimDataDir() = default;
  std::string dir_;
  std::string cluster_id_;
  int acked_fd_ = -1;
};

}  // namespace claimsched::apps
