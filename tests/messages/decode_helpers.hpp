#pragma once

// Helpers of the codec tests (codec_test, limits_test).

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "messages/codec.hpp"

namespace claimsched::messages::decode_testing {

/// The error of a decode that must fail; fails the test if it succeeded.
template <class T>
core::Error decode_error(const std::string& bytes) {
  T out;
  auto st = decode(bytes, out);
  EXPECT_FALSE(st) << "decoded although it should not";
  return st ? core::Error{} : st.error();
}

template <class T, class Pb>
core::Error decode_error_of(const Pb& msg) {
  return decode_error<T>(msg.SerializeAsString());
}

/// Runs `body` in a forked child (gtest death-test machinery) and expects it
/// to return true. Used where the body interns resource names: the dimension
/// registry is process-wide and append-only, so such tests must not leave
/// names behind for the other tests of this binary.
inline void run_isolated(const std::function<bool()>& body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(body() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

}  // namespace claimsched::messages::decode_testing
