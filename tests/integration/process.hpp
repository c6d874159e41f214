#pragma once

// Runs claimsched as a real process and captures what it prints.

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace claimsched::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
};

/// Runs `command` through /bin/sh, capturing stdout (stderr passes through).
inline ProcessResult run_command(const std::string& command) {
  ProcessResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace claimsched::testing
