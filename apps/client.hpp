#pragma once

// The client: `claimsched submit | status | cancel | queue | jobs | logs |
// nodes | node | pools | pool | explain`. It reaches the server through
// --server HOST:PORT, else CLAIMSCHED_SERVER, else 127.0.0.1:7070.
// deploy/CLI.md documents every command, its text and its JSON.
//
// Exit codes, the same for every command (scripts rely on them):
//   0  done (submit --wait / status --follow: every task succeeded)
//   1  the request was refused (unknown job, invalid job: the field is
//      named), or the job failed (--wait, --follow)
//   2  bad usage or an invalid job file (nothing was sent)
//   3  the server cannot be reached (or did not answer in time)

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace CLI {
class App;
}

namespace claimsched::apps {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;

struct ClientOptions {
  std::string server;
  /// A file holding the client's token ([auth]); see client_token.
  std::string token_file;
  bool json = false;
  core::Duration timeout = std::chrono::seconds(10);
  /// JOB or JOB.TASK as typed (checked by the command).
  std::string job;
  // submit
  std::string file;
  std::string name;
  std::string user;
  std::string job_class;
  std::string pool;
  uint32_t count = 1;
  std::string resources;
  std::vector<std::string> env;
  std::vector<std::string> constraints;
  std::vector<std::string> locks;
  /// `node drain|undrain NAME`.
  std::string node_action;
  std::string node_name;
  /// `pool remove NAME`.
  std::string pool_action;
  std::string pool_name;
  /// `partition move ID --to MEMBER`.
  std::string partition_action;
  uint32_t partition_id = 0;
  std::string move_to;
  std::string workdir;
  std::string max_run_time;
  std::string duration;
  uint32_t max_retries = 0;
  uint32_t max_lost_retries = 3;
  bool gang = false;
  bool not_preemptible = false;
  bool hold = false;
  std::vector<std::string> command;
  /// Submit this many copies (pipelined); prints one id per line.
  uint32_t repeat = 1;
  /// Wait until the job (with repeat: every job) ends; exit 0 if every task
  /// succeeded, else 1.
  bool wait = false;
  /// No progress on stderr while waiting.
  bool quiet = false;
  /// Print the job's state changes as they happen, until it ends.
  bool follow = false;
  // status
  bool tasks = false;
  // queue / jobs
  bool all = false;
  std::string filter_user;
  std::vector<std::string> states;
  std::string filter_pool;
  std::string since;
  uint32_t limit = 50;
  /// Only jobs older than this one: the page after a page that ended with it.
  uint64_t after = 0;
  // logs
  bool stderr_stream = false;
  uint32_t tail = 0;
  /// Which submit flags were given on the command line (they override the
  /// job file's fields); filled by add_client_commands.
  const CLI::App* submit_command = nullptr;
};

/// Adds every client subcommand.
void add_client_commands(CLI::App& app, ClientOptions& options);

/// `--timeout DURATION` on command `c`, written to `timeout` (a positive
/// duration, refused otherwise); `help` says what it bounds.
void add_timeout_option(CLI::App* c, core::Duration& timeout, const std::string& help);
/// Runs `command` (a name add_client_commands registered); returns the exit code.
int run_client(const std::string& command, const ClientOptions& options);
/// True if `command` is one of the client's subcommands.
bool is_client_command(const std::string& command);

/// --server if given, else $CLAIMSCHED_SERVER, else 127.0.0.1:7070.
std::string server_address(const std::string& given);
/// The account running the client ($USER, else the password database's).
std::string account_name();

/// The token to present to a server with [auth]: the first line of
/// `token_file` if given, else $CLAIMSCHED_TOKEN, else the first line of
/// the file $CLAIMSCHED_TOKEN_FILE names; empty if none. An unreadable or
/// empty file is a usage error (2). The token is never printed.
core::Expected<std::string> client_token(const std::string& token_file);

/// Adds `--token-file FILE` to command `c`.
void add_token_option(CLI::App* c, std::string& token_file);

}  // namespace claimsched::apps
