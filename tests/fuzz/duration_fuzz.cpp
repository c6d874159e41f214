// Fuzz target `duration`: durations as operators write them ("250ms", "1.5s",
// core::parse_duration). Whatever parses is exactly the decimal number times
// its unit (never rounded), not negative, and prints back (format_duration) as
// text that parses to the same duration.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/duration.hpp"
#include "core/limits.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace claimsched;

namespace {

/// The exact value of "<digits>[.<digits>]<unit>" in nanoseconds, computed
/// independently of the parser; nullopt when it is not a whole number of
/// nanoseconds or does not fit.
std::optional<__int128> exact_nanos(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"ns", 1}, {"us", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000},
      {"m", 60'000'000'000}, {"h", 3'600'000'000'000}, {"d", 86'400'000'000'000}};
  for (auto [suffix, unit] : kUnits) {
    if (!text.ends_with(suffix)) continue;
    std::string_view number = text.substr(0, text.size() - suffix.size());
    size_t dot = number.find('.');
    std::string_view whole = number.substr(0, dot);
    std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
    // Leading zeros of the whole part and trailing zeros of the fraction
    // change nothing; what is left must be short enough for 128 bits.
    while (!whole.empty() && whole.front() == '0') whole.remove_prefix(1);
    while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
    if (whole.size() > 20 || fraction.size() > 20) return std::nullopt;
    __int128 whole_value = 0;
    for (char c : whole) {
      if (c < '0' || c > '9') return std::nullopt;
      whole_value = whole_value * 10 + (c - '0');
    }
    __int128 frac = 0;
    __int128 scale = 1;
    for (char c : fraction) {
      if (c < '0' || c > '9') return std::nullopt;
      frac = frac * 10 + (c - '0');
      scale *= 10;
    }
    if ((frac * unit) % scale != 0) return std::nullopt;
    return whole_value * unit + frac * unit / scale;
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto d = core::parse_duration(text);
  if (!d) {
    fuzz::require_message(d.error(), text);
    return 0;
  }
  fuzz::require(d->count() >= 0 && *d <= core::kMaxDuration, "a duration out of range parsed", text);
  auto exact = exact_nanos(text);
  fuzz::require(exact && *exact == d->count(), "parsed value is not exactly the text's",
                std::string(text) + " -> " + std::to_string(d->count()) + "ns");
  std::string printed = core::format_duration(*d);
  auto again = core::parse_duration(printed);
  if (!again) fuzz::fail("format_duration does not parse", printed + " / " + again.error().message);
  fuzz::require(*again == *d, "parse(format(d)) != d",
                std::string(text) + " -> " + std::to_string(d->count()) + "ns -> " + printed + " -> " +
                    std::to_string(again->count()) + "ns");
  return 0;
}
