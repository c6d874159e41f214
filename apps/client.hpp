#pragma once

// The client: `claimsched submit | status | queue | nodes | cancel | pools |
// explain`. It reaches the server through --server HOST:PORT, else
// CLAIMSCHED_SERVER, else 127.0.0.1:7070.
//
// Exit codes (scripts rely on them):
//   0  done
//   1  the server refused: unknown job, invalid job (the field is named), ...
//   2  bad usage or an unreadable / invalid job file (nothing was sent)
//   3  the server cannot be reached (or did not answer in time)

#include <string>
#include <vector>

#include "core/ids.hpp"

namespace CLI {
class App;
}

namespace claimsched::apps {

struct ClientOptions {
  std::string server;
  bool json = false;
  core::Duration timeout = std::chrono::seconds(10);
  uint64_t job = 0;
  // submit
  std::string file;
  std::string name;
  std::string user;
  std::string job_class;
  std::string pool = "default";
  uint32_t count = 1;
  std::string resources = "cpu=1,memory=1Gi";
  std::vector<std::string> env;
  std::vector<std::string> constraints;
  std::string workdir;
  std::string max_run_time;
  std::string duration;
  uint32_t max_retries = 0;
  int64_t max_lost_retries = -1;
  bool gang = false;
  bool not_preemptible = false;
  std::vector<std::string> command;
  /// Submit this many copies (pipelined); prints one id per line.
  uint32_t repeat = 1;
  /// After submitting, wait until every submitted job ended and print a
  /// summary (rates, latencies) instead of the ids.
  bool wait = false;
};

/// Adds every client subcommand; `which` receives the name of the one given.
void add_client_commands(CLI::App& app, ClientOptions& options);
/// Runs `command` (a name add_client_commands registered); returns the exit code.
int run_client(const std::string& command, const ClientOptions& options);
/// True if `command` is one of the client's subcommands.
bool is_client_command(const std::string& command);

}  // namespace claimsched::apps
