#pragma once

// A claimsched cluster of real processes on 127.0.0.1 for integration tests:
// one `claimsched server` (on a free port it reports) and named agents, each
// started and stopped by PID, with the client driven as a user would.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/process.hpp"

namespace claimsched::testing {

/// What a test asks a cluster through the client, for any cluster type that
/// runs client commands (`Derived::client(args)` and
/// `Derived::client_before_command(args, command)`).
template <class Derived>
class ClusterClient {
 public:
  template <class Predicate>
  static bool wait_until(Predicate&& done, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }

  static std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  /// The address ("HOST:PORT") a process printed after `said` in its log at
  /// `path`, waiting for the line: an HTTP endpoint's line comes a moment
  /// after the "listening" one a start waits for. "" if it never came.
  static std::string printed_address(const std::string& path, const std::string& said,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::string address;
    wait_until(
        [&] {
          std::string log = read_file(path);
          auto at = log.find(said);
          if (at == std::string::npos) return false;
          address = log.substr(at + said.size(), log.find(' ', at + said.size()) - at - said.size());
          return true;
        },
        timeout);
    return address;
  }

  /// Nodes the server counts alive (heartbeating, up).
  int alive_nodes() const {
    ProcessResult r = self().client("nodes --json");
    if (r.exit_code != 0) return -1;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array()) return -1;
    int alive = 0;
    for (const auto& n : j) alive += n.value("alive", false) && n.value("state", "") == "up";
    return alive;
  }
  bool wait_for_alive_nodes(int n, std::chrono::seconds timeout = std::chrono::seconds(20)) const {
    return wait_until([&] { return alive_nodes() == n; }, timeout);
  }

  /// Submits; returns the job id (0 on failure, with the output in `why`).
  uint64_t submit(const std::string& options, const std::string& command, std::string* why = nullptr) const {
    ProcessResult r = self().client_before_command("submit --json " + options, command);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_object() || !j.contains("job")) {
      if (why) *why = r.out;
      return 0;
    }
    return j["job"].get<uint64_t>();
  }
  std::optional<nlohmann::json> status(uint64_t job) const {
    ProcessResult r = self().client("status --json " + std::to_string(job));
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_object()) return std::nullopt;
    return j;
  }
  /// Waits until the job ends; returns its last status.
  nlohmann::json wait_for_job(uint64_t job, std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    nlohmann::json last;
    wait_until(
        [&] {
          auto s = status(job);
          if (!s) return false;
          last = *s;
          auto state = last.value("state", "");
          return state == "succeeded" || state == "failed" || state == "cancelled";
        },
        timeout);
    return last;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

class LocalCluster : public ClusterClient<LocalCluster> {
 public:
  /// `extra_config` is appended to the config file (sections the test needs).
  explicit LocalCluster(const std::string& extra_config = "") {
    char tmpl[] = "/tmp/claimsched-cluster-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_ = dir_ + "/cluster.toml";
    std::ofstream(config_) << "cluster_id = \"test\"\n"
                           << "[listen]\nhost = \"127.0.0.1\"\nport = 0\n"
                           << "[storage]\ndata_dir = \"" << dir_ << "/server\"\n"
                           << "[timeouts]\nheartbeat_interval = \"200ms\"\nnode_grace = \"2s\"\n"
                           << "recovery_grace = \"5s\"\nlink_heartbeat = \"100ms\"\nlink_timeout = \"1s\"\n"
                           << extra_config;
  }
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;
  ~LocalCluster() {
    agents_.clear();
    server_.reset();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  const std::string& dir() const { return dir_; }
  const std::string& address() const { return address_; }
  std::string server_log() const { return dir_ + "/server.log"; }

  /// Starts the server; the first start picks a free port, a restart reuses it
  /// (agents reconnect to the address they know).
  void start_server() {
    // Debug level: a failing test leaves its directory, and the logs then
    // tell what each process did.
    std::vector<std::string> argv{CLAIMSCHED_BINARY, "--log-level", "debug", "server", "--config", config_};
    if (!address_.empty()) {
      argv.push_back("--port");
      argv.push_back(address_.substr(address_.rfind(':') + 1));
    }
    auto log_size = file_size(server_log());
    server_ = std::make_unique<BackgroundProcess>(argv, server_log());
    ASSERT_TRUE(server_->started());
    const std::string listening = "claimsched server listening on ";
    for (int i = 0; i < 200; ++i) {
      std::string text = read_file(server_log()).substr(log_size);
      if (auto at = text.find(listening); at != std::string::npos) {
        auto from = at + listening.size();
        address_ = text.substr(from, text.find(' ', from) - from);
        return;
      }
      ASSERT_TRUE(server_->running()) << "server exited:\n" << text;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "server did not report its address; log:\n" << read_file(server_log());
  }
  void kill_server(int signal = SIGKILL) {
    server_->kill(signal);
    server_->wait();
  }
  BackgroundProcess& server() { return *server_; }

  /// Starts (or restarts, with the same state directory) agent `name`.
  void start_agent(const std::string& name, const std::string& resources = "cpu=4,memory=4Gi",
                   const std::vector<std::string>& extra = {}) {
    agents_.erase(name);
    std::vector<std::string> argv{CLAIMSCHED_BINARY, "--log-level", "debug", "agent", "--server", address_, "--name",
                                  name, "--resources", resources, "--state-dir", dir_ + "/" + name};
    argv.insert(argv.end(), extra.begin(), extra.end());
    agents_[name] = std::make_unique<BackgroundProcess>(argv, dir_ + "/" + name + ".log");
    ASSERT_TRUE(agents_[name]->started());
  }
  /// Sends `signal` (SIGSTOP, SIGCONT, ...) without waiting for an exit.
  void signal_agent(const std::string& name, int signal) { agents_.at(name)->kill(signal); }
  void kill_agent(const std::string& name, int signal = SIGKILL) {
    agents_.at(name)->kill(signal);
    agents_.at(name)->wait();
  }
  BackgroundProcess& agent(const std::string& name) { return *agents_.at(name); }

  /// Runs a client command against this cluster; `args` are shell words.
  ProcessResult client(const std::string& args) const {
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + args + " --server " + address_ + " 2>&1");
  }
  ProcessResult client_before_command(const std::string& args, const std::string& command) const {
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + args + " --server " + address_ + " -- " +
                       command + " 2>&1");
  }

 private:
  static size_t file_size(const std::string& path) {
    std::error_code ec;
    auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : static_cast<size_t>(n);
  }

  std::string dir_;
  std::string config_;
  std::string address_;
  std::unique_ptr<BackgroundProcess> server_;
  std::map<std::string, std::unique_ptr<BackgroundProcess>> agents_;
};

}  // namespace claimsched::testing
