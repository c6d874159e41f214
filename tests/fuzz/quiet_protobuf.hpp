#pragma once

// Protobuf logs an ERROR line to stderr for every string field that is not
// UTF-8 (the parse then fails and the decoder returns its error). In a fuzzer
// that is most inputs: silence it, or the runs measure stderr.

#include <google/protobuf/stubs/logging.h>

namespace claimsched::fuzz {

inline void quiet_protobuf() {
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
}

}  // namespace claimsched::fuzz
