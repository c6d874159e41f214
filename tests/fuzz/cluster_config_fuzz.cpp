// Fuzz target `cluster_config`: the server's TOML configuration
// (apps/cluster_config.hpp). analyze_cluster_config promises never to throw,
// whatever the text; every problem it reports has a message and a line
// within the file; a configuration it accepts parses the same way again.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "apps/cluster_config.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace claimsched;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  apps::ConfigReport report = apps::analyze_cluster_config(text, "cluster.toml");
  auto lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n') + 1);
  for (const auto& p : report.problems) {
    fuzz::require(!p.message.empty(), "a problem without a message", p.field);
    fuzz::require(p.line <= lines, "a problem on a line past the end", p.to_string("cluster.toml"));
  }
  if (!report.ok()) return 0;
  // Accepted: every partition owns pools, every class names a pool.
  fuzz::require(!report.config.partitions.empty(), "accepted with no partition", text);
  for (const auto& part : report.config.partitions)
    fuzz::require(!part.pools.empty(), "accepted a partition without pools", text);
  fuzz::require(static_cast<bool>(report.config.policy.validate()), "accepted an invalid policy", text);
  return 0;
}
