// Fuzz target `resources`: resource strings as operators and job files write
// them (core::Resources::parse, core::parse_quantity). Whatever parses must
// print back (to_string, format_quantity) as text that parses to the same value.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_util.hpp"

using namespace claimsched;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  if (auto r = core::Resources::parse(text)) {
    fuzz::require(!r->any_negative(), "a negative quantity parsed", text);
    std::string printed = r->to_string();
    auto again = core::Resources::parse(printed);
    if (!again) fuzz::fail("to_string() does not parse", printed + " / " + again.error().message);
    fuzz::require(*again == *r, "parse(to_string(r)) != r", std::string(text) + " -> " + printed);
  } else {
    fuzz::require_message(r.error(), text);
  }
  for (core::DimensionId d = 0; d < core::kMaxDimensions; ++d) {
    auto q = core::parse_quantity(d, text);
    if (!q) {
      fuzz::require_message(q.error(), text);
      continue;
    }
    fuzz::require(*q >= 0, "a negative quantity parsed", text);
    std::string printed = core::format_quantity(d, *q);
    auto again = core::parse_quantity(d, printed);
    fuzz::require(again && *again == *q, "format_quantity does not parse back",
                  std::string(text) + " -> " + printed);
  }
  return 0;
}
