#pragma once

// Small text helpers the parsers share (resources, classes, traces, rules).

#include <string_view>

namespace claimsched::core {

/// `s` without the leading and trailing characters found in `blanks`
/// (spaces and tabs unless told otherwise).
constexpr std::string_view trim(std::string_view s, std::string_view blanks = " \t") {
  size_t begin = s.find_first_not_of(blanks);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(blanks);
  return s.substr(begin, end - begin + 1);
}

}  // namespace claimsched::core
