#include "core/decimal.hpp"

#include <charconv>
#include <limits>
#include <numeric>
#include <string>

namespace claimsched::core {

Expected<int64_t> parse_scaled_decimal(std::string_view text, int64_t scale) {
  auto dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() && frac.empty())
    return make_error(Errc::parse_error, "empty number");
  int64_t w = 0;
  // Digits only: from_chars alone would take "-0" (and so "-0.5").
  for (char c : whole)
    if (c < '0' || c > '9')
      return make_error(Errc::parse_error, "not a non-negative number: " + std::string(text));
  if (!whole.empty()) {
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
    if (ec == std::errc::result_out_of_range)
      return make_error(Errc::parse_error, "number out of range: " + std::string(text));
    if (ec != std::errc{} || p != whole.data() + whole.size())
      return make_error(Errc::parse_error, "not a non-negative number: " + std::string(text));
  }
  if (w > std::numeric_limits<int64_t>::max() / scale)
    return make_error(Errc::parse_error, "number out of range: " + std::string(text));
  int64_t result = w * scale;
  if (dot != std::string_view::npos) {
    if (frac.empty())
      return make_error(Errc::parse_error, "not a number: " + std::string(text));
    for (char c : frac)
      if (c < '0' || c > '9')
        return make_error(Errc::parse_error, "not a number: " + std::string(text));
    while (!frac.empty() && frac.back() == '0') frac.remove_suffix(1);
    // The fraction is n / 10^k; it must be a whole number of units once
    // scaled: 1.5Gi is 1610612736 bytes, 0.1Ki (102.4 bytes) is not. More
    // than 18 significant decimals (n would not fit in 64 bits) are refused.
    if (frac.size() > 18)
      return make_error(Errc::parse_error, "too many decimals: " + std::string(text));
    if (!frac.empty()) {
      int64_t n = 0;
      int64_t den = 1;
      for (char c : frac) {
        n = n * 10 + (c - '0');
        den *= 10;
      }
      int64_t g = std::gcd(scale, den);
      if (n % (den / g) != 0)
        return make_error(Errc::parse_error, "too many decimals: " + std::string(text));
      int64_t part = n / (den / g) * (scale / g);  // < scale: no overflow
      if (result > std::numeric_limits<int64_t>::max() - part)
        return make_error(Errc::parse_error, "number out of range: " + std::string(text));
      result += part;
    }
  }
  return result;
}


}  // namespace claimsched::core
