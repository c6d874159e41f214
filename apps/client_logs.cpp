// `claimsched logs JOB[.TASK] [--stderr] [--follow] [--tail N]`: a task's
// output streamed from the agent of the node it ran on, through the server
// (as `nomad alloc logs` and `kubectl logs` do).

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/client_commands.hpp"

namespace claimsched::apps {

namespace {

/// How often --follow asks for more while the task runs.
constexpr auto kFollowInterval = std::chrono::milliseconds(200);

void write_out(const core::LogChunk& chunk, const core::LogRequest& request, bool json) {
  if (chunk.data.empty()) return;
  if (json) {
    nlohmann::json j{{"job", request.task.job.value},
                     {"task", request.task.index},
                     {"stream", request.stderr_stream ? "stderr" : "stdout"},
                     {"node", chunk.node},
                     {"offset", chunk.offset},
                     {"data", chunk.data}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fwrite(chunk.data.data(), 1, chunk.data.size(), stdout);
  }
  std::fflush(stdout);
}

}  // namespace

int run_logs(ClientSession& s, const ClientOptions& o) {
  core::LogRequest request;
  request.task = *parse_task_ref(o.job);
  request.stderr_stream = o.stderr_stream;
  request.tail_lines = o.tail;
  for (;;) {
    auto chunk = s.logs(request);
    if (!chunk) {
      // A task not started yet is worth waiting for when following.
      if (o.follow && chunk.error().exit_code == kExitFailed &&
          chunk.error().message.find("has not run yet") != std::string::npos) {
        std::this_thread::sleep_for(kFollowInterval);
        continue;
      }
      return fail(chunk.error());
    }
    write_out(*chunk, request, o.json);
    request.tail_lines = 0;
    request.offset = chunk->offset + chunk->data.size();
    if (request.offset < chunk->size) continue;  // more than one chunk's worth
    if (!o.follow || !chunk->running) break;
    std::this_thread::sleep_for(kFollowInterval);
  }
  return kExitOk;
}

}  // namespace claimsched::apps
