// The capacity index (segment tree over available resources): hand-made cases,
// then a seeded comparison against a linear scan, which it must match exactly.

#include "core/capacity_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/random.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::res;

auto accept_all = [](size_t) { return true; };

std::vector<size_t> descending(const CapacityIndex& index, DimensionId d, const Resources& request,
                               size_t limit = SIZE_MAX) {
  std::vector<size_t> out;
  index.visit_descending(d, request, [&](size_t slot) {
    out.push_back(slot);
    return out.size() < limit;
  });
  return out;
}

TEST(CapacityIndex, EmptyIndexFindsNothing) {
  CapacityIndex index;
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.find_first(Resources{}, 0, 10, accept_all), std::nullopt);
  EXPECT_TRUE(descending(index, dim::cpu, Resources{}).empty());
  EXPECT_FALSE(Resources{}.fits_in(index.max_available()));
}

TEST(CapacityIndex, FindFirstHonoursFitRangeAndPredicate) {
  CapacityIndex index;
  for (const char* r : {"cpu=1", "cpu=4", "cpu=2", "cpu=4,memory=1Gi", "cpu=3"}) index.add(res(r));
  ASSERT_EQ(index.size(), 5u);
  EXPECT_EQ(index.available(3), res("cpu=4,memory=1Gi"));
  EXPECT_EQ(index.max_available(), res("cpu=4,memory=1Gi"));

  EXPECT_EQ(index.find_first(res("cpu=3"), 0, 5, accept_all), 1u);
  EXPECT_EQ(index.find_first(res("cpu=3"), 2, 5, accept_all), 3u);
  EXPECT_EQ(index.find_first(res("cpu=3"), 2, 3, accept_all), std::nullopt);
  EXPECT_EQ(index.find_first(res("cpu=3"), 4, 100, accept_all), 4u);  // `to` past the end
  EXPECT_EQ(index.find_first(res("cpu=3"), 3, 3, accept_all), std::nullopt);
  EXPECT_EQ(index.find_first(res("memory=1"), 0, 5, accept_all), 3u);
  EXPECT_EQ(index.find_first(res("cpu=5"), 0, 5, accept_all), std::nullopt);
  EXPECT_EQ(index.find_first(Resources{}, 0, 5, accept_all), 0u);

  // The predicate sees fitting slots in order and may turn them down.
  std::vector<size_t> asked;
  auto found = index.find_first(res("cpu=2"), 0, 5, [&](size_t slot) {
    asked.push_back(slot);
    return slot > 2;
  });
  EXPECT_EQ(found, 3u);
  EXPECT_EQ(asked, (std::vector<size_t>{1, 2, 3}));
}

TEST(CapacityIndex, UpdatesChangeTheAnswer) {
  CapacityIndex index;
  for (int i = 0; i < 4; ++i) index.add(res("cpu=2"));
  EXPECT_EQ(index.find_first(res("cpu=2"), 0, 4, accept_all), 0u);
  index.update(0, res("cpu=1"));
  index.update(1, CapacityIndex::unavailable());
  EXPECT_EQ(index.find_first(res("cpu=2"), 0, 4, accept_all), 2u);
  EXPECT_EQ(index.find_first(res("cpu=1"), 0, 4, accept_all), 0u);
  index.update(3, res("cpu=8"));
  EXPECT_EQ(index.max_available(), res("cpu=8"));
  index.update(3, res("cpu=2"));
  EXPECT_EQ(index.max_available(), res("cpu=2"));  // the maximum comes back down
  index.update(1, res("cpu=2"));
  EXPECT_EQ(index.find_first(res("cpu=2"), 0, 4, accept_all), 1u);
}

TEST(CapacityIndex, UnavailableSlotsAreNeverChosen) {
  CapacityIndex index;
  index.add(CapacityIndex::unavailable());
  index.add(res("cpu=1") - res("cpu=2"));  // overcommitted: negative availability
  EXPECT_EQ(index.find_first(Resources{}, 0, 2, accept_all), std::nullopt);
  EXPECT_TRUE(descending(index, dim::cpu, Resources{}).empty());
  index.add(Resources{});  // up but full: a zero request still fits
  EXPECT_EQ(index.find_first(Resources{}, 0, 3, accept_all), 2u);
  EXPECT_EQ(index.find_first(res("cpu=1m"), 0, 3, accept_all), std::nullopt);
}

TEST(CapacityIndex, GrowingKeepsEverySlot) {
  CapacityIndex index;
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(index.add(Resources::of({{dim::cpu, i}})), size_t(i));
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(index.available(size_t(i))[dim::cpu], i);
  EXPECT_EQ(index.max_available()[dim::cpu], 99);
  EXPECT_EQ(index.find_first(Resources::of({{dim::cpu, 70}}), 0, 100, accept_all), 70u);
}

TEST(CapacityIndex, VisitDescendingOrdersByTheDimensionThenSlot) {
  CapacityIndex index;
  for (const char* r : {"cpu=2,memory=9", "cpu=4", "cpu=1", "cpu=4,memory=1", "cpu=3"})
    index.add(res(r));
  EXPECT_EQ(descending(index, dim::cpu, Resources{}), (std::vector<size_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(descending(index, dim::cpu, res("cpu=2")), (std::vector<size_t>{1, 3, 4, 0}));
  EXPECT_EQ(descending(index, dim::memory, Resources{}), (std::vector<size_t>{0, 3, 1, 2, 4}));
  EXPECT_EQ(descending(index, dim::memory, res("memory=1")), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(descending(index, dim::cpu, Resources{}, 2), (std::vector<size_t>{1, 3}));
}

// --- against a linear scan -------------------------------------------------

struct Linear {
  std::vector<Resources> slots;

  std::optional<size_t> find_first(const Resources& request, size_t from, size_t to,
                                   const std::function<bool(size_t)>& accept) const {
    for (size_t s = from; s < std::min(to, slots.size()); ++s)
      if (request.fits_in(slots[s]) && accept(s)) return s;
    return std::nullopt;
  }
  std::optional<size_t> find_last(const Resources& request, size_t from, size_t to,
                                  const std::function<bool(size_t)>& accept) const {
    for (size_t s = std::min(to, slots.size()); s-- > from;)
      if (request.fits_in(slots[s]) && accept(s)) return s;
    return std::nullopt;
  }
  std::vector<size_t> descending(DimensionId d, const Resources& request) const {
    std::vector<size_t> out;
    for (size_t s = 0; s < slots.size(); ++s)
      if (request.fits_in(slots[s])) out.push_back(s);
    std::stable_sort(out.begin(), out.end(),
                     [&](size_t a, size_t b) { return slots[a][d] > slots[b][d]; });
    return out;
  }
};

Resources random_available(Rng& rng) {
  if (rng.chance(0.1)) return CapacityIndex::unavailable();
  Resources r;
  // Small ranges so that ties and exact fits are common.
  r.set(dim::cpu, static_cast<int64_t>(rng.below(9)));
  r.set(dim::memory, static_cast<int64_t>(rng.below(5)));
  if (rng.chance(0.3)) r.set(dim::gpu, static_cast<int64_t>(rng.below(3)));
  return r;
}

Resources random_request(Rng& rng) {
  Resources r;
  r.set(dim::cpu, static_cast<int64_t>(rng.below(7)));
  if (rng.chance(0.6)) r.set(dim::memory, static_cast<int64_t>(rng.below(4)));
  if (rng.chance(0.2)) r.set(dim::gpu, static_cast<int64_t>(1 + rng.below(2)));
  return r;
}

TEST(CapacityIndexVsLinearScan, SameAnswersOnRandomData) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Rng rng(seed * 7919);
    CapacityIndex index;
    Linear linear;
    size_t target = rng.below(70);  // crosses the 16/32/64 growth points
    for (int step = 0; step < 600; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
      if (linear.slots.size() < target && rng.chance(0.3)) {
        Resources r = random_available(rng);
        ASSERT_EQ(index.add(r), linear.slots.size());
        linear.slots.push_back(r);
      } else if (!linear.slots.empty() && rng.chance(0.5)) {
        size_t slot = rng.below(linear.slots.size());
        Resources r = random_available(rng);
        index.update(slot, r);
        linear.slots[slot] = r;
      }
      ASSERT_EQ(index.size(), linear.slots.size());
      Resources request = random_request(rng);
      size_t n = linear.slots.size();
      size_t from = rng.below(n + 2);
      size_t to = from + rng.below(n + 3);
      uint64_t modulus = 1 + rng.below(4);
      uint64_t rejected = rng.below(modulus);
      auto accept = [&](size_t slot) { return modulus == 1 || slot % modulus != rejected; };
      ASSERT_EQ(index.find_first(request, from, to, accept),
                linear.find_first(request, from, to, accept))
          << "request " << request.to_string() << " in [" << from << ", " << to << ")";
      ASSERT_EQ(index.find_last(request, from, to, accept), linear.find_last(request, from, to, accept))
          << "request " << request.to_string() << " in [" << from << ", " << to << ") downward";
      // The remembered scans (a few fixed anchors, so hints are reused and
      // must be forgotten when a slot grows) answer the same.
      size_t anchor = rng.below(3) * (n / 2);
      ASSERT_EQ(index.find_first_remembered(request, anchor, n, accept_all),
                linear.find_first(request, anchor, n, accept_all));
      ASSERT_EQ(index.find_last_remembered(request, 0, anchor, accept_all),
                linear.find_last(request, 0, anchor, accept_all));
      auto d = static_cast<DimensionId>(rng.below(3));
      ASSERT_EQ(descending(index, d, request), linear.descending(d, request))
          << "request " << request.to_string() << " by dimension " << int(d);
      Resources max = CapacityIndex::unavailable();
      for (const auto& r : linear.slots) max = max.max(r);
      ASSERT_EQ(index.max_available(), max);
    }
  }
}

}  // namespace
}  // namespace claimsched::core
