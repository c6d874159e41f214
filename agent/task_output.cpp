#include "agent/task_output.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace claimsched::agent {

namespace fs = std::filesystem;

core::Expected<core::LogChunk> read_output_file(const std::string& path, uint64_t offset, uint32_t tail_lines,
                                                uint32_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec))
      return core::make_error(core::Errc::unknown_name,
                              "no output kept (it printed nothing, or its files were removed after the agent's "
                              "retention)");
    return core::make_error(core::Errc::io_error, "cannot read " + path);
  }
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  core::LogChunk chunk;
  chunk.size = size;
  if (tail_lines > 0) {
    // The last max_bytes at most, then from the start of the wanted line.
    uint64_t from = size > max_bytes ? size - max_bytes : 0;
    std::string window(size - from, '\0');
    in.seekg(static_cast<std::streamoff>(from));
    in.read(window.data(), static_cast<std::streamsize>(window.size()));
    window.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    size_t end = window.size();
    if (end > 0 && window[end - 1] == '\n') --end;  // the last line's own newline
    size_t start = end;
    uint32_t lines = 0;
    while (start > 0) {
      if (window[start - 1] == '\n' && ++lines == tail_lines) break;
      --start;
    }
    chunk.offset = from + start;
    chunk.data = window.substr(start);
    return chunk;
  }
  chunk.offset = std::min(offset, size);
  uint64_t n = std::min<uint64_t>(max_bytes, size - chunk.offset);
  chunk.data.resize(n);
  in.seekg(static_cast<std::streamoff>(chunk.offset));
  in.read(chunk.data.data(), static_cast<std::streamsize>(n));
  chunk.data.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return chunk;
}

size_t remove_old_outputs(const std::string& dir, std::chrono::nanoseconds retention,
                          const std::function<bool(core::JobId)>& running) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  const auto now = fs::file_time_type::clock::now();
  size_t removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec)) continue;
    uint64_t job = 0;
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    try {
      job = std::stoull(name);
    } catch (const std::exception&) {
      continue;
    }
    if (running(core::JobId{job})) continue;
    auto newest = entry.last_write_time(ec);
    for (const auto& f : fs::directory_iterator(entry.path(), ec))
      newest = std::max(newest, f.last_write_time(ec));
    if (now - newest < retention) continue;
    fs::remove_all(entry.path(), ec);
    if (ec) {
      spdlog::warn("agent: cannot remove the old outputs in {}: {}", entry.path().string(), ec.message());
      continue;
    }
    ++removed;
  }
  return removed;
}

}  // namespace claimsched::agent
