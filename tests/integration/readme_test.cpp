// The README's first-day session, run verbatim: every command a new user is
// shown works as the README says, on a local cluster of real processes.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/process.hpp"

namespace claimsched::testing {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The ```sh block after the "first-day session" marker.
std::string first_day_session(const std::string& readme) {
  auto marker = readme.find("<!-- first-day session:");
  if (marker == std::string::npos) return "";
  auto open = readme.find("```sh\n", marker);
  auto close = readme.find("\n```", open + 6);
  if (open == std::string::npos || close == std::string::npos) return "";
  return readme.substr(open + 6, close - open - 6) + "\n";
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(Readme, TheFirstDaySessionRunsAsWritten) {
  const fs::path source(CLAIMSCHED_SOURCE_DIR);
  std::string session = first_day_session(read((source / "README.md").string()));
  ASSERT_FALSE(session.empty()) << "no first-day session in README.md";
  // A directory that looks like the repository to the session: its paths
  // (deploy/..., build/apps/claimsched) lead to this build.
  char tmpl[] = "/tmp/claimsched-readme-XXXXXX";
  const fs::path dir(mkdtemp(tmpl));
  fs::create_directories(dir / "build" / "apps");
  fs::create_symlink(CLAIMSCHED_BINARY, dir / "build" / "apps" / "claimsched");
  fs::create_directory_symlink(source / "deploy", dir / "deploy");
  std::ofstream(dir / "session.sh") << "set -euo pipefail\n" << session;
  const fs::path state = dir / "local";
  auto r = run_command("cd " + dir.string() + " && CLAIMSCHED_LOCAL_DIR=" + state.string() + " bash session.sh 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "task 3: succeeded on local-")) << r.out;
  EXPECT_TRUE(contains(r.out, "tasks: 4 succeeded (of 4)")) << r.out;
  EXPECT_TRUE(contains(r.out, "hello from task 3 on local-")) << r.out;
  EXPECT_TRUE(contains(r.out, "could not start: command not found")) << r.out;
  EXPECT_TRUE(contains(r.out, "exit code 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "pending tasks: 4; 0 fit now")) << r.out;
  EXPECT_TRUE(contains(r.out, "cancelled (")) << r.out;
  EXPECT_TRUE(contains(r.out, "JOB  NAME")) << r.out;
  EXPECT_TRUE(contains(r.out, "local cluster stopped")) << r.out;
  // Nothing of the cluster is left running.
  for (const auto& entry : fs::directory_iterator(state)) {
    if (entry.path().extension() != ".pid") continue;
    pid_t pid = std::stoi(read(entry.path()));
    EXPECT_NE(::kill(pid, 0), 0) << entry.path() << " still runs";
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace claimsched::testing
