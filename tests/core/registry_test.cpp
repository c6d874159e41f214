// The dimension registry is process-wide and append-only, so these tests run
// in a binary of their own: filling the registry here must not break the
// parsing tests of core_tests. Each test holds whether it runs alone (CTest
// runs each in its own process) or after the others (the last one fills the
// registry).

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/resources.hpp"

namespace claimsched::core {
namespace {

TEST(DimensionRegistry, StartsWithTheFourBuiltIns) {
  ASSERT_GE(DimensionRegistry::count(), 4u);
  EXPECT_EQ(DimensionRegistry::name(dim::cpu), "cpu");
  EXPECT_EQ(DimensionRegistry::name(dim::memory), "memory");
  EXPECT_EQ(DimensionRegistry::name(dim::gpu), "gpu");
  EXPECT_EQ(DimensionRegistry::name(dim::disk), "disk");
  if (DimensionRegistry::count() < kMaxDimensions) {
    EXPECT_EQ(DimensionRegistry::name(kMaxDimensions - 1), "?");  // not registered yet
  }
}

TEST(DimensionRegistry, RejectsBadNamesWithoutRegistering) {
  for (const char* bad : {"", "has space", "comma,name", "eq=name", "\xc3\xa9t\xc3\xa9"}) {
    auto id = DimensionRegistry::intern(bad);
    ASSERT_FALSE(id) << "'" << bad << "' was accepted";
    EXPECT_EQ(id.error().code, Errc::invalid_argument);
    EXPECT_NE(id.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << id.error().message;
  }
  size_t before = DimensionRegistry::count();
  EXPECT_FALSE(DimensionRegistry::intern(std::string(64, 'a')));
  EXPECT_TRUE(DimensionRegistry::find(std::string(63, 'a')) == std::nullopt);
  EXPECT_EQ(DimensionRegistry::count(), before);
}

TEST(DimensionRegistry, FailedParsesRegisterNothing) {
  size_t before = DimensionRegistry::count();
  EXPECT_FALSE(Resources::parse("fpga=lots"));
  EXPECT_FALSE(Resources::parse("fpga=1,cpu=-1"));
  EXPECT_FALSE(Resources::parse("fpga=1,tpu=2,tpu=3"));
  EXPECT_EQ(DimensionRegistry::count(), before);
  EXPECT_FALSE(DimensionRegistry::find("fpga").has_value());
  EXPECT_FALSE(DimensionRegistry::find("tpu").has_value());
}

TEST(DimensionRegistry, ConcurrentInternOfOneNameYieldsOneId) {
  ASSERT_LT(DimensionRegistry::count(), kMaxDimensions);
  size_t before = DimensionRegistry::count();
  std::vector<DimensionId> ids(8, 255);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&ids, i] {
      auto id = DimensionRegistry::intern("shared_dim");
      if (id) ids[i] = *id;
    });
  for (auto& t : threads) t.join();
  for (auto id : ids) EXPECT_EQ(id, before);  // the next free id, the same for all
  EXPECT_EQ(DimensionRegistry::count(), before + 1);
  EXPECT_EQ(DimensionRegistry::name(static_cast<DimensionId>(before)), "shared_dim");
}

// Keep last: fills the registry.
TEST(DimensionRegistry, TooManyDimensionsIsAClearError) {
  for (size_t i = DimensionRegistry::count() + 1; i <= kMaxDimensions; ++i) {
    auto id = DimensionRegistry::intern("d" + std::to_string(i));
    ASSERT_TRUE(id) << id.error().to_string();
  }
  ASSERT_EQ(DimensionRegistry::count(), kMaxDimensions);

  auto over = DimensionRegistry::intern("one_too_many");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, Errc::capacity_exceeded);
  EXPECT_NE(over.error().message.find("'one_too_many'"), std::string::npos) << over.error().message;
  EXPECT_NE(over.error().message.find("limit is 8"), std::string::npos) << over.error().message;

  auto parsed = Resources::parse("cpu=1,one_too_many=2");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, Errc::capacity_exceeded);
  EXPECT_NE(parsed.error().message.find("'one_too_many'"), std::string::npos)
      << parsed.error().message;

  // Everything already known keeps working.
  auto ok = Resources::parse("cpu=1,gpu=2");
  ASSERT_TRUE(ok) << ok.error().to_string();
  std::string last{DimensionRegistry::name(kMaxDimensions - 1)};
  ok = Resources::parse("cpu=1," + last + "=3");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ((*ok)[kMaxDimensions - 1], 3);
  EXPECT_EQ(ok->to_string(), "cpu=1," + last + "=3");
  EXPECT_EQ(DimensionRegistry::count(), kMaxDimensions);
}

}  // namespace
}  // namespace claimsched::core
