#include "actors/process_executor.hpp"

#include "agent/keeper.hpp"
#include "agent/task_output.hpp"
#include "storage/crash_point.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace claimsched::actors {

ProcessExecutor::ProcessExecutor(std::string output_dir, agent::SupervisorOptions options)
    : output_dir_(std::move(output_dir)) {
  // Every job's directory is made in it by its tasks' keepers, one level.
  std::error_code ec;
  std::filesystem::create_directories(output_dir_, ec);
  if (ec) spdlog::error("agent: cannot create the task output directory {}: {}", output_dir_, ec.message());
  options.cgroups = true;
  supervisor_ = std::make_unique<agent::ProcessSupervisor>(
      [this](uint64_t handle, agent::TaskExit how) { exited(handle, std::move(how)); }, [this] { flush_ends(); },
      std::move(options));
}

ProcessExecutor::~ProcessExecutor() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;  // what is still queued never starts
  }
  queue_changed_.notify_all();
  supervisor_.reset();
}

std::string ProcessExecutor::stdout_path(core::TaskRef task) const {
  return output_dir_ + "/" + std::to_string(task.job.value) + "/" + std::to_string(task.index) + ".out";
}

std::string ProcessExecutor::stderr_path(core::TaskRef task) const {
  return output_dir_ + "/" + std::to_string(task.job.value) + "/" + std::to_string(task.index) + ".err";
}

namespace {

/// The declared output is there: a non-empty file, or a directory with
/// something in it.
bool output_present(const std::string& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec) return false;
  if (std::filesystem::is_regular_file(status)) {
    auto size = std::filesystem::file_size(path, ec);
    return !ec && size > 0;
  }
  if (std::filesystem::is_directory(status)) {
    std::filesystem::directory_iterator it(path, ec);
    return !ec && it != std::filesystem::directory_iterator();
  }
  return false;
}

}  // namespace

std::string ProcessExecutor::expected_output_path(const core::Allocation& a) const {
  if (!a.launch || a.launch->expected_output.empty()) return "";
  std::filesystem::path path(a.launch->expected_output);
  if (path.is_relative()) {
    std::string dir =
        a.launch->workdir.empty() ? output_dir_ + "/" + std::to_string(a.task.job.value) : a.launch->workdir;
    path = std::filesystem::path(dir) / path;
  }
  return path.lexically_normal().string();
}

std::string ProcessExecutor::exit_path(core::TaskRef task, core::ClaimId claim) const {
  return output_dir_ + "/" + std::to_string(task.job.value) + "/" + std::to_string(task.index) + "." +
         std::to_string(claim.value) + ".exit";
}

core::Status ProcessExecutor::start(const caf::actor& node, const core::NodeSpec& spec,
                                    const core::Allocation& a) {
  const core::TaskLaunch& launch = *a.launch;
  agent::ProcessSupervisor::AsyncStart start;
  agent::LaunchSpec& ls = start.spec;
  ls.argv = launch.argv;
  ls.env = agent::task_environment(a.task.job, a.task.index, spec.name, a.resources);
  ls.env.insert(ls.env.end(), launch.env.begin(), launch.env.end());
  ls.workdir = launch.workdir;
  if (ls.workdir.empty()) {
    // The job's directory, made by the task's keeper (LaunchSpec::make_workdir):
    // its mkdir was the agent's dearest call per task on an ext4 without a
    // journal (bench/README.md, e2e).
    ls.workdir = output_dir_ + "/" + std::to_string(a.task.job.value);
    ls.make_workdir = true;
  }
  ls.stdout_path = stdout_path(a.task);
  ls.stderr_path = stderr_path(a.task);
  // Made at the task's first byte: most tasks of a burst of short ones print
  // nothing, and a new file per stream was most of the agent's cost per task
  // on an ext4 without a journal (bench/README.md, e2e).
  ls.lazy_output = true;
  ls.exit_path = exit_path(a.task, a.claim_id);
  ls.max_run_time = launch.max_run_time;
  // What the job asked for is what it may hold (agent/memory_limit.hpp).
  if (a.resources[core::dim::memory] > 0) ls.memory_limit_bytes = static_cast<uint64_t>(a.resources[core::dim::memory]);
  ls.cpu_millicores = a.resources[core::dim::cpu];
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_) return core::make_error(core::Errc::wrong_state, "the agent is stopping");
    seq = ++next_start_;
    starting_.emplace(seq, Starting{Running{node, a.task, a.claim_id, expected_output_path(a)},
                                    std::chrono::steady_clock::now(), false, std::nullopt});
  }
  start.wanted = [this, seq] { return wanted(seq); };
  start.done = [this, seq](core::Expected<uint64_t, agent::StartError> handle) { start_done(seq, std::move(handle)); };
  supervisor_->start_async(std::move(start));
  return core::Status::ok();
}

bool ProcessExecutor::wanted(uint64_t seq) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = starting_.find(seq);
  if (it == starting_.end()) return false;  // killed while it waited
  if (stopping_) {
    starting_.erase(it);
    queue_changed_.notify_all();
    return false;
  }
  it->second.launching = true;
  return true;
}

void ProcessExecutor::start_done(uint64_t seq, core::Expected<uint64_t, agent::StartError> handle) {
  Starting s;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = starting_.find(seq);
    if (it == starting_.end()) return;  // cannot happen: only wanted() drops one
    s = std::move(it->second);
    starting_.erase(it);
  }
  queue_changed_.notify_all();
  if (!handle) {
    agent::TaskExit how;
    how.how = agent::TaskExit::How::failed_to_start;
    how.detail = handle.error().message;
    s.run.expected_output.clear();
    report(s.run, std::move(how), core::TaskEnd::spawn_failed(handle.error().stage, handle.error().error_number));
    return;
  }
  // Released while it was being started: it runs now, so it is stopped now.
  metrics_.started(std::chrono::steady_clock::now() - s.queued_at);
  track(*handle, s.run, std::move(s.kill_reason));
  spdlog::debug("task {}.{}: started", s.run.task.job.value, s.run.task.index);
}

void ProcessExecutor::track(uint64_t handle, const Running& r, std::optional<std::string> kill_reason) {
  std::optional<agent::TaskExit> early;
  bool was_adopted = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (auto it = early_.find(handle); it != early_.end()) {
      early = std::move(it->second);  // it ended before it was registered
      early_.erase(it);
      was_adopted = adopted_.erase(r.task) > 0;
    } else {
      by_handle_[handle] = r;
      by_task_[r.task] = handle;
    }
  }
  if (kill_reason && !early) supervisor_->kill(handle, *kill_reason);
  if (was_adopted) write_detached();
  if (early) report(r, std::move(*early));
}

size_t ProcessExecutor::detach_all(std::chrono::milliseconds launch_wait) {
  {
    // A start under way when the supervisor detaches would either be left
    // out of the list while its keeper detaches (it runs on, unknown to the
    // next agent, which runs it again) or start after the detach and die
    // with this agent: the starts under way finish first (the supervisor
    // takes the detach after them), the rest never start.
    std::unique_lock<std::mutex> lock(mutex_);
    queue_changed_.wait_for(lock, launch_wait, [&] { return starting_.empty(); });
    size_t dropped = 0;
    for (auto it = starting_.begin(); it != starting_.end();) {
      if (it->second.launching) {
        ++it;
        continue;
      }
      it = starting_.erase(it);
      ++dropped;
    }
    if (dropped > 0)
      spdlog::warn("agent: {} task(s) still waiting to start are not started; the next agent reports them lost",
                   dropped);
    stopping_ = true;  // nothing queued starts any more
    queue_changed_.wait(lock, [&] { return starting_.empty(); });
  }
  auto detached = supervisor_->detach_all();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (const auto& d : detached) {
      auto it = by_handle_.find(d.handle);
      if (it == by_handle_.end()) continue;
      adopted_[it->second.task] = d;  // the list below: every task left running
      by_task_.erase(it->second.task);
      by_handle_.erase(it);
    }
  }
  queue_changed_.notify_all();
  write_detached();
  for (const auto& [task, d] : adopted_)
    spdlog::info("task {}.{}: left running for the next agent (keeper pid {})", task.job.value, task.index, d.pid);
  return detached.size();
}

void ProcessExecutor::write_detached() {
  std::map<core::TaskRef, agent::DetachedTask> list;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    list = adopted_;
    list.insert(candidates_.begin(), candidates_.end());
  }
  std::string tmp = detached_path() + ".tmp";
  std::error_code dir_error;
  std::filesystem::create_directories(output_dir_, dir_error);
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [task, d] : list)
      out << task.job.value << ' ' << task.index << ' ' << d.pid << ' ' << d.start_ticks << ' '
          << d.deadline_unix_ns << ' ' << std::filesystem::path(d.exit_path).filename().string() << '\n';
    if (!out) {
      spdlog::error("agent: cannot write {}: the tasks left running would not be adopted", tmp);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, detached_path(), ec);
  if (ec) spdlog::error("agent: cannot write {}: {}", detached_path(), ec.message());
}

void ProcessExecutor::load_detached() {
  std::ifstream in(detached_path());
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    uint64_t job = 0, ticks = 0;
    core::TaskIndex index = 0;
    pid_t pid = 0;
    int64_t deadline = 0;
    if (!(fields >> job >> index >> pid >> ticks >> deadline)) continue;
    core::TaskRef task{core::JobId{job}, index};
    // The exit file's name; an agent before run-named exit files wrote none.
    std::string exit_name;
    if (!(fields >> exit_name)) exit_name = std::to_string(index) + ".exit";
    agent::DetachedTask d;
    d.pid = pid;
    d.start_ticks = ticks;
    d.deadline_unix_ns = deadline;
    d.exit_path = output_dir_ + "/" + std::to_string(job) + "/" + exit_name;
    d.command = "task " + std::to_string(job) + "." + std::to_string(index);
    candidates_[task] = d;
  }
}

bool ProcessExecutor::adopt(const caf::actor& node, const core::Allocation& allocation) {
  core::TaskRef task = allocation.task;
  agent::DetachedTask d;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = candidates_.find(task);
    if (it == candidates_.end()) return false;
    d = it->second;
    candidates_.erase(it);
    adopted_[task] = d;
  }
  uint64_t handle = supervisor_->adopt(d);
  spdlog::info("task {}.{}: adopted from the previous agent (keeper pid {})", task.job.value, task.index, d.pid);
  track(handle, Running{node, task, allocation.claim_id, expected_output_path(allocation)}, std::nullopt);
  flush_ends();  // an end reported before it was registered
  return true;
}

void ProcessExecutor::drop_unadopted() {
  std::map<core::TaskRef, agent::DetachedTask> left;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    left.swap(candidates_);
  }
  for (const auto& [task, d] : left) {
    spdlog::warn("task {}.{}: left running by the previous agent but no longer held by its node: killing it",
                 task.job.value, task.index);
    uint64_t handle = supervisor_->adopt(d);
    track(handle, Running{caf::actor{}, task, core::ClaimId{}, ""}, std::string("no longer held by its node"));
  }
  flush_ends();
  write_detached();
}

size_t ProcessExecutor::busy() {
  std::lock_guard<std::mutex> guard(mutex_);
  return by_handle_.size() + starting_.size();
}

bool ProcessExecutor::runs_job(core::JobId job) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto from = by_task_.lower_bound(core::TaskRef{job, 0});
  if (from != by_task_.end() && from->first.job == job) return true;
  return std::any_of(starting_.begin(), starting_.end(), [&](const auto& s) { return s.second.run.task.job == job; });
}

bool ProcessExecutor::kill(core::TaskRef task, const std::string& reason) {
  uint64_t handle = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    // Its latest start, if one is under way (an older one was killed already).
    auto starting =
        std::find_if(starting_.rbegin(), starting_.rend(), [&](const auto& s) { return s.second.run.task == task; });
    if (starting != starting_.rend() && !starting->second.launching) {
      // Not launched yet: it never will be (wanted() says no).
      starting_.erase(std::next(starting).base());
      queue_changed_.notify_all();
      spdlog::debug("task {}.{}: dropped before its start ({})", task.job.value, task.index, reason);
      return false;
    }
    if (starting != starting_.rend()) {
      starting->second.kill_reason = reason;
      spdlog::debug("task {}.{}: killing it once started ({})", task.job.value, task.index, reason);
      return true;
    }
    auto it = by_task_.find(task);
    if (it == by_task_.end()) {
      spdlog::debug("task {}.{}: not running here, nothing to kill ({})", task.job.value, task.index, reason);
      return false;
    }
    handle = it->second;
  }
  spdlog::info("task {}.{}: stopping it ({})", task.job.value, task.index, reason);
  supervisor_->kill(handle, reason);
  return true;
}

core::Expected<core::LogChunk> ProcessExecutor::read_output(const core::LogRequest& request) const {
  auto path = request.stderr_stream ? stderr_path(request.task) : stdout_path(request.task);
  auto chunk = agent::read_output_file(path, request.offset, request.tail_lines,
                                       request.max_bytes == 0 ? core::kMaxLogChunk
                                                              : std::min(request.max_bytes, core::kMaxLogChunk));
  // Its files are made at its first byte (LaunchSpec::lazy_output): a task
  // that ran here (its job's directory is here) and printed nothing on the
  // stream has no file, and an empty output.
  std::error_code ec;
  if (!chunk && chunk.error().code == core::Errc::unknown_name &&
      std::filesystem::is_directory(output_dir_ + "/" + std::to_string(request.task.job.value), ec))
    return core::LogChunk{};
  if (!chunk)
    return core::make_error(chunk.error().code, "task " + std::to_string(request.task.job.value) + "." +
                                                    std::to_string(request.task.index) + ": " + chunk.error().message);
  return chunk;
}

void ProcessExecutor::exited(uint64_t handle, agent::TaskExit how) {
  Running r;
  bool was_adopted = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = by_handle_.find(handle);
    if (it == by_handle_.end()) {
      early_.emplace(handle, std::move(how));  // start() has not registered it yet
      return;
    }
    r = it->second;
    by_handle_.erase(it);
    if (auto t = by_task_.find(r.task); t != by_task_.end() && t->second == handle) by_task_.erase(t);
    was_adopted = adopted_.erase(r.task) > 0;
  }
  if (was_adopted) write_detached();
  report(r, std::move(how));
}

std::optional<TaskEnded> ProcessExecutor::recorded_end(const core::Allocation& allocation) const {
  auto status = agent::keeper::read_exit_file(exit_path(allocation.task, allocation.claim_id));
  if (!status) return std::nullopt;
  agent::TaskExit how = agent::exit_from_status(*status);
  how.detail += " while its agent was down";
  return ended(Running{caf::actor{}, allocation.task, allocation.claim_id, expected_output_path(allocation)}, how,
               std::nullopt);
}

TaskEnded ProcessExecutor::ended(const Running& r, const agent::TaskExit& how, std::optional<core::TaskEnd> end) {
  TaskEnded e;
  e.task = r.task;
  e.claim = r.claim;
  e.detail = how.detail;
  e.end = end ? *end : how.end();
  switch (how.how) {
    case agent::TaskExit::How::exited:
      e.state = how.exit_code == 0 ? core::TaskState::succeeded : core::TaskState::failed;
      e.exit_code = how.exit_code;
      break;
    case agent::TaskExit::How::killed_by_signal:
      e.state = core::TaskState::failed;
      e.exit_code = 128 + how.signal;
      break;
    case agent::TaskExit::How::timed_out:
      e.state = core::TaskState::failed;
      e.exit_code = how.exit_code >= 0 ? how.exit_code : 128 + how.signal;
      break;
    case agent::TaskExit::How::failed_to_start:
      e.state = core::TaskState::failed;
      e.exit_code = -1;
      break;
    case agent::TaskExit::How::oom_killed:
      // A failure of its own (it used more than it asked for), told apart
      // from the others by its end reason.
      e.state = core::TaskState::failed;
      e.exit_code = how.exit_code >= 0 ? how.exit_code : 128 + how.signal;
      break;
    case agent::TaskExit::How::killed_on_request:
      // Released on purpose (cancel, preemption): the node already freed it
      // and records only how the process ended. Otherwise the agent is
      // shutting down: the task did not end on its own and runs again
      // elsewhere.
      e.state = core::TaskState::lost;
      e.exit_code = how.exit_code >= 0 ? how.exit_code : 128 + how.signal;
      if (!end) e.end = core::TaskEnd::observed(core::EndReason::agent_stopped, how.exit_code, how.signal);
      break;
  }
  // Also for the ends made here: a cancelled task's peak is worth as much.
  if (e.end.peak_memory_bytes == 0) e.end.peak_memory_bytes = how.peak_memory_bytes;
  // Checked here, on the task's node, which is the only place that can: the
  // task still succeeded, its campaign weighs the missing output (sinks).
  if (e.state == core::TaskState::succeeded && !r.expected_output.empty() && !output_present(r.expected_output)) {
    e.end.output_missing = true;
    e.detail += "; its declared output " + r.expected_output + " is missing or empty";
  }
  return e;
}

void ProcessExecutor::report(const Running& r, agent::TaskExit how, std::optional<core::TaskEnd> end) {
  storage::crash::point(storage::crash::kTaskExitSeen);
  metrics_.ended(how);
  TaskEnded e = ended(r, how, end);
  // Ends the agent did not ask for are worth an operator's eye; killed ones
  // were asked for and logged by whoever asked, and a success is the common
  // case (a line each was a write per task at a thousand tasks a second).
  const bool routine = how.how == agent::TaskExit::How::killed_on_request || e.state == core::TaskState::succeeded;
  const auto level = routine ? spdlog::level::debug : spdlog::level::info;
  if (spdlog::should_log(level))
    spdlog::log(level, "task {}.{} ended: {} ({})", r.task.job.value, r.task.index, core::describe(e.end), how.detail);
  if (!r.node) return;
  std::lock_guard<std::mutex> guard(ends_mutex_);
  auto it = std::find_if(ends_.begin(), ends_.end(), [&](const auto& n) { return n.first == r.node; });
  if (it == ends_.end()) it = ends_.insert(ends_.end(), {r.node, {}});
  it->second.push_back(std::move(e));
}

void ProcessExecutor::flush_ends() {
  std::vector<std::pair<caf::actor, std::vector<TaskEnded>>> ends;
  {
    std::lock_guard<std::mutex> guard(ends_mutex_);
    ends.swap(ends_);
  }
  // One message per node: one ledger pass, one store batch and one delta to
  // its subscribers for a burst of ends.
  for (auto& [node, list] : ends) {
    if (list.size() == 1)
      caf::anon_send(node, std::move(list.front()));
    else
      caf::anon_send(node, TasksEnded{std::move(list)});
  }
}

}  // namespace claimsched::actors
