#include "core/job_waits.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace claimsched::core {
namespace {

std::vector<JobId> ids(std::initializer_list<uint64_t> xs) {
  std::vector<JobId> out;
  for (auto x : xs) out.push_back(JobId{x});
  return out;
}

TEST(JobWaits, AnEventWakesOnlyTheWaitsThatNameOneOfItsJobs) {
  JobWaits waits;
  auto a = waits.add(ids({1, 2, 3}));
  auto b = waits.add(ids({3, 4}));
  auto c = waits.add(ids({7}));
  EXPECT_EQ(waits.touched_by(ids({9})), std::vector<JobWaits::Key>{});
  EXPECT_EQ(waits.touched_by(ids({2})), std::vector<JobWaits::Key>{a});
  EXPECT_EQ(waits.touched_by(ids({4, 3})), (std::vector<JobWaits::Key>{a, b}));
  EXPECT_EQ(waits.touched_by(ids({7, 1})), (std::vector<JobWaits::Key>{a, c}));
  EXPECT_EQ(waits.named_by(a, ids({4, 3, 2, 9})), ids({3, 2}));
}

TEST(JobWaits, AnsweredWaitsAreForgottenAndTheirJobsWithThem) {
  JobWaits waits;
  auto a = waits.add(ids({5, 5, 6}));  // a job named twice is waited for once
  auto b = waits.add(ids({6}));
  EXPECT_EQ(*waits.jobs_of(a), ids({5, 6}));
  EXPECT_EQ(waits.names_held(), 3u);
  waits.remove(a);
  EXPECT_EQ(waits.jobs_of(a), nullptr);
  EXPECT_TRUE(waits.named_by(a, ids({5, 6})).empty());
  EXPECT_EQ(waits.touched_by(ids({5, 6})), std::vector<JobWaits::Key>{b});
  EXPECT_EQ(waits.names_held(), 1u);
  waits.remove(a);  // twice: nothing
  waits.remove(b);
  EXPECT_EQ(waits.size(), 0u);
  EXPECT_EQ(waits.names_held(), 0u);
  // Keys are never reused: an answer in flight for an old key finds nothing.
  EXPECT_GT(waits.add(ids({5})), b);
}

// A big wait (more jobs than are indexed) is found by its sorted list: the
// same answers as a small one, whatever mix of waits an event touches.
TEST(JobWaits, BigAndSmallWaitsAnswerAlikeOverRandomEvents) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 20; ++round) {
    JobWaits waits;
    std::map<JobWaits::Key, std::set<uint64_t>> model;
    for (int w = 0; w < 12; ++w) {
      size_t n = rng() % 2 ? rng() % 8 + 1 : JobWaits::kIndexedJobsPerWait + rng() % 200;
      std::vector<JobId> jobs;
      uint64_t start = rng() % 1000;
      for (size_t i = 0; i < n; ++i) jobs.push_back(JobId{start + rng() % (3 * n)});
      auto key = waits.add(jobs);
      for (auto id : jobs) model[key].insert(id.value);
      if (rng() % 4 == 0) {
        waits.remove(key);
        model.erase(key);
      }
    }
    for (int e = 0; e < 50; ++e) {
      std::vector<JobId> event;
      for (int i = 0; i < 1 + static_cast<int>(rng() % 5); ++i) event.push_back(JobId{rng() % 1300});
      std::vector<JobWaits::Key> want;
      for (const auto& [key, jobs] : model)
        if (std::any_of(event.begin(), event.end(), [&](JobId id) { return jobs.contains(id.value); }))
          want.push_back(key);
      ASSERT_EQ(waits.touched_by(event), want);
      for (auto key : want) {
        std::vector<JobId> named;
        for (auto id : event)
          if (model[key].contains(id.value)) named.push_back(id);
        EXPECT_EQ(waits.named_by(key, event), named);
      }
    }
    size_t held = 0;
    for (const auto& [key, jobs] : model) held += jobs.size();
    EXPECT_EQ(waits.names_held(), held);
    for (const auto& [key, jobs] : model) waits.remove(key);
    EXPECT_EQ(waits.names_held(), 0u);
    EXPECT_EQ(waits.touched_by(std::vector<JobId>{JobId{5}}), std::vector<JobWaits::Key>{});
  }
}

}  // namespace
}  // namespace claimsched::core
