#include "apps/http_endpoint.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "actors/tls.hpp"

namespace claimsched::apps {

core::Expected<std::unique_ptr<HttpEndpoint>> HttpEndpoint::start(const std::string& host, uint16_t port,
                                                                 Metrics metrics, const Routes& routes,
                                                                 const HttpsFiles& https) {
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint);
  if (https.enabled()) {
    auto secure = std::make_unique<httplib::SSLServer>(https.cert.c_str(), https.key.c_str());
    // httplib reports only that its SSL context failed: load errors, a
    // key that is not the certificate's, a file that is not PEM.
    if (!secure->is_valid())
      return core::make_error(core::Errc::invalid_argument, "[http]: cannot serve HTTPS with certificate " +
                                                                https.cert + " and key " + https.key +
                                                                " (unreadable, not PEM, or not a pair)");
    e->server_ = std::move(secure);
    e->https_ = true;
  } else {
    e->server_ = std::make_unique<httplib::Server>();
    if (!actors::is_loopback_host(host))
      spdlog::warn(
          "[http] serves PLAIN HTTP on {}, not a loopback address: metrics, the API and its bearer tokens cross the "
          "network in clear (configure [tls] for HTTPS)",
          host);
  }
  e->server_->Get("/metrics", [metrics = std::move(metrics)](const httplib::Request&, httplib::Response& res) {
    auto text = metrics();
    if (!text) {
      res.status = 503;
      res.set_content("metrics unavailable: " + text.error().message + "\n", "text/plain; charset=utf-8");
      return;
    }
    res.set_content(std::move(*text), "text/plain; version=0.0.4; charset=utf-8");
  });
  if (routes) routes(*e->server_);
  int bound = port == 0 ? e->server_->bind_to_any_port(host) : (e->server_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0)
    return core::make_error(core::Errc::io_error, "[http] listen: cannot listen on " + host + ":" +
                                                      std::to_string(port) + " (address in use, or not this host's)");
  e->port_ = static_cast<uint16_t>(bound);
  e->thread_ = std::thread([server = e->server_.get()] { server->listen_after_bind(); });
  return e;
}

HttpEndpoint::~HttpEndpoint() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace claimsched::apps
