#include "core/pipeline/job_views.hpp"

namespace claimsched::core {

const JobNotes* JobViews::notes(JobId id) const {
  auto it = notes_.find(id);
  return it == notes_.end() ? nullptr : &it->second;
}

JobView JobViews::view(const JobRecord& j, const ClusterView& cluster, bool with_tasks,
                       std::string why_pending) const {
  JobView v;
  v.spec = j.spec;
  v.by_state = j.by_state;
  v.state = job_state(j.by_state, j.spec.count, j.cancelled);
  if (v.state == JobState::pending || (v.state == JobState::running && j.pending() > 0))
    v.reason = std::move(why_pending);
  if (const JobNotes* n = notes(j.spec.id)) {
    v.last_removal = n->last_removal;
    v.preemptions = n->preemptions;
    v.evictions = n->evictions;
  }
  v.started_at = j.first_running;
  v.finished_at = j.finished_at;
  if (with_tasks) {
    v.tasks.reserve(j.spec.count);
    for (TaskIndex t = 0; t < j.spec.count; ++t) {
      TaskView tv;
      tv.index = t;
      if (const TaskRecord* r = j.task(t)) {
        tv.state = r->state;
        if (r->node) tv.node = cluster.node(*r->node).id;
        tv.exit_code = r->exit_code;
        tv.failures = r->failures;
        tv.losses = r->losses;
        tv.end = r->end;
      }
      if (const JobNotes* n = notes(j.spec.id))
        if (auto by = n->preempted_by.find(t); by != n->preempted_by.end()) tv.preempted_by = by->second;
      v.tasks.push_back(tv);
    }
  }
  return v;
}

}  // namespace claimsched::core
