// Lock declarations and Ganeti's predictive value
// (seeds/ganeti-predictive-queue.txt): the table, the big lock, aging.

#include <gtest/gtest.h>

#include <cmath>

#include "core/locks/declaration.hpp"
#include "core/locks/predictive.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

LockDeclaration parse(std::string_view text) { return testing::locks(text); }

std::string parse_error(std::string_view text) {
  auto d = parse_lock_declaration(text);
  EXPECT_FALSE(d.has_value()) << text;
  return d ? "" : d.error().message;
}

TEST(LockDeclaration, ParsesEveryLevelAndModeAndPrintsItBack) {
  auto d = parse("group=shared:g1 instance=unknown-shared node=exclusive:n2,n1 node_res=all-shared "
                 "network=unknown-exclusive");
  EXPECT_EQ(d[LockLevel::group], LevelLock::of(LockMode::shared, {"g1"}));
  EXPECT_EQ(d[LockLevel::instance].mode, LockMode::unknown_shared);
  EXPECT_EQ(d[LockLevel::node], LevelLock::of(LockMode::exclusive, {"n1", "n2"}));
  EXPECT_EQ(d[LockLevel::node_res].mode, LockMode::all_shared);
  EXPECT_EQ(d[LockLevel::network].mode, LockMode::unknown_exclusive);
  EXPECT_TRUE(d.has_unknown());
  EXPECT_EQ(d.to_string(),
            "group=shared:g1 instance=unknown-shared node=exclusive:n1,n2 node_res=all-shared "
            "network=unknown-exclusive");
  EXPECT_EQ(parse(d.to_string()), d);
  EXPECT_TRUE(parse("").empty());
  EXPECT_TRUE(parse("node=none").empty());
  EXPECT_TRUE(parse("bgl").bgl);
  EXPECT_EQ(parse("node=all-exclusive")[LockLevel::node].mode, LockMode::all_exclusive);
}

TEST(LockDeclaration, BadDeclarationsGetAClearError) {
  EXPECT_NE(parse_error("disk=shared:a").find("unknown level 'disk'"), std::string::npos);
  EXPECT_NE(parse_error("node=sharded:a").find("unknown mode 'sharded'"), std::string::npos);
  EXPECT_NE(parse_error("node=exclusive").find("needs at least one name"), std::string::npos);
  EXPECT_NE(parse_error("node=exclusive:").find("empty name list"), std::string::npos);
  EXPECT_NE(parse_error("node=shared:a,,b").find("empty name"), std::string::npos);
  EXPECT_NE(parse_error("node=exclusive:a,all").find("names and 'all' mixed"), std::string::npos);
  EXPECT_NE(parse_error("node=all-exclusive:a").find("takes no names"), std::string::npos);
  EXPECT_NE(parse_error("node=unknown-shared:a").find("takes no names"), std::string::npos);
  EXPECT_NE(parse_error("node=shared:a node=exclusive:b").find("given twice"), std::string::npos);
  EXPECT_NE(parse_error("bgl node=shared:a").find("bgl takes every lock"), std::string::npos);
  EXPECT_NE(parse_error("node=shared:a bgl").find("bgl takes every lock"), std::string::npos);
  EXPECT_NE(parse_error("node").find("expected LEVEL=MODE"), std::string::npos);
  LockDeclaration built;
  built[LockLevel::node] = LevelLock{LockMode::shared, {}};
  EXPECT_FALSE(validate(built));
  built[LockLevel::node] = LevelLock{LockMode::shared, {"b", "a"}};
  EXPECT_FALSE(validate(built));  // unsorted: a received declaration is checked too
  built[LockLevel::node] = LevelLock::of(LockMode::shared, {"b", "a"});
  EXPECT_TRUE(validate(built));
}

// The seed's table, transcribed as printed: rows are the pending job's lock,
// columns the running job's; "x|y" is "if j=i then x else y".
const char* const kSeedTable[kLockModes][kLockModes] = {
    {"0", "0", "0", "0", "0", "0", "0"},
    {"0.3", "0", "0", "0", "3|0.3", "1.5", "3"},
    {"0.3", "0.3", "0.3", "0.3", "1.5", "1.5", "3"},
    {"0.3", "0.3", "0.3", "0.3", "3", "3", "3"},
    {"0.5", "3|0.5", "1.5", "3", "3|0.5", "1.5", "3"},
    {"0.5", "1.5", "1.5", "3", "1.5", "1.5", "3"},
    {"0.5", "3", "3", "3", "3", "3", "3"},
};

LockWeight tenths(const std::string& s) { return static_cast<LockWeight>(std::lround(std::stod(s) * 10)); }

TEST(PredictiveValue, EveryCellOfTheSeedsTableInBothOperandOrders) {
  for (size_t p = 0; p < kLockModes; ++p)
    for (size_t h = 0; h < kLockModes; ++h) {
      std::string cell = kSeedTable[p][h];
      auto bar = cell.find('|');
      LockWeight met = tenths(cell.substr(0, bar));
      LockWeight apart = bar == std::string::npos ? met : tenths(cell.substr(bar + 1));
      auto pm = static_cast<LockMode>(p), hm = static_cast<LockMode>(h);
      auto lock = [](LockMode m, const char* name) {
        return is_named(m) ? LevelLock::of(m, {name}) : LevelLock::of(m);
      };
      SCOPED_TRACE(std::string(to_string(pm)) + " vs " + std::string(to_string(hm)));
      EXPECT_EQ(lock_weight(lock(pm, "i"), lock(hm, "i")), met);
      EXPECT_EQ(lock_weight(lock(pm, "i"), lock(hm, "j")), apart);
    }
}

TEST(PredictiveValue, TheTableIsNotSymmetric) {
  auto s = [](const char* n) { return LevelLock::of(LockMode::shared, {n}); };
  auto x = [](const char* n) { return LevelLock::of(LockMode::exclusive, {n}); };
  auto none = LevelLock{};
  EXPECT_EQ(lock_weight(s("a"), x("b")), 3);   // 0.3: a shared job next to another's exclusive
  EXPECT_EQ(lock_weight(x("a"), s("b")), 5);   // 0.5
  EXPECT_EQ(lock_weight(s("a"), x("a")), 30);  // certain to wait
  EXPECT_EQ(lock_weight(x("a"), s("a")), 30);
  EXPECT_EQ(lock_weight(none, x("a")), 0);
  EXPECT_EQ(lock_weight(x("a"), none), 5);
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::all_shared), LevelLock::of(LockMode::unknown_exclusive)), 30);
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::unknown_exclusive), LevelLock::of(LockMode::all_shared)), 30);
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::unknown_shared), LevelLock::of(LockMode::exclusive, {"a"})), 15);
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::exclusive, {"a"}), LevelLock::of(LockMode::unknown_shared)), 15);
  // Lists meet on any common name.
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::exclusive, {"a", "c"}), LevelLock::of(LockMode::shared, {"b", "c"})),
            30);
  EXPECT_EQ(lock_weight(LevelLock::of(LockMode::exclusive, {"a", "c"}), LevelLock::of(LockMode::shared, {"b", "d"})),
            5);
}

TEST(PredictiveValue, SumsTheWorstCellPerLevelPlusBaseValue) {
  std::vector<HeldLocks> running{
      {JobId(1), parse("node=exclusive:n1 instance=shared:i1")},
      {JobId(2), parse("node=shared:n2 network=all-shared")},
  };
  auto v = static_predictive_value(parse("node=exclusive:n2 instance=shared:i1 network=shared:net1"), running, 10);
  // node: max(E(n2) vs E(n1) = 0.5, E(n2) vs S(n2) = 3) = 3; instance: S vs S = 0
  // (and S vs None = 0.3 against job 2); network: S vs None = 0.3, S vs AS = 0.
  EXPECT_EQ(v.levels[size_t(LockLevel::node)].weight, 30);
  EXPECT_EQ(v.levels[size_t(LockLevel::node)].against, JobId(2));
  EXPECT_EQ(v.levels[size_t(LockLevel::instance)].weight, 3);
  EXPECT_EQ(v.levels[size_t(LockLevel::instance)].against, JobId(2));
  EXPECT_EQ(v.levels[size_t(LockLevel::network)].weight, 3);
  EXPECT_EQ(v.levels[size_t(LockLevel::group)].weight, 0);
  EXPECT_EQ(v.value, 10 + 30 + 3 + 3);
  // Nothing running: base_value alone, whatever the declaration.
  EXPECT_EQ(static_predictive_value(parse("node=all-exclusive"), {}, 10).value, 10);
  EXPECT_EQ(static_predictive_value(parse("node=all-exclusive"), {}, 25).value, 25);
}

TEST(PredictiveValue, TheBigLockIsBaseValuePlusFifteenWhateverRuns) {
  EXPECT_EQ(static_predictive_value(parse("bgl"), {}, 10).value, 10 + 150);
  EXPECT_EQ(static_predictive_value(parse("bgl"), {{JobId(1), parse("node=all-exclusive")}}, 20).value, 20 + 150);
  EXPECT_TRUE(static_predictive_value(parse("bgl"), {}, 10).bgl);
  // A running job with the big lock holds every level all-exclusive.
  auto v = static_predictive_value(parse("node=shared:n1 group=exclusive:g"), {{JobId(3), parse("bgl")}}, 10);
  EXPECT_EQ(v.value, 10 + 30 + 30);  // None against anything is 0
  EXPECT_EQ(v.levels[size_t(LockLevel::node)].held, "bgl");
}

TEST(PredictiveValue, AgingIsSpvTimesOneMinusAgeOverKFlooredAtZero) {
  using std::chrono::seconds;
  EXPECT_EQ(age_in_ticks(seconds(100), seconds(100), seconds(30)), 0);
  EXPECT_EQ(age_in_ticks(seconds(100), seconds(129), seconds(30)), 0);  // quantized: not a tick yet
  EXPECT_EQ(age_in_ticks(seconds(100), seconds(130), seconds(30)), 1);
  EXPECT_EQ(age_in_ticks(seconds(100), seconds(219), seconds(30)), 3);
  EXPECT_EQ(age_in_ticks(seconds(100), seconds(50), seconds(30)), 0);  // clock behind: no age
  // spv 4.5, K = 3: 4.5, 3, 1.5, 0, then floored at 0.
  EXPECT_DOUBLE_EQ(weight_value(45, 0, 3), 4.5);
  EXPECT_DOUBLE_EQ(weight_value(45, 1, 3), 3.0);
  EXPECT_DOUBLE_EQ(weight_value(45, 2, 3), 1.5);
  EXPECT_DOUBLE_EQ(weight_value(45, 3, 3), 0.0);
  EXPECT_DOUBLE_EQ(weight_value(45, 50, 3), 0.0);
  EXPECT_DOUBLE_EQ(weight_value(160, 5, 10), 8.0);  // the big lock, half aged
  // The key orders as the weight does: 3.0 (spv 3, fresh) is behind 1.6 (bgl, 9/10 aged).
  EXPECT_GT(weight_key(30, 0, 10), weight_key(160, 9, 10));
  EXPECT_EQ(weight_key(30, 10, 10), 0);
  EXPECT_EQ(weight_key(30, 11, 10), 0);
}

}  // namespace
}  // namespace claimsched::core
