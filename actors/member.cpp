#include "actors/member.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>

#include "actors/clock.hpp"
#include "actors/connect.hpp"
#include "actors/member_campaigns.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = member_actor::stateful_pointer<member_state>;
using Local = member_state::Local;
using namespace std::chrono_literals;

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// The timeout of a request about to be sent (see member_state::requests_until).
std::chrono::milliseconds request_timeout(self_ptr self, std::chrono::milliseconds timeout) {
  auto& st = self->state;
  st.requests_until = std::max(st.requests_until, now(self) + timeout);
  return timeout;
}

/// Says why etcd cannot be used, once per change (and again every 10 s).
void etcd_problem(self_ptr self, const std::string& why) {
  auto& st = self->state;
  auto t = now(self);
  if (why == st.etcd_problem && t - st.etcd_problem_said < 10s) return;
  st.etcd_problem = why;
  st.etcd_problem_said = t;
  spdlog::warn("{}: waiting for etcd: {}", st.log_name, why);
}

void etcd_answers(self_ptr self) {
  auto& st = self->state;
  if (st.etcd_problem.empty()) return;
  spdlog::info("{}: etcd answers again ({})", st.log_name, st.etcd->endpoint());
  st.etcd_problem.clear();
}

/// Says something about one partition once, until it changes.
void partition_problem(self_ptr self, core::PartitionId p, Local& loc, const std::string& why) {
  if (why == loc.last_problem) return;
  loc.last_problem = why;
  spdlog::warn("{}: partition {}: {}", self->state.log_name, p.value, why);
}

void route(self_ptr self, core::PartitionId p, scheduler_actor s, change_feed_actor f, core::Epoch epoch, bool local) {
  if (self->state.gateway)
    self->send(self->state.gateway, route_atom::value, p.value, std::move(s), std::move(f), uint64_t{epoch}, local);
}

void set_owned(self_ptr self, scheduler_actor s, bool owned) {
  auto& reg = *self->state.owned;
  std::lock_guard<std::mutex> guard(reg.mutex);
  auto& v = reg.schedulers;
  v.erase(std::remove(v.begin(), v.end(), s), v.end());
  if (owned) v.push_back(std::move(s));
}

void stop_replica(self_ptr self, Local& loc) {
  if (loc.replica) {
    caf::scoped_actor waiter{self->system()};
    waiter->send_exit(loc.replica, caf::exit_reason::user_shutdown);
    waiter->wait_for(loc.replica);
  }
  loc.replica = nullptr;
  loc.following.clear();
  loc.following_revision = 0;
}

void resign(self_ptr self, core::PartitionId p, int64_t revision) {
  auto& st = self->state;
  auto r = st.etcd->txn({etcd::Compare::created_at(st.keys->owner(p), revision)},
                        {etcd::Operation::erase(st.keys->owner(p))});
  if (!r) etcd_problem(self, r.error().to_string());
}

void step_down(self_ptr self, core::PartitionId p, Local& loc, const std::string& why) {
  if (!loc.owned) return;
  spdlog::warn("{}: steps down from partition {} ({})", self->state.log_name, p.value, why);
  // The campaigns write to this partition's store: they stop before it closes.
  if (member_campaigns::home(self, p)) member_campaigns::stop_here(self);
  set_owned(self, loc.owned->scheduler, false);
  disassemble_partition(self->system(), *loc.owned);
  loc.owned.reset();
  loc.owner_revision = 0;
  loc.handing_over = false;
  loc.scheduler = nullptr;
  loc.feed = nullptr;
  route(self, p, {}, {}, 0, false);
}

/// The gateway of the member at `address`, connected on first use.
std::optional<gateway_actor> peer(self_ptr self, const std::string& address) {
  auto& st = self->state;
  if (auto it = st.peers.find(address); it != st.peers.end()) return it->second;
  auto t = now(self);
  if (auto it = st.peer_retry.find(address); it != st.peer_retry.end() && t < it->second) return std::nullopt;
  auto hp = split_address(address);
  if (!hp) return std::nullopt;
  auto g = connect_gateway(self->system(), hp->first, hp->second, st.config.connect_timeout);
  if (!g) {
    st.peer_retry[address] = t + 200ms;
    spdlog::debug("{}: cannot reach the member at {}: {}", st.log_name, address, self->system().render(g.error()));
    return std::nullopt;
  }
  self->monitor(*g);
  st.peers[address] = *g;
  return *g;
}

/// Follows the owner `o` of partition `p` as a standby, and routes to it.
void follow(self_ptr self, core::PartitionId p, Local& loc, const etcd::OwnerRecord& o) {
  auto& st = self->state;
  if (loc.replica && loc.following == o.member && loc.following_revision == o.create_revision) return;
  if (loc.fetching) return;
  stop_replica(self, loc);
  auto m = st.state.members.find(o.member);
  if (m == st.state.members.end()) return;  // its key goes with its lease soon
  auto g = peer(self, m->second.address);
  if (!g) return;
  loc.fetching = true;
  auto member = o.member;
  auto revision = o.create_revision;
  self->request(*g, request_timeout(self, std::chrono::seconds(2)), partition_atom::value, p.value)
      .then(
          [=](scheduler_actor s, change_feed_actor f, uint64_t epoch) {
            auto& st = self->state;
            auto& loc = st.partitions.at(p);
            loc.fetching = false;
            const auto& owner = st.state.partitions[p].owner;
            if (!owner || owner->create_revision != revision || !s || !f) return;  // moved on meanwhile
            ReplicaConfig rc;
            rc.name = st.config.name;
            rc.dir = loc.setup.store_dir;
            rc.identity = loc.setup.identity;
            rc.options = st.config.replica_options;
            rc.feed = f;
            auto replica = spawn_replica(self->system(), rc);
            if (!replica) {
              partition_problem(self, p, loc, "cannot follow its owner: " + replica.error().to_string());
              return;
            }
            self->monitor(*replica);
            loc.replica = *replica;
            loc.following = member;
            loc.following_revision = revision;
            loc.scheduler = s;
            loc.feed = f;
            loc.epoch = epoch;
            loc.last_problem.clear();
            route(self, p, s, f, epoch, false);
            spdlog::info("{}: partition {}: follows its owner {} (epoch {})", st.log_name, p.value, member, epoch);
          },
          [=](caf::error& err) {
            auto& loc = self->state.partitions.at(p);
            loc.fetching = false;
            spdlog::debug("{}: partition {}: its owner {} is not ready: {}", self->state.log_name, p.value, member,
                          self->system().render(err));
          });
}

/// Takes vacant partition `p` (this member won the election).
void acquire(self_ptr self, core::PartitionId p, Local& loc, const etcd::PartitionState& ps) {
  auto& st = self->state;
  auto started = std::chrono::steady_clock::now();
  core::Epoch epoch = std::max(ps.epoch_counter, loc.bid.epoch) + 1;
  auto owner_key = st.keys->owner(p);
  auto r = st.etcd->txn(
      {etcd::Compare::absent(owner_key), etcd::Compare::modified_at(st.keys->epoch(p), ps.epoch_mod_revision)},
      {etcd::Operation::put(owner_key, etcd::HaKeys::owner_value(st.config.name, epoch), st.lease),
       etcd::Operation::put(st.keys->epoch(p), std::to_string(epoch))});
  loc.phase = Local::Phase::idle;
  if (!r) {
    etcd_problem(self, r.error().to_string());
    return;
  }
  if (!r->succeeded) return;  // someone else was quicker: follow them
  int64_t revision = r->revision;
  auto setup = loc.setup;
  setup.actor.scheduler.epoch = epoch;
  setup.recover = true;
  setup.change_feed = true;
  setup.ack = st.config.ack;
  setup.history = ps.history;
  setup.actor.member = caf::actor_cast<member_actor>(self);
  auto assembled = assemble_partition(self->system(), std::move(setup));
  if (!assembled) {
    partition_problem(self, p, loc, "won it but cannot run it (" + assembled.error().to_string() + "); resigning");
    resign(self, p, revision);
    return;
  }
  // When this epoch began: a replica of an older epoch that holds this
  // sequence diverged (core::consistent_with_history).
  auto h = st.etcd->txn({etcd::Compare::created_at(owner_key, revision)},
                        {etcd::Operation::put(st.keys->history(p, assembled->epoch),
                                              std::to_string(assembled->first_sequence))});
  if (!h || !h->succeeded) {
    partition_problem(self, p, loc, "lost it while starting (" + (h ? std::string("owner key gone") : h.error().to_string()) + ")");
    disassemble_partition(self->system(), *assembled);
    return;
  }
  loc.owned = std::move(*assembled);
  loc.owner_revision = revision;
  loc.scheduler = loc.owned->scheduler;
  loc.feed = loc.owned->feed;
  loc.epoch = loc.owned->epoch;
  loc.last_problem.clear();
  set_owned(self, loc.scheduler, true);
  if (st.lease_at_risk) self->send(loc.scheduler, hold_atom::value);
  route(self, p, loc.scheduler, loc.feed, loc.epoch, true);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  spdlog::warn("{}: owns partition {} with epoch {} (from sequence {}): {} job(s), {} task record(s) recovered in {} ms; "
               "ready {} ms after winning",
               st.log_name, p.value, loc.epoch, loc.owned->first_sequence, loc.owned->recovered_jobs,
               loc.owned->recovered_task_records,
               std::chrono::duration_cast<std::chrono::milliseconds>(loc.owned->recovery_time).count(), took.count());
}

/// Partition `p` has no owner: bid, and take it if this member's copy wins.
void campaign(self_ptr self, core::PartitionId p, Local& loc, const etcd::PartitionState& ps,
              const std::string& desired) {
  auto& st = self->state;
  auto t = now(self);
  auto ttl = std::chrono::duration_cast<core::Duration>(st.config.lease_ttl);
  if (loc.phase == Local::Phase::idle || loc.round != ps.epoch_counter) {
    // Stop following first: nothing the old owner still sends may land after
    // the bid says how far this copy goes.
    stop_replica(self, loc);
    auto v = read_store_version(loc.setup.store_dir, loc.setup.identity, st.config.replica_options);
    if (!v) {
      partition_problem(self, p, loc, "cannot read this member's copy: " + v.error().to_string());
      return;
    }
    auto r = st.etcd->put(st.keys->candidate(p, st.config.name),
                          etcd::HaKeys::candidate_value(ps.epoch_counter, v->sequence, v->epoch, loc.broken.empty()),
                          st.lease);
    if (!r) {
      etcd_problem(self, r.error().to_string());
      return;
    }
    loc.bid = *v;
    loc.phase = Local::Phase::bid;
    loc.round = ps.epoch_counter;
    loc.phase_since = t;
    spdlog::info("{}: partition {} has no owner; bids with its copy up to sequence {} (epoch {})", st.log_name,
                 p.value, v->sequence, v->epoch);
    return;
  }
  if (loc.phase == Local::Phase::waiting) {
    // The winner did not take it (it died, or cannot run it): bid again.
    if (t - loc.phase_since > 2 * ttl) loc.phase = Local::Phase::idle;
    return;
  }
  std::vector<core::OwnerCandidate> bids;
  std::set<std::string> bidders;
  for (const auto& c : ps.candidates)
    if (c.round == loc.round && st.state.members.contains(c.member)) {
      bids.push_back({c.member, c.applied, c.store_epoch, c.eligible});
      bidders.insert(c.member);
    }
  // Every live member's bid, or no decision: the member that did not bid yet
  // may hold the furthest copy (writes acknowledged through it). One that
  // hangs drops out of the live set when its lease expires.
  if (bidders.size() < st.state.members.size()) {
    if (t - loc.phase_since > 2 * ttl) {
      std::string missing;
      for (const auto& [name, m] : st.state.members)
        if (!bidders.contains(name)) missing += (missing.empty() ? "" : ", ") + name;
      partition_problem(self, p, loc, "no owner: waiting for the bids of " + missing);
    }
    return;
  }
  auto winner = core::choose_owner(bids, ps.history, desired);
  if (!winner) {
    partition_problem(self, p, loc,
                      "no live member holds a copy consistent with its history; waiting for one that does");
    return;
  }
  if (*winner != st.config.name) {
    loc.phase = Local::Phase::waiting;
    loc.phase_since = t;
    return;
  }
  acquire(self, p, loc, ps);
}

/// Whether the owned partition's store still takes writes: after a failed
/// write (a full disk, say) the scheduler stops for good, and the partition
/// must go to a member that can run it.
void check_store(self_ptr self, core::PartitionId p, Local& loc) {
  if (loc.checking_store || !loc.owned) return;
  loc.checking_store = true;
  self->request(loc.owned->scheduler, request_timeout(self, std::chrono::seconds(1)), status_atom::value)
      .then(
          [=](SchedulerStatus& status) {
            auto& st = self->state;
            auto& loc = st.partitions.at(p);
            loc.checking_store = false;
            if (status.store_error.empty() || !loc.owned) return;
            loc.broken = status.store_error;
            spdlog::critical("{}: partition {}: its store failed ({}); hands the partition to another member and "
                             "will not run it again until restarted",
                             st.log_name, p.value, loc.broken);
            resign(self, p, loc.owner_revision);
            step_down(self, p, loc, "its store failed");
          },
          [=](caf::error&) { self->state.partitions.at(p).checking_store = false; });
}

/// Hands an owned partition to `desired` once its standby has caught up:
/// hold (no new placements), wait until it holds everything, resign.
void handover(self_ptr self, core::PartitionId p, Local& loc, const std::string& desired) {
  auto& st = self->state;
  auto t = now(self);
  if (loc.handing_over && t - loc.handover_since > 3s) {
    spdlog::warn("{}: partition {}: {} did not catch up within 3 s; keeps the partition for now", st.log_name,
                 p.value, desired);
    loc.handing_over = false;
    loc.handover_since = t;  // and waits as long before the next try
    if (!st.lease_at_risk) self->send(loc.scheduler, start_atom::value);
    return;
  }
  if (desired.empty() || desired == st.config.name || !st.state.members.contains(desired) || !loc.feed) {
    if (loc.handing_over) {
      loc.handing_over = false;
      if (!st.lease_at_risk) self->send(loc.scheduler, start_atom::value);
    }
    return;
  }
  if (!loc.handing_over && t - loc.handover_since < 3s) return;
  if (loc.fetching) return;
  loc.fetching = true;  // one status question at a time
  self->request(loc.feed, request_timeout(self, std::chrono::seconds(1)), status_atom::value)
      .then(
          [=](std::string& text) {
            auto& st = self->state;
            auto& loc = st.partitions.at(p);
            loc.fetching = false;
            if (!loc.owned) return;
            auto j = nlohmann::json::parse(text, nullptr, false);
            int64_t lag = -1;
            if (j.is_object())
              for (const auto& f : j.value("followers", nlohmann::json::array()))
                if (f.value("name", "") == desired && !f.value("bootstrapping", true))
                  lag = f.value("lag_records", int64_t{-1});
            if (lag < 0) return;
            if (!loc.handing_over) {
              if (lag > 1024) return;
              spdlog::info("{}: partition {}: hands it over to {} ({} record(s) behind)", st.log_name, p.value,
                           desired, lag);
              loc.handing_over = true;
              loc.handover_since = now(self);
              self->send(loc.scheduler, hold_atom::value);
              return;
            }
            if (lag > 0) return;
            auto revision = loc.owner_revision;
            resign(self, p, revision);
            step_down(self, p, loc, "handed over to " + desired);
          },
          [=](caf::error&) { self->state.partitions.at(p).fetching = false; });
}

/// One partition, given etcd's state.
void act(self_ptr self, core::PartitionId p, Local& loc, const std::string& desired) {
  auto& st = self->state;
  const auto& ps = st.state.partitions[p];
  if (ps.owner) {
    const auto& o = *ps.owner;
    loc.phase = Local::Phase::idle;
    if (o.member == st.config.name) {
      if (o.lease != st.lease) {
        // An earlier run of this member still holds it: that lease is ours
        // to end.
        spdlog::info("{}: partition {} is held by an earlier run of this member; revoking its lease",
                     st.log_name, p.value);
        if (auto r = st.etcd->revoke(o.lease); !r) etcd_problem(self, r.error().to_string());
        return;
      }
      if (!loc.owned || loc.owner_revision != o.create_revision) {
        resign(self, p, o.create_revision);
        step_down(self, p, loc, "its owner key is not the one it created");
        return;
      }
      if (member_campaigns::home(self, p)) member_campaigns::run_here(self, loc, o.create_revision);
      check_store(self, p, loc);
      handover(self, p, loc, desired);
      return;
    }
    step_down(self, p, loc, "member " + o.member + " owns it now");
    follow(self, p, loc, o);
    if (member_campaigns::home(self, p))
      if (auto m = st.state.members.find(o.member); m != st.state.members.end())
        if (auto g = peer(self, m->second.address)) member_campaigns::follow_owner(self, *g, o.create_revision);
    return;
  }
  step_down(self, p, loc, "its owner key is gone");
  if (member_campaigns::home(self, p)) member_campaigns::stop_here(self);
  campaign(self, p, loc, ps, desired);
}

void lease_lost(self_ptr self, const std::string& why) {
  auto& st = self->state;
  spdlog::warn("{}: its lease is gone ({}); steps down from every partition and joins again", st.log_name, why);
  for (auto& [p, loc] : st.partitions) step_down(self, p, loc, "lease gone");
  if (st.keeper) st.keeper->stop();
  st.keeper.reset();
  st.lease = 0;
  st.lease_at_risk = false;
}

/// A lease and this member's key on it; false while that is not possible.
bool join(self_ptr self) {
  auto& st = self->state;
  auto ttl = st.config.lease_ttl;
  if (st.lease == 0) {
    auto lease = st.etcd->grant(ttl);
    if (!lease) {
      etcd_problem(self, lease.error().to_string());
      return false;
    }
    if (lease->ttl != ttl)
      spdlog::warn("{}: etcd granted a {} s lease for lease_ttl {} s: its TTL floor is 1.5 x its election timeout "
                   "(start etcd with --election-timeout 250 --heartbeat-interval 25 for 1 s)",
                   st.log_name, lease->ttl.count(), ttl.count());
    st.lease = lease->id;
  }
  etcd::MemberRecord me{st.config.name, st.address, this_host(), ::getpid(), st.lease};
  auto key = st.keys->member(st.config.name);
  auto r = st.etcd->txn({etcd::Compare::absent(key)}, {etcd::Operation::put(key, etcd::HaKeys::member_value(me), st.lease)},
                        {etcd::Operation::get(key)});
  if (!r) {
    // The lease expired while nothing kept it (a join that waited): ask
    // for a new one next time rather than for ever with this one.
    if (r.error().message.find("lease not found") != std::string::npos) st.lease = 0;
    etcd_problem(self, r.error().to_string());
    return false;
  }
  etcd_answers(self);
  if (!r->succeeded && !r->gets.empty() && !r->gets[0].empty() && r->gets[0][0].lease != st.lease) {
    const auto& kv = r->gets[0][0];
    auto other = nlohmann::json::parse(kv.value, nullptr, false);
    std::string host = other.is_object() ? other.value("host", "") : "";
    int64_t pid = other.is_object() ? other.value("pid", int64_t{0}) : 0;
    std::string address = other.is_object() ? other.value("address", "") : "";
    if (host == me.host && pid > 0 && pid != me.pid && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      spdlog::info("{}: an earlier run of this member (pid {}) left its lease; revoking it", st.log_name, pid);
      if (auto rv = st.etcd->revoke(kv.lease); !rv) etcd_problem(self, rv.error().to_string());
      return false;
    }
    if (host == me.host && pid == me.pid) {
      // This process itself, on a lease it gave up (it lost it and joined
      // again): that lease is no longer kept alive, so end it now.
      spdlog::info("{}: its key is still on an earlier lease of its own; revoking that lease", st.log_name);
      if (auto rv = st.etcd->revoke(kv.lease); !rv) etcd_problem(self, rv.error().to_string());
      return false;
    }
    auto t = now(self);
    if (st.name_conflict_since.count() == 0) {
      st.name_conflict_since = t;
      spdlog::warn("{}: a member named {} is already in the cluster (address {}, host {}, pid {}); waiting for it to "
                   "go away",
                   st.log_name, st.config.name, address, host, pid);
    }
    if (t - st.name_conflict_since > 3 * std::chrono::duration_cast<core::Duration>(ttl)) {
      auto err = core::make_error(core::Errc::duplicate,
                                  "two members named " + st.config.name + ": another one runs at " + address +
                                      " (host " + host + ", pid " + std::to_string(pid) +
                                      "); give each member its own [ha] name");
      spdlog::critical("{}: {}", st.log_name, err.message);
      if (st.etcd && st.lease != 0) (void)st.etcd->revoke(st.lease);
      st.lease = 0;
      st.stopping = messages::to_caf_error(err);  // quits at the next tick
    }
    return false;
  }
  st.name_conflict_since = core::TimePoint{0};
  etcd::LeaseKeeper::Options ko;
  ko.client = st.config.etcd_options();
  ko.client.timeout = std::min(st.config.etcd_timeout, std::chrono::duration_cast<std::chrono::milliseconds>(ttl) / 4);
  ko.lease = st.lease;
  ko.ttl = ttl;
  auto me_handle = caf::actor_cast<member_actor>(self);
  auto owned = st.owned;
  auto lease = static_cast<uint64_t>(st.lease);
  auto keeper = etcd::LeaseKeeper::start(ko, [me_handle, owned, lease](etcd::LeaseKeeper::Event e,
                                                                       const std::string& why) {
    // Hold at once, from this thread: the member may be busy (a takeover).
    if (e == etcd::LeaseKeeper::Event::at_risk) {
      std::lock_guard<std::mutex> guard(owned->mutex);
      for (const auto& s : owned->schedulers) caf::anon_send(s, hold_atom::value);
    }
    caf::anon_send(me_handle, lease_atom::value, static_cast<uint8_t>(e), why, lease);
  });
  if (!keeper) {
    etcd_problem(self, keeper.error().to_string());
    return false;
  }
  st.keeper = std::move(*keeper);
  spdlog::warn("{}: joined cluster {} as member {} at {} (lease TTL {} s, ack {})", st.log_name,
               st.config.cluster_id, st.config.name, st.address, ttl.count(), to_string(st.config.ack));
  return true;
}

void tick(self_ptr self) {
  auto& st = self->state;
  if (st.stopping) {
    auto t = now(self);
    if (t >= st.requests_until) {
      self->quit(*st.stopping);
      return;
    }
    st.tick_pending = true;
    self->delayed_send(self, st.requests_until - t, tick_atom::value);
    return;
  }
  st.tick_pending = true;
  self->delayed_send(self, st.config.poll_interval, tick_atom::value);
  if (!st.keeper && !join(self)) return;
  auto range = st.etcd->get_prefix(st.keys->root());
  if (!range) {
    etcd_problem(self, range.error().to_string());
    return;
  }
  etcd_answers(self);
  st.state = st.keys->parse(*range);
  auto mine = st.state.members.find(st.config.name);
  if (mine == st.state.members.end() || mine->second.lease != st.lease) {
    lease_lost(self, "its member key is gone from etcd");
    return;
  }
  std::vector<std::string> live;
  for (const auto& [name, _] : st.state.members) live.push_back(name);
  std::vector<core::PartitionId> ids;
  std::map<core::PartitionId, std::string> current;
  std::map<core::PartitionId, std::string> pinned;
  for (const auto& [p, loc] : st.partitions) {
    ids.push_back(p);
    const auto& ps = st.state.partitions[p];
    if (ps.owner && st.state.members.contains(ps.owner->member)) current[p] = ps.owner->member;
    if (!ps.pinned_to.empty()) pinned[p] = ps.pinned_to;
  }
  auto desired = core::balance_partitions(ids, live, current, pinned);
  for (auto& [p, loc] : st.partitions) act(self, p, loc, desired[p]);
}

/// A peer's gateway connection dropped. If its port refuses connections its
/// process is gone: revoke its lease now rather than wait for it to expire
/// (safe either way: the epoch fences a deposed owner at the nodes).
void peer_down(self_ptr self, const std::string& address) {
  auto& st = self->state;
  st.peers.erase(address);
  auto hp = split_address(address);
  for (const auto& [name, m] : st.state.members) {
    if (m.address != address || name == st.config.name) continue;
    bool owns = false;
    for (const auto& [p, ps] : st.state.partitions) owns |= ps.owner && ps.owner->member == name;
    if (!owns || !hp || !nothing_listens_at(hp->first, hp->second, 100ms)) continue;
    spdlog::warn("{}: member {} at {} is gone (its port refuses connections); revoking its lease", st.log_name,
                 name, address);
    if (auto r = st.etcd->revoke(m.lease); !r) etcd_problem(self, r.error().to_string());
  }
}

/// Pins owned partition `p` to `member` (see member_actor, move_atom): the
/// pin lives on that member's lease, so it goes when the member goes; the
/// handover follows at the next tick (handover).
core::Expected<std::string> pin(self_ptr self, core::PartitionId p, const std::string& member) {
  auto& st = self->state;
  auto it = st.partitions.find(p);
  if (it == st.partitions.end())
    return core::make_error(core::Errc::unknown_name, "unknown partition " + std::to_string(p.value));
  auto& loc = it->second;
  if (!loc.owned)
    return core::make_error(core::Errc::unavailable, "member " + st.config.name + " no longer owns partition " +
                                                         std::to_string(p.value) + "; ask again");
  auto m = st.state.members.find(member);
  if (m == st.state.members.end()) {
    std::string live;
    for (const auto& [name, _] : st.state.members) live += (live.empty() ? "" : ", ") + name;
    return core::make_error(core::Errc::unknown_name, "no live member named " + member + " (live: " + live + ")");
  }
  auto r = st.etcd->txn({etcd::Compare::created_at(st.keys->owner(p), loc.owner_revision)},
                        {etcd::Operation::put(st.keys->pin(p), etcd::HaKeys::pin_value(member), m->second.lease)});
  if (!r) {
    etcd_problem(self, r.error().to_string());
    return core::make_error(core::Errc::unavailable, "cannot write the move to etcd: " + r.error().to_string());
  }
  if (!r->succeeded)
    return core::make_error(core::Errc::unavailable, "member " + st.config.name + " lost partition " +
                                                         std::to_string(p.value) + " meanwhile; ask again");
  st.state.partitions[p].pinned_to = member;
  spdlog::warn("{}: partition {} is pinned to member {} (an operator moved it)", st.log_name, p.value, member);
  if (member == st.config.name) return std::string("done, it stays on ") + member;
  return "done; " + member + " takes it over once its copy has caught up";
}

/// The members view (see gateway_actor, members_atom).
caf::typed_response_promise<std::string> members_view(self_ptr self) {
  auto& st = self->state;
  auto promise = self->make_response_promise<std::string>();
  auto view = std::make_shared<nlohmann::json>();
  (*view)["mode"] = "ha";
  (*view)["member"] = st.config.name;
  (*view)["ack"] = std::string(to_string(st.config.ack));
  (*view)["lease_ttl_s"] = st.config.lease_ttl.count();
  (*view)["etcd"] = st.etcd ? st.etcd->endpoint() : "";
  (*view)["etcd_problem"] = st.etcd_problem;
  auto members = nlohmann::json::array();
  for (const auto& [name, m] : st.state.members)
    members.push_back({{"name", name}, {"address", m.address}, {"host", m.host}, {"pid", m.pid}, {"live", true}});
  (*view)["members"] = members;
  auto parts = std::make_shared<nlohmann::json>(nlohmann::json::array());
  std::vector<std::pair<size_t, change_feed_actor>> asks;
  for (const auto& [p, loc] : st.partitions) {
    const auto& ps = st.state.partitions[p];
    nlohmann::json e{{"partition", p.value},
                     {"pools", loc.setup.actor.scheduler.pools},
                     {"owner", ps.owner ? ps.owner->member : ""},
                     {"epoch", ps.owner ? ps.owner->epoch : ps.epoch_counter},
                     {"pinned_to", ps.pinned_to},
                     {"standbys", nlohmann::json::array()}};
    parts->push_back(e);
    if (ps.owner && loc.feed) asks.emplace_back(parts->size() - 1, loc.feed);
  }
  auto left = std::make_shared<size_t>(asks.size());
  auto finish = [view, parts, promise]() mutable {
    (*view)["partitions"] = *parts;
    promise.deliver(view->dump());
  };
  if (asks.empty()) {
    finish();
    return promise;
  }
  for (const auto& [index, feed] : asks) {
    auto i = index;
    self->request(feed, request_timeout(self, std::chrono::seconds(1)), status_atom::value)
        .then(
            [=](std::string& text) mutable {
              auto j = nlohmann::json::parse(text, nullptr, false);
              if (j.is_object()) {
                (*parts)[i]["standbys"] = j.value("followers", nlohmann::json::array());
                (*parts)[i]["latest_sequence"] = j.value("latest", uint64_t{0});
              }
              if (--*left == 0) finish();
            },
            [=](caf::error& err) mutable {
              (*parts)[i]["standbys_error"] = self->system().render(err);
              if (--*left == 0) finish();
            });
  }
  return promise;
}

void shut_down(self_ptr self) {
  auto& st = self->state;
  for (auto& [p, loc] : st.partitions) {
    step_down(self, p, loc, "the member stops");
    stop_replica(self, loc);
  }
  if (st.keeper) st.keeper->stop();
  // Revoking the lease removes this member's keys at once: the others take
  // its partitions over without waiting for the lease to expire.
  if (st.etcd && st.lease != 0) (void)st.etcd->revoke(st.lease);
}

}  // namespace

core::Status MemberConfig::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (name.empty()) return bad("[ha] name: a member needs a name");
  if (name.find('/') != std::string::npos) return bad("[ha] name: '" + name + "' must not contain '/'");
  if (cluster_id.empty()) return bad("member: no cluster id");
  if (etcd.empty()) return bad("[ha] etcd: no endpoints");
  if (lease_ttl.count() < 1) return bad("[ha] lease_ttl must be at least 1s");
  if (poll_interval.count() <= 0) return bad("[ha] poll_interval must be positive");
  if (partitions.empty()) return bad("member: no partitions");
  for (const auto& p : partitions)
    if (p.store_dir.empty()) return bad("member: partition " + std::to_string(p.actor.scheduler.partition.value) +
                                        " has no store directory");
  if (auto st = etcd::Client::make(etcd_options()); !st) return st.error();
  return core::Status::ok();
}

core::Expected<member_actor> spawn_member(caf::actor_system& sys, MemberConfig config) {
  if (auto st = config.validate(); !st) return st.error();
  return sys.spawn<caf::detached>(member, std::move(config));
}

member_actor::behavior_type member(self_ptr self, MemberConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.log_name = "member " + st.config.name;
  st.keys.emplace(st.config.prefix, st.config.cluster_id);
  if (auto c = etcd::Client::make(st.config.etcd_options())) st.etcd.emplace(std::move(*c));
  for (const auto& setup : st.config.partitions) st.partitions[setup.actor.scheduler.partition].setup = setup;
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    for (auto& [p, loc] : st.partitions)
      if (loc.replica && loc.replica.address() == msg.source) {
        loc.replica = nullptr;
        loc.following.clear();
        loc.following_revision = 0;
      }
    for (const auto& [address, g] : st.peers)
      if (g.address() == msg.source) {
        auto a = address;  // peer_down erases the entry
        peer_down(self, a);
        break;
      }
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& st = self->state;
    if (st.stopping) return;
    shut_down(self);
    st.stopping = msg.reason;
    // Quit only once CAF's clock holds nothing of this actor (see
    // tick_pending and requests_until): at the pending tick, or now.
    if (!st.tick_pending) tick(self);
  });
  return {
      [=](start_atom, gateway_actor gateway, std::string& address) {
        auto& st = self->state;
        if (st.gateway) return;
        st.gateway = std::move(gateway);
        st.address = std::move(address);
        tick(self);
      },
      [=](tick_atom) {
        self->state.tick_pending = false;
        tick(self);
      },
      [=](lease_atom, uint8_t event, std::string& why, uint64_t lease) {
        auto& st = self->state;
        // A keeper stopped with its lease may still have said something: it
        // is about a lease this member no longer holds (it joined again).
        if (lease != static_cast<uint64_t>(st.lease)) return;
        switch (static_cast<etcd::LeaseKeeper::Event>(event)) {
          case etcd::LeaseKeeper::Event::healthy:
            if (!st.lease_at_risk) return;
            st.lease_at_risk = false;
            spdlog::warn("{}: etcd answers keep-alives again ({}); its partitions schedule again", st.log_name, why);
            for (auto& [p, loc] : st.partitions)
              if (loc.owned && !loc.handing_over) self->send(loc.owned->scheduler, start_atom::value);
            return;
          case etcd::LeaseKeeper::Event::at_risk:
            st.lease_at_risk = true;
            spdlog::warn("{}: no keep-alive answered for {} ms ({}); its partitions stop scheduling before the lease "
                         "can expire",
                         st.log_name,
                         std::chrono::duration_cast<std::chrono::milliseconds>(st.config.lease_ttl).count() * 6 / 10,
                         why);
            return;
          case etcd::LeaseKeeper::Event::lost:
            lease_lost(self, why);
            return;
        }
      },
      [=](members_atom) { return members_view(self); },
      [=](move_atom, uint32_t partition, std::string& member) -> caf::result<std::string> {
        auto outcome = pin(self, core::PartitionId{partition}, member);
        if (!outcome) return messages::to_caf_error(outcome.error());
        return *outcome;
      },
  };
}

}  // namespace claimsched::actors
