#include "core/error.hpp"

namespace claimsched::core {

std::string_view to_string(Errc code) {
  switch (code) {
    case Errc::parse_error:
      return "parse error";
    case Errc::invalid_argument:
      return "invalid argument";
    case Errc::unknown_name:
      return "unknown name";
    case Errc::duplicate:
      return "duplicate";
    case Errc::wrong_state:
      return "wrong state";
    case Errc::capacity_exceeded:
      return "capacity exceeded";
    case Errc::io_error:
      return "i/o error";
    case Errc::corrupt:
      return "corrupt data";
    case Errc::unavailable:
      return "unavailable";
    case Errc::unauthenticated:
      return "unauthenticated";
    case Errc::permission_denied:
      return "permission denied";
  }
  return "unknown error";
}

std::string Error::to_string() const {
  std::string out{claimsched::core::to_string(code)};
  if (!message.empty()) {
    out += ": ";
    out += message;
  }
  return out;
}

}  // namespace claimsched::core
