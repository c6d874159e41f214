#pragma once

// Job files for `claimsched submit --file`: TOML or JSON with the same keys.
//
//   name = "render"            count = 8              pool = "default"
//   class = "batch"            user = "alice"         resources = "cpu=1,memory=2Gi"
//   command = ["/usr/bin/render", "--frame", "7"]     workdir = "/srv/render"
//   env = { QUALITY = "high" }                         max_run_time = "10m"
//   max_retries = 2            max_lost_retries = 3   gang = false
//   preemptible = true         constraints = ["ssd"]  duration = "30s"
//
// `duration` is for simulated nodes (`agent --simulate`): how long a task
// "runs" there. Errors name the key (and, for TOML, the line). deploy/JOBS.md
// documents every key.
//
// `submit` merges a file with its flags: a flag given on the command line
// overrides the file's field (env merges by variable name, the flag's value
// winning); what neither gives takes the defaults below.

#include <set>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/job.hpp"

namespace claimsched::apps {

/// A job as someone wrote it: its values and which fields were given (the
/// file's key names: "name", "count", "resources", "command", ...).
struct JobDraft {
  core::JobSpec spec;
  std::set<std::string> given;

  bool has(const std::string& field) const { return given.contains(field); }
};

/// Defaults for what neither the file nor the flags give.
inline constexpr std::string_view kDefaultPool = "default";
inline constexpr std::string_view kDefaultResources = "cpu=1,memory=1Gi";

/// Parses a job file; `source` names it in errors. TOML unless the text
/// starts with '{' (JSON).
core::Expected<JobDraft> parse_job_file(std::string_view text, std::string_view source);

/// `over`'s fields replace `base`'s (env merges by name, `over` winning).
JobDraft merge_jobs(JobDraft base, const JobDraft& over);

/// Fills the defaults (pool, resources, user), refuses a job without a
/// command, and checks what can be checked here (core::validate). Errors name
/// the field.
core::Expected<core::JobSpec> finish_job(JobDraft draft, const std::string& user);

/// A job's resources as people write them, with a hint for the usual slips:
/// "CPU=1" (names are lower case: cpu), "mem=1Gi" (memory), "memory=4GB"
/// (4G is 10^9 bytes, 4Gi 2^30). Names other than cpu, memory, gpu and disk
/// pass: the cluster decides whether it declares them.
core::Expected<core::Resources> parse_job_resources(std::string_view text);

}  // namespace claimsched::apps
