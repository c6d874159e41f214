#include "actors/auth_door.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "actors/clock.hpp"
#include "actors/gateway_waits.hpp"
#include "core/duration.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = gateway_actor::stateful_pointer<auth_door_state>;
using core::auth::Action;

std::chrono::milliseconds timeout_of(self_ptr self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(self->state.config.request_timeout);
}

std::string job_object(core::JobId id) { return "job " + std::to_string(id.value); }

void audit(self_ptr self, Action action, const std::string& object, bool allowed, const std::string& reason) {
  auto& st = self->state;
  if (!st.config.audit) return;
  core::auth::AuditRecord r;
  r.time = wall_now();
  if (st.who) {
    r.user = st.who->user;
    r.roles = st.who->roles();
  }
  r.action = action;
  r.object = object;
  r.allowed = allowed;
  r.reason = reason;
  r.door = "cli";
  st.config.audit->write(r);
}

/// Audits a refusal and turns it into the client's error.
caf::error refuse(self_ptr self, Action action, const std::string& object, const core::Error& why) {
  audit(self, action, object, false, why.message);
  spdlog::info("auth: refused {} {} for {}: {}", core::auth::to_string(action), object,
               self->state.who ? self->state.who->user : "an unauthenticated client", why.message);
  return messages::to_caf_error(why);
}

/// The principal this actor serves, or the refusal of an unauthenticated
/// request (the door itself).
const core::auth::Principal* principal(self_ptr self, Action action, const std::string& object, caf::error& refusal) {
  if (self->state.who) return &*self->state.who;
  refusal = refuse(self, action, object,
                   core::make_error(core::Errc::unauthenticated,
                                    "this server requires authentication: give a token (--token-file FILE, or "
                                    "CLAIMSCHED_TOKEN), or a client certificate of your user over TLS"));
  return nullptr;
}

/// Checks `who` may do `action` on `object` of `owner`; audits a refusal,
/// and an allowed action on another user's object.
core::Status check(self_ptr self, Action action, const std::string& object, const std::string& owner) {
  const auto& who = *self->state.who;
  auto s = core::auth::authorize(who, action, object, owner);
  if (!s) {
    refuse(self, action, object, s.error());
    return s;
  }
  if (action == Action::cancel_job && !owner.empty() && owner != who.user)
    audit(self, action, object, true, "another user's (" + owner + "); allowed by the operator role");
  return s;
}

/// Asks the gateway for job `id`'s view, checks `action` against its owner,
/// then runs `then(promise, view)`; every error goes to the promise.
template <class T, class Then>
caf::result<T> with_owner_check(self_ptr self, core::JobId id, Action action, Then then) {
  caf::error refusal;
  if (!principal(self, action, job_object(id), refusal)) return refusal;
  auto promise = self->make_response_promise<T>();
  self->request(self->state.gateway, timeout_of(self), status_atom::value, id)
      .then(
          [=](core::JobView& view) mutable {
            if (auto s = check(self, action, job_object(id), view.spec.user); !s) {
              promise.deliver(messages::to_caf_error(s.error()));
              return;
            }
            then(promise, view);
          },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// Forwards `xs...` to the gateway and the answer (or error) to `promise`.
template <class T, class... Ts>
void pass_on(self_ptr self, caf::typed_response_promise<T> promise, Ts... xs) {
  self->request(self->state.gateway, timeout_of(self), std::move(xs)...)
      .then([=](T& answer) mutable { promise.deliver(std::move(answer)); },
            [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// Asks the gateway `xs...` (a list of jobs) and answers with `user`'s jobs of it.
template <class... Ts>
caf::result<std::vector<core::JobView>> own_jobs_only(self_ptr self, std::string user,
                                                      std::chrono::milliseconds timeout, Ts... xs) {
  auto promise = self->make_response_promise<std::vector<core::JobView>>();
  self->request(self->state.gateway, timeout, std::move(xs)...)
      .then(
          [=](std::vector<core::JobView>& jobs) mutable {
            std::erase_if(jobs, [&](const core::JobView& v) { return v.spec.user != user; });
            promise.deliver(std::move(jobs));
          },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// An admin's operation (drain, pool removal, partition move): checked,
/// audited whichever way it goes, then forwarded.
template <class... Ts>
caf::result<std::string> admin_operation(self_ptr self, Action action, const std::string& object, Ts... xs) {
  caf::error refusal;
  if (!principal(self, action, object, refusal)) return refusal;
  if (auto s = check(self, action, object, ""); !s) return messages::to_caf_error(s.error());
  auto promise = self->make_response_promise<std::string>();
  self->request(self->state.gateway, timeout_of(self), std::move(xs)...)
      .then(
          [=](std::string& words) mutable {
            audit(self, action, object, true, words);
            promise.deliver(std::move(words));
          },
          [=](caf::error& err) mutable {
            audit(self, action, object, true,
                  "allowed, then failed: " + messages::from_caf_error(err, &self->system()).message);
            promise.deliver(std::move(err));
          });
  return promise;
}

caf::result<core::campaign::CampaignReply> campaign_request(self_ptr self, core::campaign::CampaignRequest request) {
  using core::campaign::CampaignReply;
  using core::campaign::CampaignVerb;
  CampaignVerb verb = request.verb;
  std::string id = std::to_string(request.id.value);
  std::string object = verb == CampaignVerb::submit || verb == CampaignVerb::list ? "campaigns" : "campaign " + id;
  Action action = verb == CampaignVerb::submit   ? Action::submit
                  : verb == CampaignVerb::list   ? Action::list_jobs
                  : verb == CampaignVerb::cancel ? Action::cancel_job
                                                 : Action::read_job;
  caf::error refusal;
  const auto* who = principal(self, action, object, refusal);
  if (!who) return refusal;
  // Refusals are returned before the promise is made: a promise takes the
  // answer over, and an error returned after it would never reach the client.
  if (verb == CampaignVerb::submit) {
    if (auto s = check(self, action, "a campaign", request.spec.user); !s) return messages::to_caf_error(s.error());
    request.spec.user = who->user;
    auto promise = self->make_response_promise<CampaignReply>();
    pass_on(self, promise, campaign_atom::value, std::move(request));
    return promise;
  }
  auto promise = self->make_response_promise<CampaignReply>();
  bool operator_role = who->is_operator();
  std::string user = who->user;
  // A campaign's owner is in its status; the list is cut to one's own.
  core::campaign::CampaignRequest ask = request;
  if (verb != CampaignVerb::list) ask.verb = CampaignVerb::status;
  self->request(self->state.gateway, timeout_of(self), campaign_atom::value, std::move(ask))
      .then(
          [=](CampaignReply& answer) mutable {
            if (verb == CampaignVerb::list) {
              if (!operator_role) std::erase_if(answer.campaigns, [&](const auto& c) { return c.user != user; });
              promise.deliver(std::move(answer));
              return;
            }
            std::string owner = answer.campaigns.empty() ? "" : answer.campaigns.front().user;
            if (auto s = check(self, action, object, owner); !s) {
              promise.deliver(messages::to_caf_error(s.error()));
              return;
            }
            if (verb == CampaignVerb::status)
              promise.deliver(std::move(answer));
            else
              pass_on(self, promise, campaign_atom::value, request);
          },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// Whether the door takes another login from `client` now: failed logins
/// are bounded per client and window, live sessions per client and in all.
/// A refusal is counted and logged here (and audited by the caller).
core::Status admit_login(self_ptr self, const std::string& client) {
  auto& st = self->state;
  auto t = now(self);
  auto window = st.config.failed_login_window;
  // Closed windows are forgotten: lazily for this client, all at once when
  // many clients have failed (the map stays bounded by recent failures).
  if (st.failed_logins.size() > 4096)
    std::erase_if(st.failed_logins, [&](const auto& kv) { return t - kv.second.since >= window; });
  if (auto f = st.failed_logins.find(client); f != st.failed_logins.end() && t - f->second.since >= window)
    st.failed_logins.erase(f);
  auto refused = [&](core::Errc code, std::string why) {
    ++st.refused_logins;
    spdlog::warn("auth: login refused ({} refused so far): {}", st.refused_logins, why);
    return core::Status(core::make_error(code, std::move(why)));
  };
  if (auto f = st.failed_logins.find(client);
      f != st.failed_logins.end() && f->second.count >= st.config.max_failed_logins)
    return refused(core::Errc::unavailable, std::to_string(f->second.count) +
                                                " failed logins from this client within " +
                                                core::format_duration(window) + ": its logins are paused for " +
                                                core::format_duration(f->second.since + window - t));
  if (auto n = st.sessions_of_client.find(client);
      n != st.sessions_of_client.end() && n->second >= st.config.max_sessions_per_client)
    return refused(core::Errc::capacity_exceeded,
                   "this client already holds " + std::to_string(n->second) +
                       " sessions, the limit per client: log in again once one of its connections closes");
  if (st.sessions >= st.config.max_sessions)
    return refused(core::Errc::capacity_exceeded,
                   "the server already serves " + std::to_string(st.sessions) +
                       " client sessions, its limit: log in again once a client disconnects");
  return {};
}

/// A login from the current sender, whose principal `resolve` answers: admitted
/// (admit_login), then a session bound to that principal, or a refusal,
/// audited and counted as a failure of this client.
template <class Resolve>
caf::result<caf::actor, std::string> log_in(self_ptr self, Resolve resolve) {
  auto& st = self->state;
  auto client = self->current_sender();
  std::string client_key = client ? caf::to_string(client->node()) : "an anonymous sender";
  if (auto s = admit_login(self, client_key); !s) return refuse(self, Action::login, "the cluster", s.error());
  core::Expected<core::auth::Principal> who = resolve();
  if (!who) {
    auto& f = st.failed_logins[client_key];
    if (f.count++ == 0) f.since = now(self);
    return refuse(self, Action::login, "the cluster", who.error());
  }
  auto bound = std::make_shared<AuthSession>(AuthSession{*who, client});
  spdlog::debug("auth: {} logged in by {} ({})", who->user, who->via, who->roles().empty() ? "user" : who->roles());
  auto s = self->spawn<caf::linked>(auth_door, st.gateway, st.config, std::move(bound));
  self->monitor(s);
  ++st.sessions;
  ++st.sessions_of_client[client_key];
  st.client_of_session.emplace(caf::actor_cast<caf::actor_addr>(s), client_key);
  return caf::result<caf::actor, std::string>(caf::actor_cast<caf::actor>(s), who->user);
}

caf::error local_only(const std::string& what) {
  return messages::to_caf_error(core::make_error(core::Errc::invalid_argument, what + " is not served on this port"));
}

}  // namespace

gateway_actor spawn_auth_door(caf::actor_system& sys, gateway_actor gateway, AuthDoorConfig config) {
  return sys.spawn(auth_door, std::move(gateway), std::move(config), std::shared_ptr<AuthSession>());
}

gateway_actor::behavior_type auth_door(self_ptr self, gateway_actor gateway, AuthDoorConfig config,
                                       std::shared_ptr<AuthSession> session) {
  auto& st = self->state;
  st.gateway = std::move(gateway);
  st.config = std::move(config);
  self->set_default_handler(messages::reject_unexpected);
  if (!session) {
    // The door goes with its gateway, and its sessions (linked) with it; it
    // monitors its sessions to count the live ones.
    self->monitor(st.gateway);
    self->set_down_handler([=](const caf::down_msg& dm) {
      auto& st = self->state;
      if (dm.source == caf::actor_cast<caf::actor_addr>(st.gateway)) {
        self->quit(caf::exit_reason::user_shutdown);
        return;
      }
      auto it = st.client_of_session.find(dm.source);
      if (it == st.client_of_session.end()) return;
      if (auto n = st.sessions_of_client.find(it->second); n != st.sessions_of_client.end() && --n->second == 0)
        st.sessions_of_client.erase(n);
      st.client_of_session.erase(it);
      --st.sessions;
    });
  } else {
    st.who = session->who;
    // The session ends with its client's connection.
    if (session->client) {
      self->monitor(session->client);
      self->set_down_handler([=](const caf::down_msg&) {
        spdlog::debug("auth: the session of {} ended with its client's connection", self->state.who->user);
        self->quit();
      });
    }
  }
  return {
      // Agents: passed through as they came (the gateway checks them).
      [=](register_atom a, core::NodeSpec& spec, node_actor node) {
        return self->delegate(self->state.gateway, a, std::move(spec), std::move(node));
      },
      [=](challenge_atom a) { return self->delegate(self->state.gateway, a); },
      [=](prove_atom a, std::string& pem, std::string& message, std::string& signature) {
        return self->delegate(self->state.gateway, a, std::move(pem), std::move(message), std::move(signature));
      },
      [=](heartbeat_atom a, core::NodeId id) { self->send(self->state.gateway, a, id); },
      [=](leave_atom a, core::NodeId id) { self->send(self->state.gateway, a, id); },
      [=](login_atom, const std::string& token) -> caf::result<caf::actor, std::string> {
        return log_in(self, [&] { return core::auth::resolve(*self->state.config.tokens, {token, ""}); });
      },
      [=](challenge_atom, login_atom) -> caf::result<std::string, std::string> {
        auto own = own_identity();
        if (!own)
          return messages::to_caf_error(core::make_error(
              core::Errc::wrong_state, "TLS is off on this server: log in with a token (--token-file FILE)"));
        return {self->state.login_proofs.challenge(now(self)), own->cn};
      },
      [=](login_atom, const std::string& cert, const std::string& message,
          const std::string& signature) -> caf::result<caf::actor, std::string> {
        return log_in(self, [&]() -> core::Expected<core::auth::Principal> {
          auto id = self->state.login_proofs.prove(cert, message, signature, now(self));
          if (!id) return core::make_error(core::Errc::unauthenticated, "login by certificate: " + id.error().message);
          return core::auth::resolve(*self->state.config.tokens, {"", id->cn});
        });
      },
      [=](core::JobSpec& job) -> caf::result<core::JobId> {
        caf::error refusal;
        const auto* who = principal(self, Action::submit, "a job", refusal);
        if (!who) return refusal;
        if (auto s = check(self, Action::submit, "a job", job.user); !s) return messages::to_caf_error(s.error());
        job.user = who->user;
        return self->delegate(self->state.gateway, std::move(job));
      },
      [=](repeat_atom, core::JobSpec& job, uint32_t count) -> caf::result<std::vector<core::JobId>> {
        caf::error refusal;
        const auto* who = principal(self, Action::submit, "a job", refusal);
        if (!who) return refusal;
        if (auto s = check(self, Action::submit, "a job", job.user); !s) return messages::to_caf_error(s.error());
        job.user = who->user;
        return self->delegate(self->state.gateway, repeat_atom::value, std::move(job), count);
      },
      [=](status_atom, core::JobId id) {
        return with_owner_check<core::JobView>(
            self, id, Action::read_job,
            [](caf::typed_response_promise<core::JobView>& p, core::JobView& v) { p.deliver(std::move(v)); });
      },
      [=](cancel_atom, core::JobId id) {
        return with_owner_check<core::JobView>(self, id, Action::cancel_job,
                                               [=](caf::typed_response_promise<core::JobView>& p, core::JobView&) {
                                                 pass_on(self, p, cancel_atom::value, id);
                                               });
      },
      [=](explain_atom, core::JobId id) {
        return with_owner_check<std::string>(self, id, Action::read_job,
                                             [=](caf::typed_response_promise<std::string>& p, core::JobView&) {
                                               pass_on(self, p, explain_atom::value, id);
                                             });
      },
      [=](logs_atom, core::LogRequest& request) {
        return with_owner_check<core::LogChunk>(self, request.task.job, Action::read_job,
                                                [=](caf::typed_response_promise<core::LogChunk>& p, core::JobView&) {
                                                  pass_on(self, p, logs_atom::value, request);
                                                });
      },
      [=](queue_atom q) -> caf::result<std::vector<core::JobView>> {
        caf::error refusal;
        const auto* who = principal(self, Action::list_jobs, "the queue", refusal);
        if (!who) return refusal;
        if (who->is_operator()) return self->delegate(self->state.gateway, q);
        return own_jobs_only(self, who->user, timeout_of(self), q);
      },
      [=](ended_atom a, std::vector<core::JobId>& jobs,
          uint32_t timeout_ms) -> caf::result<std::vector<core::JobView>> {
        caf::error refusal;
        const auto* who = principal(self, Action::list_jobs, "the jobs it waits for", refusal);
        if (!who) return refusal;
        if (who->is_operator()) return self->delegate(self->state.gateway, a, std::move(jobs), timeout_ms);
        // Another user's end is not theirs to see.
        auto held = timeout_of(self) + std::chrono::milliseconds(std::min(timeout_ms, kMaxJobWaitMs));
        return own_jobs_only(self, who->user, held, a, std::move(jobs), timeout_ms);
      },
      [=](history_atom h, core::JobFilter& filter) -> caf::result<std::vector<core::JobView>> {
        std::string object = filter.user.empty() ? "jobs" : "jobs of user " + filter.user;
        caf::error refusal;
        const auto* who = principal(self, Action::list_jobs, object, refusal);
        if (!who) return refusal;
        if (auto s = check(self, Action::list_jobs, object, filter.user); !s) return messages::to_caf_error(s.error());
        // A plain user's list is their own jobs.
        if (!who->is_operator()) filter.user = who->user;
        return self->delegate(self->state.gateway, h, std::move(filter));
      },
      [=](nodes_atom a) -> caf::result<std::vector<core::NodeStatus>> {
        caf::error refusal;
        if (!principal(self, Action::read_cluster, "nodes", refusal)) return refusal;
        return self->delegate(self->state.gateway, a);
      },
      [=](pools_atom a) -> caf::result<std::vector<std::string>> {
        caf::error refusal;
        if (!principal(self, Action::read_cluster, "pools", refusal)) return refusal;
        return self->delegate(self->state.gateway, a);
      },
      [=](members_atom a) -> caf::result<std::string> {
        caf::error refusal;
        if (!principal(self, Action::read_cluster, "members", refusal)) return refusal;
        return self->delegate(self->state.gateway, a);
      },
      [=](drain_atom a, std::string& node, bool drain) {
        return admin_operation(self, Action::drain_node, (drain ? "node " : "node (undrain) ") + node, a, node, drain);
      },
      [=](remove_pool_atom a, std::string& pool, bool wait) {
        return admin_operation(self, Action::remove_pool, "pool " + pool, a, pool, wait);
      },
      [=](move_atom a, uint32_t id, std::string& member, bool wait) {
        return admin_operation(self, Action::move_partition, "partition " + std::to_string(id) + " to " + member, a, id,
                               member, wait);
      },
      [=](campaign_atom, core::campaign::CampaignRequest& request) {
        return campaign_request(self, std::move(request));
      },
      [=](partition_atom a, uint32_t id) -> caf::result<scheduler_actor, change_feed_actor, uint64_t> {
        if (!self->state.config.ha_peers) return local_only("a partition's scheduler");
        return self->delegate(self->state.gateway, a, id);
      },
      [=](campaign_atom a) -> caf::result<campaign_actor> {
        if (!self->state.config.ha_peers) return local_only("the campaign actor");
        return self->delegate(self->state.gateway, a);
      },
      // Local-only messages never pass: forwarded, they would seem to come
      // from this process.
      [=](campaign_atom, campaign_actor) {},
      [=](watch_atom, caf::actor) {},
      [=](unwatch_atom, caf::actor) {},
      [=](watch_atom, const std::vector<core::JobId>&, const std::vector<core::JobView>&) {},
      [=](ended_atom, uint64_t) {},
      [=](route_atom, uint32_t, scheduler_actor, change_feed_actor, uint64_t, bool) {},
      [=](metrics_atom) -> caf::result<std::string> { return local_only("metrics"); },
      [=](changes_atom) -> caf::result<uint64_t> { return local_only("the change counter"); },
      [=](tick_atom) {},
  };
}

}  // namespace claimsched::actors
