#pragma once

// What every fuzz target shares: how a broken property is reported, the
// process-wide state made deterministic, and input bytes as text.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/resources.hpp"

namespace claimsched::fuzz {

/// A property the decoder promises does not hold: print it and abort, which
/// libFuzzer reports as a crash and keeps the input as an artifact.
[[noreturn]] inline void fail(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "\nfuzz property broken: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void require(bool holds, std::string_view what, std::string_view detail = {}) {
  if (!holds) fail(what, detail);
}

/// The dimension registry is process-wide and append-only: decoding a name it
/// does not know registers it, so without this the first few inputs would
/// fill it and every later run would behave differently. Filling it up front
/// makes each input's outcome independent of the inputs before it (an unknown
/// name is then always "too many resource dimensions"). "fpga" is the
/// operator-defined dimension of tests/messages/samples.hpp, and so of the seeds.
inline void fill_dimension_registry() {
  for (const char* name : {"fpga", "ib", "licenses", "nvme"}) {
    if (!core::DimensionRegistry::intern(name)) fail("cannot register dimension", name);
  }
  require(core::DimensionRegistry::count() == core::kMaxDimensions, "registry not full");
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// An error a decoder returned must say what is wrong where: never empty.
inline void require_message(const core::Error& e, std::string_view context) {
  if (e.message.empty()) fail("an error without a message", context);
}

}  // namespace claimsched::fuzz
