#include "actors/load_generator.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = load_generator_actor::stateful_pointer<load_generator_state>;

void pump(self_ptr self) {
  auto& st = self->state;
  while (st.outstanding < st.window && st.next < st.load->job_count()) {
    auto job = st.load->job(st.next++, now(self));
    auto tasks = job.count;
    ++st.outstanding;
    ++st.result.submitted;
    self->request(st.router, caf::infinite, std::move(job))
        .then(
            [=](core::JobId id) {
              auto& st = self->state;
              --st.outstanding;
              ++st.result.accepted;
              st.result.tasks_accepted += tasks;
              if (st.on_acknowledged) st.on_acknowledged(id);
              pump(self);
            },
            [=](caf::error& err) {
              auto& st = self->state;
              --st.outstanding;
              auto e = messages::from_caf_error(err);
              if (e.code == core::Errc::duplicate) {
                ++st.result.already_present;
                st.result.tasks_already_present += tasks;
              } else {
                ++st.result.rejected;
                if (st.result.first_error.empty()) st.result.first_error = e.to_string();
              }
              pump(self);
            });
  }
  if (st.running && st.outstanding == 0 && st.next == st.load->job_count()) {
    st.running = false;
    st.done.deliver(st.result);
  }
}

}  // namespace

load_generator_actor::behavior_type load_generator(self_ptr self, LoadGeneratorConfig config) {
  self->state.load = std::make_unique<core::SyntheticLoad>(config.load, config.cluster_capacity);
  self->state.router = config.router;
  self->state.window = std::max<uint32_t>(1, config.window);
  self->state.on_acknowledged = std::move(config.on_acknowledged);
  return {
      [=](start_atom) -> caf::typed_response_promise<LoadResult> {
        auto& st = self->state;
        st.done = self->make_response_promise<LoadResult>();
        st.running = true;
        pump(self);
        return st.done;
      },
  };
}

}  // namespace claimsched::actors
