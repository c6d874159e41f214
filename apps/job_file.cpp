#include "apps/job_file.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "apps/file_fields.hpp"
#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using core::Errc;
using core::make_error;

core::Expected<JobDraft> read_job(const Fields& f) {
  static const char* kKnown[] = {"name", "user", "class", "pool", "count", "resources", "command", "env",
                                 "workdir", "max_run_time", "max_retries", "max_lost_retries", "gang",
                                 "preemptible", "constraints", "duration", "hold", "locks"};
  for (const auto& k : f.keys())
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown))
      return make_error(Errc::invalid_argument, f.where(k) + ": unknown job field '" + k + "'");
  JobDraft draft;
  for (const auto& k : f.keys()) draft.given.insert(k);
  core::JobSpec& j = draft.spec;
  auto bad = [&](std::string_view key, std::string why) {
    return make_error(Errc::invalid_argument, f.where(key) + ": job field '" + std::string(key) + "': " + why);
  };
  if (f.has("name")) CLAIMSCHED_FIELD(f.string("name"), j.name);
  if (f.has("user")) CLAIMSCHED_FIELD(f.string("user"), j.user);
  if (f.has("class")) CLAIMSCHED_FIELD(f.string("class"), j.job_class);
  if (f.has("pool")) CLAIMSCHED_FIELD(f.string("pool"), j.pool);
  if (f.has("count")) {
    int64_t n = 0;
    CLAIMSCHED_FIELD(f.integer("count"), n);
    if (n < 1 || n > core::kMaxTasksPerJob) return bad("count", "must be in 1.." + std::to_string(core::kMaxTasksPerJob));
    j.count = static_cast<uint32_t>(n);
  }
  if (f.has("resources")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("resources"), text);
    auto r = parse_job_resources(text);
    if (!r) return bad("resources", r.error().message);
    j.per_task = *r;
  }
  if (f.has("command")) CLAIMSCHED_FIELD(f.strings("command"), j.command);
  if (f.has("env")) CLAIMSCHED_FIELD(f.table("env"), j.env);
  for (size_t a = 0; a < j.env.size(); ++a)
    for (size_t b = a + 1; b < j.env.size(); ++b)
      if (j.env[a].first == j.env[b].first) return bad("env", "variable " + j.env[a].first + " is given twice");
  if (f.has("workdir")) CLAIMSCHED_FIELD(f.string("workdir"), j.workdir);
  for (const char* key : {"max_run_time", "duration"}) {
    if (!f.has(key)) continue;
    std::string text;
    CLAIMSCHED_FIELD(f.string(key), text);
    auto d = core::parse_duration(text);
    if (!d) return bad(key, d.error().message);
    (std::string_view(key) == "duration" ? j.simulated_runtime : j.max_run_time) = *d;
  }
  for (const char* key : {"max_retries", "max_lost_retries"}) {
    if (!f.has(key)) continue;
    int64_t n = 0;
    CLAIMSCHED_FIELD(f.integer(key), n);
    if (n < 0 || n > 1000) return bad(key, "must be in 0..1000");
    (std::string_view(key) == "max_retries" ? j.max_retries : j.max_lost_retries) = static_cast<uint32_t>(n);
  }
  if (f.has("gang")) CLAIMSCHED_FIELD(f.boolean("gang"), j.gang);
  if (f.has("preemptible")) CLAIMSCHED_FIELD(f.boolean("preemptible"), j.preemptible);
  if (f.has("constraints")) CLAIMSCHED_FIELD(f.strings("constraints"), j.constraints);
  if (f.has("hold")) CLAIMSCHED_FIELD(f.boolean("hold"), j.wait_for_nodes);
  if (f.has("locks")) {
    // One string of clauses, or a list of them: "node=exclusive:n1 instance=shared:web".
    std::string text;
    if (auto list = f.strings("locks")) {
      for (const auto& clause : *list) text += clause + " ";
    } else {
      CLAIMSCHED_FIELD(f.string("locks"), text);
    }
    auto locks = core::parse_lock_declaration(text);
    if (!locks) return bad("locks", locks.error().message);
    j.locks = std::move(*locks);
  }
  return draft;
}

}  // namespace

core::Expected<JobDraft> parse_job_file(std::string_view text, std::string_view source) {
  std::optional<JobDraft> draft;
  auto read = [&](const Fields& f) -> core::Status {
    auto d = read_job(f);
    if (!d) return d.error();
    draft = std::move(*d);
    return core::Status::ok();
  };
  if (auto st = read_fields(text, source, "job", read); !st) return st.error();
  return std::move(*draft);
}

JobDraft merge_jobs(JobDraft base, const JobDraft& over) {
  core::JobSpec& b = base.spec;
  const core::JobSpec& o = over.spec;
  auto take = [&](const char* field, auto member) {
    if (!over.has(field)) return;
    b.*member = o.*member;
    base.given.insert(field);
  };
  take("name", &core::JobSpec::name);
  take("user", &core::JobSpec::user);
  take("class", &core::JobSpec::job_class);
  take("pool", &core::JobSpec::pool);
  take("count", &core::JobSpec::count);
  take("resources", &core::JobSpec::per_task);
  take("command", &core::JobSpec::command);
  take("workdir", &core::JobSpec::workdir);
  take("max_run_time", &core::JobSpec::max_run_time);
  take("duration", &core::JobSpec::simulated_runtime);
  take("max_retries", &core::JobSpec::max_retries);
  take("max_lost_retries", &core::JobSpec::max_lost_retries);
  take("gang", &core::JobSpec::gang);
  take("preemptible", &core::JobSpec::preemptible);
  take("constraints", &core::JobSpec::constraints);
  take("hold", &core::JobSpec::wait_for_nodes);
  take("locks", &core::JobSpec::locks);
  if (over.has("env")) {
    for (const auto& variable : o.env) {
      // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
      const std::string& name = variable.first;
      auto it = std::find_if(b.env.begin(), b.env.end(), [&](const auto& e) { return e.first == name; });
      if (it != b.env.end())
        it->second = variable.second;
      else
        b.env.push_back(variable);
    }
    base.given.insert("env");
  }
  return base;
}

core::Expected<core::JobSpec> finish_job(JobDraft draft, const std::string& user) {
  core::JobSpec& j = draft.spec;
  if (!draft.has("pool")) j.pool = std::string(kDefaultPool);
  if (!draft.has("resources")) j.per_task = *core::Resources::parse(kDefaultResources);
  if (!draft.has("user") || j.user.empty()) j.user = user;
  if (j.command.empty())
    return make_error(Errc::invalid_argument,
                      "job field 'command': a job needs a command (after --, or command = [...] in its file)");
  if (!j.workdir.empty() && j.workdir.front() != '/')
    return make_error(Errc::invalid_argument, "job field 'workdir': '" + j.workdir +
                                                  "' is relative; on the node it would mean the agent's directory: "
                                                  "give an absolute path");
  if (auto st = core::validate(j); !st) return st.error();
  return std::move(j);
}

namespace {

constexpr std::string_view kBuiltinResources[] = {"cpu", "memory", "gpu", "disk"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// "did you mean 'memory'?" for a name a person probably meant as a built-in.
std::string resource_hint(std::string_view name) {
  std::string low = lower(name);
  for (auto builtin : kBuiltinResources) {
    if (low == builtin) return "resource names are lower case: did you mean '" + std::string(builtin) + "'?";
    if (low.size() >= 3 && builtin.starts_with(low)) return "did you mean '" + std::string(builtin) + "'?";
  }
  if (low == "mem" || low == "ram") return "did you mean 'memory'?";
  if (low == "cpus" || low == "cores") return "did you mean 'cpu'?";
  if (low == "gpus") return "did you mean 'gpu'?";
  return "";
}

/// "4GB" -> a hint that says what the suffixes mean.
std::string quantity_hint(std::string_view quantity) {
  std::string q(quantity);
  for (const char* unit : {"KB", "MB", "GB", "TB", "PB", "kb", "mb", "gb", "tb", "Gb", "Mb", "Kb", "Tb"}) {
    std::string_view u(unit);
    if (q.size() > u.size() && std::string_view(q).ends_with(u)) {
      std::string number = q.substr(0, q.size() - u.size());
      char p = static_cast<char>(std::toupper(static_cast<unsigned char>(u[0])));
      return "write " + number + p + " (10^" + std::to_string(3 * (std::string("KMGTP").find(p) + 1)) +
             " bytes) or " + number + p + "i (2^" + std::to_string(10 * (std::string("KMGTP").find(p) + 1)) +
             " bytes)";
    }
  }
  return "";
}

}  // namespace

core::Expected<core::Resources> parse_job_resources(std::string_view text) {
  // Names first, so "CPU=1" gets its hint before anything registers it.
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      std::string_view name = item.substr(0, eq);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (auto hint = resource_hint(name);
          !hint.empty() && std::find(std::begin(kBuiltinResources), std::end(kBuiltinResources), name) ==
                               std::end(kBuiltinResources))
        return make_error(Errc::invalid_argument, "unknown resource '" + std::string(name) + "': " + hint);
      if (auto hint = quantity_hint(item.substr(eq + 1)); !hint.empty())
        return make_error(Errc::invalid_argument, "resource '" + std::string(name) + "': '" +
                                                      std::string(item.substr(eq + 1)) + "' is not a quantity: " +
                                                      hint);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return core::Resources::parse(text);
}

}  // namespace claimsched::apps
