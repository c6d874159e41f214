#pragma once

// The top-level fields of an operator's file, TOML or JSON with the same keys
// (job files, campaign files), read the same way whatever the format. Errors
// name the file, the key and, for TOML, the line.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace claimsched::apps {

/// A key/value view over either format, so both read the same keys the same way.
class Fields {
 public:
  virtual ~Fields() = default;
  virtual bool has(std::string_view key) const = 0;
  virtual core::Expected<std::string> string(std::string_view key) const = 0;
  virtual core::Expected<int64_t> integer(std::string_view key) const = 0;
  virtual core::Expected<bool> boolean(std::string_view key) const = 0;
  virtual core::Expected<std::vector<std::string>> strings(std::string_view key) const = 0;
  virtual core::Expected<std::vector<std::pair<std::string, std::string>>> table(std::string_view key) const = 0;
  virtual std::vector<std::string> keys() const = 0;
  virtual std::string where(std::string_view key) const = 0;
};

/// Parses `text` (JSON when it starts with '{', TOML otherwise) and hands its
/// fields to `read`; `source` names the file and `noun` the kind of file in
/// errors ("job field 'count' must be an integer").
core::Status read_fields(std::string_view text, std::string_view source, std::string_view noun,
                         const std::function<core::Status(const Fields&)>& read);

/// Reads a field into `target`, or returns the reader's error from the
/// enclosing function.
#define CLAIMSCHED_FIELD(expr, target) \
  do {                                 \
    auto v_ = (expr);                  \
    if (!v_) return v_.error();        \
    target = std::move(*v_);           \
  } while (false)

}  // namespace claimsched::apps
