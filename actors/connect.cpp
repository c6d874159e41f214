#include "actors/connect.hpp"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

namespace claimsched::actors {

caf::expected<gateway_actor> connect_gateway(caf::actor_system& sys, const std::string& host, uint16_t port,
                                             core::Duration timeout) {
  // Straight to the BASP broker, as CAF's middleman actor does, but not
  // through that actor: it queues every later connect to the same host:port
  // behind a pending one, so a single handshake that never completes (a
  // connect racing the server's restart) would block every retry for good.
  auto& mm = sys.middleman();
  auto scribe = mm.backend().new_tcp_scribe(host, port);
  if (!scribe) return std::move(scribe.error());
  auto basp = mm.named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::expected<gateway_actor> result = caf::make_error(caf::sec::request_timeout);
  caf::scoped_actor self{sys};
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  self->request(basp, wait, caf::connect_atom::value, std::move(*scribe), port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>& interface) {
            if (!ptr) {
              result = caf::make_error(caf::sec::no_actor_published_at_port, port);
              return;
            }
            if (!sys.assignable(interface, sys.message_types(caf::detail::type_list<gateway_actor>{}))) {
              result = caf::make_error(caf::sec::unexpected_actor_messaging_interface);
              return;
            }
            result = caf::actor_cast<gateway_actor>(std::move(ptr));
          },
          [&](caf::error& err) { result = std::move(err); });
  return result;
}

}  // namespace claimsched::actors
