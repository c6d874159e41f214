#pragma once

// The properties every codec decoder (messages/codec.hpp, record_codec.hpp)
// promises, checked on one input: no crash (the sanitizers watch), an error
// names the field from the top-level type and leaves the output untouched,
// and whatever decodes re-encodes to bytes that decode to the same value.

#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_util.hpp"

namespace claimsched::fuzz {

/// "JobSpec.per_task.cpu: ..." / "JobSpec: ...": the error starts with the
/// type's name, then the path to the field.
inline void require_rooted(const core::Error& e, std::string_view root) {
  require_message(e, root);
  bool rooted = e.message.starts_with(root) && e.message.size() > root.size() &&
                (e.message[root.size()] == '.' || e.message[root.size()] == ':' ||
                 e.message[root.size()] == '[');
  require(rooted, "error does not name the field from its root", std::string(root) + " / " + e.message);
}

template <class T, class Decode, class Encode>
void check_codec(std::string_view bytes, std::string_view root, Decode decode, Encode encode) {
  T value{};
  if (auto st = decode(bytes, value); !st) {
    require_rooted(st.error(), root);
    require(value == T{}, "a failed decode changed its output", root);
    return;
  }
  std::string again = encode(value);
  T copy{};
  auto st = decode(again, copy);
  if (!st) fail("a decoded value re-encodes to bytes that do not decode", st.error().message);
  require(copy == value, "decode(encode(x)) != x", root);
}

}  // namespace claimsched::fuzz
