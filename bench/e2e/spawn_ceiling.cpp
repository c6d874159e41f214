// The machine's process-start ceiling for bench/e2e_throughput.sh: a bare
// loop of posix_spawn + wait of /bin/true with 8 starts in flight, from a
// small process. Prints {"spawn_ceiling_per_sec": N}.
//
//   spawn_ceiling [--processes N] [--in-flight K]

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

int main(int argc, char** argv) {
  long processes = 2000;
  long in_flight = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--processes") == 0) processes = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--in-flight") == 0) in_flight = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "spawn_ceiling: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (processes <= 0 || in_flight <= 0) {
    std::fprintf(stderr, "spawn_ceiling: --processes and --in-flight must be positive\n");
    return 2;
  }
  char true_path[] = "/bin/true";
  char* child_argv[] = {true_path, nullptr};
  auto start = std::chrono::steady_clock::now();
  long started = 0, running = 0;
  while (started < processes || running > 0) {
    while (started < processes && running < in_flight) {
      pid_t pid = 0;
      int err = posix_spawn(&pid, true_path, nullptr, nullptr, child_argv, environ);
      if (err != 0) {
        std::fprintf(stderr, "spawn_ceiling: posix_spawn: %s\n", std::strerror(err));
        return 1;
      }
      ++started;
      ++running;
    }
    int status = 0;
    if (::wait(&status) > 0) --running;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"spawn_ceiling_per_sec\": %.1f}\n", static_cast<double>(processes) / seconds);
  return 0;
}
