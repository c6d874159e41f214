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
