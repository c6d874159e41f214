#include "actors/connect.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/tls.hpp"
#include "messages/errors.hpp"

namespace claimsched::actors {

caf::expected<gateway_actor> connect_gateway(caf::actor_system& sys, const std::string& host, uint16_t port,
                                             core::Duration timeout) {
  // Straight to the BASP broker, as CAF's middleman actor does, but not
  // through that actor: it queues every later connect to the same host:port
  // behind a pending one, so a single handshake that never completes (a
  // connect racing the server's restart) would block every retry for good.
  auto& mm = sys.middleman();
  std::function<std::string()> tls_problem;
  std::function<std::optional<PeerIdentity>()> tls_peer;
  auto scribe =
      tls_enabled() ? tls_connect(sys, host, port, tls_problem, tls_peer) : mm.backend().new_tcp_scribe(host, port);
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
              // Any change to the gateway's messages changes this set: a
              // client, agent or member of another build cannot talk to it.
              result = messages::to_caf_error(core::make_error(
                  core::Errc::wrong_state, host + ":" + std::to_string(port) +
                                               " runs a claimsched of another build, whose messages differ from "
                                               "this one's: use the client, agents and servers of one build"));
              return;
            }
            result = caf::actor_cast<gateway_actor>(std::move(ptr));
          },
          [&](caf::error& err) { result = std::move(err); });
  // A refused TLS handshake looks like a dropped connection to CAF: say what
  // TLS refused instead (this side's verdict, or the server's alert).
  auto at = host + ":" + std::to_string(port);
  if (result && tls_peer) tls_peer();  // remembers the server's verified identity (server_identity_at)
  if (!result && tls_problem) {
    auto why = tls_problem();
    if (!why.empty())
      result = messages::to_caf_error(core::make_error(core::Errc::io_error, "TLS with " + at + " failed: " + why));
  } else if (!result && result.error() == caf::sec::disconnect_during_handshake) {
    result = messages::to_caf_error(core::make_error(
        core::Errc::io_error, at + " closed the connection during the handshake (a restart, or it requires TLS: "
                                   "give this member [tls] ca, cert and key, or $CLAIMSCHED_TLS_CA/_CERT/_KEY)"));
  }
  return result;
}

caf::expected<uint16_t> publish_gateway(caf::actor_system& sys, const gateway_actor& gateway, uint16_t port,
                                        const std::string& host) {
  if (!tls_enabled()) {
    if (!is_loopback_host(host))
      spdlog::warn(
          "PLAIN TCP on {}:{}, a non-loopback address, without [tls]: anyone who reaches this port can act as "
          "any agent or client. Configure [tls] ca, cert and key (deploy/tls-certs.sh makes them).",
          host, port);
    return sys.middleman().publish(gateway, port, host.c_str(), true);
  }
  // What middleman_actor::publish does, with a TLS doorman.
  auto doorman = tls_listen(sys, port, host.empty() ? nullptr : host.c_str());
  if (!doorman) return std::move(doorman.error());
  auto actual = (*doorman)->port();
  auto basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(basp, caf::publish_atom::value, std::move(*doorman), actual,
                 caf::actor_cast<caf::strong_actor_ptr>(gateway), sys.message_types(gateway));
  return actual;
}

std::optional<std::pair<std::string, uint16_t>> split_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return std::nullopt;
  uint32_t port = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9') return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(address[i] - '0');
    if (port > 65535) return std::nullopt;
  }
  if (port == 0) return std::nullopt;
  return std::make_pair(address.substr(0, colon), static_cast<uint16_t>(port));
}

bool nothing_listens_at(const std::string& host, uint16_t port, core::Duration timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) return false;
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  bool refused = false;
  if (fd >= 0) {
    int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
    if (rc != 0 && errno == ECONNREFUSED) {
      refused = true;
    } else if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
      if (::poll(&p, 1, ms) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        refused = err == ECONNREFUSED;
      }
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return refused;
}

}  // namespace claimsched::actors
