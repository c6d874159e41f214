#include "agent/starter.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "core/duration.hpp"

namespace claimsched::agent::launch {

using Clock = std::chrono::steady_clock;
using keeper::Stage;

namespace {

void reap_quietly(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

int poll_timeout_ms(Clock::duration d) {
  if (d <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

struct Starter::InFlight {
  Prepared* p = nullptr;
  std::string cgroup, cgroup_procs;
  UniqueFd report_read, control_write;
  /// The keeper's ends, closed once its spawn is done.
  UniqueFd report_write, control_read;
  keeper::Args args{};
  Clock::time_point started{};
  /// Asked of the zygote, not answered yet.
  bool asked = false;
  pid_t pid = 0;
  UniqueFd pidfd;
  /// The start report read so far (the exec closes the pipe without one).
  keeper::Report report{};
  size_t got = 0;
  bool done = false;
  std::optional<StartError> error;

  void spawned() {
    report_write.reset();
    control_read.reset();
    p->stdin_fd.reset();
    p->stdout_fd.reset();
    p->stderr_fd.reset();
  }
  /// Fails the start of a keeper that runs; the caller reaps it. `kill`:
  /// it did not say why, so it is killed (else it is exiting already).
  void fail(StartError e, bool kill = true) {
    if (kill) ::kill(pid, SIGKILL);
    error = std::move(e);
    done = true;
  }
};

Starter::Starter(const SupervisorOptions& options, std::string keeper_binary,
                 const std::optional<cgroup::Tree>* cgroups, std::function<void(const std::string&)> remove_cgroup)
    : options_(options),
      keeper_binary_(std::move(keeper_binary)),
      cgroups_(cgroups),
      remove_cgroup_(std::move(remove_cgroup)),
      self_(::getpid()) {}

Starter::~Starter() = default;

std::optional<StartError> Starter::prepare_pipes(InFlight& s) {
  Prepared& p = *s.p;
  if (*cgroups_) {
    auto made = (*cgroups_)->create(std::to_string(::getpid()) + "-" + std::to_string(++cgroup_seq_),
                                    {p.memory_limit_bytes, p.cpu_millicores, options_.task_pids_max});
    if (!made) return io_error("cannot start " + in_quotes(p.command) + ": " + made.error().message);
    s.cgroup = *made;
    s.cgroup_procs = s.cgroup + "/cgroup.procs";
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    return io_error("pipe2: " + errno_text(err), core::SpawnStage::system, err);
  }
  s.report_read.reset(pipe_fds[0]);
  auto report_write = above_stdio(UniqueFd(pipe_fds[1]));
  if (!report_write) return report_write.error();
  s.report_write = std::move(*report_write);
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    return io_error("pipe2: " + errno_text(err), core::SpawnStage::system, err);
  }
  auto control_read = above_stdio(UniqueFd(pipe_fds[0]));
  s.control_write.reset(pipe_fds[1]);
  if (!control_read) return control_read.error();
  s.control_read = std::move(*control_read);
  s.args = keeper::Args{p.path.c_str(),
                        p.argv.data(),
                        p.envp.data(),
                        p.workdir.empty() ? nullptr : p.workdir.c_str(),
                        p.stdin_fd.get(),
                        p.stdout_fd.get(),
                        p.stderr_fd.get(),
                        s.report_write.get(),
                        s.control_read.get(),
                        self_,
                        p.max_fd,
                        p.exit_path.empty() ? nullptr : p.exit_path.c_str(),
                        p.exit_tmp_path.empty() ? nullptr : p.exit_tmp_path.c_str(),
                        s.cgroup_procs.empty() ? nullptr : s.cgroup_procs.c_str(),
                        p.lazy_stdout.empty() ? nullptr : p.lazy_stdout.c_str(),
                        p.lazy_stderr.empty() ? nullptr : p.lazy_stderr.c_str(),
                        p.make_workdir};
  return std::nullopt;
}

void Starter::spawn_directly(InFlight& s) {
  const Prepared& p = *s.p;
  if (!keeper_binary_.empty()) {
    pid_t pid = spawn_keeper(keeper_binary_, s.args);
    if (pid < 0)
      s.error = io_error(
          "cannot start " + in_quotes(p.command) + ": spawn of " + in_quotes(keeper_binary_) + ": " + errno_text(-pid),
          core::SpawnStage::system, -pid);
    else
      s.pid = pid;
  } else {
    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      s.error = io_error("cannot start " + in_quotes(p.command) + ": fork: " + errno_text(err),
                         core::SpawnStage::system, err);
    } else {
      if (pid == 0) keeper::run(s.args);
      s.pid = pid;
    }
  }
  s.spawned();
}

bool Starter::zygote_ready() {
  if (keeper_binary_.empty() || !options_.keeper_zygote || zygote_failed_) return false;
  if (zygote_) return !zygote_->broken();
  auto started = KeeperZygote::start(keeper_binary_);
  if (!started) {
    zygote_failed_ = true;
    spdlog::warn("process-supervisor: {}; each task's keeper is exec'd instead", started.error().message);
    return false;
  }
  zygote_ = std::move(*started);
  return true;
}

std::vector<core::Expected<Started, StartError>> Starter::start(const std::vector<Prepared*>& batch) {
  std::vector<InFlight> starts(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    InFlight& s = starts[i];
    s.p = batch[i];
    if (auto failed = prepare_pipes(s)) {
      s.error = std::move(failed);
      continue;
    }
    s.started = Clock::now();
    // The zygote's requests go first, all of them: it forks the keepers
    // while the others are asked for.
    if (zygote_ready() && zygote_->request(keeper_binary_, s.args))
      s.asked = true;
    else
      spawn_directly(s);
  }
  const auto answer_wait = std::chrono::duration_cast<std::chrono::milliseconds>(options_.exec_timeout);
  for (InFlight& s : starts) {
    if (!s.asked) continue;
    std::optional<pid_t> pid = zygote_->answer(answer_wait);
    if (!pid) {
      spawn_directly(s);  // it did not take the request after all
      continue;
    }
    s.spawned();
    if (*pid < 0)
      s.error = io_error("cannot start " + in_quotes(s.p->command) + ": spawn of " + in_quotes(keeper_binary_) + ": " +
                             errno_text(-*pid),
                         core::SpawnStage::system, -*pid);
    else
      s.pid = *pid;
  }
  if (zygote_ && zygote_->broken()) {
    spdlog::warn(
        "process-supervisor: the keepers' zygote (pid {}) is gone or stopped answering; keepers are exec'd "
        "from now on",
        zygote_->pid());
    zygote_.reset();
    zygote_failed_ = true;
  }
  for (InFlight& s : starts) {
    if (s.pid <= 0) continue;
    // syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C" for C++.
    s.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, s.pid, 0)));
    if (!s.pidfd)
      spdlog::warn("process-supervisor: pidfd_open({}) failed ({}); polling for its exit", s.pid, errno_text(errno));
  }
  await_execs(starts);

  std::vector<core::Expected<Started, StartError>> results;
  results.reserve(starts.size());
  for (InFlight& s : starts) {
    if (s.error) {
      if (s.pid > 0) reap_quietly(s.pid);
      if (!s.cgroup.empty()) remove_cgroup_(s.cgroup);
      results.emplace_back(std::move(*s.error));
      continue;
    }
    Started started;
    started.pid = s.pid;
    started.pidfd = std::move(s.pidfd);
    started.control = std::move(s.control_write);
    started.cgroup = std::move(s.cgroup);
    started.started = s.started;
    started.spawned = !keeper_binary_.empty();
    if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug("process-supervisor: started {} as pid {} in {} us", in_quotes(s.p->command), s.pid,
                    std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - s.started).count());
    results.emplace_back(std::move(started));
  }
  return results;
}

void Starter::await_execs(std::vector<InFlight>& starts) {
  const auto limit = std::chrono::duration_cast<Clock::duration>(options_.exec_timeout);
  std::vector<pollfd> fds;
  std::vector<InFlight*> owners;
  for (;;) {
    fds.clear();
    owners.clear();
    std::optional<Clock::time_point> give_up;
    for (InFlight& s : starts) {
      if (s.pid <= 0 || s.error || s.done) continue;
      fds.push_back({s.report_read.get(), POLLIN, 0});
      owners.push_back(&s);
      give_up = give_up ? std::min(*give_up, s.started + limit) : s.started + limit;
    }
    if (fds.empty()) return;
    int r = ::poll(fds.data(), fds.size(), poll_timeout_ms(*give_up - Clock::now()));
    if (r < 0 && errno == EINTR) continue;
    const auto now = Clock::now();
    for (size_t i = 0; i < fds.size(); ++i) {
      InFlight& s = *owners[i];
      const std::string& command = s.p->command;
      if (r <= 0 || fds[i].revents == 0) {
        if (now >= s.started + limit)
          s.fail(io_error("cannot start " + in_quotes(command) + ": it did not reach execve within " +
                          core::format_duration(options_.exec_timeout)));
        continue;
      }
      // Hung up with nothing to read: the exec closed it (no read needed).
      ssize_t n =
          (fds[i].revents & POLLIN) == 0 && (fds[i].revents & POLLHUP) != 0
              ? 0
              : ::read(s.report_read.get(), reinterpret_cast<char*>(&s.report) + s.got, sizeof s.report - s.got);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) {
        int err = errno;
        s.fail(io_error("cannot start " + in_quotes(command) + ": reading the start report: " + errno_text(err)));
        continue;
      }
      if (n == 0) {
        if (s.got == 0) {
          s.done = true;  // execve closed the pipe: running
          s.report_read.reset();
        } else {
          s.fail(io_error("cannot start " + in_quotes(command) + ": a truncated start report"));
        }
        continue;
      }
      s.got += static_cast<size_t>(n);
      if (s.got == sizeof s.report)
        s.fail(io_error("cannot start " + in_quotes(command) + ": " + describe_stage(s.report.stage, *s.p) + ": " +
                            errno_text(s.report.error),
                        typed_stage(s.report.stage, s.report.error), s.report.error),
               false);
    }
  }
}

}  // namespace claimsched::agent::launch
