#include "apps/log_format.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string>

#include "apps/json_string.hpp"

namespace claimsched::apps {

namespace {

/// %* in the pattern: the message, escaped for a JSON string.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string text;
    append_json_escaped(text, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

}  // namespace

void set_log_format(std::string_view format) {
  if (format != "json") return;
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<EscapedMessage>('*').set_pattern(
      R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","logger":"%n","pid":%P,"thread":%t,"message":"%*"})");
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace claimsched::apps
