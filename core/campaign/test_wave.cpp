#include "core/campaign/test_wave.hpp"

#include <algorithm>

namespace claimsched::core::campaign {

TestWave::TestWave(std::vector<std::string> pools) : sent_(pools.size(), false) {
  for (auto& pool : pools) results_.push_back(TestResult{std::move(pool), false, 0, Duration{0}});
}

std::vector<std::string> TestWave::dispatch(const std::vector<PoolOffer>& offers) {
  std::vector<std::string> out;
  for (size_t i = 0; i < results_.size(); ++i) {
    if (sent_[i]) continue;
    auto offer = std::find_if(offers.begin(), offers.end(),
                              [&](const PoolOffer& o) { return o.pool == results_[i].pool && o.free > 0; });
    if (offer == offers.end()) continue;
    sent_[i] = true;
    out.push_back(results_[i].pool);
  }
  return out;
}

TestResult* TestWave::find(const std::string& pool) {
  auto it = std::find_if(results_.begin(), results_.end(), [&](const TestResult& r) { return r.pool == pool; });
  return it == results_.end() ? nullptr : &*it;
}

void TestWave::ended(const std::string& pool, int exit_code, Duration run_time) {
  if (TestResult* r = find(pool)) *r = TestResult{pool, true, exit_code, run_time};
}

bool TestWave::complete() const {
  return std::all_of(results_.begin(), results_.end(), [](const TestResult& r) { return r.ran; });
}

std::vector<std::string> pools_passing_test(const CampaignSpec& spec, const std::vector<TestResult>& results) {
  std::vector<std::string> out;
  for (const auto& pool : spec.all_pools()) {
    bool passed = std::any_of(results.begin(), results.end(), [&](const TestResult& r) {
      return r.pool == pool && r.ran && r.exit_code == 0;
    });
    if (passed) out.push_back(pool);
  }
  return out;
}

}  // namespace claimsched::core::campaign
