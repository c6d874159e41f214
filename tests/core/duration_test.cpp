// Durations as operators write them.

#include "core/duration.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/limits.hpp"

namespace claimsched::core {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(*parse_duration("250ms"), 250ms);
  EXPECT_EQ(*parse_duration("10s"), 10s);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("5m"), 5min);
  EXPECT_EQ(*parse_duration("2h"), 2h);
  EXPECT_EQ(*parse_duration("1d"), 24h);
  EXPECT_EQ(*parse_duration("7us"), 7us);
  EXPECT_EQ(*parse_duration("9ns"), 9ns);
  EXPECT_EQ(*parse_duration(" 3s "), 3s);
  EXPECT_EQ(*parse_duration("0.1s"), 100ms);
}

TEST(Duration, RejectsWhatItCannotReadNamingIt) {
  for (const char* bad : {"", "10", "s", "-1s", "1e3s", "5 ms", "ten s", "5x", "1..2s"}) {
    auto d = parse_duration(bad);
    ASSERT_FALSE(d) << "'" << bad << "' parsed as " << d->count() << "ns";
    EXPECT_EQ(d.error().code, Errc::parse_error);
  }
  auto d = parse_duration("10");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("'10'"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("unit"), std::string::npos) << d.error().message;
  EXPECT_FALSE(parse_duration("999999999d"));  // out of range
}

TEST(Duration, ReadsExactlyNeverRounding) {
  // Found by tests/fuzz (duration): the number went through a double, so
  // large values came out wrong and sub-nanosecond ones silently became 0.
  EXPECT_EQ(parse_duration("9007199254740993ns")->count(), 9'007'199'254'740'993LL);
  EXPECT_EQ(parse_duration("3000000000000000001ns")->count(), 3'000'000'000'000'000'001LL);
  EXPECT_EQ(parse_duration("3000000000.000000001s")->count(), 3'000'000'000'000'000'001LL);
  EXPECT_EQ(*parse_duration("1.000000000000000000000000s"), 1s);
  EXPECT_EQ(*parse_duration("0.000000001s"), 1ns);
  for (const char* too_fine : {"0.2ns", "1.5ns", "0.0000000001s"}) {
    auto d = parse_duration(too_fine);
    ASSERT_FALSE(d) << too_fine << " parsed as " << d->count() << "ns";
    EXPECT_NE(d.error().message.find(std::string("'") + too_fine + "'"), std::string::npos)
        << d.error().message;
  }
  EXPECT_FALSE(parse_duration("-0.5s"));
  EXPECT_FALSE(parse_duration("5.s"));
}

TEST(Duration, AtMostAHundredYearsSoTimePointsNeverOverflow) {
  EXPECT_EQ(*parse_duration("36500d"), kMaxDuration);
  auto d = parse_duration("36501d");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("kMaxDuration"), std::string::npos) << d.error().message;
  EXPECT_FALSE(parse_duration("106752d"));      // above INT64_MAX nanoseconds
  EXPECT_FALSE(parse_duration("8099952999s"));  // the fuzzer's input: once rounded, now too long
}

TEST(Duration, FormatUsesTheLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(120s), "2m");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(48h), "2d");
  EXPECT_EQ(format_duration(1001ns), "1001ns");
  for (Duration d :
       {Duration{1}, Duration{999}, Duration{1'000}, Duration{std::chrono::seconds(3601)},
        Duration{std::chrono::milliseconds(86'400'001)}, Duration{std::chrono::hours(24 * 365)}}) {
    auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back) << format_duration(d);
    EXPECT_EQ(*back, d) << format_duration(d);
  }
}

}  // namespace
}  // namespace claimsched::core
