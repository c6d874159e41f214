#include "apps/client.hpp"

#include <pwd.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <caf/io/all.hpp>
#include <cmath>
#include <cstdio>
#include <deque>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "actors/actors.hpp"
#include "actors/connect.hpp"
#include "actors/gateway_actor.hpp"
#include "actors/registration.hpp"
#include "apps/job_file.hpp"
#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr int kUsage = 2;
constexpr int kUnreachable = 3;

const char* kCommands[] = {"submit", "status", "queue", "nodes", "cancel", "pools", "explain"};

std::string server_address(const ClientOptions& o) {
  if (!o.server.empty()) return o.server;
  if (const char* env = std::getenv("CLAIMSCHED_SERVER"); env && *env) return env;
  return "127.0.0.1:7070";
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "claimsched: %s\n", message.c_str());
  return code;
}

core::Expected<core::JobSpec> job_from(const ClientOptions& o) {
  core::JobSpec j;
  if (!o.file.empty()) {
    std::ifstream in(o.file);
    if (!in) return core::make_error(core::Errc::io_error, "cannot read job file " + o.file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_job_file(text.str(), o.file);
    if (!parsed) return parsed.error();
    j = std::move(*parsed);
  } else {
    j.name = o.name;
    j.job_class = o.job_class;
    j.pool = o.pool;
    j.count = o.count;
    auto r = core::Resources::parse(o.resources);
    if (!r) return core::make_error(core::Errc::invalid_argument, "--resources: " + r.error().message);
    j.per_task = *r;
    for (const auto& e : o.env) {
      auto eq = e.find('=');
      if (eq == std::string::npos || eq == 0)
        return core::make_error(core::Errc::invalid_argument, "--env: expected NAME=VALUE, got '" + e + "'");
      j.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
    }
    j.constraints = o.constraints;
    j.workdir = o.workdir;
    for (const auto& [flag, text, target] :
         {std::tuple{"--max-run-time", &o.max_run_time, &j.max_run_time},
          std::tuple{"--duration", &o.duration, &j.simulated_runtime}}) {
      if (text->empty()) continue;
      auto d = core::parse_duration(*text);
      if (!d) return core::make_error(core::Errc::invalid_argument, std::string(flag) + ": " + d.error().message);
      *target = *d;
    }
    j.max_retries = o.max_retries;
    if (o.max_lost_retries >= 0) j.max_lost_retries = static_cast<uint32_t>(o.max_lost_retries);
    j.gang = o.gang;
    j.preemptible = !o.not_preemptible;
    j.command = o.command;
  }
  if (j.user.empty()) {
    // $USER is unset under cron, systemd and plain `sh -c`; the account is not.
    const char* user = std::getenv("USER");
    const passwd* account = user && *user ? nullptr : ::getpwuid(::getuid());
    j.user = user && *user ? user : account && account->pw_name ? account->pw_name : "unknown";
  }
  if (auto st = core::validate(j); !st) return st.error();
  return j;
}

nlohmann::json to_json(const core::JobView& v) {
  nlohmann::json tasks = nlohmann::json::object();
  for (size_t s = 0; s < v.by_state.size(); ++s)
    if (v.by_state[s] > 0) tasks[std::string(core::to_string(static_cast<core::TaskState>(s)))] = v.by_state[s];
  nlohmann::json j{{"job", v.spec.id.value}, {"name", v.spec.name}, {"user", v.spec.user},
                   {"class", v.spec.job_class}, {"pool", v.spec.pool}, {"count", v.spec.count},
                   {"resources", v.spec.per_task.to_string()}, {"state", std::string(core::to_string(v.state))},
                   {"tasks_by_state", tasks}, {"reason", v.reason}, {"last_removal", v.last_removal},
                   {"preemptions", v.preemptions}, {"evictions", v.evictions}, {"command", v.spec.command}};
  // The server's monotonic clock (CLOCK_MONOTONIC, shared by the processes
  // of one host): benchmarks compare it with their own.
  if (v.spec.submit_time.count() != 0) j["submitted_at_ns"] = v.spec.submit_time.count();
  if (v.started_at != core::kNever) j["started_at_ns"] = v.started_at.count();
  if (v.finished_at != core::kNever) j["finished_at_ns"] = v.finished_at.count();
  if (!v.tasks.empty()) {
    auto& list = j["tasks"] = nlohmann::json::array();
    for (const auto& t : v.tasks)
      list.push_back({{"index", t.index}, {"state", std::string(core::to_string(t.state))},
                      {"node", t.node.value}, {"exit_code", t.exit_code}, {"failures", t.failures},
                      {"losses", t.losses}});
  }
  return j;
}

std::string counts(const core::JobView& v) {
  std::string out;
  for (size_t s = 0; s < v.by_state.size(); ++s) {
    if (v.by_state[s] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(v.by_state[s]) + " " + std::string(core::to_string(static_cast<core::TaskState>(s)));
  }
  return out;
}

void print_job(const core::JobView& v) {
  std::printf("job %llu%s of %s, class %s, pool %s: %s (%s)\n", static_cast<unsigned long long>(v.spec.id.value),
              v.spec.name.empty() ? "" : (" (" + v.spec.name + ")").c_str(), v.spec.user.c_str(),
              v.spec.job_class.c_str(), v.spec.pool.c_str(), std::string(core::to_string(v.state)).c_str(),
              counts(v).c_str());
  if (!v.reason.empty()) std::printf("  waiting: %s\n", v.reason.c_str());
  if (!v.last_removal.empty()) std::printf("  last taken away: %s\n", v.last_removal.c_str());
  for (const auto& t : v.tasks) {
    std::printf("  task %u: %s", t.index, std::string(core::to_string(t.state)).c_str());
    if (t.node.value != 0) std::printf(" on node %u", t.node.value);
    if (core::is_final(t.state) || t.failures > 0) std::printf(", exit code %d", t.exit_code);
    if (t.failures > 0) std::printf(", %u failure(s)", t.failures);
    if (t.losses > 0) std::printf(", lost %u time(s)", t.losses);
    std::printf("\n");
  }
}

double ms_between(core::TimePoint a, core::TimePoint b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) ;
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

/// `claimsched status` without a job: members, partition owners, epochs,
/// standbys and how far behind each is.
void print_members(const std::string& text, bool json) {
  if (json) {
    std::printf("%s\n", text.c_str());
    return;
  }
  auto v = nlohmann::json::parse(text, nullptr, false);
  if (!v.is_object()) {
    std::printf("%s\n", text.c_str());
    return;
  }
  if (v.value("mode", "") == "ha")
    std::printf("HA cluster, asked member %s (ack %s, lease %lld s, etcd %s%s)\n", v.value("member", "").c_str(),
                v.value("ack", "").c_str(), static_cast<long long>(v.value("lease_ttl_s", int64_t{0})),
                v.value("etcd", "").c_str(),
                v.value("etcd_problem", "").empty() ? "" : (": " + v.value("etcd_problem", "")).c_str());
  else
    std::printf("single server (static ownership)\n");
  std::printf("%-12s %-24s %s\n", "MEMBER", "ADDRESS", "HOST/PID");
  for (const auto& m : v.value("members", nlohmann::json::array()))
    std::printf("%-12s %-24s %s/%lld\n", m.value("name", "").c_str(), m.value("address", "").c_str(),
                m.value("host", "").c_str(), static_cast<long long>(m.value("pid", int64_t{0})));
  std::printf("%-10s %-16s %-12s %-8s %s\n", "PARTITION", "POOLS", "OWNER", "EPOCH", "STANDBYS (lag)");
  for (const auto& p : v.value("partitions", nlohmann::json::array())) {
    std::string pools, standbys;
    for (const auto& pool : p.value("pools", nlohmann::json::array()))
      pools += (pools.empty() ? "" : ",") + pool.get<std::string>();
    for (const auto& s : p.value("standbys", nlohmann::json::array()))
      standbys += (standbys.empty() ? "" : ", ") + s.value("name", "") + " (" +
                  (s.value("bootstrapping", false) ? std::string("copying a checkpoint")
                                                   : std::to_string(s.value("lag_records", int64_t{0})) + " records, " +
                                                         std::to_string(s.value("lag_ms", int64_t{0})) + " ms") +
                  ")";
    std::string owner = p.value("owner", "");
    std::printf("%-10lld %-16s %-12s %-8lld %s\n", static_cast<long long>(p.value("partition", int64_t{0})),
                pools.c_str(), owner.empty() ? "(none)" : owner.c_str(),
                static_cast<long long>(p.value("epoch", int64_t{0})), standbys.empty() ? "-" : standbys.c_str());
  }
}

/// `submit --repeat N [--wait]`: N jobs with a window of requests in flight;
/// with --wait, polls until all ended and prints rates and latencies computed
/// from the server's own clock (submit, first task running, last task ended).
template <class Refused>
int submit_many(caf::scoped_actor& self, const actors::gateway_actor& gw, const core::JobSpec& job,
                const ClientOptions& o, std::chrono::milliseconds timeout, Refused& refused) {
  constexpr size_t kWindow = 256;
  std::vector<core::JobId> ids;
  ids.reserve(o.repeat);
  int code = 0;
  auto started = std::chrono::steady_clock::now();
  std::deque<decltype(self->request(gw, timeout, job))> inflight;
  uint32_t sent = 0;
  while (sent < o.repeat || !inflight.empty()) {
    while (inflight.size() < kWindow && sent < o.repeat) {
      inflight.push_back(self->request(gw, timeout, job));
      ++sent;
    }
    inflight.front().receive([&](core::JobId id) { ids.push_back(id); },
                             [&](caf::error& err) {
                               refused(err);
                               code = kRefused;
                             });
    inflight.pop_front();
  }
  double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!o.wait) {
    for (auto id : ids) std::printf("%llu\n", static_cast<unsigned long long>(id.value));
    return code;
  }
  std::sort(ids.begin(), ids.end());
  for (;;) {
    bool open = false;
    bool failed = false;
    self->request(gw, timeout, actors::queue_atom::value)
        .receive(
            [&](std::vector<core::JobView>& jobs) {
              for (const auto& v : jobs) open |= std::binary_search(ids.begin(), ids.end(), v.spec.id);
            },
            [&](caf::error& err) {
              refused(err);
              failed = true;
            });
    if (failed) return kUnreachable;
    if (!open) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<double> placement, completion;
  core::TimePoint first_submit = core::kNever, last_end{0};
  uint64_t succeeded = 0;
  std::deque<decltype(self->request(gw, timeout, actors::status_atom::value, core::JobId{}))> views;
  size_t next = 0;
  while (next < ids.size() || !views.empty()) {
    while (views.size() < kWindow && next < ids.size())
      views.push_back(self->request(gw, timeout, actors::status_atom::value, ids[next++]));
    views.front().receive(
        [&](core::JobView& v) {
          succeeded += v.state == core::JobState::succeeded;
          first_submit = std::min(first_submit, v.spec.submit_time);
          if (v.started_at != core::kNever) placement.push_back(ms_between(v.spec.submit_time, v.started_at));
          if (v.finished_at != core::kNever) {
            completion.push_back(ms_between(v.spec.submit_time, v.finished_at));
            last_end = std::max(last_end, v.finished_at);
          }
        },
        [&](caf::error& err) { refused(err); });
    views.pop_front();
  }
  double complete_s = std::chrono::duration<double>(last_end - first_submit).count();
  nlohmann::json j{{"jobs", ids.size()},
                   {"succeeded", succeeded},
                   {"submit_per_sec", submit_s > 0 ? static_cast<double>(ids.size()) / submit_s : 0.0},
                   {"complete_per_sec", complete_s > 0 ? static_cast<double>(ids.size()) / complete_s : 0.0},
                   {"latency_p50_ms", quantile(completion, 0.5)},
                   {"latency_p99_ms", quantile(completion, 0.99)},
                   {"placement_p50_ms", quantile(placement, 0.5)},
                   {"placement_p99_ms", quantile(placement, 0.99)}};
  std::printf("%s\n", j.dump().c_str());
  return code;
}

}  // namespace

bool is_client_command(const std::string& command) {
  return std::find(std::begin(kCommands), std::end(kCommands), command) != std::end(kCommands);
}

void add_client_commands(CLI::App& app, ClientOptions& o) {
  auto common = [&](CLI::App* c) {
    c->add_option("--server", o.server,
                  "HOST:PORT of the server, or of every HA member comma-separated (default: $CLAIMSCHED_SERVER "
                  "or 127.0.0.1:7070)");
    c->add_flag("--json", o.json, "Print JSON");
    c->add_option_function<std::string>(
          "--timeout",
          [&o](const std::string& text) {
            auto d = core::parse_duration(text);
            if (!d || d->count() <= 0) throw CLI::ValidationError("--timeout", "expected a duration like 30s");
            o.timeout = *d;
          },
          "Give up after this long, retrying other members meanwhile (default 10s)")
        ->type_name("DURATION");
  };
  auto* submit = app.add_subcommand("submit", "Submit a job; prints its id");
  common(submit);
  submit->add_option("--file", o.file, "A job file (TOML or JSON; see apps/job_file.hpp)");
  submit->add_option("--name", o.name, "Job name");
  submit->add_option("--class", o.job_class, "Scheduling class (default: the cluster's)");
  submit->add_option("--pool", o.pool, "Pool")->capture_default_str();
  submit->add_option("--count", o.count, "Tasks")->capture_default_str();
  submit->add_option("--resources", o.resources, "Per task, e.g. cpu=2,memory=4Gi")->capture_default_str();
  submit->add_option("--env", o.env, "NAME=VALUE for every task (repeatable)");
  submit->add_option("--constraint", o.constraints, "Node label selector: key, key=value, !key (repeatable)");
  submit->add_option("--workdir", o.workdir, "Working directory on the node");
  submit->add_option("--max-run-time", o.max_run_time, "Kill (and fail) a task running longer, e.g. 10m");
  submit->add_option("--max-retries", o.max_retries, "Run a failed task again this many times")->capture_default_str();
  submit->add_option("--max-lost-retries", o.max_lost_retries, "Run a task again this many times when its node is lost (default 3)");
  submit->add_option("--duration", o.duration, "On simulated nodes: how long each task runs");
  submit->add_flag("--gang", o.gang, "All tasks or none");
  submit->add_option("--repeat", o.repeat, "Submit this many copies (pipelined)")->capture_default_str();
  submit->add_flag("--wait", o.wait, "Wait until the submitted jobs end; print rates and latencies");
  submit->add_flag("--not-preemptible", o.not_preemptible, "Never preempt its tasks");
  submit->add_option("command", o.command, "The command every task runs (after --)");
  for (const char* name : {"status", "cancel", "explain"}) {
    bool status = name == std::string("status");
    auto* c = app.add_subcommand(name, std::string(status ? "A job and its tasks; without a job, the cluster's members"
                                                   : name == std::string("cancel") ? "Cancel a job"
                                                                                    : "Why a job waits or lost tasks"));
    common(c);
    auto* job = c->add_option("job", o.job, status ? "Job id (none: members, owners, epochs, standbys)" : "Job id");
    if (!status) job->required();
  }
  common(app.add_subcommand("queue", "Jobs that have not ended"));
  common(app.add_subcommand("nodes", "Nodes and their state"));
  common(app.add_subcommand("pools", "Fair share per pool, class, user and job"));
}

/// Runs `command` against one gateway; `refused` decides what a failed
/// request means (and may ask the caller to retry elsewhere).
template <class Refused>
int run_on(caf::scoped_actor& self, const actors::gateway_actor& gw, const std::string& address,
           const std::string& command, const core::JobSpec& job, const ClientOptions& o,
           std::chrono::milliseconds timeout, Refused&& on_error) {
  int code = kOk;
  auto refused = [&](caf::error& err) { code = on_error(err); };
  (void)address;
  core::JobId id{o.job};
  if (command == "submit" && (o.repeat > 1 || o.wait)) {
    code = submit_many(self, gw, job, o, timeout, refused);
  } else if (command == "submit") {
    self->request(gw, timeout, job).receive(
        [&](core::JobId id) {
          if (o.json)
            std::printf("%s\n", nlohmann::json{{"job", id.value}}.dump().c_str());
          else
            std::printf("%llu\n", static_cast<unsigned long long>(id.value));
        },
        refused);
  } else if (command == "status" && o.job == 0) {
    self->request(gw, timeout, actors::members_atom::value)
        .receive([&](std::string& view) { print_members(view, o.json); }, refused);
  } else if (command == "status" || command == "cancel") {
    auto show = [&](core::JobView& v) {
      if (o.json)
        std::printf("%s\n", to_json(v).dump().c_str());
      else
        print_job(v);
    };
    if (command == "status")
      self->request(gw, timeout, actors::status_atom::value, id).receive(show, refused);
    else
      self->request(gw, timeout, actors::cancel_atom::value, id).receive(show, refused);
  } else if (command == "queue") {
    self->request(gw, timeout, actors::queue_atom::value)
        .receive(
            [&](std::vector<core::JobView>& jobs) {
              if (o.json) {
                auto list = nlohmann::json::array();
                for (const auto& v : jobs) list.push_back(to_json(v));
                std::printf("%s\n", list.dump().c_str());
                return;
              }
              std::printf("%-8s %-12s %-10s %-10s %-10s %-10s %s\n", "JOB", "NAME", "USER", "CLASS", "POOL",
                          "STATE", "TASKS");
              for (const auto& v : jobs)
                std::printf("%-8llu %-12s %-10s %-10s %-10s %-10s %s\n",
                            static_cast<unsigned long long>(v.spec.id.value), v.spec.name.c_str(),
                            v.spec.user.c_str(), v.spec.job_class.c_str(), v.spec.pool.c_str(),
                            std::string(core::to_string(v.state)).c_str(), counts(v).c_str());
            },
            refused);
  } else if (command == "nodes") {
    self->request(gw, timeout, actors::nodes_atom::value)
        .receive(
            [&](std::vector<core::NodeStatus>& nodes) {
              if (o.json) {
                auto list = nlohmann::json::array();
                for (const auto& n : nodes)
                  list.push_back({{"node", n.spec.id.value}, {"name", n.spec.name}, {"pool", n.spec.pool},
                                  {"state", std::string(core::to_string(n.snapshot.state))}, {"alive", n.alive},
                                  {"capacity", n.snapshot.capacity.to_string()},
                                  {"free", n.snapshot.free.to_string()}, {"labels", n.spec.labels},
                                  {"silent_ms", n.silent_ms}});
                std::printf("%s\n", list.dump().c_str());
                return;
              }
              std::printf("%-10s %-16s %-10s %-9s %-28s %s\n", "NODE", "NAME", "POOL", "STATE", "CAPACITY", "FREE");
              for (const auto& n : nodes)
                std::printf("%-10u %-16s %-10s %-9s %-28s %s\n", n.spec.id.value, n.spec.name.c_str(),
                            n.spec.pool.c_str(), std::string(core::to_string(n.snapshot.state)).c_str(),
                            n.snapshot.capacity.to_string().c_str(), n.snapshot.free.to_string().c_str());
            },
            refused);
  } else if (command == "pools" || command == "explain") {
    auto print = [&](std::string& text) {
      if (o.json)
        std::printf("%s\n", nlohmann::json{{command == "pools" ? "shares" : "explanation", text}}.dump().c_str());
      else
        std::printf("%s%s", text.c_str(), !text.empty() && text.back() == '\n' ? "" : "\n");
    };
    if (command == "pools")
      self->request(gw, timeout, actors::pools_atom::value).receive(print, refused);
    else
      self->request(gw, timeout, actors::explain_atom::value, id).receive(print, refused);
  } else {
    return fail(kUsage, "unknown command '" + command + "'");
  }
  return code;
}

int run_client(const std::string& command, const ClientOptions& o) {
  core::JobSpec job;
  if (command == "submit") {
    auto j = job_from(o);
    if (!j) return fail(kUsage, j.error().message);
    job = std::move(*j);
  }
  // One server, or any member of an HA cluster (comma-separated): a member
  // that cannot be reached, or cannot answer now (its partition changes
  // owner), is retried on the next until the timeout. A submit carries its
  // id from here on, so a retry is the same job, never a second one.
  std::vector<std::pair<std::string, uint16_t>> members;
  {
    std::stringstream items(server_address(o));
    for (std::string item; std::getline(items, item, ',');) {
      auto hp = actors::split_address(item);
      if (!hp) return fail(kUsage, "server '" + item + "' is not HOST:PORT (with a port in 1-65535)");
      members.push_back(*hp);
    }
    if (members.empty()) return fail(kUsage, "no server given");
  }
  if (command == "submit" && o.repeat <= 1 && !o.wait && job.id.value == 0) job.id = actors::fresh_job_id();

  caf::actor_system_config cfg;
  actors::LinkOptions link;
  link.threads = 2;
  link.shared_queue = true;
  actors::configure(cfg, link);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto deadline = std::chrono::steady_clock::now() + o.timeout;
  // Pipelined submits (--repeat, --wait) get their ids from the server: a
  // retry would submit them again.
  bool may_retry = !(command == "submit" && (o.repeat > 1 || o.wait));
  auto attempt_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      members.size() > 1 ? std::min<core::Duration>(o.timeout, std::chrono::seconds(3)) : o.timeout);
  for (size_t attempt = 0;; ++attempt) {
    const auto& [host, port] = members[attempt % members.size()];
    std::string address = host + ":" + std::to_string(port);
    bool retry = false;
    auto retry_or = [&](int code, const std::string& message) {
      if (may_retry && std::chrono::steady_clock::now() + std::chrono::milliseconds(100) < deadline) {
        retry = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(attempt < members.size() ? 0 : 20));
        return code;
      }
      return fail(code, message);
    };
    auto remote = actors::connect_gateway(sys, host, port, attempt_timeout);
    if (!remote) {
      int code = retry_or(kUnreachable, "cannot reach the server at " + address + ": " + sys.render(remote.error()));
      if (retry) continue;
      return code;
    }
    int code = run_on(self, *remote, address, command, job, o, attempt_timeout, [&](caf::error& err) {
      auto e = messages::from_caf_error(err, &sys);
      bool silent = err == caf::sec::request_timeout || err == caf::sec::request_receiver_down;
      if (silent || (err.category() == messages::kErrorCategory && e.code == core::Errc::unavailable)) {
        std::string why = silent ? "the server at " + address + " did not answer: " + sys.render(err) : e.message;
        return retry_or(kUnreachable, why);
      }
      return fail(kRefused, e.message);
    });
    if (!retry) return code;
  }
}

}  // namespace claimsched::apps
