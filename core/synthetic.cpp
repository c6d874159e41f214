#include "core/synthetic.hpp"

#include <algorithm>
#include <cmath>

#include "core/random.hpp"

namespace claimsched::core {

namespace {

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

// Task sizes are the base size times 1, 2 or 4 (probability 0.6, 0.3, 0.1),
// drawn separately for cpu and memory so the dominant resource varies.
constexpr double kMeanMultiplier = 0.6 * 1 + 0.3 * 2 + 0.1 * 4;

int64_t multiplier(Rng& rng) {
  double u = rng.unit();
  return u < 0.6 ? 1 : (u < 0.9 ? 2 : 4);
}

}  // namespace

std::vector<NodeSpec> make_nodes(const SyntheticClusterConfig& config) {
  std::vector<NodeSpec> nodes;
  nodes.reserve(config.nodes);
  for (uint32_t i = 0; i < config.nodes; ++i) {
    NodeSpec n;
    n.id = NodeId{i + 1};
    n.name = "node-" + std::to_string(i + 1);
    n.pool = config.pools[i % config.pools.size()];
    n.max_starting = config.max_starting;
    int shape = 0;
    if (config.heterogeneous) {
      uint64_t r = mix64(config.seed ^ (0xA5A5ULL << 32) ^ i) % 7;
      shape = r < 4 ? 0 : (r < 6 ? 1 : 2);
    }
    switch (shape) {
      case 0:
        n.capacity = Resources::cpu_memory(32'000, 128 * kGi);
        break;
      case 1:
        n.capacity = Resources::cpu_memory(16'000, 64 * kGi);
        n.labels.push_back("small");
        break;
      default:
        n.capacity = Resources::cpu_memory(64'000, 512 * kGi);
        n.capacity.set(dim::gpu, 4);
        n.labels.push_back("gpu");
        break;
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

SyntheticLoad::SyntheticLoad(SyntheticLoadConfig config, const Resources& cluster_capacity)
    : config_(std::move(config)) {
  config_.tasks_per_job = std::max<uint32_t>(1, config_.tasks_per_job);
  config_.waves = std::max<uint32_t>(1, config_.waves);
  jobs_ = (config_.tasks + config_.tasks_per_job - 1) / config_.tasks_per_job;
  double tasks_per_wave =
      std::max(1.0, static_cast<double>(config_.tasks) / static_cast<double>(config_.waves));
  double scale = config_.utilization / (tasks_per_wave * kMeanMultiplier);
  int64_t cpu = static_cast<int64_t>(std::floor(static_cast<double>(cluster_capacity[dim::cpu]) * scale));
  int64_t mem = static_cast<int64_t>(
      std::floor(static_cast<double>(cluster_capacity[dim::memory]) * scale / kMi)) * kMi;
  base_ = Resources::cpu_memory(std::max<int64_t>(cpu, 1), std::max<int64_t>(mem, kMi));
}

double SyntheticLoad::expected_fill(const Resources& capacity) const {
  double tasks_per_wave =
      std::max(1.0, static_cast<double>(config_.tasks) / static_cast<double>(config_.waves));
  double fill = 0;
  for (DimensionId d : {dim::cpu, dim::memory})
    if (capacity[d] > 0)
      fill = std::max(fill, tasks_per_wave * kMeanMultiplier * static_cast<double>(base_[d]) /
                                static_cast<double>(capacity[d]));
  return fill;
}

uint64_t SyntheticLoad::max_tasks_per_wave(const Resources& capacity, double utilization) {
  double cpu = static_cast<double>(capacity[dim::cpu]) * utilization / kMeanMultiplier;
  double mem = static_cast<double>(capacity[dim::memory]) * utilization / (kMeanMultiplier * kMi);
  return static_cast<uint64_t>(std::max(1.0, std::floor(std::min(cpu, mem))));
}

const SyntheticClass* SyntheticLoad::draw_class(Rng& rng) const {
  if (config_.classes.empty()) return nullptr;
  double total = 0;
  for (const auto& c : config_.classes) total += c.share;
  double u = rng.unit() * total;
  for (const auto& c : config_.classes) {
    if (u < c.share) return &c;
    u -= c.share;
  }
  return &config_.classes.back();
}

JobSpec SyntheticLoad::job(uint64_t i, TimePoint submit_time, uint64_t id_offset) const {
  Rng rng(mix64(config_.seed) ^ mix64(i + 0x1234));
  JobSpec j;
  j.id = JobId{i + 1 + id_offset};
  // Every pool sees every user (job i goes to pool i % pools).
  j.user = config_.user_prefix + std::to_string((i / config_.pools.size()) % std::max<uint32_t>(1, config_.users));
  j.pool = config_.pools[i % config_.pools.size()];
  uint64_t first = i * config_.tasks_per_job;
  j.count = static_cast<uint32_t>(
      std::min<uint64_t>(config_.tasks_per_job, config_.tasks > first ? config_.tasks - first : 1));
  j.per_task = Resources::cpu_memory(base_[dim::cpu] * multiplier(rng),
                                     base_[dim::memory] * multiplier(rng));
  j.gang = config_.gang_fraction > 0 && rng.chance(config_.gang_fraction);
  if (const SyntheticClass* c = draw_class(rng)) {
    j.job_class = c->name;
    if (c->whole_machine) {
      j.count = 1;
      j.per_task = config_.machine;
      j.gang = false;
    }
  }
  if (config_.runtime.count() > 0) {
    auto half = config_.runtime.count() / 2;
    j.simulated_runtime = Duration{half + static_cast<int64_t>(rng.below(static_cast<uint64_t>(
                                              std::max<int64_t>(1, config_.runtime.count()))))};
  }
  j.submit_time = submit_time;
  return j;
}

}  // namespace claimsched::core
