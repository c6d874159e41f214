#include "agent/process_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <variant>

#include "agent/cgroup.hpp"
#include "agent/keeper.hpp"
#include "agent/keeper_spawn.hpp"
#include "agent/launch.hpp"
#include "agent/memory_limit.hpp"
#include "agent/starter.hpp"
#include "core/duration.hpp"

namespace claimsched::agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace launch;
using keeper::Stage;

namespace {

/// How often children without a pidfd (pidfd_open failed, e.g. EMFILE) are
/// polled for their exit.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

StartError shutting_down_error() {
  return start_error(core::Errc::wrong_state, core::SpawnStage::system, 0, "the supervisor is shutting down");
}

/// Waits for `pid` (our child) without reaping anything else; `max_rss`
/// gets the largest resident set, in bytes, of it and the children it
/// reaped (wait4's ru_maxrss, in KiB on Linux).
bool reap(pid_t pid, int& status, uint64_t* max_rss = nullptr) {
  for (;;) {
    struct rusage usage {};
    pid_t r = ::wait4(pid, &status, 0, &usage);
    if (r == pid && max_rss != nullptr && usage.ru_maxrss > 0) *max_rss = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace

// ---- the supervisor -------------------------------------------------------------

struct ProcessSupervisor::Impl {
  struct StartRequest {
    Prepared* prepared;
    std::promise<core::Expected<uint64_t, StartError>> result;
  };
  struct KillRequest {
    uint64_t handle;
    std::string reason;
  };
  struct DetachRequest {
    std::promise<std::vector<DetachedTask>> result;
  };
  struct AdoptRequest {
    DetachedTask task;
    std::promise<uint64_t> result;
  };
  struct AsyncRequest {
    AsyncStart start;
  };
  using Request = std::variant<StartRequest, AsyncRequest, KillRequest, DetachRequest, AdoptRequest>;
  /// The most starts started together (their zygote requests in flight at once).
  static constexpr size_t kMaxBatch = 32;

  struct Child {
    pid_t pid = 0;
    UniqueFd pidfd;  // -1: polled every kPollInterval
    /// Write end of the keeper's control pipe (closed: adopted keepers).
    UniqueFd control;
    /// A keeper an earlier agent detached: not our child; its task's status
    /// comes from its exit file.
    bool adopted = false;
    uint64_t start_ticks = 0;
    std::string exit_path;
    std::string command;
    core::Duration max_run_time{0};
    /// LaunchSpec::memory_limit_bytes (0: none); the most its group held in
    /// a sample, and what it held when it was killed for it.
    uint64_t memory_limit = 0;
    /// When it started: it is first sampled one interval later.
    Clock::time_point started{};
    uint64_t sampled_peak = 0;
    uint64_t resident_at_kill = 0;
    /// Started from a spawned keeper: wait4's peak is the task's own.
    bool spawned = false;
    /// Its own cgroup (agent/cgroup.hpp); empty: none, its memory is sampled.
    std::string cgroup;
    std::optional<Clock::time_point> deadline;  // max_run_time
    std::optional<Clock::time_point> kill_at;   // SIGKILL after SIGTERM
    std::optional<TaskExit::How> ending;        // why we terminate it
    std::string reason;
  };

  OnExit on_exit;
  OnRoundEnd on_round_end;
  SupervisorOptions options;
  /// Starts keepers (the program's, from its zygote where it can).
  std::unique_ptr<Starter> starter;
  /// /dev/null and the descriptor limit, for every start (launch::Shared).
  UniqueFd null_read, null_write;
  Shared shared;
  /// This round called on_exit or a start's done (end_round).
  bool round_reported = false;
  UniqueFd wake_fd;
  std::atomic<size_t> running{0};

  std::mutex mutex;
  std::deque<Request> queue;  // guarded by mutex
  bool stopping = false;      // guarded by mutex

  // The supervisor thread's own state.
  std::map<uint64_t, Child> children;
  uint64_t next_handle = 1;
  bool shutting_down = false;
  /// When the memory of limited tasks is sampled next.
  Clock::time_point next_sample{};
  /// The delegated cgroup tree tasks run in, if there is one.
  std::optional<cgroup::Tree> cgroups;
  uint64_t cgroup_seq = 0;
  /// Task cgroups that still held processes when their task was reported,
  /// with the tries left (every kPollInterval: a second's worth).
  std::vector<std::pair<std::string, int>> cgroups_to_remove;

  std::thread thread;

  bool on_thread() const { return std::this_thread::get_id() == thread.get_id(); }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd.get(), &one, sizeof one);  // EAGAIN: already awake
  }
  /// Queues a request (under `mutex`) and wakes the thread if the queue was
  /// empty: otherwise a wake-up for it is pending already, and a burst of
  /// requests costs one.
  void push(Request request) {
    bool was_empty = queue.empty();
    queue.push_back(std::move(request));
    if (was_empty) wake();
  }

  // ---- starting ----

  /// Starts `batch` together (launch::Starter) and registers each started
  /// child; the results are in the batch's order.
  std::vector<core::Expected<uint64_t, StartError>> launch(const std::vector<Prepared*>& batch) {
    std::vector<core::Expected<uint64_t, StartError>> handles;
    handles.reserve(batch.size());
    if (shutting_down) {
      for (size_t i = 0; i < batch.size(); ++i) handles.emplace_back(shutting_down_error());
      return handles;
    }
    auto started = starter->start(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!started[i]) {
        handles.emplace_back(std::move(started[i].error()));
        continue;
      }
      const Prepared& p = *batch[i];
      Started& s = *started[i];
      const uint64_t handle = next_handle++;
      Child child;
      child.pid = s.pid;
      child.pidfd = std::move(s.pidfd);
      child.control = std::move(s.control);
      child.exit_path = p.exit_path;
      child.command = p.command;
      child.max_run_time = p.max_run_time;
      child.memory_limit = p.memory_limit_bytes;
      child.started = s.started;
      child.spawned = s.spawned;
      child.cgroup = std::move(s.cgroup);
      if (p.max_run_time.count() > 0)
        child.deadline = s.started + std::chrono::duration_cast<Clock::duration>(p.max_run_time);
      children.emplace(handle, std::move(child));
      running.fetch_add(1);
      handles.emplace_back(handle);
    }
    return handles;
  }

  core::Expected<uint64_t, StartError> launch_one(Prepared& p) { return std::move(launch({&p})[0]); }

  /// The starts of one round, started together: prepared here for
  /// start_async (the caller prepared a start()'s), then handed their results.
  void launch_queued(std::vector<Request>& starts) {
    std::vector<Prepared> owned;
    owned.reserve(starts.size());
    std::vector<Prepared*> batch;
    std::vector<Request*> owners;
    for (auto& request : starts) {
      if (auto* start = std::get_if<StartRequest>(&request)) {
        batch.push_back(start->prepared);
        owners.push_back(&request);
        continue;
      }
      auto& async = std::get<AsyncRequest>(request).start;
      if (async.wanted && !call_quietly("a start's wanted", [&] { return async.wanted(); }).value_or(false)) continue;
      auto prepared = prepare(async.spec, shared);
      if (!prepared) {
        deliver(async, prepared.error());
        continue;
      }
      owned.push_back(std::move(*prepared));
      batch.push_back(&owned.back());
      owners.push_back(&request);
    }
    if (batch.empty()) return;
    auto results = launch(batch);
    for (size_t i = 0; i < results.size(); ++i) {
      if (auto* start = std::get_if<StartRequest>(owners[i]))
        start->result.set_value(std::move(results[i]));
      else
        deliver(std::get<AsyncRequest>(*owners[i]).start, std::move(results[i]));
    }
  }

  void deliver(AsyncStart& start, core::Expected<uint64_t, StartError> result) {
    round_reported = true;
    if (start.done)
      call_quietly("a start's done", [&] {
        start.done(std::move(result));
        return true;
      });
  }

  /// Runs a caller's callback; what it throws is logged and dropped.
  template <class F>
  std::optional<bool> call_quietly(const char* what, F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      spdlog::error("process-supervisor: {} threw: {}", what, e.what());
    } catch (...) {
      spdlog::error("process-supervisor: {} threw", what);
    }
    return std::nullopt;
  }

  /// After a round that reported anything: SupervisorCallbacks::on_round_end.
  void end_round() {
    if (!round_reported) return;
    round_reported = false;
    if (on_round_end)
      call_quietly("on_round_end", [&] {
        on_round_end();
        return true;
      });
  }

  // ---- terminating ----

  void signal_group(const Child& c, int sig) {
    // The leader is our unreaped child, so neither its pid nor its group id
    // can have been reused. If it left its group, signal it alone.
    if (::kill(-c.pid, sig) != 0 && errno == ESRCH) ::kill(c.pid, sig);
  }

  void begin_termination(Child& c, TaskExit::How how, std::string reason, Clock::time_point now) {
    if (c.ending) return;
    c.ending = how;
    c.reason = std::move(reason);
    if (options.kill_grace.count() <= 0) {
      signal_group(c, SIGKILL);
      return;
    }
    signal_group(c, SIGTERM);
    c.kill_at = now + std::chrono::duration_cast<Clock::duration>(options.kill_grace);
  }

  /// Samples the process groups of the tasks with a memory limit and kills
  /// those over it at once: more memory is what it must not take meanwhile.
  void enforce_memory(Clock::time_point now) {
    if (options.memory_sample_interval.count() <= 0 || now < next_sample) return;
    const auto interval = std::chrono::duration_cast<Clock::duration>(options.memory_sample_interval);
    std::set<pid_t> groups;
    for (const auto& [handle, c] : children)
      if (sampled_now(c, now)) groups.insert(c.pid);
    if (groups.empty()) return;
    next_sample = now + interval;
    auto sampled = sample_groups("/proc", groups);
    for (auto& [handle, c] : children) {
      auto it = sampled.find(c.pid);
      if (!sampled_now(c, now) || it == sampled.end()) continue;
      const uint64_t resident = it->second.resident_bytes;
      c.sampled_peak = std::max(c.sampled_peak, resident);
      if (resident <= c.memory_limit || c.ending == TaskExit::How::oom_killed) continue;
      if (c.ending) {
        // Already being stopped for another reason (which its end keeps: the
        // node may have released it already), within a SIGTERM's grace:
        // over its limit, it gets no more of it.
        if (c.kill_at) signal_group(c, SIGKILL);
        c.kill_at.reset();
        continue;
      }
      spdlog::warn(
          "process-supervisor: {} (pid {}, handle {}) holds {} resident in {} process(es), over its limit of "
          "{}: killing its process group",
          c.command, c.pid, handle, core::format_memory(resident), it->second.processes,
          core::format_memory(c.memory_limit));
      c.ending = TaskExit::How::oom_killed;
      c.resident_at_kill = resident;
      c.kill_at.reset();
      signal_group(c, SIGKILL);
    }
  }

  /// A task whose memory the samples limit (no cgroup does it).
  static bool limited(const Child& c) { return c.memory_limit > 0 && !c.adopted && c.cgroup.empty(); }

  /// Limited and started at least one interval ago. A sample reads the stat
  /// file of every process on the machine, so it waits for a task that has
  /// lived an interval: tasks shorter than that (most of a burst of short
  /// ones) cost none, and a task that allocates fast still overshoots by at
  /// most (rate x interval) before its first sample, as between two samples.
  bool sampled_now(const Child& c, Clock::time_point now) const {
    return limited(c) && now - c.started >= std::chrono::duration_cast<Clock::duration>(options.memory_sample_interval);
  }

  /// When the next sample is due, if any limited task runs: one interval
  /// after the last sample, and not before the oldest limited task has lived
  /// one interval.
  std::optional<Clock::time_point> next_memory_sample() const {
    if (options.memory_sample_interval.count() <= 0) return std::nullopt;
    std::optional<Clock::time_point> oldest;
    for (const auto& [handle, c] : children)
      if (limited(c) && (!oldest || c.started < *oldest)) oldest = c.started;
    if (!oldest) return std::nullopt;
    return std::max(next_sample, *oldest + std::chrono::duration_cast<Clock::duration>(options.memory_sample_interval));
  }

  void do_kill(uint64_t handle, std::string reason) {
    auto it = children.find(handle);
    if (it == children.end()) {
      spdlog::debug("process-supervisor: kill of handle {} ignored: not running", handle);
      return;
    }
    begin_termination(it->second, TaskExit::How::killed_on_request, std::move(reason), Clock::now());
  }

  // ---- reaping ----

  TaskExit make_exit(const Child& c, int status, uint64_t max_rss = 0) const {
    TaskExit e = exit_from_status(status);
    e.peak_memory_bytes = std::max(c.sampled_peak, c.spawned ? max_rss : 0);
    if (!c.ending) return e;
    std::string observed = std::move(e.detail);
    e.how = *c.ending;
    if (e.how == TaskExit::How::oom_killed)
      e.detail = "exceeded its memory limit of " + core::format_memory(c.memory_limit) +
                 (c.resident_at_kill > 0 ? " (held " + core::format_memory(c.resident_at_kill) + ")"
                                         : " (killed by the kernel in its cgroup)");
    else if (e.how == TaskExit::How::timed_out)
      e.detail = "exceeded its maximum run time of " + core::format_duration(c.max_run_time);
    else
      e.detail = c.reason.empty() ? "killed on request" : "killed on request: " + c.reason;
    e.detail += "; " + observed;
    return e;
  }

  /// The exit of an adopted keeper's task, from the exit file it wrote, once
  /// the keeper is gone (it killed its group's leftovers itself).
  std::optional<TaskExit> check_adopted(Child& c) {
    bool gone = false;
    if (c.pidfd) {
      pollfd pfd{c.pidfd.get(), POLLIN, 0};
      gone = ::poll(&pfd, 1, 0) > 0;
    } else {
      gone = process_start_ticks(c.pid) != c.start_ticks;
    }
    if (!gone) return std::nullopt;
    if (auto status = keeper::read_exit_file(c.exit_path)) return make_exit(c, *status);
    return TaskExit{c.ending.value_or(TaskExit::How::exited), -1, 0,
                    "it ended while no agent watched it and its exit status was not recorded (its keeper was "
                    "killed)"};
  }

  /// The exit of `c` if it has ended; its group's leftovers are killed first.
  std::optional<TaskExit> check_exited(Child& c) {
    if (c.adopted) return check_adopted(c);
    siginfo_t info{};
    int r;
    do {
      r = ::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
      int err = errno;
      spdlog::error("process-supervisor: pid {} ({}) vanished: {}; was SIGCHLD ignored or waitpid(-1) called?",
                    c.pid, c.command, errno_text(err));
      TaskExit e{c.ending.value_or(TaskExit::How::exited), -1, 0,
                 "exit status lost: the process was reaped by someone else (" + errno_text(err) + ")"};
      return e;
    }
    if (info.si_pid == 0) return std::nullopt;
    // A zombie now: its pid still names its group, so this reaches only the
    // group's leftovers (background children of a shell, say).
    ::kill(-c.pid, SIGKILL);
    int status = 0;
    uint64_t max_rss = 0;
    if (!reap(c.pid, status, &max_rss)) {
      int err = errno;
      return TaskExit{c.ending.value_or(TaskExit::How::exited), -1, 0,
                      "exit status lost: waitpid failed (" + errno_text(err) + ")"};
    }
    if (!c.cgroup.empty()) {
      // The kernel enforced the limit: its count of OOM kills says whether
      // the SIGKILL that ended the task was one.
      auto usage = cgroup::Tree::usage(c.cgroup);
      if (usage.oom_killed && !c.ending) c.ending = TaskExit::How::oom_killed;
      c.sampled_peak = std::max(c.sampled_peak, usage.peak_bytes);
      remove_cgroup(c.cgroup);
    }
    return make_exit(c, status, max_rss);
  }

  /// Retries removing task cgroups whose processes were still leaving.
  void remove_leftover_cgroups() {
    std::erase_if(cgroups_to_remove, [](auto& entry) {
      if (cgroup::Tree::remove(entry.first)) return true;
      if (--entry.second > 0) return false;
      spdlog::warn("process-supervisor: cannot remove the task cgroup {}: {}; left in place", entry.first,
                   errno_text(errno));
      return true;
    });
  }

  void remove_cgroup(const std::string& path) {
    if (!cgroup::Tree::remove(path)) cgroups_to_remove.emplace_back(path, 50);
  }

  void report(uint64_t handle, TaskExit exit) {
    running.fetch_sub(1);
    spdlog::debug("process-supervisor: handle {} {}", handle, exit.detail);
    round_reported = true;
    if (!on_exit) return;
    try {
      on_exit(handle, std::move(exit));
    } catch (const std::exception& e) {
      spdlog::error("process-supervisor: on_exit for handle {} threw: {}", handle, e.what());
    } catch (...) {
      spdlog::error("process-supervisor: on_exit for handle {} threw", handle);
    }
  }

  // ---- the loop ----

  void handle_requests() {
    std::deque<Request> requests;
    {
      std::lock_guard lock(mutex);
      requests.swap(queue);
      if (stopping) shutting_down = true;
    }
    // Consecutive starts go together (up to kMaxBatch); anything else waits
    // for the starts before it, as it would one by one.
    std::vector<Request> starts;
    auto flush = [&] {
      if (!starts.empty()) launch_queued(starts);
      starts.clear();
    };
    for (auto& request : requests) {
      if (std::holds_alternative<StartRequest>(request) || std::holds_alternative<AsyncRequest>(request)) {
        starts.push_back(std::move(request));
        if (starts.size() >= kMaxBatch) flush();
        continue;
      }
      flush();
      if (auto* kill = std::get_if<KillRequest>(&request))
        do_kill(kill->handle, std::move(kill->reason));
      else if (auto* detach = std::get_if<DetachRequest>(&request))
        detach->result.set_value(detach_all());
      else if (auto* adopt = std::get_if<AdoptRequest>(&request))
        adopt->result.set_value(do_adopt(adopt->task));
    }
    flush();
  }

  // ---- outliving the agent ----

  std::vector<DetachedTask> detach_all() {
    std::vector<DetachedTask> out;
    auto wall_now = std::chrono::system_clock::now();
    auto now = Clock::now();
    for (auto& [handle, c] : children) {
      if (c.ending) continue;  // being killed: let it end with this agent
      DetachedTask d;
      d.handle = handle;
      d.pid = c.pid;
      d.start_ticks = c.adopted ? c.start_ticks : process_start_ticks(c.pid);
      d.exit_path = c.exit_path;
      d.command = c.command;
      if (c.deadline)
        d.deadline_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 (wall_now + (*c.deadline - now)).time_since_epoch())
                                 .count();
      if (!c.adopted && c.control) {
        char detach = keeper::kDetach;
        if (::write(c.control.get(), &detach, 1) != 1) {
          spdlog::warn("process-supervisor: cannot detach {} (pid {}): {}; it ends with the agent", c.command,
                       c.pid, errno_text(errno));
          continue;
        }
      }
      out.push_back(std::move(d));
    }
    for (const auto& d : out) {
      children.erase(d.handle);
      running.fetch_sub(1);
    }
    return out;
  }

  uint64_t do_adopt(const DetachedTask& d) {
    const uint64_t handle = next_handle++;
    Child c;
    c.pid = d.pid;
    c.adopted = true;
    c.start_ticks = d.start_ticks;
    c.exit_path = d.exit_path;
    c.command = d.command;
    // Still that keeper (not a later process with its pid): watch it.
    if (process_start_ticks(d.pid) == d.start_ticks) c.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, d.pid, 0)));
    if (c.pidfd && process_start_ticks(d.pid) != d.start_ticks) c.pidfd.reset();
    if (d.deadline_unix_ns > 0) {
      auto left = std::chrono::nanoseconds(d.deadline_unix_ns) -
                  std::chrono::system_clock::now().time_since_epoch();
      c.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(left);
    }
    children.emplace(handle, std::move(c));
    running.fetch_add(1);
    return handle;
  }

  void run() {
    bool terminated_all = false;
    for (;;) {
      handle_requests();
      auto now = Clock::now();
      if (shutting_down && !terminated_all) {
        terminated_all = true;
        for (auto& [handle, c] : children)
          begin_termination(c, TaskExit::How::killed_on_request, "supervisor shutting down", now);
      }
      if (shutting_down && children.empty()) break;

      std::optional<Clock::time_point> next_timer;
      auto consider = [&](Clock::time_point t) { next_timer = next_timer ? std::min(*next_timer, t) : t; };
      enforce_memory(now);
      if (auto due = next_memory_sample()) consider(*due);
      if (!cgroups_to_remove.empty()) {
        remove_leftover_cgroups();
        if (!cgroups_to_remove.empty()) consider(now + kPollInterval);
      }
      for (auto& [handle, c] : children) {
        if (!c.ending && c.deadline && now >= *c.deadline)
          begin_termination(c, TaskExit::How::timed_out, {}, now);
        if (c.kill_at && now >= *c.kill_at) {
          signal_group(c, SIGKILL);
          c.kill_at.reset();
        }
        if (!c.ending && c.deadline) consider(*c.deadline);
        if (c.kill_at) consider(*c.kill_at);
        if (!c.pidfd) consider(now + kPollInterval);
      }

      std::vector<pollfd> fds{{wake_fd.get(), POLLIN, 0}};
      std::vector<uint64_t> owners;
      for (auto& [handle, c] : children) {
        if (!c.pidfd) continue;
        fds.push_back({c.pidfd.get(), POLLIN, 0});
        owners.push_back(handle);
      }
      end_round();  // before the wait: what the starts said goes now
      int timeout = next_timer ? poll_timeout_ms(*next_timer - Clock::now()) : -1;
      int r = ::poll(fds.data(), fds.size(), timeout);
      if (r < 0 && errno != EINTR) {
        spdlog::error("process-supervisor: poll failed: {}", errno_text(errno));
        std::this_thread::sleep_for(kPollInterval);
      }
      if (r > 0 && (fds[0].revents & POLLIN) != 0) {
        uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(wake_fd.get(), &count, sizeof count);
      }

      std::vector<uint64_t> ready;
      for (size_t i = 0; r > 0 && i < owners.size(); ++i)
        if (fds[i + 1].revents != 0) ready.push_back(owners[i]);
      for (auto& [handle, c] : children)
        if (!c.pidfd) ready.push_back(handle);
      std::vector<std::pair<uint64_t, TaskExit>> finished;
      for (uint64_t handle : ready) {
        auto it = children.find(handle);
        if (auto exit = check_exited(it->second)) {
          finished.emplace_back(handle, std::move(*exit));
          children.erase(it);
        }
      }
      // After the bookkeeping: a callback may start or kill inline.
      for (auto& [handle, exit] : finished) report(handle, std::move(exit));
      end_round();
    }

    starter->stop_zygote();  // reaped here, before the thread whose death would kill it ends
    std::deque<Request> rest;
    {
      std::lock_guard lock(mutex);
      rest.swap(queue);
    }
    for (auto& request : rest)
      if (auto* start = std::get_if<StartRequest>(&request)) {
        start->result.set_value(shutting_down_error());
      } else if (auto* async = std::get_if<AsyncRequest>(&request)) {
        auto& start = async->start;
        if (!start.wanted || call_quietly("a start's wanted", [&] { return start.wanted(); }).value_or(false))
          deliver(start, shutting_down_error());
      }
    end_round();
  }
};

ProcessSupervisor::ProcessSupervisor(OnExit on_exit, SupervisorOptions options)
    : ProcessSupervisor(std::move(on_exit), OnRoundEnd{}, std::move(options)) {}

ProcessSupervisor::ProcessSupervisor(OnExit on_exit, OnRoundEnd on_round_end, SupervisorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->on_exit = std::move(on_exit);
  impl_->on_round_end = std::move(on_round_end);
  impl_->options = options;
  std::string keeper_binary;
  if (auto keeper = find_keeper_binary(options.keeper_binary); !keeper)
    spdlog::error("process-supervisor: {}; keepers are forked instead", keeper.error().message);
  else if (!options.fork_keepers)
    keeper_binary = *keeper;
  if (keeper_binary.empty() && !options.fork_keepers)
    spdlog::info("process-supervisor: no claimsched-keeper beside this program; each task's keeper is a fork of it");
  if (options.cgroups) impl_->cgroups = cgroup::open_for_tasks(options.cgroup_dir, options.memory_sample_interval);
  impl_->starter =
      std::make_unique<Starter>(options, std::move(keeper_binary), &impl_->cgroups,
                                [impl = impl_.get()](const std::string& path) { impl->remove_cgroup(path); });
  impl_->shared = open_shared(impl_->null_read, impl_->null_write);
  impl_->wake_fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl_->wake_fd) throw std::system_error(errno, std::system_category(), "process-supervisor: eventfd");
  // The thread starts with every signal blocked, and keeps them so.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ProcessSupervisor::~ProcessSupervisor() {
  assert(!impl_->on_thread() && "a ProcessSupervisor must not be destroyed from its own on_exit");
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake();
  impl_->thread.join();
}

core::Expected<uint64_t, StartError> ProcessSupervisor::start(const LaunchSpec& spec) {
  auto prepared = prepare(spec, impl_->shared);
  if (!prepared) return prepared.error();
  if (impl_->on_thread()) return impl_->launch_one(*prepared);
  std::future<core::Expected<uint64_t, StartError>> result;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return shutting_down_error();
    Impl::StartRequest request{&*prepared, {}};
    result = request.result.get_future();
    impl_->push(std::move(request));
  }
  return result.get();
}

void ProcessSupervisor::start_async(AsyncStart start) {
  if (impl_->on_thread()) {
    std::vector<Impl::Request> one;
    one.emplace_back(Impl::AsyncRequest{std::move(start)});
    impl_->launch_queued(one);
    return;
  }
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->stopping) {
      impl_->push(Impl::AsyncRequest{std::move(start)});
      return;
    }
  }
  // As if the thread had dropped it at its end (there is none to run it).
  if (!start.wanted || start.wanted()) {
    if (start.done) start.done(shutting_down_error());
  }
}

void ProcessSupervisor::kill(uint64_t handle, std::string reason) {
  if (impl_->on_thread()) {
    impl_->do_kill(handle, std::move(reason));
    return;
  }
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return;
    impl_->push(Impl::KillRequest{handle, std::move(reason)});
  }
}

size_t ProcessSupervisor::running() const { return impl_->running.load(); }

std::vector<DetachedTask> ProcessSupervisor::detach_all() {
  if (impl_->on_thread()) return impl_->detach_all();
  std::future<std::vector<DetachedTask>> result;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return {};
    Impl::DetachRequest request;
    result = request.result.get_future();
    impl_->push(std::move(request));
  }
  return result.get();
}

uint64_t ProcessSupervisor::adopt(const DetachedTask& task) {
  if (impl_->on_thread()) return impl_->do_adopt(task);
  std::future<uint64_t> result;
  {
    std::lock_guard lock(impl_->mutex);
    Impl::AdoptRequest request{task, {}};
    result = request.result.get_future();
    impl_->push(std::move(request));
  }
  return result.get();
}

}  // namespace claimsched::agent
