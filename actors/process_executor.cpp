#include "actors/process_executor.hpp"

#include "agent/task_output.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

namespace claimsched::actors {

ProcessExecutor::ProcessExecutor(std::string output_dir) : output_dir_(std::move(output_dir)) {
  supervisor_ = std::make_unique<agent::ProcessSupervisor>(
      [this](uint64_t handle, agent::TaskExit how) { exited(handle, std::move(how)); });
  launcher_ = std::thread([this] { launch_loop(); });
}

ProcessExecutor::~ProcessExecutor() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;  // what is still queued never starts
  }
  queue_changed_.notify_all();
  launcher_.join();
  supervisor_.reset();
}

std::string ProcessExecutor::stdout_path(core::TaskRef task) const {
  return output_dir_ + "/" + std::to_string(task.job.value) + "/" + std::to_string(task.index) + ".out";
}

std::string ProcessExecutor::stderr_path(core::TaskRef task) const {
  return output_dir_ + "/" + std::to_string(task.job.value) + "/" + std::to_string(task.index) + ".err";
}

core::Status ProcessExecutor::start(const caf::actor& node, const core::NodeSpec& spec,
                                    const core::Allocation& a) {
  const core::TaskLaunch& launch = *a.launch;
  Queued q{node, a.task, {}};
  agent::LaunchSpec& ls = q.launch;
  ls.argv = launch.argv;
  ls.env = agent::task_environment(a.task.job, a.task.index, spec.name, a.resources);
  ls.env.insert(ls.env.end(), launch.env.begin(), launch.env.end());
  ls.workdir = launch.workdir;
  ls.stdout_path = stdout_path(a.task);
  ls.stderr_path = stderr_path(a.task);
  ls.max_run_time = launch.max_run_time;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_) return core::make_error(core::Errc::wrong_state, "the agent is stopping");
    queued_.push_back(std::move(q));
  }
  queue_changed_.notify_one();
  return core::Status::ok();
}

void ProcessExecutor::launch_loop() {
  for (;;) {
    Queued q;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queue_changed_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      q = std::move(queued_.front());
      queued_.pop_front();
      launching_ = q.task;
      kill_when_launched_.reset();
    }
    launch(std::move(q));
  }
}

void ProcessExecutor::launch(Queued q) {
  const auto entered = std::chrono::steady_clock::now();
  agent::LaunchSpec& ls = q.launch;
  auto failed = [&](const std::string& why, core::SpawnStage stage, int error_number) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      launching_.reset();
    }
    agent::TaskExit how;
    how.how = agent::TaskExit::How::failed_to_start;
    how.detail = why;
    report(Running{q.node, q.task}, std::move(how), core::TaskEnd::spawn_failed(stage, error_number));
  };
  if (ls.workdir.empty()) {
    ls.workdir = output_dir_ + "/" + std::to_string(q.task.job.value);
    std::error_code ec;
    std::filesystem::create_directories(ls.workdir, ec);
    if (ec)
      return failed("cannot create the task directory " + ls.workdir + ": " + ec.message(),
                    core::SpawnStage::output, ec.value());
  }
  // Not under the lock: the supervisor's thread reports exits through
  // exited(), which takes it, while start() waits for that thread.
  auto handle = supervisor_->start(ls);
  if (!handle) return failed(handle.error().message, handle.error().stage, handle.error().error_number);
  std::optional<agent::TaskExit> early;
  std::optional<std::string> kill_reason;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    launching_.reset();
    kill_reason = std::move(kill_when_launched_);
    kill_when_launched_.reset();
    if (auto it = early_.find(*handle); it != early_.end()) {
      early = std::move(it->second);  // it ended before it was registered
      early_.erase(it);
    } else {
      by_handle_[*handle] = Running{q.node, q.task};
      by_task_[q.task] = *handle;
    }
  }
  // Released while it was being started: it runs now, so stop it now.
  if (kill_reason && !early) supervisor_->kill(*handle, *kill_reason);
  spdlog::debug("task {}.{}: started ({} us to launch)", q.task.job.value, q.task.index,
                std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - entered)
                    .count());
  if (early) report(Running{q.node, q.task}, std::move(*early));
}

bool ProcessExecutor::kill(core::TaskRef task, const std::string& reason) {
  uint64_t handle = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    // Not launched yet: it never will be.
    auto queued = std::find_if(queued_.begin(), queued_.end(), [&](const Queued& q) { return q.task == task; });
    if (queued != queued_.end()) {
      queued_.erase(queued);
      spdlog::debug("task {}.{}: dropped before its start ({})", task.job.value, task.index, reason);
      return false;
    }
    if (launching_ == task) {
      kill_when_launched_ = reason;
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
  if (!chunk)
    return core::make_error(chunk.error().code, "task " + std::to_string(request.task.job.value) + "." +
                                                    std::to_string(request.task.index) + ": " + chunk.error().message);
  return chunk;
}

void ProcessExecutor::exited(uint64_t handle, agent::TaskExit how) {
  Running r;
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
  }
  report(r, std::move(how));
}

void ProcessExecutor::report(const Running& r, agent::TaskExit how, std::optional<core::TaskEnd> end) {
  TaskEnded e;
  e.task = r.task;
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
  // Ends the agent did not ask for are worth an operator's eye; killed ones
  // were asked for and logged by whoever asked.
  if (how.how == agent::TaskExit::How::killed_on_request)
    spdlog::debug("task {}.{} ended: {}", r.task.job.value, r.task.index, how.detail);
  else
    spdlog::info("task {}.{} ended: {} ({})", r.task.job.value, r.task.index, core::describe(e.end), how.detail);
  if (r.node) caf::anon_send(r.node, std::move(e));
}

}  // namespace claimsched::actors
