// Fuzz target `wire`: every message messages/codec.hpp decodes from another
// process. Input: one byte picking the type (wire_types.hpp), then its bytes.

#include <cstddef>
#include <cstdint>

#include "tests/fuzz/codec_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"
#include "tests/fuzz/wire_types.hpp"

using namespace claimsched;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes = fuzz::as_text(data + 1, size - 1);
  fuzz::visit_wire_type(data[0] % fuzz::kWireTypes, [&](auto named) {
    using T = typename decltype(named)::type;
    fuzz::check_codec<T>(
        bytes, named.root, [](std::string_view b, T& out) { return messages::decode(b, out); },
        [](const T& v) { return messages::encode(v); });
  });
  return 0;
}
