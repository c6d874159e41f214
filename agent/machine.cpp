#include "agent/machine.hpp"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <string_view>
#include <system_error>

namespace claimsched::agent {

namespace {

/// CPUs in this thread's affinity mask, or 0 if it cannot be read.
int64_t affinity_cpus() {
  // The mask must be at least as large as the kernel's; grow until it is.
  for (int n = 1024; n <= (1 << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return 0;
    size_t size = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(size, set);
    int64_t count = 0;
    bool grow = false;
    if (::sched_getaffinity(0, size, set) == 0)
      count = CPU_COUNT_S(size, set);
    else
      grow = errno == EINVAL;
    CPU_FREE(set);
    if (!grow) return count;
  }
  return 0;
}

core::Expected<int64_t> cpuinfo_cpus(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return core::make_error(core::Errc::io_error, "cannot read " + path.string());
  int64_t count = 0;
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("processor") && line.find(':') != std::string::npos) ++count;
  if (count == 0) return core::make_error(core::Errc::corrupt, "no processor entries in " + path.string());
  return count;
}

core::Expected<int64_t> mem_total_bytes(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    return core::make_error(core::Errc::io_error,
                            "cannot read " + path.string() + ": " + std::system_category().message(err));
  }
  std::string line;
  while (std::getline(in, line)) {
    std::string_view rest(line);
    if (!rest.starts_with("MemTotal:")) continue;
    rest.remove_prefix(std::strlen("MemTotal:"));
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    std::string_view unit(end, static_cast<size_t>(rest.data() + rest.size() - end));
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    int64_t factor = unit == "kB" ? 1024 : unit.empty() ? 1 : 0;
    if (ec != std::errc{} || value <= 0 || factor == 0 || value > INT64_MAX / factor)
      return core::make_error(core::Errc::corrupt, "cannot parse '" + line + "' in " + path.string());
    return value * factor;
  }
  return core::make_error(core::Errc::corrupt, "no MemTotal line in " + path.string());
}

}  // namespace

core::Expected<core::Resources> detect_machine_capacity(const std::filesystem::path& proc_root) {
  auto memory = mem_total_bytes(proc_root / "meminfo");
  if (!memory) return memory.error();
  int64_t cpus = affinity_cpus();
  if (cpus <= 0) {
    auto counted = cpuinfo_cpus(proc_root / "cpuinfo");
    if (!counted) return counted.error();
    cpus = *counted;
  }
  return core::Resources::cpu_memory(cpus * 1000, *memory);
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace claimsched::agent
