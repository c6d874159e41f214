// The dimension registry is process-wide and append-only, so these tests run
// in a binary of their own: filling the registry here must not break the
// parsing tests of core_tests. Tests run in declaration order; the last one
// fills the registry.

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/resources.hpp"

namespace claimsched::core {
namespace {

TEST(DimensionRegistry, StartsWithTheFourBuiltIns) {
  EXPECT_EQ(DimensionRegistry::count(), 4u);
  EXPECT_EQ(DimensionRegistry::name(dim::cpu), "cpu");
  EXPECT_EQ(DimensionRegistry::name(dim::disk), "disk");
  EXPECT_EQ(DimensionRegistry::name(7), "?");  // not registered yet
}

TEST(DimensionRegistry, RejectsBadNamesWithoutRegistering) {
  for (const char* bad : {"", "has space", "comma,name", "eq=name", "\xc3\xa9t\xc3\xa9"}) {
    auto id = DimensionRegistry::intern(bad);
    ASSERT_FALSE(id) << "'" << bad << "' was accepted";
    EXPECT_EQ(id.error().code, Errc::invalid_argument);
    EXPECT_NE(id.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << id.error().message;
  }
  EXPECT_FALSE(DimensionRegistry::intern(std::string(64, 'a')));
  EXPECT_TRUE(DimensionRegistry::find(std::string(63, 'a')) == std::nullopt);
  EXPECT_EQ(DimensionRegistry::count(), 4u);
}

TEST(DimensionRegistry, FailedParsesRegisterNothing) {
  EXPECT_FALSE(Resources::parse("fpga=lots"));
  EXPECT_FALSE(Resources::parse("fpga=1,cpu=-1"));
  EXPECT_FALSE(Resources::parse("fpga=1,tpu=2,tpu=3"));
  EXPECT_EQ(DimensionRegistry::count(), 4u);
}

TEST(DimensionRegistry, ConcurrentInternOfOneNameYieldsOneId) {
  std::vector<DimensionId> ids(8, 255);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&ids, i] {
      auto id = DimensionRegistry::intern("shared_dim");
      if (id) ids[i] = *id;
    });
  for (auto& t : threads) t.join();
  for (auto id : ids) EXPECT_EQ(id, 4);
  EXPECT_EQ(DimensionRegistry::count(), 5u);
  EXPECT_EQ(DimensionRegistry::name(4), "shared_dim");
}

// Keep last: fills the registry.
TEST(DimensionRegistry, TooManyDimensionsIsAClearError) {
  for (const char* name : {"d5", "d6", "d7"}) {
    auto id = DimensionRegistry::intern(name);
    ASSERT_TRUE(id) << id.error().to_string();
  }
  ASSERT_EQ(DimensionRegistry::count(), kMaxDimensions);

  auto over = DimensionRegistry::intern("d8");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, Errc::capacity_exceeded);
  EXPECT_NE(over.error().message.find("'d8'"), std::string::npos) << over.error().message;
  EXPECT_NE(over.error().message.find("limit is 8"), std::string::npos) << over.error().message;

  auto parsed = Resources::parse("cpu=1,d8=2");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, Errc::capacity_exceeded);
  EXPECT_NE(parsed.error().message.find("'d8'"), std::string::npos) << parsed.error().message;

  // Everything already known keeps working.
  auto ok = Resources::parse("cpu=1,d7=3,shared_dim=2");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ((*ok)[*DimensionRegistry::find("d7")], 3);
  EXPECT_EQ(ok->to_string(), "cpu=1,shared_dim=2,d7=3");
  EXPECT_EQ(DimensionRegistry::count(), kMaxDimensions);
}

}  // namespace
}  // namespace claimsched::core
