// Fuzz target `auth_tokens`: the `[auth] tokens_file` (core/auth.hpp,
// TokenTable::parse). Beyond "never a crash": an error names the file and
// the line and never shows a token: it contains no 16 characters in a row of
// any run of token characters ([A-Za-z0-9._~+/=-]) in the file, the shortest
// a token may be, since any such run could be (part of) a token, whatever
// field it was written in. A table that parses finds every token of the file
// again, for the user and roles its line names, and every user of the file
// (token lines and `-` certificate lines) for a certificate of that user,
// with no role that one of the user's lines lacks. Lines are split with
// core/auth's own fields_of, the parser's.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/auth.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace claimsched;

namespace {

constexpr size_t kMinToken = 16;  // core/auth.hpp: "a token is 16 to 256 characters"

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '~' || c == '+' || c == '/' || c == '=' || c == '-';
}

// The one fixed text of an error with 16 token characters in a row: the
// character class it names.
constexpr std::string_view kTokenClass = "[A-Za-z0-9._~+/=-]";

void require_no_token(std::string message, std::string_view text) {
  for (size_t at; (at = message.find(kTokenClass)) != std::string::npos;) message.erase(at, kTokenClass.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && token_char(text[i])) ++i;
    for (size_t from = start; from + kMinToken <= i; ++from) {
      if (message.find(text.substr(from, kMinToken)) != std::string::npos)
        fuzz::fail("an error shows (part of) a token", message);
    }
    if (i == start) ++i;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto table = core::auth::TokenTable::parse(text, "tokens");
  if (!table) {
    const std::string& message = table.error().message;
    fuzz::require_message(table.error(), text);
    fuzz::require(message.starts_with("tokens file tokens "), "error does not name the file", message);
    require_no_token(message, text);
    return 0;
  }
  fuzz::require(table->users() >= 1, "an accepted tokens file without users", text);
  // Every line's token resolves to that line's user and roles.
  size_t lines = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto fields = core::auth::fields_of(line);
    if (fields.empty() || fields[0].front() == '#') continue;
    fuzz::require(fields.size() == 2 || fields.size() == 3, "a line of the wrong shape accepted", line);
    std::string line_roles = fields.size() == 3 ? std::string(fields[2]) : "";
    const core::auth::Principal* by_cert = table->find_user(fields[1]);
    fuzz::require(by_cert != nullptr && by_cert->user == fields[1] && by_cert->via == "certificate",
                  "a user of the file is not found for a certificate", line);
    fuzz::require(!by_cert->is_admin() || line_roles.find("admin") != std::string::npos,
                  "a certificate holds admin that a line of its user lacks", line);
    fuzz::require(!by_cert->is_operator() || !line_roles.empty(),
                  "a certificate holds operator that a line of its user lacks", line);
    if (fields[0] == core::auth::kNoToken) {
      fuzz::require(table->find(fields[0]) == nullptr, "'-' resolves as a token", line);
      continue;
    }
    ++lines;
    const core::auth::Principal* p = table->find(fields[0]);
    fuzz::require(p != nullptr, "a token of the file is not found", line);
    fuzz::require(p->user == fields[1], "a token resolves to another user", line);
    std::string roles = fields.size() == 3 ? std::string(fields[2]) : "";
    fuzz::require(p->is_operator() == (roles.find("operator") != std::string::npos || p->is_admin()),
                  "roles differ from the line", line);
    fuzz::require(p->is_admin() == (roles.find("admin") != std::string::npos), "admin differs from the line", line);
  }
  fuzz::require(table->size() == lines, "tokens accepted and token lines differ", text);
  // A token that is not in the file resolves to nobody, and says so without showing it.
  core::auth::Credentials unknown{"not-a-token-of-this-file!", ""};
  auto who = core::auth::resolve(*table, unknown);
  fuzz::require(!who.has_value() && who.error().message.find(unknown.token) == std::string::npos,
                "an unknown token resolves, or is shown", text);
  return 0;
}
