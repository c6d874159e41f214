// Fuzz target `records`: every record value storage/ reads back from RocksDB
// (messages/record_codec.hpp), and the replica stream's ChangeBatch. Input:
// one byte picking the type (wire_types.hpp; the last choice is the meta
// counter), then its bytes. The keys and the stores' own checks are the
// `recovery` target's.

#include <cstddef>
#include <cstdint>

#include "tests/fuzz/codec_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"
#include "tests/fuzz/wire_types.hpp"

using namespace claimsched;

namespace {

struct Counter {
  uint64_t value = 0;
  friend bool operator==(const Counter&, const Counter&) = default;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes = fuzz::as_text(data + 1, size - 1);
  size_t choice = data[0] % (fuzz::kRecordTypes + 1);
  if (choice == fuzz::kRecordTypes) {
    fuzz::check_codec<Counter>(
        bytes, "MetaCounter",
        [](std::string_view b, Counter& out) { return messages::decode_counter(b, out.value); },
        [](const Counter& c) { return messages::encode_counter(c.value); });
    return 0;
  }
  fuzz::visit_record_type(choice, [&](auto named) {
    using T = typename decltype(named)::type;
    fuzz::check_codec<T>(
        bytes, named.root, [](std::string_view b, T& out) { return messages::decode(b, out); },
        [](const T& v) { return messages::encode(v); });
  });
  return 0;
}
