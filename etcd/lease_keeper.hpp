#pragma once

// Keeps one etcd lease alive from its own thread, and says when that is in
// doubt. An owner must stop scheduling before its lease can have expired:
// etcd may let a lease lapse TTL after the last keep-alive it answered, so
// the keeper reports `at_risk` once no keep-alive has succeeded for a share
// of the TTL (counted from when that keep-alive was sent), `healthy` when one
// succeeds again, and `lost` when etcd says the lease is gone. Callbacks run
// on the keeper's thread and must not block.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "etcd/etcd_client.hpp"

namespace claimsched::etcd {

class LeaseKeeper {
 public:
  enum class Event { healthy, at_risk, lost };
  using Callback = std::function<void(Event, const std::string& why)>;

  struct Options {
    Client::Options client;
    int64_t lease = 0;
    std::chrono::seconds ttl{1};
    /// How often a keep-alive is sent (default: a fifth of the TTL).
    std::chrono::milliseconds interval{0};
    /// Without a successful keep-alive for this share of the TTL: at risk.
    double risk_share = 0.6;
  };

  /// Starts the thread; `options.client` is validated (as Client::make).
  static core::Expected<std::unique_ptr<LeaseKeeper>> start(Options options, Callback on_event);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  /// Stops the thread (waits for a keep-alive in progress). Idempotent.
  void stop();

 private:
  LeaseKeeper(Options options, Client client, Callback on_event);
  void run();

  Options options_;
  Client client_;
  Callback on_event_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace claimsched::etcd
