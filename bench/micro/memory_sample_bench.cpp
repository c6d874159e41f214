// What the agent's memory-limit fallback costs (agent/memory_limit.hpp): one
// sample reads /proc/<pid>/stat of every process on the machine, whatever
// the number of limited tasks, every SupervisorOptions::memory_sample_interval
// (100 ms) while a limited task runs. The counter `processes` is how many the
// sample read; cpu time per sample over the interval is the supervisor
// thread's share of a core. See bench/README.md.

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <unistd.h>

#include "agent/memory_limit.hpp"

namespace {

size_t count_processes() {
  size_t n = 0;
  if (DIR* dir = ::opendir("/proc")) {
    while (dirent* e = ::readdir(dir))
      if (e->d_name[0] >= '1' && e->d_name[0] <= '9') ++n;
    ::closedir(dir);
  }
  return n;
}

void BM_SampleAllOfProc(benchmark::State& state) {
  // This process's group stands for a task's: the scan is the same.
  const std::set<pid_t> groups{::getpgrp()};
  for (auto _ : state) benchmark::DoNotOptimize(claimsched::agent::sample_groups("/proc", groups));
  state.counters["processes"] = static_cast<double>(count_processes());
}
BENCHMARK(BM_SampleAllOfProc)->Unit(benchmark::kMicrosecond);

}  // namespace
