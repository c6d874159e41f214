#pragma once

// Synthetic clusters and loads for `claimsched sim` and the benchmarks. Every
// node and job is a pure function of the seed and its index, so a run is
// reproducible and the generator holds no per-job state.

#include <string>
#include <vector>

#include "core/job.hpp"
#include "core/node.hpp"
#include "core/random.hpp"

namespace claimsched::core {

struct SyntheticClusterConfig {
  uint32_t nodes = 1000;
  /// Pool names; node i goes to pools[i % pools.size()].
  std::vector<std::string> pools{"default"};
  /// Mix three machine shapes instead of one.
  bool heterogeneous = false;
  /// Nova's IO-ops limit per node (0 = none).
  uint32_t max_starting = 0;
  uint64_t seed = 1;
};

/// The machine shapes: the default is cpu=32,memory=128Gi; heterogeneous mixes
/// in cpu=16,memory=64Gi and cpu=64,memory=512Gi,gpu=4 (ratios 4:2:1 by count).
std::vector<NodeSpec> make_nodes(const SyntheticClusterConfig& config);

/// A scheduling class of the load's mix.
struct SyntheticClass {
  std::string name;
  /// Relative share of the jobs that name it.
  double share = 1.0;
  /// Each of its jobs is one task asking for SyntheticLoadConfig::machine (a
  /// DUCC reservation); otherwise its tasks are shaped like the rest.
  bool whole_machine = false;
};

struct SyntheticLoadConfig {
  uint64_t tasks = 100'000;
  uint32_t tasks_per_job = 10;
  /// The load is sized so that `tasks / waves` tasks fill this share of the
  /// cluster's capacity.
  double utilization = 0.9;
  /// 1 without churn: all tasks fit at once. With churn, tasks finish and
  /// the run places `waves` cluster-fulls one after the other.
  uint32_t waves = 1;
  /// Task runtime with churn (uniform in [runtime/2, 3*runtime/2]); zero =
  /// tasks run until the end.
  Duration runtime{0};
  /// Share of jobs that are gangs.
  double gang_fraction = 0.0;
  /// Pools jobs go to, round-robin.
  std::vector<std::string> pools{"default"};
  /// Classes the jobs name, drawn by share; empty: jobs name no class (the
  /// scheduler's default).
  std::vector<SyntheticClass> classes;
  /// What a whole-machine job asks for.
  Resources machine;
  std::string user_prefix = "user";
  uint32_t users = 16;
  uint64_t seed = 1;
};

class SyntheticLoad {
 public:
  /// `cluster_capacity` is the sum over all nodes.
  SyntheticLoad(SyntheticLoadConfig config, const Resources& cluster_capacity);

  uint64_t job_count() const { return jobs_; }
  /// The i-th job (0-based); ids are i + 1 + id_offset.
  JobSpec job(uint64_t i, TimePoint submit_time, uint64_t id_offset = 0) const;
  /// The size of the smallest task (the size unit the multipliers scale).
  const Resources& base_task() const { return base_; }
  /// How full one wave of this load is expected to make a cluster of
  /// `capacity` (dominant resource). Above `utilization` when tasks would be
  /// smaller than one millicore or one MiB (they are rounded up): above 1,
  /// most of them can never be placed.
  double expected_fill(const Resources& capacity) const;
  /// The most tasks per wave that keep every task at least one millicore and
  /// one MiB (and the fill at the utilization asked for).
  static uint64_t max_tasks_per_wave(const Resources& capacity, double utilization);

 private:
  const SyntheticClass* draw_class(Rng& rng) const;

  SyntheticLoadConfig config_;
  uint64_t jobs_ = 0;
  Resources base_;
};

}  // namespace claimsched::core
