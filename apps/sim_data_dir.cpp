#include "apps/sim_data_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/duration.hpp"
#include "storage/atomic_file.hpp"

namespace claimsched::apps {

namespace {

namespace fs = std::filesystem;

core::Error io(const std::string& what) {
  return core::make_error(core::Errc::io_error, what + ": " + std::strerror(errno));
}

std::string options_path(const std::string& dir) { return dir + "/sim.json"; }
std::string acked_path(const std::string& dir) { return dir + "/acked.log"; }

nlohmann::json to_json(const SimOptions& o, const std::string& cluster_id) {
  return {{"format", 1},
          {"cluster_id", cluster_id},
          {"nodes", o.nodes},
          {"partitions", o.partitions},
          {"tasks", o.tasks},
          {"tasks_per_job", o.tasks_per_job},
          {"utilization", o.utilization},
          {"seed", o.seed},
          {"churn", o.churn},
          {"waves", o.waves},
          {"task_runtime", core::format_duration(o.task_runtime)},
          {"overlap", o.overlap},
          {"same_start", o.same_start},
          {"cas", o.cas},
          {"scorer", o.scorer},
          {"heterogeneous", o.heterogeneous},
          {"max_starting", o.max_starting},
          {"gang_fraction", o.gang_fraction},
          {"policy", o.policy},
          {"policy_interval", core::format_duration(o.policy_interval)},
          {"sync", o.sync}};
}

core::Status from_json(const nlohmann::json& j, SimOptions& o, std::string& cluster_id) {
  try {
    if (j.at("format").get<int>() != 1)
      return core::make_error(core::Errc::corrupt, "unknown format " + j.at("format").dump());
    cluster_id = j.at("cluster_id").get<std::string>();
    o.nodes = j.at("nodes").get<uint32_t>();
    o.partitions = j.at("partitions").get<uint32_t>();
    o.tasks = j.at("tasks").get<uint64_t>();
    o.tasks_per_job = j.at("tasks_per_job").get<uint32_t>();
    o.utilization = j.at("utilization").get<double>();
    o.seed = j.at("seed").get<uint64_t>();
    o.churn = j.at("churn").get<bool>();
    o.waves = j.at("waves").get<uint32_t>();
    auto runtime = core::parse_duration(j.at("task_runtime").get<std::string>());
    if (!runtime) return runtime.error();
    o.task_runtime = *runtime;
    o.overlap = j.at("overlap").get<bool>();
    o.same_start = j.at("same_start").get<bool>();
    o.cas = j.at("cas").get<std::string>();
    o.scorer = j.at("scorer").get<std::string>();
    o.heterogeneous = j.at("heterogeneous").get<bool>();
    o.max_starting = j.at("max_starting").get<uint32_t>();
    o.gang_fraction = j.at("gang_fraction").get<double>();
    // Runs made before --policy existed ran without it.
    o.policy = j.value("policy", false);
    if (j.contains("policy_interval")) {
      auto interval = core::parse_duration(j.at("policy_interval").get<std::string>());
      if (!interval) return interval.error();
      o.policy_interval = *interval;
    }
  } catch (const nlohmann::json::exception& e) {
    return core::make_error(core::Errc::corrupt, e.what());
  }
  return core::Status::ok();
}

core::Expected<int> open_acked(const std::string& dir) {
  int fd = ::open(acked_path(dir).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return io("cannot open " + acked_path(dir));
  return fd;
}

}  // namespace

SimDataDir::SimDataDir(SimDataDir&& o) noexcept
    : dir_(std::move(o.dir_)), cluster_id_(std::move(o.cluster_id_)), acked_fd_(o.acked_fd_) {
  o.acked_fd_ = -1;
}

SimDataDir& SimDataDir::operator=(SimDataDir&& o) noexcept {
  if (this != &o) {
    if (acked_fd_ >= 0) ::close(acked_fd_);
    dir_ = std::move(o.dir_);
    cluster_id_ = std::move(o.cluster_id_);
    acked_fd_ = o.acked_fd_;
    o.acked_fd_ = -1;
  }
  return *this;
}

SimDataDir::~SimDataDir() {
  if (acked_fd_ >= 0) ::close(acked_fd_);
}

core::Expected<SimDataDir> SimDataDir::create(const SimOptions& options) {
  SimDataDir d;
  d.dir_ = options.data_dir;
  std::error_code ec;
  fs::create_directories(d.dir_, ec);
  if (ec)
    return core::make_error(core::Errc::io_error,
                            "cannot create data directory " + d.dir_ + ": " + ec.message());
  if (fs::exists(options_path(d.dir_)))
    return core::make_error(core::Errc::wrong_state,
                            d.dir_ + " holds an earlier run: continue it with --resume, or use an "
                                     "empty directory");
  d.cluster_id_ = "sim-" + std::to_string(options.seed) + "-" +
                  std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  // Before any store exists, and atomically: a crash leaves no descriptor
  // (and then no store either) or the whole one, so --resume always knows
  // what it resumes.
  if (auto st = storage::write_file_atomically(options_path(d.dir_),
                                               to_json(options, d.cluster_id_).dump(2) + "\n");
      !st)
    return st.error();
  auto fd = open_acked(d.dir_);
  if (!fd) return fd.error();
  d.acked_fd_ = *fd;
  return d;
}

core::Expected<SimDataDir> SimDataDir::resume(SimOptions& options) {
  SimDataDir d;
  d.dir_ = options.data_dir;
  std::ifstream in(options_path(d.dir_));
  if (!in)
    return core::make_error(core::Errc::wrong_state,
                            d.dir_ + " holds no run to resume (no sim.json)");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded())
    return core::make_error(core::Errc::corrupt, options_path(d.dir_) + " is not valid JSON");
  if (auto st = from_json(j, options, d.cluster_id_); !st)
    return core::make_error(st.error().code,
                            options_path(d.dir_) + ": " + st.error().message);
  auto fd = open_acked(d.dir_);
  if (!fd) return fd.error();
  d.acked_fd_ = *fd;
  return d;
}

std::string SimDataDir::partition_dir(uint32_t partition) const {
  return dir_ + "/partition-" + std::to_string(partition);
}

std::string SimDataDir::node_dir() const { return dir_ + "/nodes"; }

std::string SimDataDir::replica_dir(uint32_t partition) const {
  return dir_ + "/replica-" + std::to_string(partition);
}

void SimDataDir::append_acknowledged(core::JobId id) {
  uint64_t v = id.value;
  // A short or failed write loses at most this one entry of the log; the
  // check reads whole entries only.
  [[maybe_unused]] auto n = ::write(acked_fd_, &v, sizeof v);
}

core::Expected<std::vector<core::JobId>> SimDataDir::read_acknowledged() const {
  std::ifstream in(acked_path(dir_), std::ios::binary);
  if (!in) return io("cannot read " + acked_path(dir_));
  std::vector<core::JobId> ids;
  uint64_t v;
  while (in.read(reinterpret_cast<char*>(&v), sizeof v)) ids.push_back(core::JobId{v});
  return ids;
}

}  // namespace claimsched::apps
