#include "apps/process_stats.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace claimsched::apps {

uint64_t heap_in_use() {
  struct mallinfo2 mi = mallinfo2();
  return static_cast<uint64_t>(mi.uordblks) + static_cast<uint64_t>(mi.hblkhd);
}

uint64_t peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

double process_cpu_seconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

uint64_t raise_open_file_limit(uint64_t cap) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  rlim_t want = r.rlim_max == RLIM_INFINITY ? static_cast<rlim_t>(cap) : std::min<rlim_t>(r.rlim_max, cap);
  if (want > r.rlim_cur) {
    rlimit raised{want, r.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r.rlim_cur = want;
  }
  return static_cast<uint64_t>(r.rlim_cur);
}

void ignore_broken_pipes() { ::signal(SIGPIPE, SIG_IGN); }

}  // namespace claimsched::apps
