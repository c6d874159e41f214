#pragma once

#include <functional>

#include "actors/actors.hpp"
#include "core/synthetic.hpp"

namespace claimsched::actors {

struct LoadGeneratorConfig {
  core::SyntheticLoadConfig load;
  core::Resources cluster_capacity;
  router_actor router;
  /// Submissions awaiting an answer at most.
  uint32_t window = 256;
  /// Called with each job a partition acknowledged (not for jobs it already
  /// held). Runs on the generator's thread.
  std::function<void(core::JobId)> on_acknowledged;
};

struct load_generator_state {
  explicit load_generator_state(caf::local_actor*) {}

  std::unique_ptr<core::SyntheticLoad> load;
  router_actor router;
  uint32_t window = 0;
  uint64_t next = 0;
  uint32_t outstanding = 0;
  LoadResult result;
  std::function<void(core::JobId)> on_acknowledged;
  caf::typed_response_promise<LoadResult> done;
  bool running = false;

  static inline const char* name = "load-generator";
};

load_generator_actor::behavior_type load_generator(
    load_generator_actor::stateful_pointer<load_generator_state> self, LoadGeneratorConfig config);

}  // namespace claimsched::actors
