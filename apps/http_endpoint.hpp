#pragma once

// The HTTP endpoint of the server and of each agent ([http] listen): GET
// /metrics answers the Prometheus text the gateway renders
// (actors/gateway_metrics.hpp); the server adds its JSON API under /api/v1/
// (http_api.hpp) and the dashboard at / (web/). cpp-httplib's own threads;
// they ask the actor system through a scoped actor per request, so a slow
// scrape never holds an actor.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace httplib {
class Server;
}

namespace claimsched::apps {

class HttpEndpoint {
 public:
  /// Renders the metrics now, or says why not (answered 503).
  using Metrics = std::function<core::Expected<std::string>()>;

  /// Adds the routes beyond /metrics (the server's API and dashboard).
  using Routes = std::function<void(httplib::Server&)>;

  /// HTTPS with this member's certificate and key (PEM, as in [tls]); empty:
  /// plain HTTP.
  struct HttpsFiles {
    std::string cert;
    std::string key;
    bool enabled() const { return !cert.empty() || !key.empty(); }
  };

  /// Listens on host:port (0: a free port); an error names the address, or
  /// the certificate files HTTPS could not use. Plain HTTP on a non-loopback
  /// address is logged as a warning: what it serves crosses the network in
  /// clear.
  static core::Expected<std::unique_ptr<HttpEndpoint>> start(const std::string& host, uint16_t port, Metrics metrics,
                                                             const Routes& routes = {}, const HttpsFiles& https = {});
  /// Stops listening and waits for the thread.
  ~HttpEndpoint();

  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  uint16_t port() const { return port_; }
  bool https() const { return https_; }

 private:
  HttpEndpoint() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  uint16_t port_ = 0;
  bool https_ = false;
};

}  // namespace claimsched::apps
