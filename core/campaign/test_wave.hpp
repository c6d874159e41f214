#pragma once

// A test campaign (the seed's "test scheduling"): exactly one task in each
// pool the campaign names, sent as soon as the pool has a free slot, and a
// report per pool: ran, exit code, run time. The metascheduler serves test
// campaigns ahead of every default one (metascheduler.hpp). A default
// campaign started with `--test-first` runs this wave first and its bulk
// only on the pools where the test succeeded (pools_passing_test).

#include <optional>
#include <string>
#include <vector>

#include "core/campaign/campaign_scheduler.hpp"

namespace claimsched::core::campaign {

/// One pool's answer to a test campaign.
struct TestResult {
  std::string pool;
  bool ran = false;
  int exit_code = 0;
  Duration run_time{0};
};

/// `--test-first`: the pools whose test task ran and exited 0, in the
/// campaign's order.
std::vector<std::string> pools_passing_test(const CampaignSpec& spec, const std::vector<TestResult>& results);

class TestWave {
 public:
  explicit TestWave(std::vector<std::string> pools);

  /// The pools to send the test task (index 0) to now: offered with a free
  /// slot, never sent before. Each pool is returned at most once.
  std::vector<std::string> dispatch(const std::vector<PoolOffer>& offers);
  /// The test task on `pool` ended with `exit_code` after `run_time`.
  void ended(const std::string& pool, int exit_code, Duration run_time);
  /// Every pool has reported.
  bool complete() const;
  /// One line per pool, in the campaign's order; `ran` is false until the
  /// pool has reported.
  const std::vector<TestResult>& results() const { return results_; }

 private:
  TestResult* find(const std::string& pool);

  std::vector<TestResult> results_;
  std::vector<bool> sent_;
};

}  // namespace claimsched::core::campaign
