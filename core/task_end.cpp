#include "core/task_end.hpp"

#include <array>
#include <cctype>
#include <system_error>
#include <utility>

namespace claimsched::core {

namespace {

constexpr std::array<std::pair<EndReason, std::string_view>, 11> kReasons{{
    {EndReason::none, "none"},
    {EndReason::exited, "exited"},
    {EndReason::signaled, "signaled"},
    {EndReason::spawn_failed, "spawn_failed"},
    {EndReason::max_run_time, "max_run_time"},
    {EndReason::cancelled, "cancelled"},
    {EndReason::preempted, "preempted"},
    {EndReason::evicted, "evicted"},
    {EndReason::node_lost, "node_lost"},
    {EndReason::oom_killed, "oom_killed"},
    {EndReason::agent_stopped, "agent_stopped"},
}};

constexpr std::array<std::pair<SpawnStage, std::string_view>, 8> kStages{{
    {SpawnStage::none, "none"},
    {SpawnStage::no_command, "no_command"},
    {SpawnStage::no_such_file, "no_such_file"},
    {SpawnStage::permission_denied, "permission_denied"},
    {SpawnStage::bad_workdir, "bad_workdir"},
    {SpawnStage::bad_user, "bad_user"},
    {SpawnStage::output, "output"},
    {SpawnStage::system, "system"},
}};

template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "unknown";
}

template <class E, size_t N>
Expected<E> parse_name(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s,
                       const char* what) {
  for (const auto& [v, name] : table)
    if (name == s) return v;
  return make_error(Errc::parse_error, std::string("unknown ") + what + " '" + std::string(s) + "'");
}

/// How a killed process actually ended: " (exited with code 1 after the
/// kill)", " (SIGKILL)"; empty when the agent has not said yet.
std::string after_kill(const TaskEnd& e) {
  if (e.signal != 0) return "; killed by " + signal_name(e.signal);
  if (e.exit_code >= 0) return "; exited with code " + std::to_string(e.exit_code) + " after SIGTERM";
  return "";
}

std::string spawn_text(const TaskEnd& e) {
  auto with_errno = [&](std::string what) {
    if (e.exit_code <= 0) return "could not start: " + what;
    std::string text = std::generic_category().message(e.exit_code);
    if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return "could not start: " + what + " (" + text + ")";
  };
  switch (e.stage) {
    case SpawnStage::no_command:
      return "could not start: the job has no command";
    case SpawnStage::no_such_file:
      return "could not start: command not found";
    case SpawnStage::permission_denied:
      return "could not start: permission denied";
    case SpawnStage::bad_workdir:
      return with_errno("bad working directory");
    case SpawnStage::bad_user:
      return with_errno("bad user");
    case SpawnStage::output:
      return with_errno("cannot open its output files");
    case SpawnStage::none:
    case SpawnStage::system:
      break;
  }
  return with_errno("system error");
}

}  // namespace

TaskEnd inferred_end(TaskState final_state, int32_t exit_code) {
  switch (final_state) {
    case TaskState::succeeded:
      return TaskEnd::exited(0);
    case TaskState::failed:
      if (exit_code < 0) return TaskEnd::spawn_failed(SpawnStage::system, 0);
      if (exit_code > 128 && exit_code < 128 + 65) return TaskEnd::signaled(exit_code - 128);
      return TaskEnd::exited(exit_code);
    case TaskState::preempted:
      return TaskEnd::decided(EndReason::preempted);
    case TaskState::evicted:
      return TaskEnd::decided(EndReason::evicted);
    case TaskState::lost:
      return TaskEnd::decided(EndReason::node_lost);
    case TaskState::cancelled:
      return TaskEnd::decided(EndReason::cancelled);
    default:
      return TaskEnd{};
  }
}

std::string_view to_string(EndReason r) { return name_of(kReasons, r); }
Expected<EndReason> parse_end_reason(std::string_view s) { return parse_name(kReasons, s, "end reason"); }
std::string_view to_string(SpawnStage s) { return name_of(kStages, s); }
Expected<SpawnStage> parse_spawn_stage(std::string_view s) { return parse_name(kStages, s, "spawn stage"); }

std::string signal_name(int sig) {
  // The numbers Linux uses on every architecture claimsched builds for.
  static constexpr std::array<std::pair<int, std::string_view>, 15> kNames{{
      {1, "SIGHUP"},
      {2, "SIGINT"},
      {3, "SIGQUIT"},
      {4, "SIGILL"},
      {5, "SIGTRAP"},
      {6, "SIGABRT"},
      {7, "SIGBUS"},
      {8, "SIGFPE"},
      {9, "SIGKILL"},
      {10, "SIGUSR1"},
      {11, "SIGSEGV"},
      {12, "SIGUSR2"},
      {13, "SIGPIPE"},
      {14, "SIGALRM"},
      {15, "SIGTERM"},
  }};
  for (const auto& [n, name] : kNames)
    if (n == sig) return std::string(name);
  return "signal " + std::to_string(sig);
}

int32_t shell_exit_code(const TaskEnd& e) {
  if (e.reason == EndReason::spawn_failed) return -1;
  if (e.signal != 0) return 128 + e.signal;
  return e.exit_code;
}

std::string describe(const TaskEnd& e) {
  switch (e.reason) {
    case EndReason::none:
      return "";
    case EndReason::exited:
      return "exited with code " + std::to_string(e.exit_code);
    case EndReason::signaled:
      return "killed by " + signal_name(e.signal) + " (signal " + std::to_string(e.signal) + ")";
    case EndReason::spawn_failed:
      return spawn_text(e);
    case EndReason::max_run_time:
      return "exceeded its maximum run time" + after_kill(e);
    case EndReason::cancelled:
      return "cancelled" + after_kill(e);
    case EndReason::preempted:
      return "preempted" + after_kill(e);
    case EndReason::evicted:
      return "evicted" + after_kill(e);
    case EndReason::node_lost:
      return "its node was lost (the outcome is unknown)";
    case EndReason::oom_killed:
      return "killed for exceeding its memory limit";
    case EndReason::agent_stopped:
      return "its agent stopped (the process died with it)";
  }
  return "";
}

std::string format_memory(uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  uint64_t scale = 1;
  while (unit + 1 < kUnits.size() && bytes >= scale * 1024) {
    scale *= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  // Tenths, rounded half up, in integers (no float formatting differences).
  uint64_t tenths = (bytes * 10 + scale / 2) / scale;
  if (tenths >= 10240 && unit + 1 < kUnits.size()) {  // 1023.96 MiB reads as 1 GiB, not 1024 MiB
    scale *= 1024;
    ++unit;
    tenths = (bytes * 10 + scale / 2) / scale;
  }
  std::string text = std::to_string(tenths / 10);
  if (tenths % 10 != 0) text += "." + std::to_string(tenths % 10);
  return text + " " + std::string(kUnits[unit]);
}

}  // namespace claimsched::core
