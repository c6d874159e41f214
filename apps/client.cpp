#include "apps/client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "apps/client_commands.hpp"
#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

const char* kCommands[] = {"submit", "status", "cancel", "queue", "jobs", "logs", "nodes", "node", "pools", "pool", "partition", "explain"};

void add_filters(CLI::App* c, ClientOptions& o) {
  c->add_option("--user", o.filter_user, "Only this user's jobs");
  c->add_option("--state", o.states, "Only jobs in these states: pending, running, succeeded, failed, cancelled")
      ->delimiter(',');
  c->add_option("--pool", o.filter_pool, "Only jobs of this pool");
  c->add_option("--since", o.since, "Only jobs submitted since: a duration ago (2h, 7d) or a local time");
  c->add_option("--limit", o.limit, "At most this many, the newest first (0: all)")->capture_default_str();
  c->add_option("--after", o.after, "Only jobs older than this job id: the next page after one that ended with it");
}

}  // namespace

std::string server_address(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("CLAIMSCHED_SERVER"); env && *env) return env;
  return "127.0.0.1:7070";
}

std::string account_name() {
  // $USER is unset under cron, systemd and plain `sh -c`; the account is not.
  const char* user = std::getenv("USER");
  if (user && *user) return user;
  const passwd* account = ::getpwuid(::getuid());
  return account && account->pw_name ? account->pw_name : "unknown";
}

namespace {

core::Expected<std::string> token_from_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return core::make_error(core::Errc::io_error, what + ": cannot read the token file '" + path + "'");
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    auto last = line.find_last_not_of(" \t\r");
    return line.substr(first, last - first + 1);
  }
  return core::make_error(core::Errc::invalid_argument, what + ": the token file '" + path + "' is empty");
}

}  // namespace

core::Expected<std::string> client_token(const std::string& token_file) {
  if (!token_file.empty()) return token_from_file(token_file, "--token-file");
  if (const char* env = std::getenv("CLAIMSCHED_TOKEN"); env && *env) {
    std::string token = env;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    return token;
  }
  if (const char* env = std::getenv("CLAIMSCHED_TOKEN_FILE"); env && *env)
    return token_from_file(env, "CLAIMSCHED_TOKEN_FILE");
  return std::string();
}

void add_token_option(CLI::App* c, std::string& token_file) {
  c->add_option("--token-file", token_file,
                "A file whose first line is your token, for a server with [auth] (default: $CLAIMSCHED_TOKEN, or "
                "the file $CLAIMSCHED_TOKEN_FILE names)");
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "claimsched: %s\n", message.c_str());
  return code;
}

int fail(const ClientError& error) { return fail(error.exit_code, error.message); }

core::Expected<core::JobId> parse_job_id(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return core::make_error(core::Errc::parse_error, "'" + text + "' is not a job id (a positive number)");
  uint64_t id = std::stoull(text);
  if (id == 0) return core::make_error(core::Errc::parse_error, "job ids start at 1");
  return core::JobId{id};
}

core::Expected<core::TaskRef> parse_task_ref(const std::string& text) {
  auto dot = text.find('.');
  auto job = parse_job_id(text.substr(0, dot));
  if (!job) return job.error();
  core::TaskRef ref{*job, 0};
  if (dot == std::string::npos) return ref;
  std::string task = text.substr(dot + 1);
  if (task.empty() || task.size() > 9 || task.find_first_not_of("0123456789") != std::string::npos)
    return core::make_error(core::Errc::parse_error, "'" + text + "' is not JOB or JOB.TASK (e.g. 12 or 12.3)");
  ref.index = static_cast<core::TaskIndex>(std::stoul(task));
  return ref;
}

bool is_client_command(const std::string& command) {
  return std::find(std::begin(kCommands), std::end(kCommands), command) != std::end(kCommands);
}

void add_timeout_option(CLI::App* c, core::Duration& timeout, const std::string& help) {
  c->add_option_function<std::string>(
       "--timeout",
       [&timeout](const std::string& text) {
         auto d = core::parse_duration(text);
         if (!d || d->count() <= 0) throw CLI::ValidationError("--timeout", "expected a duration like 30s");
         timeout = *d;
       },
       help)
      ->type_name("DURATION");
}

void add_client_commands(CLI::App& app, ClientOptions& o) {
  auto common = [&](CLI::App* c) {
    c->add_option("--server", o.server,
                  "HOST:PORT of the server, or of every HA member comma-separated (default: $CLAIMSCHED_SERVER "
                  "or 127.0.0.1:7070)");
    c->add_flag("--json", o.json, "Print JSON (deploy/CLI.md has its keys)");
    add_timeout_option(c, o.timeout, "Give up after this long, retrying other members meanwhile (default 10s)");
    add_token_option(c, o.token_file);
  };
  auto* submit = app.add_subcommand("submit", "Submit a job; prints its id");
  o.submit_command = submit;
  common(submit);
  submit->add_option("--file", o.file, "A job file (TOML or JSON, deploy/JOBS.md); flags override its fields");
  submit->add_option("--name", o.name, "Job name");
  submit->add_option("--user", o.user,
                     "Run as this user (default: yours; with [auth], your token's, and another is refused)");
  submit->add_option("--class", o.job_class, "Scheduling class (default: the cluster's)");
  submit->add_option("--pool", o.pool, "Pool (default: default)");
  submit->add_option("--count", o.count, "Tasks (default: 1)");
  submit->add_option("--resources", o.resources, "Per task, e.g. cpu=2,memory=4Gi (default: cpu=1,memory=1Gi)");
  submit->add_option("--env", o.env, "NAME=VALUE for every task (repeatable)");
  submit->add_option("--constraint", o.constraints, "Node label selector: key, key=value, !key (repeatable)");
  submit->add_option("--lock", o.locks,
                     "A lock it takes while it runs: LEVEL=MODE[:NAME,...] or bgl (repeatable; deploy/JOBS.md)");
  submit->add_option("--workdir", o.workdir, "Working directory on the node (absolute)");
  submit->add_option("--max-run-time", o.max_run_time, "Kill (and fail) a task running longer, e.g. 10m");
  submit->add_option("--max-retries", o.max_retries, "Run a failed task again this many times (default: 0)");
  submit->add_option("--max-lost-retries", o.max_lost_retries,
                     "Run a task again this many times when its node is lost (default: 3)");
  submit->add_option("--duration", o.duration, "On simulated nodes: how long each task runs");
  submit->add_flag("--gang", o.gang, "All tasks or none");
  submit->add_flag("--not-preemptible", o.not_preemptible, "Never preempt its tasks");
  submit->add_flag("--hold", o.hold, "Accept it even if no node of its pool can run it yet (nodes to come)");
  submit->add_option("--repeat", o.repeat, "Submit this many copies; prints one id per line")->check(CLI::Range(1u, 10'000'000u));
  submit->add_flag("--wait", o.wait,
                   "Wait until the job (with --repeat: every job) ends; exit 0 if every task succeeded, 1 if not");
  submit->add_flag("--quiet", o.quiet, "With --wait: no progress on stderr");
  submit->add_flag("--follow", o.follow, "Print the job's changes as they happen, until it ends (exit as --wait)");
  submit->add_option("command", o.command, "The command every task runs (after --)");

  auto* status = app.add_subcommand(
      "status", "A job: its state, times, tasks and why they ended; without a job, the cluster's members");
  common(status);
  status->add_option("job", o.job, "Job id (none: members, partition owners, epochs, standbys)");
  status->add_flag("--tasks", o.tasks, "List every task (default: up to 10)");
  status->add_flag("--follow", o.follow, "Print changes as they happen, until the job ends");
  auto* cancel = app.add_subcommand("cancel", "Cancel a job (its running tasks are killed)");
  common(cancel);
  cancel->add_option("job", o.job, "Job id")->required();
  auto* explain = app.add_subcommand("explain", "Why a job waits, or why it lost tasks");
  common(explain);
  explain->add_option("job", o.job, "Job id")->required();

  auto* queue = app.add_subcommand("queue", "Jobs that have not ended (--all: every job)");
  common(queue);
  queue->add_flag("--all", o.all, "Ended jobs too (as `jobs`)");
  add_filters(queue, o);
  auto* jobs = app.add_subcommand("jobs", "Jobs, ended ones too, the newest first");
  common(jobs);
  add_filters(jobs, o);

  auto* logs = app.add_subcommand("logs", "A task's output, from the node it ran on");
  common(logs);
  logs->add_option("task", o.job, "JOB or JOB.TASK (task 0 by default)")->required();
  logs->add_flag("--stderr", o.stderr_stream, "Standard error instead of standard output");
  logs->add_flag("--follow,-f", o.follow, "Keep printing what the task writes until it ends");
  logs->add_option("--tail", o.tail, "Only the last N lines");

  common(app.add_subcommand("nodes", "Nodes: state, capacity, what is free"));
  auto* node = app.add_subcommand(
      "node", "drain NODE: no new work on it; undrain NODE: work again. Waits its turn behind the jobs holding "
              "the node's lock");
  common(node);
  node->add_option("action", o.node_action, "drain or undrain")->required()->check(CLI::IsMember({"drain", "undrain"}));
  node->add_option("name", o.node_name, "The node's name (as `nodes` shows it)")->required();
  node->add_flag("--wait", o.wait, "Wait until the node is draining (drain) or up (undrain)");
  common(app.add_subcommand("pools", "Fair share per pool, class, user and job"));
  auto* pool = app.add_subcommand(
      "pool", "remove POOL: its partition stops serving it, for good. Waits its turn behind the jobs holding a "
              "group lock on the pool; refused while a job of the pool has not ended or a node of it is not down");
  common(pool);
  pool->add_option("action", o.pool_action, "remove")->required()->check(CLI::IsMember({"remove"}));
  pool->add_option("name", o.pool_name, "The pool's name (as the config names it)")->required();
  pool->add_flag("--wait", o.wait, "Answer once the removal is done or refused (within --timeout)");
  auto* partition = app.add_subcommand(
      "partition", "move ID --to MEMBER (HA): MEMBER owns the partition from now on, while it lives; the others "
                   "balance around it. Waits its turn behind the jobs holding one of the partition's pools alone");
  common(partition);
  partition->add_option("action", o.partition_action, "move")->required()->check(CLI::IsMember({"move"}));
  partition->add_option("id", o.partition_id, "The partition's id (as `status` shows it)")->required();
  partition->add_option("--to", o.move_to, "The member it moves to (its [ha] name)")->required();
  partition->add_flag("--wait", o.wait, "Wait until MEMBER owns the partition (within --timeout)");
}

int run_client(const std::string& command, const ClientOptions& o) {
  // Usage problems found before anything is sent: exit 2.
  if (command == "submit") {
    if (o.repeat > 1 && o.follow) return fail(kExitUsage, "--repeat submits many jobs; --follow watches one");
    auto job = job_from_options(o);
    if (!job) return fail(job.error());
  }
  bool members = command == "status" && o.job.empty();
  if ((command == "status" && !members) || command == "cancel" || command == "explain")
    if (auto id = parse_job_id(o.job); !id) return fail(kExitUsage, id.error().message);
  if (command == "logs")
    if (auto ref = parse_task_ref(o.job); !ref) return fail(kExitUsage, ref.error().message);

  auto token = client_token(o.token_file);
  if (!token) return fail(kExitUsage, token.error().message);
  auto session = ClientSession::connect(server_address(o.server), o.timeout, *token);
  if (!session) return fail(session.error());
  ClientSession& s = **session;
  if (command == "submit") return run_submit(s, o);
  if (members) return run_members(s, o);
  if (command == "status") return run_status(s, o);
  if (command == "cancel") return run_cancel(s, o);
  if (command == "queue") return run_jobs(s, o, !o.all);
  if (command == "jobs") return run_jobs(s, o, false);
  if (command == "logs") return run_logs(s, o);
  if (command == "nodes") return run_nodes(s, o);
  if (command == "node") return run_node(s, o);
  if (command == "pools") return run_pools(s, o);
  if (command == "pool") return run_pool(s, o);
  if (command == "partition") return run_partition(s, o);
  if (command == "explain") return run_explain(s, o);
  return fail(kExitUsage, "unknown command '" + command + "'");
}

}  // namespace claimsched::apps
