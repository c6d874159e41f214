#pragma once

// Real failures (bad input, broken invariants of a request) as values. A
// placement that cannot happen yet is not an error: it is an outcome and lives
// with the placement types.

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace claimsched::core {

enum class Errc : uint8_t {
  /// The input could not be parsed (resources, sizes, flags).
  parse_error = 1,
  /// The input parsed but a field has a value that is not allowed.
  invalid_argument,
  /// A name (pool, class, node, job) that nobody knows.
  unknown_name,
  /// An id that is already taken (job resubmitted, node registered twice).
  duplicate,
  /// The operation is valid but not in the current state.
  wrong_state,
  /// A fixed-size table is full (too many resource dimensions).
  capacity_exceeded,
  /// Storage could not read or write.
  io_error,
  /// Stored or received data is malformed.
  corrupt,
  /// Not possible right now, possible soon: a partition is changing owner,
  /// or waits for a quorum. Retrying (with the same ids) is safe.
  unavailable,
  /// The request carries no credentials, or ones the server does not know
  /// (no token, an unknown token).
  unauthenticated,
  /// The authenticated user may not do this (another user's job, a command
  /// that needs the operator or admin role).
  permission_denied,
};

std::string_view to_string(Errc code);

struct Error {
  Errc code = Errc::invalid_argument;
  std::string message;

  std::string to_string() const;
};

inline Error make_error(Errc code, std::string message) {
  return Error{code, std::move(message)};
}

/// A value or an Error (or a richer error type E); std::expected arrives in
/// C++23, this is its subset.
template <class T, class E = Error>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(E error) : state_(std::move(error)) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const {
    assert(!has_value());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, E> state_;
};

/// Expected<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}

  static Status ok() { return {}; }
  bool is_ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace claimsched::core
