#include "actors/job_log.hpp"

#include <spdlog/spdlog.h>

#include <string>

namespace claimsched::actors {

namespace {

std::string node_name(const core::Scheduler& scheduler, const core::TaskView& task) {
  if (!task.node_name.empty()) return task.node_name;
  if (auto n = scheduler.view().find_node(task.node)) return scheduler.node_name(*n);
  return "#" + std::to_string(task.node.value);
}

/// "task 3 on node n7 exited with code 1 (2 of 5 tasks did not succeed)".
std::string first_failure(const core::Scheduler& scheduler, const core::JobView& job) {
  const core::TaskView* first = nullptr;
  uint32_t failed = 0;
  for (const auto& t : job.tasks)
    if (core::is_final(t.state) && t.state != core::TaskState::succeeded) {
      ++failed;
      if (!first) first = &t;
    }
  if (!first) return "";
  std::string what = "task " + std::to_string(first->index);
  if (first->node.value != 0) what += " on node " + node_name(scheduler, *first);
  std::string how = core::describe(first->end);
  if (!how.empty()) what += " " + how;
  return what + " (" + std::to_string(failed) + " of " + std::to_string(job.spec.count) + " tasks did not succeed)";
}

}  // namespace

void log_jobs_ended(std::string_view log_name, const core::Scheduler& scheduler, const std::vector<core::JobId>& ended) {
  if (ended.empty() || !spdlog::should_log(spdlog::level::info)) return;
  bool debug = spdlog::should_log(spdlog::level::debug);
  for (core::JobId id : ended) {
    const core::JobRecord* record = scheduler.job(id);
    if (!record) continue;
    bool succeeded = core::job_state(record->by_state, record->spec.count, record->cancelled) ==
                     core::JobState::succeeded;
    if (succeeded && !debug) continue;
    auto view = scheduler.job_view(id, !succeeded);
    if (!view) continue;
    const core::JobSpec& s = view->spec;
    std::string line = fmt::format("{}: job {} (user {}, pool {}, class {}, {} task{}) {}", log_name, id.value, s.user,
                                   s.pool, s.job_class, s.count, s.count == 1 ? "" : "s", core::to_string(view->state));
    if (view->state == core::JobState::failed) {
      if (auto why = first_failure(scheduler, *view); !why.empty()) line += ": " + why;
    }
    if (succeeded)
      spdlog::debug("{}", line);
    else
      spdlog::info("{}", line);
  }
}

}  // namespace claimsched::actors
