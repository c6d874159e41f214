#pragma once

// Throwaway etcd members on 127.0.0.1 for tests: free ports, a temporary data
// directory, the election timing that lets a 1 s lease TTL through
// (dependencies.md), each member started and stopped by PID.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.hpp"

namespace claimsched::testing {

/// A TCP port on 127.0.0.1 that nothing listens on now, below the ephemeral
/// range (dependencies.md: fixed ports there sometimes collide).
inline uint16_t free_port() {
  static std::mt19937 rng{std::random_device{}()};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto port = static_cast<uint16_t>(20000 + rng() % 12000);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return port;
  }
  return 0;
}

class EtcdCluster {
 public:
  /// PEM files for an etcd that serves its clients over HTTPS and asks each
  /// for a certificate of `ca` (--client-cert-auth).
  struct Tls {
    std::string ca, cert, key;
  };

  /// Starts `members` etcd members and waits until they serve.
  explicit EtcdCluster(int members = 1, Tls tls = {}) : tls_(std::move(tls)) {
    char tmpl[] = "/tmp/claimsched-etcd-XXXXXX";
    dir_ = mkdtemp(tmpl);
    for (int i = 0; i < members; ++i) members_.push_back({"e" + std::to_string(i + 1), free_port(), free_port(), nullptr});
    std::string initial;
    for (const auto& m : members_)
      initial += (initial.empty() ? "" : ",") + m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
    initial_cluster_ = initial;
    for (size_t i = 0; i < members_.size(); ++i) start(i);
    wait_until_serving();
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;
  ~EtcdCluster() {
    for (auto& m : members_) m.process.reset();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  /// "http://127.0.0.1:PORT" of each member.
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(endpoint(m));
    return out;
  }
  /// The same, comma-separated (for a config file or a flag).
  std::string endpoint_list() const {
    std::string out;
    for (const auto& e : endpoints()) out += (out.empty() ? "" : ",") + e;
    return out;
  }

  /// Stops member i with `signal` (SIGKILL: kill and reap it).
  void signal(size_t i, int signal) {
    members_[i].process->kill(signal);
    if (signal == SIGKILL) members_[i].process->wait();
  }
  /// Starts member i again with its data.
  void restart(size_t i) { start(i); }

 private:
  struct Member {
    std::string name;
    uint16_t client_port;
    uint16_t peer_port;
    std::unique_ptr<BackgroundProcess> process;
  };

  std::string endpoint(const Member& m) const {
    return (tls_.ca.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(m.client_port);
  }
  /// etcd's and etcdctl's flags for HTTPS to clients (none without).
  std::vector<std::string> tls_flags(bool etcdctl) const {
    if (tls_.ca.empty()) return {};
    if (etcdctl) return {"--cacert=" + tls_.ca, "--cert=" + tls_.cert, "--key=" + tls_.key};
    return {"--cert-file", tls_.cert, "--key-file", tls_.key, "--trusted-ca-file", tls_.ca, "--client-cert-auth"};
  }

  void start(size_t i) {
    auto& m = members_[i];
    std::string client = endpoint(m);
    std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
    std::vector<std::string> argv{"/usr/bin/etcd", "--name", m.name, "--data-dir", dir_ + "/" + m.name,
                                  "--listen-client-urls", client, "--advertise-client-urls", client,
                                  "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                  "--initial-cluster", initial_cluster_, "--initial-cluster-state", "new",
                                  "--heartbeat-interval", "25", "--election-timeout", "250",
                                  "--log-level", "warn"};
    for (auto& f : tls_flags(false)) argv.push_back(f);
    m.process = std::make_unique<BackgroundProcess>(argv, dir_ + "/" + m.name + ".log");
    ASSERT_TRUE(m.process->started()) << "cannot start /usr/bin/etcd (scripts/bootstrap.sh installs etcd-server)";
  }

  void wait_until_serving() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      bool all = true;
      for (const auto& m : members_) {
        std::string flags;
        for (const auto& f : tls_flags(true)) flags += " " + f;
        auto r = run_command("ETCDCTL_API=3 /usr/bin/etcdctl --endpoints=" + endpoint(m) + flags +
                             " --command-timeout=1s endpoint health 2>&1");
        all = all && r.exit_code == 0;
      }
      if (all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "etcd did not start serving within 20 s (logs in " << dir_ << ")";
  }

  Tls tls_;
  std::string dir_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

}  // namespace claimsched::testing
