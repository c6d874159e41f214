#include "core/job_waits.hpp"

#include <gtest/gtest.h>

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
  EXPECT_EQ(waits.jobs_waited_for(), 2u);
  waits.remove(a);
  EXPECT_EQ(waits.jobs_of(a), nullptr);
  EXPECT_TRUE(waits.named_by(a, ids({5, 6})).empty());
  EXPECT_EQ(waits.touched_by(ids({5, 6})), std::vector<JobWaits::Key>{b});
  EXPECT_EQ(waits.jobs_waited_for(), 1u);
  waits.remove(a);  // twice: nothing
  waits.remove(b);
  EXPECT_EQ(waits.size(), 0u);
  EXPECT_EQ(waits.jobs_waited_for(), 0u);
  // Keys are never reused: an answer in flight for an old key finds nothing.
  EXPECT_GT(waits.add(ids({5})), b);
}

}  // namespace
}  // namespace claimsched::core
