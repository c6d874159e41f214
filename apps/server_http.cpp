#include "apps/server_http.hpp"

#include <httplib.h>

#include <caf/all.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <variant>

#include "apps/http_api.hpp"
#include "apps/http_auth.hpp"
#include "apps/web_assets.hpp"
#include "messages/errors.hpp"

namespace claimsched::apps {

namespace {

/// How long an HTTP request waits for the gateway.
constexpr auto kAskTimeout = std::chrono::seconds(5);

/// Asks the gateway `xs...` from an HTTP thread; the answer or its error.
template <class T, class... Ts>
core::Expected<T> ask(caf::actor_system& sys, const actors::gateway_actor& gateway, Ts&&... xs) {
  caf::scoped_actor self{sys};
  core::Expected<T> out = core::make_error(core::Errc::unavailable, "the gateway did not answer");
  self->request(gateway, kAskTimeout, std::forward<Ts>(xs)...)
      .receive([&](T& value) { out = std::move(value); },
               [&](caf::error& err) { out = messages::from_caf_error(err, &sys); });
  return out;
}

ClusterReader gateway_reader(caf::actor_system& sys, actors::gateway_actor gw) {
  ClusterReader r;
  r.jobs = [&sys, gw](const core::JobFilter& filter) {
    return ask<std::vector<core::JobView>>(sys, gw, actors::history_atom::value, filter);
  };
  r.job = [&sys, gw](core::JobId id) { return ask<core::JobView>(sys, gw, actors::status_atom::value, id); };
  r.explain = [&sys, gw](core::JobId id) { return ask<std::string>(sys, gw, actors::explain_atom::value, id); };
  r.nodes = [&sys, gw] { return ask<std::vector<core::NodeStatus>>(sys, gw, actors::nodes_atom::value); };
  r.pools = [&sys, gw] { return ask<std::vector<std::string>>(sys, gw, actors::pools_atom::value); };
  r.members = [&sys, gw] { return ask<std::string>(sys, gw, actors::members_atom::value); };
  r.changes = [&sys, gw] { return ask<uint64_t>(sys, gw, actors::changes_atom::value); };
  return r;
}

/// The reader this request may use: all of it without auth; with auth,
/// what the bearer token's user may read, or the 401 that refuses it.
std::variant<ClusterReader, ApiAnswer> reader_for(const ClusterReader& reader, const ServerAuth& auth,
                                                  const httplib::Request& req) {
  if (!auth.on()) return reader;
  auto who = core::auth::resolve(*auth.tokens, {bearer_token(req.get_header_value("Authorization")), ""});
  if (who) return authorized_reader(reader, *who, auth.audit, req.remote_addr);
  if (auth.audit) {
    core::auth::AuditRecord r;
    r.time = std::chrono::duration_cast<core::TimePoint>(std::chrono::system_clock::now().time_since_epoch());
    r.action = core::auth::Action::login;
    r.object = "GET " + req.path;
    r.reason = who.error().message;
    r.door = "http";
    r.peer = req.remote_addr;
    auth.audit->write(r);
  }
  ApiAnswer refused{401,
                    nlohmann::json{{"error",
                                    {{"status", 401},
                                     {"code", core::to_string(who.error().code)},
                                     {"message", "this API wants `Authorization: Bearer TOKEN`: " +
                                                     who.error().message}}}}
                        .dump(),
                    {{"WWW-Authenticate", "Bearer realm=\"claimsched\""}}};
  return refused;
}

void add_api(httplib::Server& server, ClusterReader base, ServerAuth auth) {
  server.Get(R"(/api(/.*)?)", [base = std::move(base), auth](const httplib::Request& req, httplib::Response& res) {
    ApiRequest request{req.path, {req.params.begin(), req.params.end()}, req.get_header_value("If-None-Match")};
    auto reader = reader_for(base, auth, req);
    ApiAnswer answer = std::holds_alternative<ApiAnswer>(reader)
                           ? std::get<ApiAnswer>(std::move(reader))
                           : answer_api(std::get<ClusterReader>(reader), request);
    res.status = answer.status;
    for (auto& [name, value] : answer.headers) res.set_header(name, value);
    // Always revalidate: the ETag makes that cheap.
    res.set_header("Cache-Control", "no-cache");
    if (answer.status != 304) {
      // Moved, not copied as set_content would: a full job list is megabytes.
      res.body = std::move(answer.body);
      res.set_header("Content-Type", "application/json");
    }
  });
}

/// The dashboard: its files from the binary; / is index.html.
void add_dashboard(httplib::Server& server) {
  for (const WebAsset& asset : web_assets()) {
    auto serve = [&asset](const httplib::Request&, httplib::Response& res) {
      res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
      // A new binary serves a new dashboard: the browser asks each time.
      res.set_header("Cache-Control", "no-cache");
    };
    server.Get(std::string(asset.path), serve);
    if (asset.path == "/index.html") server.Get("/", serve);
  }
}

/// The API is read-only: another method is refused in JSON, as a bad GET
/// is; any other unknown address says where things are.
void add_refusals(httplib::Server& server) {
  auto read_only = [](const httplib::Request& req, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET");
    res.set_content(nlohmann::json{{"error",
                                    {{"status", 405},
                                     {"code", "invalid_argument"},
                                     {"message", req.method + " " + req.path + ": the API is read-only (GET)"}}}}
                        .dump(),
                    "application/json");
  };
  const std::string api = R"(/api(/.*)?)";
  server.Post(api, read_only).Put(api, read_only).Patch(api, read_only).Delete(api, read_only);
  auto elsewhere = [](const httplib::Request& req, httplib::Response& res) {
    if (res.status != 404 || !res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_content("no such page: " + req.path +
                        " (the dashboard is at /, the JSON API under /api/v1/, metrics at /metrics)\n",
                    "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  };
  server.set_error_handler(httplib::Server::HandlerWithResponse(elsewhere));
}

}  // namespace

core::Expected<std::unique_ptr<HttpEndpoint>> serve_http(caf::actor_system& sys, const ClusterConfig& config,
                                                         actors::gateway_actor gateway, const ServerAuth& auth) {
  if (!config.http.enabled) return std::unique_ptr<HttpEndpoint>();
  auto metrics = [&sys, gateway] { return ask<std::string>(sys, gateway, actors::metrics_atom::value); };
  HttpEndpoint::HttpsFiles https;
  if (config.tls.enabled() && !config.http.plain) https = {config.tls.cert, config.tls.key};
  auto endpoint = HttpEndpoint::start(
      config.http.host, config.http.port, metrics,
      [&](httplib::Server& server) {
        add_api(server, gateway_reader(sys, gateway), auth);
        add_dashboard(server);
        add_refusals(server);
      },
      https);
  if (!endpoint) return endpoint.error();
  std::printf("claimsched server http on %s:%u (%s: GET /metrics, /api/v1/, the dashboard at /)\n",
              config.http.host.c_str(), static_cast<unsigned>((*endpoint)->port()),
              (*endpoint)->https() ? "HTTPS" : "plain HTTP");
  std::fflush(stdout);
  return endpoint;
}

}  // namespace claimsched::apps
