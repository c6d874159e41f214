#include "storage/crash_point.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

namespace claimsched::storage::crash {

namespace {

constexpr std::array kPoints{kCreateColumnFamilies, kCreateIdentityUnsynced, kCreateBeforeRename,
                             kCreateRenamed,        kFileWritten,            kFileRenamed,
                             kRecoverStarted,       kRecoverFinished,        kCommitBeforeWrite,
                             kCommitWritten};

/// The point named by the environment and its hit number, read once.
struct Armed {
  std::string name;
  long hit = 1;
  std::atomic<long> seen{0};

  Armed() {
#ifdef CLAIMSCHED_CRASH_POINTS
    const char* spec = std::getenv("CLAIMSCHED_CRASH_POINT");
    if (spec == nullptr || *spec == '\0') return;
    name = spec;
    if (auto at = name.find('@'); at != std::string::npos) {
      hit = std::max(1L, std::strtol(name.c_str() + at + 1, nullptr, 10));
      name.resize(at);
    }
#endif
  }
};

Armed& armed() {
  static Armed a;
  return a;
}

void write_all(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::span<const std::string_view> all_points() { return kPoints; }

bool crash_points_enabled() {
#ifdef CLAIMSCHED_CRASH_POINTS
  return true;
#else
  return false;
#endif
}

void point(std::string_view point) {
  Armed& a = armed();
  if (a.name.empty() || a.name != point) return;
  if (a.seen.fetch_add(1) + 1 != a.hit) return;
  write_all("claimsched: crash point " + a.name + " reached (hit " + std::to_string(a.hit) +
            "): killing the process\n");
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace claimsched::storage::crash
