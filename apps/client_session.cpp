#include "apps/client_session.hpp"

#include <caf/io/all.hpp>
#include <deque>
#include <sstream>
#include <thread>

#include "actors/actors.hpp"
#include "actors/connect.hpp"
#include "actors/gateway_actor.hpp"
#include "actors/peer_proof.hpp"
#include "actors/registration.hpp"
#include "apps/tls_setup.hpp"

namespace claimsched::apps {

struct ClientSession::Impl {
  explicit Impl(caf::actor_system_config& cfg) : sys(cfg), self(sys) {}

  caf::actor_system sys;
  caf::scoped_actor self;
  std::vector<std::pair<std::string, uint16_t>> members;
  size_t current = 0;
  actors::gateway_actor gateway;
  std::string address;
  std::string token;
  std::string user;
  core::Duration timeout = std::chrono::seconds(10);
  std::chrono::steady_clock::time_point deadline;
  /// The last request was refused as a message the server does not know
  /// (a server older than this client).
  bool unknown_to_server = false;
  /// The server refused a submit of several copies as a message it does not
  /// know: jobs go one per message (submit_one_by_one).
  bool copies_unknown_to_server = false;
  /// When a wait last came back with jobs that ended (see wait_ended).
  std::chrono::steady_clock::time_point last_ended_answer{};

  /// One attempt's limit: with several members, a silent one must leave time
  /// to try the others.
  std::chrono::milliseconds attempt_timeout() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto cap = members.size() > 1 ? std::chrono::milliseconds(3000)
                                  : std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    return std::max(std::chrono::milliseconds(100), std::min(left, cap));
  }

  bool time_left() const { return std::chrono::steady_clock::now() + std::chrono::milliseconds(100) < deadline; }

  /// Connects to members from `current` on, round and round, until one
  /// answers or the deadline passes.
  std::optional<ClientError> reach() {
    for (size_t attempt = 0;; ++attempt) {
      const auto& [host, port] = members[current];
      address = host + ":" + std::to_string(port);
      auto remote = actors::connect_gateway(sys, host, port, attempt_timeout());
      if (remote && token.empty() && !actors::tls_enabled()) {
        gateway = *remote;
        return std::nullopt;
      }
      if (remote) {
        // [auth]: requests go to the session the login opens (the member's
        // own gateway when it does not check logins). A token, when given,
        // decides; else, over TLS, this client's certificate.
        auto refused = token.empty() ? log_in_by_certificate(*remote, host, port) : log_in_by_token(*remote);
        if (!refused) return std::nullopt;
        if (refused->exit_code != 3) return refused;
        remote = caf::error(caf::sec::request_timeout);
      }
      ClientError e{3, "cannot reach the server at " + address + ": " + sys.render(remote.error())};
      // One server: nobody else to ask (a refused connection says so at once).
      if (members.size() == 1 || !time_left()) return e;
      current = (current + 1) % members.size();
      // Every member tried: a takeover or a restart is under way.
      if (attempt + 1 >= members.size()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  /// Sends `remote` a login (`login` and its proof); a session answered
  /// sets gateway and user.
  template <class... Login>
  std::optional<ClientError> request_session(const actors::gateway_actor& remote, const Login&... login) {
    std::optional<ClientError> refused;
    self->request(remote, attempt_timeout(), actors::login_atom::value, login...)
        .receive(
            [&](caf::actor& session, std::string& name) {
              gateway = caf::actor_cast<actors::gateway_actor>(session);
              user = std::move(name);
            },
            [&](caf::error& err) { refused = error_of(err); });
    return refused;
  }

  /// Asks `remote` for a session, presenting the token.
  std::optional<ClientError> log_in_by_token(const actors::gateway_actor& remote) {
    return request_session(remote, token);
  }

  /// Asks `remote` for a session by proving this client holds its
  /// certificate (actors/peer_proof.hpp): it signs the server's nonce and the
  /// CN of the server its own TLS handshake verified, never the name the
  /// server sends. A server that checks no logins sends no nonce.
  std::optional<ClientError> log_in_by_certificate(const actors::gateway_actor& remote, const std::string& host,
                                                   uint16_t port) {
    std::optional<ClientError> refused;
    std::string nonce, server_cn;
    self->request(remote, attempt_timeout(), actors::challenge_atom::value, actors::login_atom::value)
        .receive(
            [&](std::string& n, std::string& cn) {
              nonce = std::move(n);
              server_cn = std::move(cn);
            },
            [&](caf::error& err) { refused = error_of(err); });
    if (refused) return refused;
    if (nonce.empty()) {
      gateway = remote;
      return std::nullopt;
    }
    auto verified = actors::server_identity_at(host, port);
    if (!verified) return ClientError{3, "the server at " + address + " has no verified TLS certificate to log in to"};
    if (verified->cn != server_cn)
      return ClientError{1, "the server at " + address + " names itself '" + server_cn +
                                "' but its TLS certificate is '" + verified->cn + "': not logging in"};
    auto message = actors::login_message(nonce, verified->cn);
    auto signature = actors::sign_with_own_key(message);
    if (!signature) return ClientError{2, "cannot sign the login with this client's key: " + signature.error().message};
    return request_session(remote, actors::own_certificate_pem(), message, *signature);
  }

  /// Whether `err` says "ask again, maybe elsewhere": no answer, or the
  /// partition has no owner right now.
  bool retryable(const caf::error& err) const {
    if (err == caf::sec::request_timeout || err == caf::sec::request_receiver_down) return true;
    return err.category() == messages::kErrorCategory &&
           messages::from_caf_error(err, &sys).code == core::Errc::unavailable;
  }

  ClientError error_of(const caf::error& err) const {
    if (err == caf::sec::request_timeout || err == caf::sec::request_receiver_down)
      return {3, "the server at " + address + " did not answer: " + sys.render(err)};
    auto e = messages::from_caf_error(err, &sys);
    return {e.code == core::Errc::unavailable ? 3 : 1, e.message};
  }

  template <class T, class... Ts>
  ClientResult<T> ask(Ts&&... xs) {
    return ask_with<T>(true, std::forward<Ts>(xs)...);
  }

  /// `may_retry` false: a request that must not be sent twice.
  template <class T, class... Ts>
  ClientResult<T> ask_with(bool may_retry, Ts&&... xs) {
    deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (!gateway)
        if (auto unreachable = reach()) return *unreachable;
      std::optional<ClientResult<T>> out;
      bool again = false;
      self->request(gateway, attempt_timeout(), xs...)
          .receive([&](T& value) { out.emplace(std::move(value)); },
                   [&](caf::error& err) {
                     unknown_to_server = err == caf::sec::unexpected_message;
                     again = may_retry && members.size() > 1 && retryable(err) && time_left();
                     if (!again) out.emplace(error_of(err));
                   });
      if (!again) return std::move(*out);
      gateway = nullptr;
      current = (current + 1) % members.size();
    }
  }
};

namespace {

/// A submit of many jobs failed part way: the jobs accepted before still
/// run, so the error names them.
ClientError submitted_before(ClientError failed, const std::vector<core::JobId>& ids) {
  if (ids.empty()) return failed;
  failed.message += " (" + std::to_string(ids.size()) + " job(s) were submitted before it: ids " +
                    std::to_string(ids.front().value) + " to " + std::to_string(ids.back().value) + ")";
  return failed;
}

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

ClientResult<std::unique_ptr<ClientSession>> ClientSession::connect(const std::string& addresses,
                                                                   core::Duration timeout, const std::string& token) {
  // A client has no config file: its TLS files come from
  // $CLAIMSCHED_TLS_CA/_CERT/_KEY (apps/tls_setup.hpp).
  if (auto bad = setup_tls(resolve_tls_files({}, {}), TlsRole::client)) return ClientError{2, *bad};
  auto impl = std::make_unique<Impl>(client_config());
  impl->token = token;
  std::stringstream items(addresses);
  for (std::string item; std::getline(items, item, ',');) {
    auto hp = actors::split_address(item);
    if (!hp) return ClientError{2, "server '" + item + "' is not HOST:PORT (with a port in 1-65535)"};
    impl->members.push_back(*hp);
  }
  if (impl->members.empty()) return ClientError{2, "no server given"};
  impl->timeout = timeout;
  impl->deadline = std::chrono::steady_clock::now() + timeout;
  if (auto unreachable = impl->reach()) return *unreachable;
  return std::unique_ptr<ClientSession>(new ClientSession(std::move(impl)));
}

const std::string& ClientSession::address() const { return impl_->address; }

const std::string& ClientSession::user() const { return impl_->user; }

ClientResult<core::JobId> ClientSession::submit(const core::JobSpec& job) {
  if (job.id.value != 0 || impl_->members.size() == 1) return impl_->ask_with<core::JobId>(job.id.value != 0, job);
  // HA: an id of the client's own makes a retry (on another member) the
  // same job. A single server numbers its jobs 1, 2, 3...
  core::JobSpec named = job;
  named.id = actors::fresh_job_id();
  return impl_->ask<core::JobId>(named);
}

ClientResult<std::vector<core::JobId>> ClientSession::submit_many(const core::JobSpec& job, uint32_t n) {
  auto& im = *impl_;
  // Copies travel many to a message (one store write on the server each);
  // a server older than this client knows one job per message only.
  if (!im.copies_unknown_to_server) {
    auto ids = submit_copies(job, n);
    if (ids || !im.copies_unknown_to_server) return ids;
  }
  return submit_one_by_one(job, n);
}

ClientResult<std::vector<core::JobId>> ClientSession::submit_copies(const core::JobSpec& job, uint32_t n) {
  constexpr uint32_t kCopiesPerMessage = 500;
  constexpr size_t kMessagesInFlight = 4;
  auto& im = *impl_;
  std::vector<core::JobId> ids;
  ids.reserve(n);
  std::optional<ClientError> failed;
  // Ids from the server: a retry would submit them again, so no retries.
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(im.timeout);
  auto ask = [&](uint32_t k) { return im.self->request(im.gateway, timeout, actors::repeat_atom::value, job, k); };
  std::deque<decltype(ask(1))> inflight;
  uint32_t sent = 0;
  while (sent < n || !inflight.empty()) {
    while (inflight.size() < kMessagesInFlight && sent < n && !failed) {
      uint32_t k = std::min(kCopiesPerMessage, n - sent);
      inflight.push_back(ask(k));
      sent += k;
    }
    if (inflight.empty()) break;
    inflight.front().receive(
        [&](std::vector<core::JobId>& batch) { ids.insert(ids.end(), batch.begin(), batch.end()); },
        [&](caf::error& err) {
          if (err == caf::sec::unexpected_message && ids.empty() && !failed) im.copies_unknown_to_server = true;
          if (!failed) failed = im.error_of(err);
        });
    inflight.pop_front();
  }
  if (failed) return submitted_before(std::move(*failed), ids);
  return ids;
}

ClientResult<std::vector<core::JobId>> ClientSession::submit_one_by_one(const core::JobSpec& job, uint32_t n) {
  constexpr size_t kWindow = 256;
  auto& im = *impl_;
  std::vector<core::JobId> ids;
  std::optional<ClientError> failed;
  // Ids from the server: a retry would submit them again, so no retries.
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(im.timeout);
  std::deque<decltype(im.self->request(im.gateway, timeout, job))> inflight;
  uint32_t sent = 0;
  while (sent < n || !inflight.empty()) {
    while (inflight.size() < kWindow && sent < n && !failed) {
      inflight.push_back(im.self->request(im.gateway, timeout, job));
      ++sent;
    }
    if (inflight.empty()) break;
    inflight.front().receive([&](core::JobId id) { ids.push_back(id); },
                             [&](caf::error& err) {
                               if (!failed) failed = im.error_of(err);
                             });
    inflight.pop_front();
  }
  if (failed) return submitted_before(std::move(*failed), ids);
  return ids;
}

ClientResult<core::JobView> ClientSession::status(core::JobId job) {
  return impl_->ask<core::JobView>(actors::status_atom::value, job);
}

ClientResult<std::optional<std::vector<core::JobView>>> ClientSession::wait_ended(
    const std::vector<core::JobId>& jobs) {
  // Long enough that a waiting client asks rarely; short enough to stay
  // inside the request's timeout.
  auto hold = std::min<core::Duration>(std::chrono::seconds(1), impl_->timeout / 2);
  auto hold_ms = std::chrono::duration_cast<std::chrono::milliseconds>(hold).count();
  auto ms = static_cast<uint32_t>(std::max<int64_t>(1, hold_ms));
  // Jobs that end in a stream would have a client ask again after every
  // pass of a scheduler, sending all the ids it still waits for each time:
  // the next wait comes no sooner than kWaitAgainAfter after an answer with
  // ends, and collects what ended meanwhile.
  constexpr auto kWaitAgainAfter = std::chrono::milliseconds(50);
  std::this_thread::sleep_until(impl_->last_ended_answer + kWaitAgainAfter);
  auto ended = impl_->ask<std::vector<core::JobView>>(actors::ended_atom::value, jobs, ms);
  if (!ended && impl_->unknown_to_server) return std::optional<std::vector<core::JobView>>{};
  if (!ended) return ended.error();
  if (!ended->empty()) impl_->last_ended_answer = std::chrono::steady_clock::now();
  return std::optional<std::vector<core::JobView>>{std::move(*ended)};
}

ClientResult<core::JobView> ClientSession::cancel(core::JobId job) {
  return impl_->ask<core::JobView>(actors::cancel_atom::value, job);
}

ClientResult<std::string> ClientSession::drain(const std::string& node, bool drain) {
  return impl_->ask<std::string>(actors::drain_atom::value, node, drain);
}

ClientResult<std::string> ClientSession::remove_pool(const std::string& pool, bool wait) {
  return impl_->ask<std::string>(actors::remove_pool_atom::value, pool, wait);
}

ClientResult<std::string> ClientSession::move_partition(uint32_t partition, const std::string& member, bool wait) {
  return impl_->ask<std::string>(actors::move_atom::value, partition, member, wait);
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

ClientResult<std::string> ClientSession::members() { return impl_->ask<std::string>(actors::members_atom::value); }

ClientResult<core::campaign::CampaignReply> ClientSession::campaign(const core::campaign::CampaignRequest& request) {
  return impl_->ask_with<core::campaign::CampaignReply>(request.verb != core::campaign::CampaignVerb::submit,
                                                        actors::campaign_atom::value, request);
}

}  // namespace claimsched::apps
