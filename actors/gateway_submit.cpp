#include "actors/gateway_submit.hpp"

#include <algorithm>
#include <atomic>
#include <random>

#include "actors/clock.hpp"
#include "actors/gateway_forward.hpp"

namespace claimsched::actors {

using namespace gateway_detail;

namespace {

/// What the front door refuses before a job reaches its scheduler: no command
/// (no node could run it), resources the cluster does not declare (a typo
/// would wait forever).
core::Status check_job(const gateway_state& st, const core::JobSpec& job) {
  if (job.command.empty())
    return core::make_error(core::Errc::invalid_argument,
                            "job field 'command': a job needs a command (after --, or command = [...] in its file)");
  static const std::vector<std::string> kBuiltin{"cpu", "memory", "gpu", "disk"};
  for (size_t d = 0; d < core::kMaxDimensions; ++d) {
    if (job.per_task[static_cast<core::DimensionId>(d)] == 0) continue;
    std::string name(core::DimensionRegistry::name(static_cast<core::DimensionId>(d)));
    auto known = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (known(kBuiltin) || known(st.config.resources)) continue;
    std::string all = "cpu, memory, gpu, disk";
    for (const auto& r : st.config.resources) all += ", " + r;
    return core::make_error(core::Errc::unknown_name, "job field 'resources': unknown resource '" + name +
                                                          "' (this cluster knows " + all +
                                                          "; an operator declares others in the config's `resources`)");
  }
  return core::Status::ok();
}

/// The partition a job goes to, after the front door's checks (check_job,
/// a known and not removed pool, an owner to take it).
core::Expected<const GatewayPartition*> route_of(const gateway_state& st, const core::JobSpec& job) {
  if (auto s = check_job(st, job); !s) return s.error();
  auto it = st.pools.find(job.pool);
  if (it == st.pools.end())
    return core::make_error(core::Errc::unknown_name,
                            "job field 'pool': unknown pool '" + job.pool + "' (known: " + known_pools(st) + ")");
  if (st.removed_pools.contains(job.pool)) return removed_pool("job field 'pool': ", job.pool);
  const auto& part = st.config.partitions[it->second];
  if (!part.scheduler) return messages::from_caf_error(no_owner(part.id));
  return &part;
}

}  // namespace

core::JobId fresh_job_id(uint32_t block) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  constexpr int64_t kEpoch2020Ms = 1'577'836'800'000;
  constexpr uint64_t kLow = uint64_t{1} << 24;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall_now()).count() - kEpoch2020Ms;
  uint64_t high = static_cast<uint64_t>(std::max<int64_t>(ms, 1)) << 24;
  // A random start within the millisecond keeps members apart; within this
  // process, ids handed out in the same millisecond must not meet, so each
  // block starts past the last one given.
  static std::atomic<uint64_t> last_given{0};
  uint64_t first = 0;
  uint64_t seen = last_given.load();
  do {
    first = std::max((high | (rng() & (kLow - 1))), seen + 1);
  } while (!last_given.compare_exchange_weak(seen, first + std::max<uint32_t>(block, 1) - 1));
  return core::JobId{first & ((uint64_t{1} << 63) - 1)};
}

caf::result<core::JobId> submit_job(gateway_self self, core::JobSpec job) {
  auto& st = self->state;
  auto part = route_of(st, job);
  if (!part) return messages::to_caf_error(part.error());
  if (job.id.value == 0) job.id = st.config.member ? fresh_job_id() : core::JobId{st.next_job++};
  if (auto known = st.jobs.find(job.id); known != st.jobs.end() && known->second != (*part)->id)
    return error_of(core::Errc::duplicate, "job " + std::to_string(job.id.value) + " already exists");
  st.next_job = std::max(st.next_job, job.id.value + 1);
  if (job.submit_time.count() == 0) job.submit_time = now(self);
  // The job's route is recorded only once its partition accepted it: a
  // refused submit leaves nothing behind.
  auto promise = self->make_response_promise<core::JobId>();
  auto partition = (*part)->id;
  forward<core::JobId>(
      self, **part,
      [=](core::JobId& id) mutable {
        self->state.jobs[id] = partition;
        promise.deliver(id);
      },
      [=](const caf::error& err) mutable { promise.deliver(err); }, std::move(job));
  return promise;
}

caf::result<std::vector<core::JobId>> submit_copies(gateway_self self, core::JobSpec job, uint32_t count) {
  auto& st = self->state;
  if (count == 0 || count > kMaxJobsPerSubmit)
    return error_of(core::Errc::invalid_argument, "a submit asks for 1 to " + std::to_string(kMaxJobsPerSubmit) +
                                                      " copies of a job, not " + std::to_string(count));
  if (job.id.value != 0)
    return error_of(core::Errc::invalid_argument, "copies of a job get their ids here: its id must be 0");
  auto part = route_of(st, job);
  if (!part) return messages::to_caf_error(part.error());
  uint64_t first = st.config.member ? fresh_job_id(count).value : st.next_job;
  st.next_job = std::max(st.next_job, first + count);
  std::vector<core::JobId> ids(count);
  for (uint32_t i = 0; i < count; ++i) ids[i] = core::JobId{first + i};
  if (job.submit_time.count() == 0) job.submit_time = now(self);
  auto promise = self->make_response_promise<std::vector<core::JobId>>();
  auto partition = (*part)->id;
  forward<std::vector<core::JobId>>(
      self, **part,
      [=](std::vector<core::JobId>& accepted) mutable {
        for (auto id : accepted) self->state.jobs[id] = partition;
        if (accepted.size() == count) {
          promise.deliver(std::move(accepted));
          return;
        }
        // Never a silent drop: the partition refused some copies after
        // accepting others (its log says why), so the client hears it.
        std::string ids_text;
        for (auto id : accepted) ids_text += (ids_text.empty() ? "" : ", ") + std::to_string(id.value);
        promise.deliver(error_of(core::Errc::wrong_state, "partition " + std::to_string(partition.value) +
                                                              " accepted only " + std::to_string(accepted.size()) +
                                                              " of " + std::to_string(count) + " copies (jobs " +
                                                              ids_text + "; its log says why)"));
      },
      [=](const caf::error& err) mutable { promise.deliver(err); }, repeat_atom::value, std::move(job), std::move(ids));
  return promise;
}

}  // namespace claimsched::actors
