#include "agent/keeper_spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace claimsched::agent {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKeeperName = "claimsched-keeper";
/// Where the keeper expects the report and control pipes (keeper_main.cpp).
constexpr int kReportFd = 3;
constexpr int kControlFd = 4;

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

/// `fd` itself if it is above every descriptor the child's dup2s write to,
/// else a close-on-exec copy above them (closed by `copies`' owner).
int above_targets(int fd, std::vector<int>& copies) {
  if (fd > kControlFd) return fd;
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, kControlFd + 1);
  if (copy >= 0) copies.push_back(copy);
  return copy;
}

}  // namespace

core::Expected<std::string> find_keeper_binary(const std::string& configured) {
  if (!configured.empty()) {
    if (!executable_file(configured))
      return core::make_error(core::Errc::invalid_argument,
                              "keeper program '" + configured + "' is not an executable file");
    return configured;
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string();
  fs::path beside = self.parent_path() / kKeeperName;
  return executable_file(beside) ? beside.string() : std::string();
}

namespace {

/// The keeper's arguments up to the task's, as keeper_main.cpp reads them.
std::vector<std::string> keeper_head(const std::string& keeper_binary, const keeper::Args& a) {
  return {keeper_binary,
          std::to_string(a.parent),
          std::to_string(a.max_fd),
          a.workdir ? a.workdir : "",
          a.exit_path ? a.exit_path : "",
          a.exit_tmp_path ? a.exit_tmp_path : "",
          a.cgroup_procs ? a.cgroup_procs : "",
          a.stdout_path ? a.stdout_path : "",
          a.stderr_path ? a.stderr_path : "",
          a.make_workdir ? "1" : "",
          a.path};
}

}  // namespace

pid_t spawn_keeper(const std::string& keeper_binary, const keeper::Args& a) {
  std::vector<std::string> head = keeper_head(keeper_binary, a);
  std::vector<char*> argv;
  for (auto& s : head) argv.push_back(s.data());
  for (char* const* arg = a.argv; *arg != nullptr; ++arg) argv.push_back(*arg);
  argv.push_back(nullptr);

  std::vector<int> copies;
  int report = above_targets(a.report_fd, copies);
  int control = above_targets(a.control_fd, copies);
  if (report < 0 || control < 0) {
    int err = errno;
    for (int fd : copies) ::close(fd);
    return -err;
  }
  // The keeper's descriptors 0-4, in order. The stdio sources are above 2
  // (the supervisor moved them there), so the first three cannot overwrite
  // one another's source; the pipes are above 4, so the last two cannot
  // either; and no source is its own target (dup2 would keep its
  // close-on-exec flag).
  const int sources[] = {a.stdin_fd, a.stdout_fd, a.stderr_fd, report, control};
  const char* path = keeper_binary.c_str();
  char* const* child_argv = argv.data();
  char* const* child_envp = a.envp;
  // vfork rather than posix_spawn, which is a vfork too but maps and unmaps
  // a stack for its child on every call (the unmap flushes the TLB of every
  // CPU running one of the agent's threads: 40% of the supervisor thread's
  // time) and checks each descriptor against getrlimit twice. The child
  // borrows this thread's stack and memory until its execve: it only calls
  // dup2, execve and _exit, with every signal blocked (this thread's mask,
  // which the keeper keeps), and leaves the errno of a failure here.
  volatile int child_error = 0;
  pid_t pid = ::vfork();
  if (pid == 0) {
    for (int target = 0; target < 5; ++target)
      if (::dup2(sources[target], target) < 0) {
        child_error = errno;
        ::_exit(127);
      }
    ::execve(path, child_argv, child_envp);
    child_error = errno;
    ::_exit(127);
  }
  int err = pid < 0 ? errno : child_error;
  for (int fd : copies) ::close(fd);
  if (pid > 0 && err != 0) {
    // It never ran the keeper: reaped here, as posix_spawn would have.
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return err == 0 ? pid : -err;
}

KeeperZygote::~KeeperZygote() {
  if (pid_ <= 0) return;
  // Its end of file ends it; it holds nothing that must finish first.
  socket_.reset();
  if (broken_) ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

core::Expected<std::unique_ptr<KeeperZygote>> KeeperZygote::start(const std::string& keeper_binary) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return core::make_error(core::Errc::io_error, std::string("socketpair: ") + std::strerror(errno));
  launch::UniqueFd ours(sv[0]), theirs(sv[1]);
  std::string parent = std::to_string(::getpid());
  // The padding is room for each keeper's own arguments in `ps` (keeper_main.cpp).
  std::vector<std::string> strings{keeper_binary, keeper::kZygoteArg, parent, std::string(256, ' ')};
  char* argv[] = {strings[0].data(), strings[1].data(), strings[2].data(), strings[3].data(), nullptr};
  const int socket = theirs.get();
  const char* path = keeper_binary.c_str();
  // No environment: it needs none, and a keeper forked from it keeps the
  // zygote's (in /proc/<pid>/environ) while its task gets the request's, so
  // the agent's own settings (CLAIMSCHED_*) show nowhere near a task.
  char* no_env[] = {nullptr};
  // As in spawn_keeper: the child only calls dup2, execve and _exit.
  volatile int child_error = 0;
  pid_t pid = ::vfork();
  if (pid == 0) {
    if (::dup2(socket, 0) < 0) {
      child_error = errno;
      ::_exit(127);
    }
    ::execve(path, argv, no_env);
    child_error = errno;
    ::_exit(127);
  }
  int err = pid < 0 ? errno : child_error;
  if (pid > 0 && err != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (err != 0)
    return core::make_error(core::Errc::io_error, "spawn of " + keeper_binary + " --zygote: " + std::strerror(err));
  auto zygote = std::unique_ptr<KeeperZygote>(new KeeperZygote);
  zygote->pid_ = pid;
  zygote->socket_ = std::move(ours);
  return zygote;
}

std::optional<pid_t> KeeperZygote::spawn(const std::string& keeper_binary, const keeper::Args& a,
                                         std::chrono::milliseconds timeout) {
  if (!request(keeper_binary, a)) return std::nullopt;
  return answer(timeout);
}

bool KeeperZygote::request(const std::string& keeper_binary, const keeper::Args& a) {
  if (broken_) return false;
  std::vector<std::string> head = keeper_head(keeper_binary, a);
  uint32_t counts[2] = {static_cast<uint32_t>(head.size()), 0};
  std::string data(sizeof counts, '\0');
  for (const auto& s : head) data.append(s.c_str(), s.size() + 1);
  for (char* const* arg = a.argv; *arg != nullptr; ++arg, ++counts[0]) data.append(*arg, std::strlen(*arg) + 1);
  for (char* const* var = a.envp; *var != nullptr; ++var, ++counts[1]) data.append(*var, std::strlen(*var) + 1);
  std::memcpy(data.data(), counts, sizeof counts);
  if (data.size() > keeper::kZygoteMaxRequest) return false;  // too long for it: exec'd instead

  const int fds[keeper::kZygoteFds] = {a.stdin_fd, a.stdout_fd, a.stderr_fd, a.report_fd, a.control_fd};
  alignas(cmsghdr) keeper::ZygoteControl control = {};
  iovec iov{data.data(), data.size()};
  msghdr msg = keeper::zygote_message(iov, control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t sent;
  // MSG_DONTWAIT: with several requests in flight the socket may be full
  // (a zygote that stopped reading must not hang the supervisor's thread).
  while ((sent = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 && errno == EINTR) {
  }
  if (sent < 0) {
    // EMSGSIZE: a request beyond the socket's buffer; EAGAIN: a full socket;
    // anything else: the zygote is gone. Either way this task's keeper is
    // exec'd.
    if (errno != EMSGSIZE && errno != EAGAIN && errno != EWOULDBLOCK) broken_ = true;
    return false;
  }
  ++unanswered_;
  return true;
}

std::optional<pid_t> KeeperZygote::answer(std::chrono::milliseconds timeout) {
  if (unanswered_ == 0) return std::nullopt;
  --unanswered_;
  if (broken_) return -ECONNRESET;  // taken, and never to be answered
  int32_t answer = 0;
  int err = ETIMEDOUT;
  // Already there (a later request of a burst, most often): no poll.
  ssize_t ready = ::recv(socket_.get(), &answer, sizeof answer, MSG_DONTWAIT);
  if (ready == sizeof answer) return answer == -EINVAL ? std::nullopt : std::optional<pid_t>(answer);
  if (ready >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    broken_ = true;  // end of file, a short answer or an error: it is gone
    return -ECONNRESET;
  }
  for (;;) {
    pollfd pfd{socket_.get(), POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t got = ::recv(socket_.get(), &answer, sizeof answer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got != sizeof answer) {
      err = ECONNRESET;
      break;
    }
    if (answer == -EINVAL) return std::nullopt;  // it could not read the request: exec'd instead
    return answer;
  }
  // Taken but not answered: a keeper may have been forked, so this start
  // fails rather than start the task a second time; such a keeper reads end
  // of file on its control pipe when the caller drops it, and kills its task
  // (keeper.hpp). Nothing more is asked of this zygote.
  broken_ = true;
  return -err;
}

}  // namespace claimsched::agent
