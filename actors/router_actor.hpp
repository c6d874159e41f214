#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/actors.hpp"

namespace claimsched::actors {

struct RouterConfig {
  /// Pool name -> the schedulers that place on it. Normally one (partitions
  /// are disjoint); several only when schedulers deliberately overlap, and
  /// then jobs go round-robin.
  std::map<std::string, std::vector<scheduler_actor>> pools;
};

struct router_state {
  explicit router_state(caf::local_actor*) {}

  RouterConfig config;
  std::map<std::string, size_t> next;
  static inline const char* name = "router";
};

router_actor::behavior_type router(router_actor::stateful_pointer<router_state> self,
                                   RouterConfig config);

}  // namespace claimsched::actors
