#include "apps/client_session.hpp"

#include <caf/io/all.hpp>
#include <deque>

#include "actors/actors.hpp"
#include "actors/connect.hpp"
#include "actors/registration.hpp"

namespace claimsched::apps {

struct ClientSession::Impl {
  explicit Impl(caf::actor_system_config& cfg) : sys(cfg), self(sys) {}

  caf::actor_system sys;
  caf::scoped_actor self;
  actors::gateway_actor gateway;
  std::string address;
  std::chrono::milliseconds timeout{10'000};

  ClientError error_of(const caf::error& err) const {
    if (err == caf::sec::request_timeout || err == caf::sec::request_receiver_down)
      return {3, "the server at " + address + " did not answer: " + sys.render(err)};
    return {1, messages::from_caf_error(err, &sys).message};
  }

  template <class T, class... Ts>
  ClientResult<T> ask(Ts&&... xs) {
    std::optional<ClientResult<T>> out;
    self->request(gateway, timeout, std::forward<Ts>(xs)...)
        .receive([&](T& value) { out.emplace(std::move(value)); },
                 [&](caf::error& err) { out.emplace(error_of(err)); });
    return std::move(*out);
  }
};

namespace {

caf::actor_system_config& client_config() {
  static caf::actor_system_config cfg = [] {
    caf::actor_system_config c;
    actors::LinkOptions link;
    link.threads = 2;
    link.shared_queue = true;
    actors::configure(c, link);
    return c;
  }();
  return cfg;
}

}  // namespace

ClientSession::ClientSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientSession::~ClientSession() = default;

ClientResult<std::unique_ptr<ClientSession>> ClientSession::connect(const std::string& address,
                                                                   core::Duration timeout) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return ClientError{2, "server '" + address + "' is not HOST:PORT"};
  uint16_t port = 0;
  try {
    size_t used = 0;
    int p = std::stoi(address.substr(colon + 1), &used);
    if (p <= 0 || p > 65535 || used != address.size() - colon - 1) throw std::out_of_range("port");
    port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    return ClientError{2, "server '" + address + "' has no valid port"};
  }
  auto impl = std::make_unique<Impl>(client_config());
  impl->address = address;
  impl->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  auto remote = actors::connect_gateway(impl->sys, address.substr(0, colon), port, timeout);
  if (!remote)
    return ClientError{3, "cannot reach the server at " + address + ": " + impl->sys.render(remote.error())};
  impl->gateway = *remote;
  return std::unique_ptr<ClientSession>(new ClientSession(std::move(impl)));
}

const std::string& ClientSession::address() const { return impl_->address; }

ClientResult<core::JobId> ClientSession::submit(const core::JobSpec& job) { return impl_->ask<core::JobId>(job); }

ClientResult<std::vector<core::JobId>> ClientSession::submit_many(const core::JobSpec& job, uint32_t n) {
  constexpr size_t kWindow = 256;
  auto& im = *impl_;
  std::vector<core::JobId> ids;
  std::optional<ClientError> failed;
  std::deque<decltype(im.self->request(im.gateway, im.timeout, job))> inflight;
  uint32_t sent = 0;
  while (sent < n || !inflight.empty()) {
    while (inflight.size() < kWindow && sent < n && !failed) {
      inflight.push_back(im.self->request(im.gateway, im.timeout, job));
      ++sent;
    }
    if (inflight.empty()) break;
    inflight.front().receive([&](core::JobId id) { ids.push_back(id); },
                             [&](caf::error& err) {
                               if (!failed) failed = im.error_of(err);
                             });
    inflight.pop_front();
  }
  if (failed) return *failed;
  return ids;
}

ClientResult<core::JobView> ClientSession::status(core::JobId job) {
  return impl_->ask<core::JobView>(actors::status_atom::value, job);
}

ClientResult<core::JobView> ClientSession::cancel(core::JobId job) {
  return impl_->ask<core::JobView>(actors::cancel_atom::value, job);
}

ClientResult<std::vector<core::JobView>> ClientSession::queue() {
  return impl_->ask<std::vector<core::JobView>>(actors::queue_atom::value);
}

ClientResult<std::vector<core::JobView>> ClientSession::history(const core::JobFilter& filter) {
  return impl_->ask<std::vector<core::JobView>>(actors::history_atom::value, filter);
}

ClientResult<std::vector<core::NodeStatus>> ClientSession::nodes() {
  return impl_->ask<std::vector<core::NodeStatus>>(actors::nodes_atom::value);
}

ClientResult<std::vector<std::string>> ClientSession::pools() {
  return impl_->ask<std::vector<std::string>>(actors::pools_atom::value);
}

ClientResult<std::string> ClientSession::explain(core::JobId job) {
  return impl_->ask<std::string>(actors::explain_atom::value, job);
}

ClientResult<core::LogChunk> ClientSession::logs(const core::LogRequest& request) {
  return impl_->ask<core::LogChunk>(actors::logs_atom::value, request);
}

}  // namespace claimsched::apps
