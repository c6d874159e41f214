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
// "runs" there. Errors name the key (and, for TOML, the line).

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/job.hpp"

namespace claimsched::apps {

/// Parses a job file; `source` names it in errors. TOML unless the text
/// starts with '{' (JSON).
core::Expected<core::JobSpec> parse_job_file(std::string_view text, std::string_view source);

}  // namespace claimsched::apps
