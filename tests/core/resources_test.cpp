// Resources: parsing, formatting, arithmetic, fit and shares.
//
// The dimension registry is process-wide and append-only. Tests in this
// binary register at most the operator-defined names "fpga" and "licenses"
// (two of the four free slots); filling the registry up is tested in its own
// binary (registry_test.cpp) so it can never break the tests here.

#include "core/resources.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/random.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

using testing::res;

constexpr int64_t kKi = int64_t{1} << 10;
constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;

// --- parsing ---------------------------------------------------------------

TEST(ResourcesParse, BuiltInDimensions) {
  auto r = Resources::parse("cpu=2,memory=4Gi,gpu=1");
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ((*r)[dim::cpu], 2000);  // millicores
  EXPECT_EQ((*r)[dim::memory], 4 * kGi);
  EXPECT_EQ((*r)[dim::gpu], 1);
  EXPECT_EQ((*r)[dim::disk], 0);
}

TEST(ResourcesParse, CpuInMillicoresAndDecimalCores) {
  EXPECT_EQ(res("cpu=500m")[dim::cpu], 500);
  EXPECT_EQ(res("cpu=1.5")[dim::cpu], 1500);
  EXPECT_EQ(res("cpu=0.001")[dim::cpu], 1);
  EXPECT_EQ(res("cpu=2.50")[dim::cpu], 2500);
  EXPECT_EQ(res("cpu=.5")[dim::cpu], 500);
  EXPECT_EQ(res("cpu=0")[dim::cpu], 0);
  EXPECT_EQ(res("cpu=64")[dim::cpu], 64000);
}

TEST(ResourcesParse, ByteSuffixesBinaryAndDecimal) {
  EXPECT_EQ(res("memory=512Mi")[dim::memory], 512 * kMi);
  EXPECT_EQ(res("memory=2Ki")[dim::memory], 2 * kKi);
  EXPECT_EQ(res("memory=1Ti")[dim::memory], kGi * 1024);
  EXPECT_EQ(res("disk=10G")[dim::disk], 10'000'000'000);
  EXPECT_EQ(res("disk=3k")[dim::disk], 3000);
  EXPECT_EQ(res("disk=3K")[dim::disk], 3000);
  EXPECT_EQ(res("memory=1M")[dim::memory], 1'000'000);
  EXPECT_EQ(res("memory=4096")[dim::memory], 4096);
}

TEST(ResourcesParse, FractionsOfByteSuffixesThatAreWholeBytes) {
  // 1.5Gi is exactly 1610612736 bytes: no precision below one byte is lost.
  EXPECT_EQ(res("memory=1.5Gi")[dim::memory], 3 * kGi / 2);
  EXPECT_EQ(res("memory=0.5Mi")[dim::memory], kMi / 2);
  EXPECT_EQ(res("memory=0.25Ki")[dim::memory], 256);
  EXPECT_EQ(res("disk=1.5G")[dim::disk], 1'500'000'000);
  EXPECT_EQ(res("disk=2.125k")[dim::disk], 2125);
}

TEST(ResourcesParse, WhitespaceAroundItemsIsIgnored) {
  EXPECT_EQ(res(" cpu = 2 , memory=1Gi "), Resources::cpu_memory(2000, kGi));
  EXPECT_EQ(res("\tcpu=1\t"), Resources::cpu_memory(1000, 0));
}

TEST(ResourcesParse, EmptyTextIsZero) {
  auto r = Resources::parse("");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->is_zero());
  EXPECT_TRUE(res("  ").is_zero());
}

TEST(ResourcesParse, OperatorDefinedDimensions) {
  auto r = Resources::parse("cpu=1,fpga=2");
  ASSERT_TRUE(r) << r.error().to_string();
  auto id = DimensionRegistry::find("fpga");
  ASSERT_TRUE(id.has_value());
  EXPECT_GE(*id, 4);  // after the four built-ins
  EXPECT_LT(*id, kMaxDimensions);
  EXPECT_EQ(DimensionRegistry::name(*id), "fpga");
  EXPECT_EQ((*r)[*id], 2);
  // The same name maps to the same id on every later use.
  EXPECT_EQ(res("fpga=7")[*id], 7);
  EXPECT_EQ(*DimensionRegistry::intern("fpga"), *id);
  EXPECT_GE(DimensionRegistry::count(), 5u);
  // Operator-defined dimensions take the same suffixes as bytes.
  auto lic = Resources::parse("licenses=2k");
  ASSERT_TRUE(lic) << lic.error().to_string();
  EXPECT_EQ((*lic)[*DimensionRegistry::find("licenses")], 2000);
}

TEST(ResourcesParse, BuiltInNamesHaveFixedIds) {
  EXPECT_EQ(DimensionRegistry::find("cpu"), std::optional<DimensionId>(dim::cpu));
  EXPECT_EQ(DimensionRegistry::find("memory"), std::optional<DimensionId>(dim::memory));
  EXPECT_EQ(DimensionRegistry::find("gpu"), std::optional<DimensionId>(dim::gpu));
  EXPECT_EQ(DimensionRegistry::find("disk"), std::optional<DimensionId>(dim::disk));
  EXPECT_EQ(DimensionRegistry::name(dim::memory), "memory");
  EXPECT_FALSE(DimensionRegistry::find("never-registered").has_value());
}

// --- errors: each names the offending item ---------------------------------

struct BadInput {
  const char* text;
  Errc code;
  std::vector<const char*> message_contains;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << '"' << b.text << '"'; }

class ResourcesParseError : public ::testing::TestWithParam<BadInput> {};

TEST_P(ResourcesParseError, FailsWithAMessageNamingTheItem) {
  const BadInput& in = GetParam();
  auto r = Resources::parse(in.text);
  ASSERT_FALSE(r) << in.text << " parsed as " << r->to_string();
  EXPECT_EQ(r.error().code, in.code) << r.error().to_string();
  for (const char* needle : in.message_contains)
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << "message '" << r.error().message << "' lacks '" << needle << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ResourcesParseError,
    ::testing::Values(
        BadInput{"cpu2", Errc::parse_error, {"cpu2", "name=quantity"}},
        BadInput{"cpu=1,memory", Errc::parse_error, {"'memory'"}},
        BadInput{"cpu=-1", Errc::parse_error, {"'cpu'", "negative", "-1"}},
        BadInput{"memory=-512Mi", Errc::parse_error, {"'memory'", "negative"}},
        BadInput{"cpu=abc", Errc::parse_error, {"'cpu'", "abc"}},
        BadInput{"cpu=1x", Errc::parse_error, {"'cpu'", "1x"}},
        BadInput{"memory=4Xi", Errc::parse_error, {"'memory'", "4Xi"}},
        BadInput{"gpu=1k", Errc::parse_error, {"'gpu'", "1k"}},
        BadInput{"cpu=", Errc::parse_error, {"'cpu'", "empty"}},
        BadInput{"cpu=1.", Errc::parse_error, {"'cpu'", "1."}},
        BadInput{"cpu=1.2.3", Errc::parse_error, {"'cpu'", "1.2.3"}},
        BadInput{"cpu=1,cpu=2", Errc::parse_error, {"'cpu'", "twice"}},
        BadInput{"memory=1Gi,cpu=1,memory=2Gi", Errc::parse_error, {"'memory'", "twice"}},
        BadInput{"cpu=1.0001", Errc::parse_error, {"'cpu'", "too many decimals", "1.0001"}},
        BadInput{"cpu=1.5m", Errc::parse_error, {"'cpu'", "too many decimals"}},
        BadInput{"memory=1.5", Errc::parse_error, {"'memory'", "too many decimals"}},
        BadInput{"memory=0.1Ki", Errc::parse_error, {"'memory'", "too many decimals"}},
        BadInput{"gpu=0.5", Errc::parse_error, {"'gpu'", "too many decimals"}},
        BadInput{"bad name=1", Errc::invalid_argument, {"'bad name'"}},
        BadInput{"gpu!=1", Errc::invalid_argument, {"'gpu!'"}},
        BadInput{"cpu=1,,memory=1Gi", Errc::parse_error, {"empty item"}},
        BadInput{"cpu=1,", Errc::parse_error, {"empty item"}},
        BadInput{"cpu=9223372036854775807", Errc::parse_error, {"'cpu'", "out of range"}},
        BadInput{"memory=99999999999Pi", Errc::parse_error, {"'memory'", "out of range"}},
        BadInput{"memory=99999999999999999999", Errc::parse_error, {"'memory'", "out of range"}}));

TEST(ResourcesParse, ErrorToStringStartsWithTheKind) {
  auto r = Resources::parse("cpu=abc");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().to_string().rfind("parse error: ", 0), 0u) << r.error().to_string();
}

TEST(ResourcesParse, ARejectedTextRegistersNoDimension) {
  // A typo in a rejected job must not use up one of the few operator slots.
  size_t before = DimensionRegistry::count();
  EXPECT_FALSE(Resources::parse("typo_dim=abc"));
  EXPECT_FALSE(Resources::parse("typo_dim2=1,cpu=-1"));
  EXPECT_FALSE(Resources::parse("typo_dim3=1,typo_dim3=2"));
  EXPECT_EQ(DimensionRegistry::count(), before);
  EXPECT_FALSE(DimensionRegistry::find("typo_dim").has_value());
  EXPECT_FALSE(DimensionRegistry::find("typo_dim2").has_value());
  EXPECT_FALSE(DimensionRegistry::find("typo_dim3").has_value());
}

// --- formatting and round trips --------------------------------------------

TEST(ResourcesFormat, CanonicalText) {
  EXPECT_EQ(res("cpu=2,memory=4Gi,gpu=1").to_string(), "cpu=2,memory=4Gi,gpu=1");
  EXPECT_EQ(res("cpu=1.5").to_string(), "cpu=1500m");
  EXPECT_EQ(res("cpu=500m").to_string(), "cpu=500m");
  EXPECT_EQ(res("cpu=2000m").to_string(), "cpu=2");
  EXPECT_EQ(res("memory=1024Mi").to_string(), "memory=1Gi");
  EXPECT_EQ(res("memory=1.5Gi").to_string(), "memory=1536Mi");
  EXPECT_EQ(res("memory=1000").to_string(), "memory=1000");
  // Dimensions print in id order, zero dimensions are omitted.
  EXPECT_EQ(res("gpu=1,cpu=0,memory=1Ki").to_string(), "memory=1Ki,gpu=1");
  EXPECT_EQ(Resources{}.to_string(), "");
}

TEST(ResourcesFormat, QuantityHelpersAreInverse) {
  EXPECT_EQ(format_quantity(dim::cpu, 1500), "1500m");
  EXPECT_EQ(format_quantity(dim::cpu, 3000), "3");
  EXPECT_EQ(format_quantity(dim::memory, 3 * kGi), "3Gi");
  EXPECT_EQ(format_quantity(dim::disk, 1000), "1000");
  EXPECT_EQ(format_quantity(dim::gpu, 4), "4");
  for (int64_t v :
       {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1024}, 10'000'000'000, 5 * kGi + 1}) {
    for (DimensionId d : {dim::cpu, dim::memory, dim::gpu, dim::disk}) {
      auto back = parse_quantity(d, format_quantity(d, v));
      ASSERT_TRUE(back) << back.error().to_string();
      EXPECT_EQ(*back, v) << "dimension " << int(d) << " text " << format_quantity(d, v);
    }
  }
}

TEST(ResourcesFormat, RoundTripOfHandWrittenTexts) {
  for (const char* text : {"cpu=2,memory=4Gi,gpu=1", "cpu=500m", "cpu=1.5", "memory=512Mi",
                           "disk=10G", "cpu=1,fpga=3", "memory=1.5Gi,disk=7", "licenses=2k"}) {
    Resources a = res(text);
    auto b = Resources::parse(a.to_string());
    ASSERT_TRUE(b) << text << " -> " << a.to_string() << ": " << b.error().to_string();
    EXPECT_EQ(*b, a) << text << " -> " << a.to_string();
  }
}

TEST(ResourcesFormat, RoundTripOfRandomValues) {
  DimensionId fpga = *DimensionRegistry::intern("fpga");
  Rng rng(42);
  for (int i = 0; i < 5000; ++i) {
    Resources r;
    for (DimensionId d : {dim::cpu, dim::memory, dim::gpu, dim::disk, fpga}) {
      if (rng.chance(0.3)) continue;
      // Mix small values, round binary sizes and huge values.
      int64_t v = 0;
      switch (rng.below(3)) {
        case 0:
          v = static_cast<int64_t>(rng.below(5000));
          break;
        case 1:
          v = static_cast<int64_t>(rng.below(4096)) << rng.below(40);
          break;
        default:
          v = static_cast<int64_t>(rng.next() >> 2);
          break;
      }
      r.set(d, v);
    }
    auto back = Resources::parse(r.to_string());
    ASSERT_TRUE(back) << r.to_string() << ": " << back.error().to_string();
    ASSERT_EQ(*back, r) << r.to_string() << " came back as " << back->to_string();
  }
}

// --- arithmetic ------------------------------------------------------------

TEST(ResourcesArithmetic, AddSubtractTimes) {
  Resources a = res("cpu=2,memory=4Gi");
  Resources b = res("cpu=500m,gpu=1");
  EXPECT_EQ(a + b, res("cpu=2.5,memory=4Gi,gpu=1"));
  EXPECT_EQ(a - res("cpu=1"), res("cpu=1,memory=4Gi"));
  EXPECT_EQ(b.times(4), res("cpu=2,gpu=4"));
  EXPECT_TRUE(b.times(0).is_zero());
  Resources c = a;
  c += b;
  c -= b;
  EXPECT_EQ(c, a);
  Resources negative = res("cpu=1") - res("cpu=2");
  EXPECT_TRUE(negative.any_negative());
  EXPECT_EQ(negative[dim::cpu], -1000);
  EXPECT_FALSE(a.any_negative());
  EXPECT_FALSE(a.is_zero());
}

TEST(ResourcesArithmetic, ElementWiseMinMax) {
  Resources a = res("cpu=2,memory=1Gi");
  Resources b = res("cpu=1,memory=2Gi,gpu=1");
  EXPECT_EQ(a.min(b), res("cpu=1,memory=1Gi"));
  EXPECT_EQ(a.max(b), res("cpu=2,memory=2Gi,gpu=1"));
}

TEST(ResourcesFit, FitsInChecksEveryDimension) {
  Resources node = res("cpu=4,memory=8Gi");
  EXPECT_TRUE(res("cpu=4,memory=8Gi").fits_in(node));  // exactly full
  EXPECT_TRUE(res("cpu=1").fits_in(node));
  EXPECT_FALSE(res("cpu=4001m").fits_in(node));
  EXPECT_FALSE(res("cpu=1,memory=9Gi").fits_in(node));
  EXPECT_FALSE(res("gpu=1").fits_in(node));  // a dimension the node lacks
  EXPECT_TRUE(Resources{}.fits_in(node));
  EXPECT_FALSE(res("cpu=1").fits_in(res("cpu=2") - res("cpu=3")));
}

TEST(ResourcesFit, CopiesFittingIn) {
  Resources node = res("cpu=4,memory=2Gi");
  EXPECT_EQ(res("cpu=1,memory=1Gi").copies_fitting_in(node), 2);  // memory bound
  EXPECT_EQ(res("cpu=1").copies_fitting_in(node), 4);
  EXPECT_EQ(res("cpu=3").copies_fitting_in(node), 1);
  EXPECT_EQ(res("cpu=5").copies_fitting_in(node), 0);
  EXPECT_EQ(res("gpu=1").copies_fitting_in(node), 0);
  EXPECT_EQ(res("cpu=1").copies_fitting_in(res("cpu=1") - res("cpu=3")), 0);  // overcommitted
  EXPECT_GE(Resources{}.copies_fitting_in(node), std::numeric_limits<int32_t>::max());
}

TEST(ResourcesShare, DominantShareAndDimension) {
  Resources total = res("cpu=4,memory=8Gi,gpu=2");
  Resources cpu_heavy = res("cpu=2,memory=1Gi");
  EXPECT_DOUBLE_EQ(cpu_heavy.dominant_share(total), 0.5);
  EXPECT_EQ(cpu_heavy.dominant_dimension(total), dim::cpu);
  Resources mem_heavy = res("cpu=1,memory=6Gi");
  EXPECT_DOUBLE_EQ(mem_heavy.dominant_share(total), 0.75);
  EXPECT_EQ(mem_heavy.dominant_dimension(total), dim::memory);
  Resources gpu_heavy = res("cpu=1,gpu=2");
  EXPECT_DOUBLE_EQ(gpu_heavy.dominant_share(total), 1.0);
  EXPECT_EQ(gpu_heavy.dominant_dimension(total), dim::gpu);
  // A demand the total cannot serve at all is an infinite share.
  EXPECT_TRUE(std::isinf(res("cpu=1,disk=1").dominant_share(total)));
  EXPECT_EQ(res("cpu=1,disk=1").dominant_dimension(total), dim::disk);
  EXPECT_DOUBLE_EQ(Resources{}.dominant_share(total), 0.0);
  EXPECT_EQ(Resources{}.dominant_dimension(total), dim::cpu);
}

}  // namespace
}  // namespace claimsched::core
