#include "core/duration.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/decimal.hpp"
#include "core/limits.hpp"

namespace claimsched::core {

namespace {

struct Unit {
  std::string_view suffix;
  int64_t nanos;
};

// Longer suffixes first: "ms" before "s", "ns"/"us" before "s".
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
};

}  // namespace

Expected<Duration> parse_duration(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return make_error(Errc::parse_error, "empty duration");
  for (const auto& u : kUnits) {
    if (text.size() <= u.suffix.size() || !text.ends_with(u.suffix)) continue;
    std::string_view number = text.substr(0, text.size() - u.suffix.size());
    // Exact decimal arithmetic, not a double: "8099952999s" is exactly
    // 8099952999000000000ns, and "0.2ns" is refused rather than rounded to 0.
    auto nanos = parse_scaled_decimal(number, u.nanos);
    if (!nanos)
      return make_error(Errc::parse_error, "not a duration: '" + std::string(text) + "': " +
                                               nanos.error().message + " (use e.g. 250ms, 10s, 1.5s, 5m, 2h)");
    if (*nanos > kMaxDuration.count())
      return make_error(Errc::parse_error,
                        "duration too long: '" + std::string(text) + "' (the limit is 36500d, kMaxDuration)");
    return Duration{*nanos};
  }
  return make_error(Errc::parse_error,
                    "not a duration: '" + std::string(text) + "' (needs a unit: ns, us, ms, s, m, h, d)");
}

std::string format_duration(Duration d) {
  int64_t n = d.count();
  if (n == 0) return "0s";
  for (int i = static_cast<int>(std::size(kUnits)) - 1; i >= 0; --i)
    if (n % kUnits[i].nanos == 0) return std::to_string(n / kUnits[i].nanos) + std::string(kUnits[i].suffix);
  return std::to_string(n) + "ns";
}

std::string human_duration(Duration d) {
  if (d.count() < 0) d = -d;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  char buf[48];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm %02llds", static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms / 1000 % 60));
  } else if (ms < 86'400'000) {
    std::snprintf(buf, sizeof buf, "%lldh %02lldm", static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms / 60'000 % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd %02lldh", static_cast<long long>(ms / 86'400'000),
                  static_cast<long long>(ms / 3'600'000 % 24));
  }
  return buf;
}

}  // namespace claimsched::core
