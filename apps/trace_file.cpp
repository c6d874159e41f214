#include "apps/trace_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace claimsched::apps {

namespace {

using core::Errc;
using core::make_error;

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

/// zlib's stream, ended however the function returns.
struct Inflater {
  z_stream stream{};
  bool started = false;
  ~Inflater() {
    if (started) inflateEnd(&stream);
  }
};

/// Inflates every gzip member in turn (as gzip -d does: `cat a.gz b.gz`
/// is one file). An end inside a member is "truncated"; bytes after the last
/// member that start no other one are "corrupt": either way part of the
/// trace would be lost without a word.
core::Expected<std::string> gunzip(const std::string& path, const std::string& compressed) {
  auto corrupt = [&](const std::string& why) {
    return make_error(Errc::corrupt, "'" + path + "' is not a valid gzip file: " + why);
  };
  Inflater inflater;
  z_stream& stream = inflater.stream;
  // 16 + MAX_WBITS: a gzip wrapper, not zlib's own.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return make_error(Errc::io_error, "zlib could not start");
  inflater.started = true;

  std::string text;
  std::string chunk(size_t{1} << 16, '\0');
  size_t fed = 0;  // bytes handed to zlib so far (avail_in is 32 bits)
  while (true) {
    if (stream.avail_in == 0 && fed < compressed.size()) {
      size_t piece = std::min<size_t>(compressed.size() - fed, size_t{1} << 30);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + fed));
      stream.avail_in = static_cast<uInt>(piece);
      fed += piece;
    }
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    int status = inflate(&stream, Z_NO_FLUSH);
    text.append(chunk.data(), chunk.size() - stream.avail_out);
    size_t position = fed - stream.avail_in;
    if (status == Z_STREAM_END) {
      if (position == compressed.size()) return text;
      if (static_cast<unsigned char>(compressed[position]) != 0x1f)
        return corrupt("unexpected data after the gzip stream, at byte " + std::to_string(position));
      inflateReset(&stream);
      continue;
    }
    if (status == Z_OK) continue;
    // With fresh room for output, no progress means the input ran out mid-stream.
    if (status == Z_BUF_ERROR)
      return corrupt("truncated: the file ends inside the compressed data, after " + std::to_string(compressed.size()) +
                     " bytes");
    std::string why = stream.msg ? stream.msg : "zlib error " + std::to_string(status);
    return corrupt(why + " (near byte " + std::to_string(position) + ")");
  }
}

}  // namespace

core::Expected<std::string> read_trace_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return make_error(Errc::io_error, "cannot read '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::io_error, "cannot read '" + path + "': " + std::strerror(errno));
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return make_error(Errc::io_error, "cannot read '" + path + "': " + std::strerror(errno));
  if (!is_gzip(bytes)) return bytes;
  return gunzip(path, bytes);
}

core::Expected<core::replay::Trace> load_trace(const std::string& path, const core::replay::TraceOptions& options) {
  auto text = read_trace_text(path);
  if (!text) return text.error();
  auto trace = core::replay::parse_trace(*text, options);
  if (!trace) return core::make_error(trace.error().code, path + ": " + trace.error().message);
  return trace;
}

}  // namespace claimsched::apps
