#include "apps/replay_output.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>

namespace claimsched::apps {

namespace {

using core::replay::ScheduleFigures;
using nlohmann::json;

json figures_json(const ScheduleFigures& f) {
  json per_class = json::object();
  for (const auto& [name, w] : f.per_class)
    per_class[name] = {{"jobs", w.jobs}, {"wait_mean_s", w.mean_s}, {"wait_p95_s", w.p95_s},
                       {"bounded_slowdown_mean", w.bounded_slowdown_mean}};
  return {{"jobs", f.jobs},
          {"never_started", f.never_started},
          {"makespan_s", f.makespan_s},
          {"utilisation", f.utilisation},
          {"wait_mean_s", f.wait.mean_s},
          {"wait_median_s", f.wait.median_s},
          {"wait_p95_s", f.wait.p95_s},
          {"wait_p99_s", f.wait.p99_s},
          {"bounded_slowdown_mean", f.wait.bounded_slowdown_mean},
          {"bounded_slowdown_p95", f.wait.bounded_slowdown_p95},
          {"jain_users", f.jain_users},
          {"preemptions", f.preemptions},
          {"lost_cpu_s", f.lost_cpu_s},
          {"killed_at_limit", f.killed_at_limit},
          {"users", f.per_user.size()},
          {"per_class", std::move(per_class)}};
}

json run_json(const ConfigRun& r, const ReplayReport& report) {
  json j = figures_json(r.figures);
  j["label"] = r.label;
  if (!r.config_path.empty()) j["config"] = r.config_path;
  j["skipped"] = r.skipped;
  j["jobs_per_wall_sec"] = r.jobs_per_wall_sec();
  j["wall_s"] = r.wall_s;
  j["nodes"] = r.nodes;
  j["capacity_cpus"] = r.capacity_cpus;
  j["unfinished"] = r.result.unfinished;
  j["policy_cycles"] = r.result.policy_cycles;
  j["events"] = r.result.events;
  j["placements"] = r.result.stats.placements;
  j["claims_rejected"] = r.result.stats.rejected();
  j["recorded"] = report.recorded ? figures_json(*report.recorded) : json(nullptr);
  return j;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string duration_words(double s) {
  if (s < 120) return fixed(s, 0) + " s";
  if (s < 7200) return fixed(s / 60, 1) + " min";
  if (s < 172800) return fixed(s / 3600, 1) + " h";
  return fixed(s / 86400, 1) + " d";
}

void print_text(const ReplayReport& report) {
  std::vector<std::string> heads;
  std::vector<const ScheduleFigures*> columns;
  for (const auto& r : report.runs) {
    heads.push_back(r.label);
    columns.push_back(&r.figures);
  }
  if (report.recorded) {
    heads.push_back("recorded");
    columns.push_back(&*report.recorded);
  }
  struct Row {
    std::string name;
    std::function<std::string(const ScheduleFigures&)> value;
  };
  std::vector<Row> rows = {
      {"jobs run", [](const ScheduleFigures& f) { return grouped(f.jobs); }},
      {"never started", [](const ScheduleFigures& f) { return grouped(f.never_started); }},
      {"makespan", [](const ScheduleFigures& f) { return duration_words(static_cast<double>(f.makespan_s)); }},
      {"utilisation", [](const ScheduleFigures& f) { return fixed(f.utilisation * 100, 1) + "%"; }},
      {"wait mean", [](const ScheduleFigures& f) { return duration_words(f.wait.mean_s); }},
      {"wait median", [](const ScheduleFigures& f) { return duration_words(f.wait.median_s); }},
      {"wait p95", [](const ScheduleFigures& f) { return duration_words(f.wait.p95_s); }},
      {"wait p99", [](const ScheduleFigures& f) { return duration_words(f.wait.p99_s); }},
      {"bounded slowdown mean", [](const ScheduleFigures& f) { return fixed(f.wait.bounded_slowdown_mean, 2); }},
      {"bounded slowdown p95", [](const ScheduleFigures& f) { return fixed(f.wait.bounded_slowdown_p95, 2); }},
      {"Jain (users)", [](const ScheduleFigures& f) { return fixed(f.jain_users, 3); }},
      {"preemptions", [](const ScheduleFigures& f) { return grouped(f.preemptions); }},
      {"work lost (cpu-h)", [](const ScheduleFigures& f) { return fixed(f.lost_cpu_s / 3600, 1); }},
      {"killed at limit", [](const ScheduleFigures& f) { return grouped(f.killed_at_limit); }},
  };
  size_t name_width = 22;
  std::vector<size_t> widths;
  for (size_t c = 0; c < columns.size(); ++c) {
    size_t w = heads[c].size();
    for (const auto& row : rows) w = std::max(w, row.value(*columns[c]).size());
    widths.push_back(w + 2);
  }
  std::printf("replay of %s (bounded slowdown with tau = %s s)\n", report.trace.c_str(), fixed(report.tau_s, 0).c_str());
  std::printf("%-*s", static_cast<int>(name_width), "");
  for (size_t c = 0; c < columns.size(); ++c) std::printf("%*s", static_cast<int>(widths[c]), heads[c].c_str());
  std::printf("\n");
  for (const auto& row : rows) {
    std::printf("%-*s", static_cast<int>(name_width), row.name.c_str());
    for (size_t c = 0; c < columns.size(); ++c)
      std::printf("%*s", static_cast<int>(widths[c]), row.value(*columns[c]).c_str());
    std::printf("\n");
  }
  for (const auto& r : report.runs) {
    std::printf("%s: %s nodes, %s cpus; %s jobs in %.2f s of wall time (%s jobs/s), %s policy cycles, %s placements",
                r.label.c_str(), grouped(r.nodes).c_str(), fixed(r.capacity_cpus, 0).c_str(),
                grouped(r.result.outcomes.size()).c_str(), r.wall_s,
                grouped(static_cast<uint64_t>(r.jobs_per_wall_sec())).c_str(), grouped(r.result.policy_cycles).c_str(),
                grouped(r.result.stats.placements).c_str());
    if (r.result.unfinished) std::printf(", %s never ended", grouped(r.result.unfinished).c_str());
    std::printf("\n");
    if (!r.skipped.empty()) {
      std::printf("  skipped:");
      for (const auto& [reason, n] : r.skipped) std::printf(" %s %s", reason.c_str(), grouped(n).c_str());
      std::printf("\n");
    }
  }
}

core::Status write_csv(const std::vector<core::replay::JobOutcome>& jobs, const std::string& path, double tau) {
  std::ofstream out(path);
  if (!out) return core::make_error(core::Errc::io_error, "cannot write " + path);
  out << "number,user,class,pool,tasks,cpus_per_task,submit_s,start_s,end_s,wait_s,run_s,bounded_slowdown,"
         "killed_at_limit,preemptions,lost_cpu_s\n";
  for (const auto& j : jobs) {
    out << j.number << ',' << j.user << ',' << j.job_class << ',' << j.pool << ',' << j.tasks << ','
        << j.cpus_per_task << ',' << j.submit_s << ',';
    if (j.start_s) out << *j.start_s;
    out << ',';
    if (j.end_s) out << *j.end_s;
    out << ',';
    if (j.start_s && j.end_s) {
      int64_t wait = *j.start_s - j.submit_s, run = *j.end_s - *j.start_s;
      out << wait << ',' << run << ','
          << core::replay::bounded_slowdown(static_cast<double>(wait), static_cast<double>(run), tau);
    } else {
      out << ",,";
    }
    out << ',' << (j.killed_at_limit ? 1 : 0) << ',' << j.preemptions << ',' << j.lost_cpu_s << '\n';
  }
  if (!out) return core::make_error(core::Errc::io_error, "writing " + path + " failed");
  return core::Status::ok();
}

core::Status write_series(const ScheduleFigures& f, const std::string& dir, const std::string& label) {
  auto open = [&](const std::string& ext, std::ofstream& out) -> core::Status {
    out.open(dir + "/" + label + ext);
    if (!out) return core::make_error(core::Errc::io_error, "cannot write " + dir + "/" + label + ext);
    return core::Status::ok();
  };
  std::ofstream waits, utilisation, share;
  if (auto st = open(".waits", waits); !st) return st;
  for (int64_t w : f.waits_sorted) waits << w << '\n';
  if (auto st = open(".utilisation", utilisation); !st) return st;
  for (const auto& p : f.utilisation_series) utilisation << p.t_s << ' ' << p.value << '\n';
  if (auto st = open(".user_share", share); !st) return st;
  share << "t_s";
  for (const auto& [user, _] : f.user_share_series) share << ' ' << user;
  share << '\n';
  size_t points = f.utilisation_series.size();
  for (const auto& [_, series] : f.user_share_series) points = std::min(points, series.size());
  for (size_t i = 0; i < points; ++i) {
    share << f.utilisation_series[i].t_s;
    for (const auto& [_, series] : f.user_share_series) share << ' ' << series[i].value;
    share << '\n';
  }
  if (!waits || !utilisation || !share) return core::make_error(core::Errc::io_error, "writing into " + dir + " failed");
  return core::Status::ok();
}

/// scripts/replay-plot.sh: $CLAIMSCHED_PLOT_SCRIPT, else the source tree's.
std::string plot_script() {
  if (const char* env = std::getenv("CLAIMSCHED_PLOT_SCRIPT")) return env;
  return std::string(CLAIMSCHED_SOURCE_DIR) + "/scripts/replay-plot.sh";
}

}  // namespace

double ConfigRun::jobs_per_wall_sec() const {
  return wall_s > 0 ? static_cast<double>(result.outcomes.size()) / wall_s : 0.0;
}

void print_replay_report(const ReplayReport& report, bool json_output) {
  if (!json_output) {
    print_text(report);
    return;
  }
  // One object: the first configuration's figures at the top level, every
  // configuration's under "configs".
  json top = run_json(report.runs.front(), report);
  json all = json::array();
  for (const auto& r : report.runs) all.push_back(run_json(r, report));
  top["configs"] = std::move(all);
  top["trace"] = report.trace;
  top["tau_s"] = report.tau_s;
  std::printf("%s\n", top.dump().c_str());
}

core::Status write_job_csvs(const ReplayReport& report, const std::string& path) {
  for (const auto& r : report.runs) {
    std::string file = path;
    if (report.runs.size() > 1) {
      std::filesystem::path p(path);
      file = (p.parent_path() / (p.stem().string() + "-" + r.label + p.extension().string())).string();
    }
    if (auto st = write_csv(r.result.outcomes, file, report.tau_s); !st) return st;
  }
  return core::Status::ok();
}

core::Status write_plots(const ReplayReport& report, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return core::make_error(core::Errc::io_error, "cannot create " + dir + ": " + ec.message());
  std::ofstream configs(dir + "/configs");
  for (const auto& r : report.runs) {
    if (auto st = write_series(r.figures, dir, r.label); !st) return st;
    configs << r.label << '\n';
  }
  if (report.recorded) {
    if (auto st = write_series(*report.recorded, dir, "recorded"); !st) return st;
    configs << "recorded\n";
  }
  configs.close();
  std::string script = plot_script();
  std::vector<std::string> args{"bash", script, dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The script names the PNGs it wrote on its stdout: they go to stderr, so
  // that stdout stays the report (one JSON object with --json).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = 0;
  int e = posix_spawnp(&pid, "bash", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (e != 0) return core::make_error(core::Errc::io_error, "cannot run bash for " + script + ": " + std::strerror(e));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return core::make_error(core::Errc::io_error,
                            "plotting failed (" + script + " exited " +
                                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                                "); the data is in " + dir);
  return core::Status::ok();
}

}  // namespace claimsched::apps
