#include "etcd/lease_keeper.hpp"

namespace claimsched::etcd {

core::Expected<std::unique_ptr<LeaseKeeper>> LeaseKeeper::start(Options options, Callback on_event) {
  if (options.lease == 0) return core::make_error(core::Errc::invalid_argument, "lease keeper: no lease");
  if (options.ttl.count() <= 0) return core::make_error(core::Errc::invalid_argument, "lease keeper: TTL must be positive");
  if (options.interval.count() <= 0)
    options.interval = std::chrono::duration_cast<std::chrono::milliseconds>(options.ttl) / 5;
  auto client = Client::make(options.client);
  if (!client) return client.error();
  std::unique_ptr<LeaseKeeper> keeper(new LeaseKeeper(std::move(options), std::move(*client), std::move(on_event)));
  keeper->thread_ = std::thread([k = keeper.get()] { k->run(); });
  return keeper;
}

LeaseKeeper::LeaseKeeper(Options options, Client client, Callback on_event)
    : options_(std::move(options)), client_(std::move(client)), on_event_(std::move(on_event)) {}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void LeaseKeeper::run() {
  using clock = std::chrono::steady_clock;
  auto risk_after = std::chrono::duration_cast<clock::duration>(options_.ttl * options_.risk_share);
  auto last_success_sent = clock::now();
  bool at_risk = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, options_.interval, [&] { return stopping_; })) return;
    }
    auto sent = clock::now();
    auto ttl = client_.keep_alive(options_.lease);
    if (ttl && ttl->count() > 0) {
      last_success_sent = sent;
      if (at_risk) {
        at_risk = false;
        on_event_(Event::healthy, "keep-alive answered by " + client_.endpoint());
      }
      continue;
    }
    if (ttl) {
      on_event_(Event::lost, "etcd says lease " + std::to_string(options_.lease) + " expired");
      return;
    }
    if (!at_risk && clock::now() - last_success_sent >= risk_after) {
      at_risk = true;
      on_event_(Event::at_risk, ttl.error().to_string());
    }
  }
}

}  // namespace claimsched::etcd
