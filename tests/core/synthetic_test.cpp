// Synthetic clusters and loads: a pure function of the seed, sized as documented.

#include "core/synthetic.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace claimsched::core {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

Resources total_capacity(const std::vector<NodeSpec>& nodes) {
  Resources r;
  for (const auto& n : nodes) r += n.capacity;
  return r;
}

TEST(SyntheticCluster, HomogeneousNodesInRoundRobinPools) {
  SyntheticClusterConfig c;
  c.nodes = 10;
  c.pools = {"a", "b", "c"};
  c.max_starting = 4;
  auto nodes = make_nodes(c);
  ASSERT_EQ(nodes.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(nodes[i].id, NodeId{i + 1});
    EXPECT_EQ(nodes[i].name, "node-" + std::to_string(i + 1));
    EXPECT_EQ(nodes[i].pool, c.pools[i % 3]);
    EXPECT_EQ(nodes[i].capacity, Resources::cpu_memory(32'000, 128 * kGi));
    EXPECT_EQ(nodes[i].max_starting, 4u);
    EXPECT_TRUE(nodes[i].labels.empty());
  }
}

TEST(SyntheticCluster, HeterogeneousShapesMixFourTwoOne) {
  SyntheticClusterConfig c;
  c.nodes = 7000;
  c.heterogeneous = true;
  c.seed = 3;
  auto nodes = make_nodes(c);
  std::map<std::string, int> shapes;
  for (const auto& n : nodes) {
    if (n.labels.empty()) {
      EXPECT_EQ(n.capacity, Resources::cpu_memory(32'000, 128 * kGi));
      ++shapes["default"];
    } else if (n.labels == std::vector<std::string>{"small"}) {
      EXPECT_EQ(n.capacity, Resources::cpu_memory(16'000, 64 * kGi));
      ++shapes["small"];
    } else {
      ASSERT_EQ(n.labels, std::vector<std::string>{"gpu"});
      EXPECT_EQ(n.capacity[dim::gpu], 4);
      EXPECT_EQ(n.capacity[dim::cpu], 64'000);
      ++shapes["gpu"];
    }
  }
  EXPECT_NEAR(shapes["default"], 4000, 200);
  EXPECT_NEAR(shapes["small"], 2000, 150);
  EXPECT_NEAR(shapes["gpu"], 1000, 100);
  // Same seed, same cluster; another seed, another mix.
  EXPECT_EQ(make_nodes(c), nodes);
  c.seed = 4;
  EXPECT_NE(make_nodes(c), nodes);
}

class SyntheticLoadTest : public ::testing::Test {
 protected:
  SyntheticLoadTest() {
    cluster.nodes = 1000;
    capacity = total_capacity(make_nodes(cluster));
  }
  SyntheticClusterConfig cluster;
  Resources capacity;
};

TEST_F(SyntheticLoadTest, JobsAreAPureFunctionOfSeedAndIndex) {
  SyntheticLoadConfig c;
  c.tasks = 1000;
  c.gang_fraction = 0.3;
  c.runtime = std::chrono::seconds(10);
  SyntheticLoad a(c, capacity), b(c, capacity);
  for (uint64_t i = 0; i < a.job_count(); ++i)
    EXPECT_EQ(a.job(i, TimePoint{0}), b.job(i, TimePoint{0}));
  // Out of order, on demand: the same job.
  EXPECT_EQ(a.job(57, TimePoint{0}), b.job(57, TimePoint{0}));
  c.seed = 2;
  SyntheticLoad other(c, capacity);
  int differ = 0;
  for (uint64_t i = 0; i < a.job_count(); ++i)
    differ += !(a.job(i, TimePoint{0}).per_task == other.job(i, TimePoint{0}).per_task);
  EXPECT_GT(differ, 20);
}

TEST_F(SyntheticLoadTest, JobsAreValidAndNumbered) {
  SyntheticLoadConfig c;
  c.tasks = 95;
  c.tasks_per_job = 10;
  c.pools = {"p", "q"};
  c.users = 3;
  SyntheticLoad load(c, capacity);
  ASSERT_EQ(load.job_count(), 10u);
  uint64_t tasks = 0;
  for (uint64_t i = 0; i < load.job_count(); ++i) {
    JobSpec j = load.job(i, std::chrono::seconds(5), 100);
    EXPECT_EQ(j.id, JobId{i + 101});
    EXPECT_EQ(j.pool, c.pools[i % 2]);
    EXPECT_EQ(j.user, "user" + std::to_string(i / 2 % 3)) << "every pool sees every user";
    EXPECT_EQ(j.submit_time, std::chrono::seconds(5));
    EXPECT_TRUE(validate(j)) << validate(j).error().to_string();
    tasks += j.count;
  }
  EXPECT_EQ(tasks, 95u);  // the last job takes the remainder
  EXPECT_EQ(load.job(9, TimePoint{0}).count, 5u);
}

TEST_F(SyntheticLoadTest, OneWaveFillsTheRequestedShareOfTheCluster) {
  SyntheticLoadConfig c;
  c.tasks = 100'000;
  c.tasks_per_job = 10;
  c.utilization = 0.9;
  SyntheticLoad load(c, capacity);
  Resources demand;
  for (uint64_t i = 0; i < load.job_count(); ++i) {
    JobSpec j = load.job(i, TimePoint{0});
    demand += j.per_task.times(j.count);
  }
  for (DimensionId d : {dim::cpu, dim::memory}) {
    double share = static_cast<double>(demand[d]) / static_cast<double>(capacity[d]);
    EXPECT_NEAR(share, 0.9, 0.9 * 0.03) << "dimension " << int(d);
  }
  // Task sizes are the base size times 1, 2 or 4.
  const Resources& base = load.base_task();
  for (uint64_t i = 0; i < 200; ++i) {
    JobSpec j = load.job(i, TimePoint{0});
    for (DimensionId d : {dim::cpu, dim::memory}) {
      int64_t m = j.per_task[d] / base[d];
      EXPECT_EQ(j.per_task[d] % base[d], 0);
      EXPECT_TRUE(m == 1 || m == 2 || m == 4) << m;
    }
  }
}

TEST_F(SyntheticLoadTest, WavesScaleTheTaskSizeDown) {
  SyntheticLoadConfig c;
  c.tasks = 40'000;
  c.waves = 4;
  c.utilization = 0.8;
  SyntheticLoad load(c, capacity);
  Resources demand;
  for (uint64_t i = 0; i < load.job_count(); ++i) {
    JobSpec j = load.job(i, TimePoint{0});
    demand += j.per_task.times(j.count);
  }
  // Each wave of 10'000 tasks fills 80%: all of them together, four clusters' worth.
  double share = static_cast<double>(demand[dim::cpu]) / static_cast<double>(capacity[dim::cpu]);
  EXPECT_NEAR(share, 4 * 0.8, 4 * 0.8 * 0.03);
}

TEST_F(SyntheticLoadTest, RuntimesAndGangs) {
  SyntheticLoadConfig c;
  c.tasks = 20'000;
  c.runtime = std::chrono::seconds(10);
  c.gang_fraction = 0.25;
  SyntheticLoad load(c, capacity);
  uint64_t gangs = 0;
  for (uint64_t i = 0; i < load.job_count(); ++i) {
    JobSpec j = load.job(i, TimePoint{0});
    EXPECT_GE(j.simulated_runtime, std::chrono::seconds(5));
    EXPECT_LT(j.simulated_runtime, std::chrono::seconds(15));
    gangs += j.gang;
  }
  EXPECT_NEAR(static_cast<double>(gangs) / static_cast<double>(load.job_count()), 0.25, 0.03);
  c.runtime = Duration{0};
  c.gang_fraction = 0;
  SyntheticLoad forever(c, capacity);
  EXPECT_EQ(forever.job(3, TimePoint{0}).simulated_runtime, Duration{0});
  EXPECT_FALSE(forever.job(3, TimePoint{0}).gang);
}

TEST_F(SyntheticLoadTest, ClassesAreDrawnByShareAndAWholeMachineJobAsksForOneMachine) {
  SyntheticLoadConfig c;
  c.tasks = 100'000;
  c.tasks_per_job = 10;
  c.classes = {{"batch", 0.75, false}, {"whole", 0.25, true}};
  c.machine = Resources::cpu_memory(32'000, int64_t{128} << 30);
  SyntheticLoad load(c, capacity);
  uint64_t whole = 0;
  for (uint64_t i = 0; i < load.job_count(); ++i) {
    JobSpec j = load.job(i, TimePoint{0});
    ASSERT_TRUE(j.job_class == "batch" || j.job_class == "whole") << j.job_class;
    if (j.job_class != "whole") continue;
    ++whole;
    EXPECT_EQ(j.count, 1u);
    EXPECT_EQ(j.per_task, c.machine);
    EXPECT_FALSE(j.gang);
  }
  EXPECT_NEAR(static_cast<double>(whole) / static_cast<double>(load.job_count()), 0.25, 0.02);
  // Without classes the jobs name none (the scheduler's default class).
  SyntheticLoadConfig plain;
  EXPECT_EQ(SyntheticLoad(plain, capacity).job(0, TimePoint{0}).job_class, "");
}

}  // namespace
}  // namespace claimsched::core
