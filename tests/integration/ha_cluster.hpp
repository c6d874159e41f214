#pragma once

// An HA claimsched cluster of real processes on 127.0.0.1 for integration
// tests: etcd member(s), `claimsched server` members with [ha], and agents
// registered with every member; each process started and stopped by PID.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "tests/integration/cluster.hpp"
#include "tests/integration/etcd_cluster.hpp"

namespace claimsched::testing {

class HaCluster : public ClusterClient<HaCluster> {
 public:
  /// `partitions` partitions, partition i owning pool "p<i>".
  explicit HaCluster(int partitions = 1, int etcd_members = 1, std::string ack = "one")
      : etcd_(etcd_members), partitions_(partitions) {
    char tmpl[] = "/tmp/claimsched-ha-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_ = dir_ + "/cluster.toml";
    std::ofstream c(config_);
    c << "cluster_id = \"hatest\"\n[listen]\nhost = \"127.0.0.1\"\nport = 0\n"
      << "[storage]\ndata_dir = \"" << dir_ << "/unused\"\n"
      << "[timeouts]\nheartbeat_interval = \"200ms\"\nnode_grace = \"3s\"\nrecovery_grace = \"10s\"\n"
      << "link_heartbeat = \"100ms\"\nlink_timeout = \"1s\"\n";
    for (int p = 1; p <= partitions; ++p) c << "[[pools]]\nname = \"p" << p << "\"\n";
    for (int p = 1; p <= partitions; ++p) c << "[[partitions]]\nid = " << p << "\npools = [\"p" << p << "\"]\n";
    c << "[ha]\netcd = [";
    auto endpoints = etcd_.endpoints();
    for (size_t i = 0; i < endpoints.size(); ++i) c << (i ? ", " : "") << "\"" << endpoints[i] << "\"";
    c << "]\nlease_ttl = \"1s\"\nack = \"" << ack << "\"\n";
  }
  HaCluster(const HaCluster&) = delete;
  HaCluster& operator=(const HaCluster&) = delete;
  ~HaCluster() {
    agents_.clear();
    members_.clear();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  const std::string& dir() const { return dir_; }
  const std::string& config() const { return config_; }
  EtcdCluster& etcd() { return etcd_; }
  std::string log(const std::string& name) const { return dir_ + "/" + name + ".log"; }
  std::string data_dir(const std::string& member) const { return dir_ + "/data-" + member; }

  /// Starts (or restarts) member `name`; its address is remembered on the
  /// first start and kept (agents and clients know it).
  void start_member(const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{CLAIMSCHED_BINARY, "--log-level", "info", "server", "--config", config_,
                                  "--name", name, "--data-dir", data_dir(name)};
    auto port = ports_.find(name);
    argv.push_back("--port");
    argv.push_back(port == ports_.end() ? "0" : std::to_string(port->second));
    for (const auto& e : extra) argv.push_back(e);
    auto size = read_file(log(name)).size();
    members_[name] = std::make_unique<BackgroundProcess>(argv, log(name));
    ASSERT_TRUE(members_[name]->started());
    const std::string listening = "claimsched server listening on ";
    for (int i = 0; i < 200; ++i) {
      std::string text = read_file(log(name)).substr(size);
      if (auto at = text.find(listening); at != std::string::npos) {
        auto from = at + listening.size();
        std::string address = text.substr(from, text.find(' ', from) - from);
        ports_[name] = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
        return;
      }
      ASSERT_TRUE(members_[name]->running()) << name << " exited:\n" << text;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << name << " did not report its address; log:\n" << read_file(log(name));
  }
  BackgroundProcess& member(const std::string& name) { return *members_.at(name); }
  void signal_member(const std::string& name, int signal) {
    members_.at(name)->kill(signal);
    if (signal == SIGKILL) members_.at(name)->wait();
  }

  /// Every member's address, comma-separated (what agents and clients get).
  std::string addresses() const {
    std::string out;
    for (const auto& [name, port] : ports_) out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
    return out;
  }

  void start_agent(const std::string& name, const std::string& pool, const std::string& resources = "cpu=4,memory=4Gi") {
    agents_.erase(name);
    agents_[name] = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{CLAIMSCHED_BINARY, "--log-level", "debug", "agent", "--server", addresses(), "--name",
                                 name, "--pool", pool, "--resources", resources, "--state-dir", dir_ + "/" + name},
        log(name));
    ASSERT_TRUE(agents_[name]->started());
  }

  ProcessResult client(const std::string& args) const {
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + args + " --server " + addresses() + " 2>&1");
  }
  /// The client talking to member `name` only.
  ProcessResult client_via(const std::string& name, const std::string& args) const {
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + args + " --server 127.0.0.1:" +
                       std::to_string(ports_.at(name)) + " 2>&1");
  }
  ProcessResult client_before_command(const std::string& args, const std::string& command) const {
    return run_command(std::string(CLAIMSCHED_BINARY) + " " + args + " --server " + addresses() + " -- " + command +
                       " 2>&1");
  }
  /// The members view (`claimsched status --json`).
  std::optional<nlohmann::json> members() const {
    auto r = client("status --json");
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_object()) return std::nullopt;
    return j;
  }
  /// Partition p's owner as the members view has it ("" if none or unknown).
  std::string owner(int p) const {
    auto m = members();
    if (!m) return "";
    for (const auto& part : (*m)["partitions"])
      if (part.value("partition", 0) == p) return part.value("owner", "");
    return "";
  }
  uint64_t epoch(int p) const {
    auto m = members();
    if (!m) return 0;
    for (const auto& part : (*m)["partitions"])
      if (part.value("partition", 0) == p) return part.value("epoch", uint64_t{0});
    return 0;
  }
  /// Waits until every partition has an owner among `among` (any if empty).
  bool wait_for_owners(std::chrono::seconds timeout = std::chrono::seconds(20),
                       const std::set<std::string>& among = {}) const {
    return wait_until(
        [&] {
          for (int p = 1; p <= partitions_; ++p) {
            auto o = owner(p);
            if (o.empty() || (!among.empty() && !among.contains(o))) return false;
          }
          return true;
        },
        timeout);
  }
  /// Waits until partition p has an owner other than `old`; returns it ("" if none came).
  std::string wait_for_new_owner(int p, const std::string& old, std::chrono::seconds timeout) const {
    std::string now;
    wait_until(
        [&] {
          now = owner(p);
          return !now.empty() && now != old;
        },
        timeout);
    return now != old ? now : "";
  }

 private:
  EtcdCluster etcd_;
  int partitions_;
  std::string dir_;
  std::string config_;
  std::map<std::string, uint16_t> ports_;
  std::map<std::string, std::unique_ptr<BackgroundProcess>> members_;
  std::map<std::string, std::unique_ptr<BackgroundProcess>> agents_;
};

}  // namespace claimsched::testing
