#include "agent/memory_limit.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <memory>

namespace claimsched::agent {

namespace {

/// Reads a small file whole (a /proc stat line is well under 1 KiB).
std::optional<std::string> read_small(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
  //  majflt cmajflt utime stime cutime cstime priority nice num_threads
  //  itrealvalue starttime vsize rss ..." (proc(5)); fields counted from 1.
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  ProcStat st;
  int field = 2;  // the one that ended with ')'
  bool got_pgrp = false, got_start = false, got_rss = false;
  while (!rest.empty() && !(got_pgrp && got_start && got_rss)) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \n");
    std::string_view word = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    ++field;
    if (field == 5) {
      if (!parse_number(word, st.pgrp)) return std::nullopt;
      got_pgrp = true;
    } else if (field == 22) {
      if (!parse_number(word, st.start_ticks)) return std::nullopt;
      got_start = true;
    } else if (field == 24) {
      int64_t pages = 0;
      if (!parse_number(word, pages)) return std::nullopt;
      st.rss_pages = pages > 0 ? static_cast<uint64_t>(pages) : 0;
      got_rss = true;
    }
  }
  if (!got_pgrp || !got_start || !got_rss) return std::nullopt;
  return st;
}

uint64_t process_start_ticks(pid_t pid) {
  auto text = read_small("/proc/" + std::to_string(pid) + "/stat");
  auto st = text ? parse_proc_stat(*text) : std::nullopt;
  return st ? st->start_ticks : 0;
}

std::map<pid_t, GroupMemory> sample_groups(const std::string& proc_root, const std::set<pid_t>& groups) {
  std::map<pid_t, GroupMemory> out;
  if (groups.empty()) return out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(proc_root.c_str()), ::closedir);
  if (!dir) return out;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  while (dirent* entry = ::readdir(dir.get())) {
    pid_t pid = 0;
    std::string_view name(entry->d_name);
    if (name.empty() || name[0] < '1' || name[0] > '9' || !parse_number(name, pid)) continue;
    auto text = read_small(proc_root + "/" + std::string(name) + "/stat");
    if (!text) continue;  // gone meanwhile
    auto st = parse_proc_stat(*text);
    if (!st || st->pgrp == pid || groups.count(st->pgrp) == 0) continue;
    GroupMemory& g = out[st->pgrp];
    g.resident_bytes += st->rss_pages * page;
    ++g.processes;
  }
  return out;
}

}  // namespace claimsched::agent
