#pragma once

// What the gateway's handlers share (gateway_actor.cpp, gateway_submit.cpp):
// its errors, and forwarding a request to a partition's owner.

#include <memory>
#include <string>

#include "actors/gateway_actor.hpp"
#include "messages/errors.hpp"

namespace claimsched::actors::gateway_detail {

inline caf::error error_of(core::Errc code, std::string message) {
  return messages::to_caf_error(core::make_error(code, std::move(message)));
}

inline caf::error no_owner(core::PartitionId p) {
  return error_of(core::Errc::unavailable,
                  "partition " + std::to_string(p.value) + " has no owner right now (a takeover is under way); retry");
}

/// A failed forward: a dead or silent owner is a reason to retry elsewhere.
inline caf::error forward_error(const caf::error& err, core::PartitionId p) {
  if (err == caf::sec::request_timeout || err == caf::sec::request_receiver_down)
    return error_of(core::Errc::unavailable,
                    "the owner of partition " + std::to_string(p.value) + " did not answer; retry");
  return err;
}

inline std::string known_pools(const gateway_state& st) {
  std::string known;
  for (const auto& [name, _] : st.pools)
    if (!st.removed_pools.contains(name)) known += (known.empty() ? "" : ", ") + name;
  return known;
}

inline core::Error removed_pool(const std::string& what, const std::string& pool) {
  return core::make_error(core::Errc::wrong_state, what + "pool '" + pool + "' was removed (claimsched pool remove)");
}

inline std::chrono::milliseconds timeout_of(const gateway_state& st) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(st.config.request_timeout);
}

/// Sends `xs...` to partition `p`'s owner; `on_answer(T&)` or `on_error` runs
/// exactly once: with the answer, with the request's error, or with
/// Errc::unavailable as soon as the owner's connection drops.
template <class T, class OnAnswer, class OnError, class... Ts>
void forward(gateway_self self, const GatewayPartition& p, OnAnswer on_answer, OnError on_error, Ts&&... xs) {
  auto& st = self->state;
  auto key = st.next_forward++;
  auto done = std::make_shared<bool>(false);
  auto partition = p.id;
  st.forwards[key] = {partition, [=](const caf::error& err) mutable {
                        if (*done) return;
                        *done = true;
                        on_error(err);
                      }};
  self->request(p.scheduler, timeout_of(st), std::forward<Ts>(xs)...)
      .then(
          [=](T& answer) mutable {
            self->state.forwards.erase(key);
            if (*done) return;
            *done = true;
            on_answer(answer);
          },
          [=](caf::error& err) mutable {
            self->state.forwards.erase(key);
            if (*done) return;
            *done = true;
            on_error(forward_error(err, partition));
          });
}

}  // namespace claimsched::actors::gateway_detail
