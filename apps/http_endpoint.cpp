#include "apps/http_endpoint.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

namespace claimsched::apps {

core::Expected<std::unique_ptr<HttpEndpoint>> HttpEndpoint::start(const std::string& host, uint16_t port,
                                                                 Metrics metrics, const Routes& routes) {
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint);
  e->server_ = std::make_unique<httplib::Server>();
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
