#include "actors/router_actor.hpp"

namespace claimsched::actors {

router_actor::behavior_type router(router_actor::stateful_pointer<router_state> self,
                                   RouterConfig config) {
  self->state.config = std::move(config);
  return {
      [=](core::JobSpec& job) -> caf::result<core::JobId> {
        auto& pools = self->state.config.pools;
        auto it = pools.find(job.pool);
        if (it == pools.end() || it->second.empty()) {
          std::string known;
          for (const auto& [name, _] : pools) known += (known.empty() ? "" : ", ") + name;
          return messages::to_caf_error(core::make_error(
              core::Errc::unknown_name,
              "job field 'pool': unknown pool '" + job.pool + "' (known: " + known + ")"));
        }
        size_t& next = self->state.next[job.pool];
        auto target = it->second[next++ % it->second.size()];
        return self->delegate(target, std::move(job));
      },
  };
}

}  // namespace claimsched::actors
