#include "core/pipeline/admission.hpp"

#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

Expected<JobRecord> admit(const SchedulerConfig& config, const ClusterView& view, JobSpec job) {
  if (auto st = validate(job); !st) return st.error();
  auto pool = view.find_pool(job.pool);
  if (!pool)
    return make_error(Errc::unknown_name, "job field 'pool': '" + job.pool + "' is not a pool of partition " +
                                              std::to_string(config.partition.value));
  if (job.job_class.empty()) job.job_class = config.default_class;
  const ClassConfig* cls = config.find_class(job.job_class);
  if (!cls) return make_error(Errc::unknown_name, "job field 'class': unknown class '" + job.job_class + "'");
  if (cls->policy == ClassPolicy::reserve) {
    if (job.count != 1)
      return make_error(Errc::invalid_argument,
                        "job field 'count': class '" + cls->name +
                            "' has policy reserve, which takes exactly one whole machine per job; the job asks for " +
                            std::to_string(job.count) + " tasks");
    if (job.per_task[dim::memory] <= 0)
      return make_error(Errc::invalid_argument,
                        "job field 'resources': class '" + cls->name +
                            "' has policy reserve, which matches machines by memory; give memory");
  }
  JobRecord r;
  r.pool = *pool;
  r.class_index = static_cast<uint32_t>(cls - config.classes.data());
  r.priority = cls->priority;
  r.allotted = cls->policy == ClassPolicy::fixed_share;
  if (!job.command.empty())
    r.launch = LaunchRef(TaskLaunch{job.command, job.env, job.workdir, job.max_run_time, job.expected_output});
  r.spec = std::move(job);
  return r;
}

}  // namespace claimsched::core
