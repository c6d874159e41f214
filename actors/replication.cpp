#include "actors/replication.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace fs = std::filesystem;

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

/// When the change with sequence `seq` was committed (0 if too old to know).
int64_t commit_time(const change_feed_state& st, uint64_t seq) {
  auto it = std::lower_bound(st.commits.begin(), st.commits.end(), seq,
                             [](const auto& c, uint64_t s) { return c.first < s; });
  return it == st.commits.end() ? 0 : it->second;
}

/// A checkpoint for `follower` next to `dir`; tells it to switch over.
void bootstrap(feed_ptr self, change_feed_state::Follower& f, const std::string& dir) {
  std::string next = dir + ".next";
  std::error_code ec;
  fs::remove_all(next, ec);
  auto seq = self->state.primary->database().checkpoint(next);
  if (!seq) {
    spdlog::error("{}: cannot make a checkpoint for a replica at {}: {}", self->state.log_name, next,
                  seq.error().to_string());
    f.log.reset();
    return;
  }
  f.log.emplace(self->state.primary->database(), *seq + 1);
  f.in_flight = 1;  // the bootstrap itself; acked like a batch
  self->send(f.replica, bootstrap_atom::value, *seq);
}

void pump(feed_ptr self, change_feed_state::Follower& f) {
  auto& st = self->state;
  while (f.log && f.in_flight < st.window) {
    auto r = f.log->read(512);
    if (!r) {
      spdlog::error("{}: reading the change log failed: {}", st.log_name, r.error().to_string());
      return;
    }
    if (r->need_bootstrap) {
      spdlog::warn("{}: a replica is too far behind ({}); it bootstraps from a checkpoint",
                   st.log_name, r->why);
      f.log.reset();
      return;  // it asks again (subscribe from 0) when it sees nothing coming
    }
    if (r->batches.empty()) return;
    int64_t when = commit_time(st, r->batches.back().last_sequence());
    ++f.in_flight;
    self->send(f.replica, changes_atom::value, std::move(r->batches), r->primary_latest, when);
  }
}

}  // namespace

change_feed_actor::behavior_type change_feed(feed_ptr self,
                                             std::shared_ptr<storage::PartitionStore> primary) {
  self->state.primary = std::move(primary);
  self->state.log_name = "change-feed " + self->state.primary->path();
  return {
      [=](subscribe_atom, replica_actor replica, uint64_t from, std::string& dir) {
        auto& st = self->state;
        auto it = std::find_if(st.followers.begin(), st.followers.end(),
                               [&](const auto& f) { return f.replica == replica; });
        if (it == st.followers.end()) {
          st.followers.push_back({replica, std::nullopt, 0});
          it = st.followers.end() - 1;
        }
        it->in_flight = 0;
        if (from == 0) {
          bootstrap(self, *it, dir);
          return;
        }
        it->log.emplace(st.primary->database(), from);
        // Ask the log once: if what the replica needs is gone, bootstrap now.
        auto probe = it->log->read(1);
        if (probe && probe->need_bootstrap) {
          bootstrap(self, *it, dir);
          return;
        }
        it->log->seek(from);
        pump(self, *it);
      },
      [=](ack_atom, uint64_t) {
        auto& st = self->state;
        auto sender = self->current_sender();
        for (auto& f : st.followers) {
          if (caf::actor_cast<caf::strong_actor_ptr>(f.replica) != sender) continue;
          if (f.in_flight > 0) --f.in_flight;
          pump(self, f);
        }
      },
      [=](committed_atom, uint64_t seq, int64_t wall) {
        auto& st = self->state;
        st.commits.emplace_back(seq, wall);
        while (st.commits.size() > 100'000) st.commits.pop_front();
        for (auto& f : st.followers) pump(self, f);
      },
  };
}

// -- the replica -------------------------------------------------------------------

namespace {

using replica_ptr = replica_actor::stateful_pointer<replica_state>;

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
  return true;
}

}  // namespace

replica_actor::behavior_type replica(replica_ptr self, ReplicaConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.log_name = "replica " + st.config.dir;
  uint64_t from = 0;
  if (fs::exists(st.config.dir + "/CURRENT") && open_store(self)) from = st.status.applied + 1;
  self->send(st.config.feed, subscribe_atom::value, caf::actor_cast<replica_actor>(self), from,
             st.config.dir);
  return {
      [=](changes_atom, std::vector<messages::ChangeBatch>& batches, uint64_t primary_latest,
          int64_t committed_at) {
        auto& st = self->state;
        self->send(st.config.feed, ack_atom::value, st.status.applied);
        if (!st.applier) return;
        uint64_t behind = storage::sequence_lag(primary_latest, st.status.applied);
        if (auto s = st.applier->apply(batches); !s) {
          st.status.error = s.error().to_string();
          spdlog::error("{}: applying changes failed: {}", st.log_name, st.status.error);
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
      },
      [=](bootstrap_atom, uint64_t seq) {
        auto& st = self->state;
        st.applier.reset();
        st.store.reset();
        std::error_code ec;
        fs::remove_all(st.config.dir, ec);
        fs::rename(st.config.dir + ".next", st.config.dir, ec);
        if (ec) {
          st.status.error = "cannot move the checkpoint into place: " + ec.message();
          spdlog::error("{}: {}", st.log_name, st.status.error);
          return;
        }
        ++st.status.bootstraps;
        if (open_store(self))
          spdlog::info("{}: bootstrapped from a checkpoint at sequence {}", st.log_name, seq);
        self->send(st.config.feed, ack_atom::value, st.status.applied);
      },
      [=](status_atom) -> ReplicaStatus { return self->state.status; },
  };
}

}  // namespace claimsched::actors
