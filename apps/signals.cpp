#include "apps/signals.hpp"

#include <signal.h>
#include <time.h>

namespace claimsched::apps {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void block_stop_signals() {
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool wait_for_stop_signal(std::chrono::milliseconds timeout) {
  sigset_t set = stop_signals();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  ts.tv_nsec = static_cast<long>((timeout.count() % 1000) * 1'000'000);
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

}  // namespace claimsched::apps
