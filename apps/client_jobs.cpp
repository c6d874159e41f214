// submit, status, cancel, queue, jobs, nodes: jobs and nodes as a user reads
// them, and waiting for a job to end.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "apps/client_commands.hpp"
#include "apps/client_json.hpp"
#include "apps/client_text.hpp"
#include "apps/job_file.hpp"
#include "apps/progress.hpp"
#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// How often --wait and --follow ask the server.
constexpr auto kPollInterval = std::chrono::milliseconds(250);
/// Per-task lines `status` prints without --tasks.
constexpr uint32_t kTasksShown = 10;

core::TimePoint wall_now() {
  return std::chrono::duration_cast<core::TimePoint>(std::chrono::system_clock::now().time_since_epoch());
}

ClientError usage(std::string message) { return ClientError{kExitUsage, std::move(message)}; }

/// The job the flags describe: only the flags given on the command line count.
ClientResult<JobDraft> draft_from_flags(const ClientOptions& o) {
  JobDraft d;
  core::JobSpec& j = d.spec;
  auto given = [&](const char* flag) { return o.submit_command && o.submit_command->count(flag) > 0; };
  auto take = [&](const char* flag, const char* field, auto& target, const auto& value) {
    if (!given(flag)) return;
    target = value;
    d.given.insert(field);
  };
  take("--name", "name", j.name, o.name);
  take("--user", "user", j.user, o.user);
  take("--class", "class", j.job_class, o.job_class);
  take("--pool", "pool", j.pool, o.pool);
  take("--count", "count", j.count, o.count);
  take("--workdir", "workdir", j.workdir, o.workdir);
  take("--max-retries", "max_retries", j.max_retries, o.max_retries);
  take("--max-lost-retries", "max_lost_retries", j.max_lost_retries, o.max_lost_retries);
  take("--gang", "gang", j.gang, o.gang);
  take("--not-preemptible", "preemptible", j.preemptible, !o.not_preemptible);
  take("--hold", "hold", j.wait_for_nodes, o.hold);
  take("--constraint", "constraints", j.constraints, o.constraints);
  take("command", "command", j.command, o.command);
  if (given("--resources")) {
    auto r = parse_job_resources(o.resources);
    if (!r) return usage("--resources: " + r.error().message);
    j.per_task = *r;
    d.given.insert("resources");
  }
  for (const auto& [flag, text, target, field] :
       {std::tuple{"--max-run-time", &o.max_run_time, &j.max_run_time, "max_run_time"},
        std::tuple{"--duration", &o.duration, &j.simulated_runtime, "duration"}}) {
    if (!given(flag)) continue;
    auto dur = core::parse_duration(*text);
    if (!dur) return usage(std::string(flag) + ": " + dur.error().message);
    *target = *dur;
    d.given.insert(field);
  }
  if (given("--lock")) {
    std::string text;
    for (const auto& clause : o.locks) text += clause + " ";
    auto locks = core::parse_lock_declaration(text);
    if (!locks) return usage("--lock: " + locks.error().message);
    j.locks = std::move(*locks);
    d.given.insert("locks");
  }
  for (const auto& e : o.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) return usage("--env: expected NAME=VALUE, got '" + e + "'");
    std::string name = e.substr(0, eq);
    for (const auto& [seen, _] : j.env)
      if (seen == name) return usage("--env: " + name + " is given twice");
    j.env.emplace_back(name, e.substr(eq + 1));
    d.given.insert("env");
  }
  return d;
}

json record_with_summary(const core::JobView& v) { return job_json(v); }

/// "job 12 succeeded: 4 tasks in 2.1s" / "job 12 failed after 3.0s (1
/// succeeded, 1 failed): 1 failed: exited with code 3 (task 1 on local-2)".
std::string summary_line(const core::JobView& v) {
  std::string line = "job " + std::to_string(v.spec.id.value) + " " + std::string(core::to_string(v.state));
  bool ran = v.started_at != core::kNever && v.finished_at != core::kNever;
  if (v.state == core::JobState::succeeded) {
    uint32_t ok = v.count_in(core::TaskState::succeeded);
    line += ": " + std::to_string(ok) + (ok == 1 ? " task" : " tasks") + " succeeded";
    return ran ? line + " in " + human_duration(v.finished_at - v.started_at) : line;
  }
  if (ran) line += " after " + human_duration(v.finished_at - v.started_at);
  line += " (" + task_counts(v) + ")";
  auto failures = failure_lines(v, 1);
  if (!failures.empty()) line += ": " + failures.front();
  return line;
}

int exit_code_of(const core::JobView& v) { return v.state == core::JobState::succeeded ? kExitOk : kExitFailed; }

bool ended(const core::JobView& v) {
  return v.state == core::JobState::succeeded || v.state == core::JobState::failed ||
         v.state == core::JobState::cancelled;
}

/// Waits until the job ends, showing its tasks ended on stderr if it has
/// more than one; the last view, or the error that stopped it. The server
/// answers the wait when the job ends; between waits, `status` feeds the bar
/// (and serves alone against a server too old to be asked to wait).
ClientResult<core::JobView> wait_for_end(ClientSession& s, core::JobId id, bool quiet) {
  std::optional<Progress> bar;
  bool server_waits = true;
  for (;;) {
    auto v = s.status(id);
    if (!v) return v;
    if (v->spec.count > 1) {
      if (!bar) bar.emplace(progress_style_for_stderr(quiet), "job " + std::to_string(id.value));
      uint32_t ended_tasks = v->count_in(core::TaskState::succeeded) + v->count_in(core::TaskState::failed) +
                             v->count_in(core::TaskState::cancelled);
      // Its last task may end after the job is final (a cancel): the bar ends with the job.
      bar->update(ended(*v) ? v->spec.count : ended_tasks, v->spec.count, "tasks ended");
    }
    if (ended(*v)) return v;
    if (server_waits) {
      auto answered = s.wait_ended({id});
      if (!answered) return answered.error();
      server_waits = answered->has_value();
      if (server_waits) continue;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

/// Waits until every job of `ids` ends, showing how many have on stderr;
/// their last views in `ids`' order, or the error that stopped it. The
/// server answers each wait as jobs end; a server too old to be asked is
/// polled job by job.
ClientResult<std::vector<core::JobView>> wait_for_all(ClientSession& s, const std::vector<core::JobId>& ids,
                                                      bool quiet) {
  Progress bar(progress_style_for_stderr(quiet), "submit --wait");
  std::vector<core::JobView> last(ids.size());
  std::unordered_map<core::JobId, size_t> position;
  for (size_t i = 0; i < ids.size(); ++i) position.emplace(ids[i], i);
  std::vector<core::JobId> waiting = ids;
  bool server_waits = true;
  while (!waiting.empty()) {
    std::vector<char> done(ids.size(), 0);
    if (server_waits) {
      auto answered = s.wait_ended(waiting);
      if (!answered) return answered.error();
      server_waits = answered->has_value();
      if (server_waits)
        for (auto& v : **answered) {
          auto at = position.find(v.spec.id);
          if (at == position.end() || !ended(v)) continue;
          done[at->second] = 1;
          last[at->second] = std::move(v);
        }
    }
    if (!server_waits) {
      for (auto id : waiting) {
        auto v = s.status(id);
        if (!v) return v.error();
        if (!ended(*v)) continue;
        done[position[id]] = 1;
        last[position[id]] = std::move(*v);
      }
    }
    std::erase_if(waiting, [&](core::JobId id) { return done[position[id]] != 0; });
    bar.update(ids.size() - waiting.size(), ids.size(), "jobs ended");
    if (!server_waits && !waiting.empty()) std::this_thread::sleep_for(kPollInterval);
  }
  return last;
}

void print_job(const core::JobView& v, bool all_tasks) {
  std::printf("job %llu%s of %s, class %s, pool %s: %s\n", static_cast<unsigned long long>(v.spec.id.value),
              v.spec.name.empty() ? "" : (" (" + v.spec.name + ")").c_str(), v.spec.user.c_str(),
              v.spec.job_class.c_str(), v.spec.pool.c_str(), std::string(core::to_string(v.state)).c_str());
  std::string times = "  submitted " + local_time(v.spec.submit_time);
  if (v.started_at != core::kNever)
    times += ", started " + local_time(v.started_at) + " (after " + human_duration(v.started_at - v.spec.submit_time) +
             ")";
  if (v.finished_at != core::kNever) {
    times += ", ended " + local_time(v.finished_at);
    if (v.started_at != core::kNever) times += " (ran " + human_duration(v.finished_at - v.started_at) + ")";
  }
  std::printf("%s\n", times.c_str());
  std::printf("  tasks: %s (of %u)\n", task_counts(v).c_str(), v.spec.count);
  if (!v.reason.empty()) std::printf("  waiting: %s\n", v.reason.c_str());
  if (!v.last_removal.empty()) std::printf("  last taken away: %s\n", v.last_removal.c_str());
  for (const auto& line : failure_lines(v, 5)) std::printf("  %s\n", line.c_str());
  if (all_tasks || v.spec.count <= kTasksShown) {
    for (const auto& t : v.tasks) std::printf("  %s\n", task_line(t).c_str());
  } else {
    std::printf("  (%u tasks: --tasks lists each)\n", v.spec.count);
  }
}

std::string job_row_name(const core::JobView& v) {
  // Long names are cut, so one job cannot push every column aside.
  constexpr size_t kMax = 24;
  if (v.spec.name.size() <= kMax) return v.spec.name.empty() ? "-" : v.spec.name;
  return v.spec.name.substr(0, kMax - 3) + "...";
}

void print_jobs(const std::vector<core::JobView>& jobs) {
  // Jobs in a lock queue (Ganeti's) show their weight and age in aging ticks.
  bool weighed = std::any_of(jobs.begin(), jobs.end(), [](const auto& v) { return v.queue_weight.has_value(); });
  std::vector<std::vector<std::string>> rows{
      {"JOB", "NAME", "USER", "CLASS", "POOL", "STATE", "SUBMITTED", "RAN", "TASKS"}};
  if (weighed) rows[0].insert(rows[0].end(), {"WEIGHT", "AGE"});
  for (const auto& v : jobs) {
    std::string ran = v.started_at == core::kNever ? "-"
                      : v.finished_at != core::kNever
                          ? human_duration(v.finished_at - v.started_at)
                          : human_duration(wall_now() - v.started_at) + "+";
    rows.push_back({std::to_string(v.spec.id.value), job_row_name(v), v.spec.user, v.spec.job_class, v.spec.pool,
                    std::string(core::to_string(v.state)), local_time(v.spec.submit_time), ran, task_counts(v)});
    if (!weighed) continue;
    char weight[32] = "-";
    if (v.queue_weight) std::snprintf(weight, sizeof weight, "%.2f", *v.queue_weight);
    rows.back().insert(rows.back().end(),
                       {weight, v.queue_weight ? std::to_string(v.queue_age_ticks) + " ticks" : std::string("-")});
  }
  std::fputs(render_table(rows).c_str(), stdout);
}

}  // namespace

ClientResult<core::JobSpec> job_from_options(const ClientOptions& o, const std::string& user) {
  JobDraft base;
  if (!o.file.empty()) {
    std::ifstream in(o.file);
    if (!in) return usage("cannot read the job file " + o.file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_job_file(text.str(), o.file);
    if (!parsed) return usage(parsed.error().message);
    base = std::move(*parsed);
  }
  auto flags = draft_from_flags(o);
  if (!flags) return flags.error();
  auto job = finish_job(merge_jobs(std::move(base), *flags), user.empty() ? account_name() : user);
  if (!job) return usage(job.error().message);
  return std::move(*job);
}

int run_submit(ClientSession& s, const ClientOptions& o) {
  // With [auth], a job is its token's user's unless it names one.
  auto job = job_from_options(o, s.user());
  if (!job) return fail(job.error());
  if (o.repeat > 1) {
    auto ids = s.submit_many(*job, o.repeat);
    if (!ids) return fail(ids.error());
    for (auto id : *ids) std::printf("%llu\n", static_cast<unsigned long long>(id.value));
    if (!o.wait) return kExitOk;
    std::fflush(stdout);
    auto views = wait_for_all(s, *ids, o.quiet);
    if (!views) return fail(views.error());
    std::map<core::JobState, uint64_t> by_state;
    for (const auto& v : *views) ++by_state[v.state];
    if (o.json) {
      json counts = json::object();
      for (const auto& [state, n] : by_state) counts[std::string(core::to_string(state))] = n;
      std::printf("%s\n", json{{"jobs", views->size()}, {"ended", counts}}.dump().c_str());
    } else {
      std::string line = std::to_string(views->size()) + " jobs ended:";
      for (const auto& [state, n] : by_state)
        line += " " + std::to_string(n) + " " + std::string(core::to_string(state)) + ",";
      line.pop_back();
      std::printf("%s\n", line.c_str());
    }
    return by_state.size() == 1 && by_state.begin()->first == core::JobState::succeeded ? kExitOk : kExitFailed;
  }
  auto id = s.submit(*job);
  if (!id) return fail(id.error());
  if (o.follow) {
    if (!o.json) std::printf("job %llu submitted\n", static_cast<unsigned long long>(id->value));
    std::fflush(stdout);
    return follow_job(s, *id, o.json);
  }
  if (!o.wait) {
    if (o.json)
      std::printf("%s\n", json{{"job", id->value}}.dump().c_str());
    else
      std::printf("%llu\n", static_cast<unsigned long long>(id->value));
    return kExitOk;
  }
  if (!o.json) std::printf("%llu\n", static_cast<unsigned long long>(id->value));
  std::fflush(stdout);
  auto last = wait_for_end(s, *id, o.quiet);
  if (!last) return fail(last.error());
  if (o.json)
    std::printf("%s\n", record_with_summary(*last).dump().c_str());
  else
    std::printf("%s\n", summary_line(*last).c_str());
  return exit_code_of(*last);
}

int run_status(ClientSession& s, const ClientOptions& o) {
  auto id = *parse_job_id(o.job);
  if (o.follow) return follow_job(s, id, o.json);
  auto v = s.status(id);
  if (!v) return fail(v.error());
  if (o.json)
    std::printf("%s\n", job_json(*v).dump().c_str());
  else
    print_job(*v, o.tasks);
  return kExitOk;
}

int run_cancel(ClientSession& s, const ClientOptions& o) {
  auto v = s.cancel(*parse_job_id(o.job));
  if (!v) return fail(v.error());
  if (o.json)
    std::printf("%s\n", job_json(*v).dump().c_str());
  else
    std::printf("job %llu cancelled (%s)\n", static_cast<unsigned long long>(v->spec.id.value),
                task_counts(*v).c_str());
  return kExitOk;
}

int run_jobs(ClientSession& s, const ClientOptions& o, bool queue) {
  core::JobFilter filter;
  filter.user = o.filter_user;
  filter.pool = o.filter_pool;
  filter.limit = o.limit;
  for (const auto& text : o.states) {
    auto st = core::parse_job_state(text);
    if (!st) return fail(kExitUsage, "--state: " + st.error().message);
    filter.states.push_back(*st);
  }
  if (queue) filter = queue_filter(std::move(filter));
  if (o.after > 0) filter.older_than = core::JobId{o.after};
  if (!o.since.empty()) {
    auto since = parse_since(o.since, wall_now());
    if (!since) return fail(kExitUsage, since.error().message);
    filter.since = *since;
  }
  auto jobs = s.history(filter);
  if (!jobs) return fail(jobs.error());
  if (o.json) {
    std::printf("%s\n", jobs_json(*jobs).c_str());
    return kExitOk;
  }
  if (jobs->empty()) {
    std::printf("no jobs%s\n", queue ? " waiting or running (queue --all lists ended ones too)" : " match");
    return kExitOk;
  }
  print_jobs(*jobs);
  if (o.limit > 0 && jobs->size() == o.limit)
    std::printf("(the newest %u; --limit 0 lists all)\n", o.limit);
  return kExitOk;
}

int run_nodes(ClientSession& s, const ClientOptions& o) {
  auto nodes = s.nodes();
  if (!nodes) return fail(nodes.error());
  std::sort(nodes->begin(), nodes->end(), [](const auto& a, const auto& b) {
    return std::tie(a.spec.name, a.spec.id) < std::tie(b.spec.name, b.spec.id);
  });
  if (o.json) {
    std::printf("%s\n", nodes_json(*nodes).dump().c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows{{"NAME", "POOL", "STATE", "CAPACITY", "FREE", "LAST HEARD"}};
  for (const auto& n : *nodes) {
    std::string free = n.snapshot.free.to_string();
    std::string state(core::to_string(n.snapshot.state));
    if (!n.alive && n.snapshot.state == core::NodeState::up) state = "silent";
    rows.push_back({n.spec.name.empty() ? "node " + std::to_string(n.spec.id.value) : n.spec.name, n.spec.pool,
                    state, n.snapshot.capacity.to_string(), free.empty() ? "none" : free,
                    human_duration(std::chrono::milliseconds(n.silent_ms)) + " ago"});
  }
  std::fputs(render_table(rows).c_str(), stdout);
  return kExitOk;
}

int run_node(ClientSession& s, const ClientOptions& o) {
  bool drain = o.node_action == "drain";
  auto words = s.drain(o.node_name, drain);
  if (!words) return fail(words.error());
  if (o.json)
    std::printf("%s\n", json{{"node", o.node_name}, {"action", o.node_action}, {"operation", *words}}.dump().c_str());
  else
    std::printf("%s\n", words->c_str());
  if (!o.wait) return kExitOk;
  const auto wanted = drain ? core::NodeState::draining : core::NodeState::up;
  for (;;) {
    auto nodes = s.nodes();
    if (!nodes) return fail(nodes.error());
    for (const auto& n : *nodes)
      if (n.spec.name == o.node_name && n.snapshot.state == wanted) {
        if (!o.json) std::printf("node %s %s\n", o.node_name.c_str(), std::string(core::to_string(wanted)).c_str());
        return kExitOk;
      }
    std::this_thread::sleep_for(kPollInterval);
  }
}

int run_pool(ClientSession& s, const ClientOptions& o) {
  auto words = s.remove_pool(o.pool_name, o.wait);
  if (!words) return fail(words.error());
  if (o.json)
    std::printf("%s\n", json{{"pool", o.pool_name}, {"action", o.pool_action}, {"operation", *words}}.dump().c_str());
  else
    std::printf("%s\n", words->c_str());
  return kExitOk;
}

int follow_job(ClientSession& s, core::JobId id, bool as_json) {
  std::optional<core::JobView> before;
  for (;;) {
    auto v = s.status(id);
    if (!v) return fail(v.error());
    auto stamp = local_time(wall_now());
    auto say = [&](const json& event, const std::string& text) {
      if (as_json)
        std::printf("%s\n", event.dump().c_str());
      else
        std::printf("%s  %s\n", stamp.c_str() + 11, text.c_str());
    };
    std::string counts = task_counts(*v);
    if (!before || before->state != v->state || task_counts(*before) != counts)
      say(json{{"job", id.value}, {"state", std::string(core::to_string(v->state))}, {"tasks", job_json(*v)["tasks_by_state"]}},
          "job " + std::to_string(id.value) + ": " + std::string(core::to_string(v->state)) + " (" + counts + ")");
    for (const auto& t : v->tasks) {
      const core::TaskView* old = before && t.index < before->tasks.size() ? &before->tasks[t.index] : nullptr;
      if (old && old->state == t.state && old->end == t.end && old->node == t.node) continue;
      if (!old && t.state == core::TaskState::pending) continue;
      json event = task_json(t);
      event["job"] = id.value;
      say(event, task_line(t));
    }
    std::fflush(stdout);
    if (ended(*v)) {
      if (!as_json) std::printf("%s\n", summary_line(*v).c_str());
      return exit_code_of(*v);
    }
    before = std::move(*v);
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace claimsched::apps
