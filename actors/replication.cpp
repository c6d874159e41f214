#include "actors/replication.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace fs = std::filesystem;

// -- ack modes ------------------------------------------------------------------------

std::string_view to_string(AckMode m) {
  switch (m) {
    case AckMode::owner: return "owner";
    case AckMode::one: return "one";
    case AckMode::all: return "all";
  }
  return "?";
}

core::Expected<AckMode> parse_ack_mode(std::string_view text) {
  for (auto m : {AckMode::owner, AckMode::one, AckMode::all})
    if (text == to_string(m)) return m;
  return core::make_error(core::Errc::invalid_argument,
                          "ack must be \"owner\", \"one\" or \"all\", not \"" + std::string(text) + "\"");
}

std::optional<uint64_t> replicated_position(AckMode mode, const std::vector<uint64_t>& acked) {
  if (mode == AckMode::owner || acked.empty()) return std::nullopt;
  return mode == AckMode::one ? *std::max_element(acked.begin(), acked.end())
                              : *std::min_element(acked.begin(), acked.end());
}

// -- CommitRelay ------------------------------------------------------------------

std::shared_ptr<CommitRelay> CommitRelay::attach(storage::StoreOptions& options) {
  auto relay = std::make_shared<CommitRelay>();
  options.on_commit = [relay](const storage::CommitInfo& info) { relay->committed(info); };
  return relay;
}

void CommitRelay::forward_to(change_feed_actor feed) {
  std::lock_guard<std::mutex> guard(mutex_);
  feed_ = std::move(feed);
}

void CommitRelay::committed(const storage::CommitInfo& info) {
  if (info.last_sequence == 0) return;
  std::lock_guard<std::mutex> guard(mutex_);
  if (feed_)
    caf::anon_send(feed_, committed_atom::value, info.last_sequence,
                   static_cast<int64_t>(wall_now().count()));
}

// -- the feed (primary side) -------------------------------------------------------

namespace {

using feed_ptr = change_feed_actor::stateful_pointer<change_feed_state>;
using Follower = change_feed_state::Follower;

/// When the change with sequence `seq` was committed (0 if too old to know).
int64_t commit_time(const change_feed_state& st, uint64_t seq) {
  auto it = std::lower_bound(st.commits.begin(), st.commits.end(), seq,
                             [](const auto& c, uint64_t s) { return c.first < s; });
  return it == st.commits.end() ? 0 : it->second;
}

void abandon_shipping(Follower& f) {
  if (!f.shipping) return;
  std::error_code ec;
  fs::remove_all(f.shipping->dir, ec);
  f.shipping.reset();
}

/// Tells the scheduler how far the standbys hold the log, when that grew.
void report_replicated(feed_ptr self) {
  auto& st = self->state;
  if (!st.config.scheduler) return;
  std::vector<uint64_t> acked;
  for (const auto& f : st.followers) acked.push_back(f.acked);
  auto pos = replicated_position(st.config.ack, acked);
  if (!pos || *pos <= st.replicated) return;
  st.replicated = *pos;
  if (st.config.replicated_out) st.config.replicated_out->store(*pos);
  self->send(st.config.scheduler, replicated_atom::value, *pos);
}

/// Starts rebuilding `f` from a fresh checkpoint of the primary.
void bootstrap(feed_ptr self, Follower& f) {
  auto& st = self->state;
  abandon_shipping(f);
  f.log.reset();
  f.acked = 0;
  std::string dir = st.config.checkpoint_dir + "/checkpoint-" + std::to_string(++st.checkpoints);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(st.config.checkpoint_dir, ec);
  auto seq = st.config.primary->database().checkpoint(dir);
  if (!seq) {
    spdlog::error("{}: cannot make a checkpoint for replica {} at {}: {}", st.log_name, f.name, dir,
                  seq.error().to_string());
    return;
  }
  change_feed_state::Shipping sh;
  sh.dir = dir;
  sh.sequence = *seq;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) sh.files.push_back(entry.path().filename().string());
  std::sort(sh.files.begin(), sh.files.end());
  spdlog::info("{}: replica {} bootstraps from a checkpoint at sequence {} ({} files)", st.log_name, f.name,
               *seq, sh.files.size());
  f.shipping = std::move(sh);
  f.in_flight = 1;
  self->send(f.replica, bootstrap_atom::value, *seq);
}

/// Sends the next chunk of a checkpoint (or its install); false when stuck.
bool ship_next(feed_ptr self, Follower& f) {
  auto& st = self->state;
  auto& sh = *f.shipping;
  if (sh.file >= sh.files.size()) {
    ++f.in_flight;
    self->send(f.replica, install_atom::value, sh.sequence);
    f.log.emplace(st.config.primary->database(), sh.sequence + 1);
    abandon_shipping(f);
    return true;
  }
  const auto& name = sh.files[sh.file];
  std::string path = sh.dir + "/" + name;
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    spdlog::error("{}: cannot read checkpoint file {} for replica {}", st.log_name, path, f.name);
    abandon_shipping(f);
    return false;
  }
  std::string data(std::min<uint64_t>(st.config.chunk_bytes, size - std::min(size, sh.offset)), '\0');
  in.seekg(static_cast<std::streamoff>(sh.offset));
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (!in) {
    spdlog::error("{}: reading checkpoint file {} failed", st.log_name, path);
    abandon_shipping(f);
    return false;
  }
  sh.offset += data.size();
  if (sh.offset >= size) {
    ++sh.file;
    sh.offset = 0;
  }
  ++f.in_flight;
  self->send(f.replica, chunk_atom::value, name, std::move(data));
  return true;
}

void pump(feed_ptr self, Follower& f) {
  auto& st = self->state;
  while (f.in_flight < st.config.window) {
    if (f.shipping) {
      if (!ship_next(self, f)) return;
      continue;
    }
    if (!f.log) return;
    auto r = f.log->read(512);
    if (!r) {
      spdlog::error("{}: reading the change log failed: {}", st.log_name, r.error().to_string());
      return;
    }
    if (r->need_bootstrap) {
      spdlog::warn("{}: replica {} is too far behind ({})", st.log_name, f.name, r->why);
      bootstrap(self, f);
      continue;
    }
    if (r->batches.empty()) return;
    int64_t when = commit_time(st, r->batches.back().last_sequence());
    ++f.in_flight;
    self->send(f.replica, changes_atom::value, std::move(r->batches), r->primary_latest, when);
  }
}

Follower* sender_follower(feed_ptr self) {
  auto sender = self->current_sender();
  for (auto& f : self->state.followers)
    if (caf::actor_cast<caf::strong_actor_ptr>(f.replica) == sender) return &f;
  return nullptr;
}

}  // namespace

change_feed_state::~change_feed_state() {
  for (auto& f : followers) abandon_shipping(f);
}

core::Status ChangeFeedConfig::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (!primary) return bad("change feed: no primary store");
  if (checkpoint_dir.empty()) return bad("change feed: checkpoint_dir must be set");
  if (window == 0) return bad("change feed: window must be at least 1");
  if (chunk_bytes == 0) return bad("change feed: chunk_bytes must be positive");
  return core::Status::ok();
}

core::Expected<change_feed_actor> spawn_change_feed(caf::actor_system& sys, ChangeFeedConfig config) {
  if (auto st = config.validate(); !st) return st.error();
  return sys.spawn<caf::detached>(change_feed, std::move(config));
}

change_feed_actor::behavior_type change_feed(feed_ptr self, ChangeFeedConfig config) {
  self->state.config = std::move(config);
  self->state.log_name = "change-feed " + self->state.config.primary->path();
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& fs = self->state.followers;
    for (auto it = fs.begin(); it != fs.end();) {
      if (it->replica.address() != msg.source) {
        ++it;
        continue;
      }
      spdlog::info("{}: replica {} is gone", self->state.log_name, it->name);
      abandon_shipping(*it);
      it = fs.erase(it);
    }
  });
  return {
      [=](subscribe_atom, replica_actor replica, uint64_t from, uint64_t epoch, std::string& name) {
        auto& st = self->state;
        if (!replica) return;
        auto it = std::find_if(st.followers.begin(), st.followers.end(),
                               [&](const auto& f) { return f.replica == replica; });
        if (it == st.followers.end()) {
          self->monitor(replica);
          st.followers.push_back(Follower{replica, std::nullopt, std::nullopt, name, 0, 0});
          it = st.followers.end() - 1;
        }
        abandon_shipping(*it);
        it->in_flight = 0;
        it->log.reset();
        it->name = name;
        if (from == 0 || !core::consistent_with_history(st.config.history, epoch, from - 1)) {
          if (from != 0)
            spdlog::warn("{}: replica {} holds changes up to {} of epoch {} that a later owner never had; "
                         "it is rebuilt from a checkpoint",
                         st.log_name, name, from - 1, epoch);
          bootstrap(self, *it);
          pump(self, *it);
          return;
        }
        it->acked = from - 1;
        it->log.emplace(st.config.primary->database(), from);
        pump(self, *it);
        report_replicated(self);
      },
      [=](ack_atom, uint64_t applied) {
        auto* f = sender_follower(self);
        if (!f) return;
        if (f->in_flight > 0) --f->in_flight;
        f->acked = applied;
        pump(self, *f);
        report_replicated(self);
      },
      [=](committed_atom, uint64_t seq, int64_t wall) {
        auto& st = self->state;
        st.commits.emplace_back(seq, wall);
        while (st.commits.size() > 100'000) st.commits.pop_front();
        for (auto& f : st.followers) pump(self, f);
      },
      [=](status_atom) -> std::string {
        auto& st = self->state;
        uint64_t latest = st.config.primary->latest_sequence();
        auto list = nlohmann::json::array();
        int64_t wall = wall_now().count();
        for (const auto& f : st.followers) {
          // How long ago the oldest change it lacks was committed.
          int64_t since = f.acked < latest ? commit_time(st, f.acked + 1) : 0;
          list.push_back({{"name", f.name},
                          {"acked", f.acked},
                          {"lag_records", storage::sequence_lag(latest, f.acked)},
                          {"lag_ms", since > 0 ? std::max<int64_t>(0, wall - since) / 1'000'000 : 0},
                          {"bootstrapping", f.shipping.has_value()}});
        }
        return nlohmann::json{{"latest", latest}, {"replicated", st.replicated}, {"followers", list}}.dump();
      },
  };
}

// -- the replica -------------------------------------------------------------------

namespace {

using replica_ptr = replica_actor::stateful_pointer<replica_state>;

void refresh_epoch(replica_state& st) {
  if (!st.store) return;
  if (auto meta = st.store->read_meta()) st.status.epoch = meta->epoch;
}

bool open_store(replica_ptr self) {
  auto& st = self->state;
  st.applier.reset();
  st.store.reset();
  auto store = storage::PartitionStore::open(st.config.dir, st.config.identity, st.config.options);
  if (!store) {
    st.status.error = store.error().to_string();
    spdlog::error("{}: {}", st.log_name, st.status.error);
    return false;
  }
  st.store = std::move(*store);
  st.applier.emplace(st.store->database());
  st.status.applied = st.applier->applied_sequence();
  refresh_epoch(st);
  return true;
}

void ack(replica_ptr self) { self->send(self->state.config.feed, ack_atom::value, self->state.status.applied); }

void fail(replica_ptr self, std::string why) {
  auto& st = self->state;
  st.status.error = std::move(why);
  spdlog::error("{}: {}", st.log_name, st.status.error);
}

/// A checkpoint file name from the network: a plain name in one directory.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

/// fsyncs every file of `dir` and the directory itself.
bool sync_directory(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) return false;
    bool ok = ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return false;
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok && !ec;
}

}  // namespace

core::Status ReplicaConfig::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (dir.empty()) return bad("replica: dir must be set");
  if (!feed) return bad("replica: no change feed to follow");
  return options.validate();
}

core::Expected<replica_actor> spawn_replica(caf::actor_system& sys, ReplicaConfig config) {
  if (auto st = config.validate(); !st) return st.error();
  return sys.spawn<caf::detached>(replica, std::move(config));
}

replica_actor::behavior_type replica(replica_ptr self, ReplicaConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.log_name = "replica " + st.config.dir;
  if (fs::exists(st.config.dir + "/CURRENT")) open_store(self);
  uint64_t from = st.applier ? st.status.applied + 1 : 0;
  self->monitor(st.config.feed);
  // Without its feed a replica has nothing to do: it ends, and whoever
  // started it follows the partition's next owner with a new one.
  self->set_down_handler([=](const caf::down_msg& msg) {
    if (msg.source != self->state.config.feed.address()) return;
    spdlog::info("{}: lost the primary's change feed; stopping", self->state.log_name);
    self->quit(msg.reason);
  });
  self->send(st.config.feed, subscribe_atom::value, caf::actor_cast<replica_actor>(self), from,
             st.status.epoch, st.config.name);
  return {
      [=](changes_atom, std::vector<messages::ChangeBatch>& batches, uint64_t primary_latest,
          int64_t committed_at) {
        auto& st = self->state;
        if (!st.applier || st.receiving || !st.status.error.empty()) {
          ack(self);
          return;
        }
        uint64_t behind = storage::sequence_lag(primary_latest, st.status.applied);
        if (auto s = st.applier->apply(batches); !s) {
          fail(self, "applying changes failed: " + s.error().to_string());
          return;
        }
        st.status.applied = st.applier->applied_sequence();
        st.status.primary_latest = std::max(st.status.primary_latest, primary_latest);
        st.status.batches_applied += batches.size();
        st.status.max_sequence_lag = std::max(st.status.max_sequence_lag, behind);
        if (committed_at > 0) {
          auto lag = wall_now().count() - committed_at;
          st.status.lag_ms.record(static_cast<uint64_t>(std::max<int64_t>(lag, 0)) / 1'000'000);
        }
        ack(self);
      },
      [=](bootstrap_atom, uint64_t seq) {
        auto& st = self->state;
        st.applier.reset();
        st.store.reset();
        std::error_code ec;
        std::string next = st.config.dir + ".next";
        fs::remove_all(next, ec);
        fs::create_directories(next, ec);
        if (ec) {
          fail(self, "cannot prepare " + next + ": " + ec.message());
          return;
        }
        st.receiving = seq;
        st.status.applied = 0;
        st.status.bootstrapping = true;
        ack(self);
      },
      [=](chunk_atom, std::string& file, std::string& bytes) {
        auto& st = self->state;
        if (!st.receiving || !st.status.error.empty()) return;
        if (!plain_file_name(file)) {
          fail(self, "a checkpoint file with a bad name arrived: '" + file + "'");
          return;
        }
        std::ofstream out(st.config.dir + ".next/" + file, std::ios::binary | std::ios::app);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) {
          fail(self, "cannot write " + st.config.dir + ".next/" + file);
          return;
        }
        ack(self);
      },
      [=](install_atom, uint64_t seq) {
        auto& st = self->state;
        if (!st.receiving || *st.receiving != seq || !st.status.error.empty()) return;
        std::string next = st.config.dir + ".next";
        if (!sync_directory(next)) {
          fail(self, "cannot make the checkpoint in " + next + " durable");
          return;
        }
        std::error_code ec;
        fs::remove_all(st.config.dir, ec);
        fs::rename(next, st.config.dir, ec);
        if (ec) {
          fail(self, "cannot move the checkpoint into place: " + ec.message());
          return;
        }
        st.receiving.reset();
        st.status.bootstrapping = false;
        ++st.status.bootstraps;
        if (!open_store(self)) return;
        spdlog::info("{}: bootstrapped from a checkpoint at sequence {}", st.log_name, seq);
        ack(self);
      },
      [=](status_atom) -> ReplicaStatus {
        refresh_epoch(self->state);
        return self->state.status;
      },
  };
}

core::Expected<StoreVersion> read_store_version(const std::string& dir, const storage::PartitionIdentity& identity,
                                                storage::StoreOptions options) {
  if (!fs::exists(dir + "/CURRENT")) return StoreVersion{};
  options.read_only = true;
  options.create_if_missing = false;
  options.on_commit = nullptr;
  auto store = storage::PartitionStore::open(dir, identity, options);
  if (!store) return store.error();
  auto meta = (*store)->read_meta();
  if (!meta) return meta.error();
  return StoreVersion{(*store)->latest_sequence(), meta->epoch};
}

}  // namespace claimsched::actors
