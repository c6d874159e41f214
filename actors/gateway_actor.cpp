#include "actors/gateway_actor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "actors/clock.hpp"
#include "actors/gateway_campaigns.hpp"
#include "actors/gateway_forward.hpp"
#include "actors/gateway_submit.hpp"
#include "actors/gateway_metrics.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = gateway_self;
using namespace gateway_detail;

/// A node's spec as it arrived from the network, checked before use.
core::Status validate_node(const gateway_state& st, const core::NodeSpec& spec) {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (spec.id.value == 0) return bad("node id must not be zero");
  if (spec.name.empty()) return bad("node name must not be empty");
  if (spec.capacity.any_negative() || spec.capacity.is_zero())
    return bad("node " + spec.name + ": capacity must be positive (got '" + spec.capacity.to_string() + "')");
  for (const auto& l : spec.labels)
    if (l.empty()) return bad("node " + spec.name + ": empty label");
  if (!st.pools.contains(spec.pool))
    return core::make_error(core::Errc::unknown_name,
                            "node " + spec.name + ": unknown pool '" + spec.pool + "' (known: " + known_pools(st) + ")");
  if (st.removed_pools.contains(spec.pool)) return removed_pool("node " + spec.name + ": ", spec.pool);
  if (auto it = st.nodes.find(spec.id); it != st.nodes.end() && it->second.name != spec.name)
    return core::make_error(core::Errc::duplicate, "node id " + std::to_string(spec.id.value) +
                                                       " is taken by node " + it->second.name);
  // Names are unique too: agents derive the id from the name, so another id
  // under a live node's name is a forged or misconfigured registration, and
  // two nodes of one name would confuse every command that names a node.
  // (A linear scan: registrations are rare next to the work they cost.)
  for (const auto& [id, n] : st.nodes)
    if (id != spec.id && n.name == spec.name && n.connected && !n.down)
      return core::make_error(core::Errc::duplicate, "node name " + spec.name + " is taken by node id " +
                                                         std::to_string(id.value) + ", which is connected");
  return core::Status::ok();
}

/// Learns the pools partition `p` removed: a removal may have gone through
/// another member, and this gateway refuses what is in a removed pool.
void learn_removed_pools(self_ptr self, const GatewayPartition& p) {
  if (!p.scheduler) return;
  self->request(p.scheduler, timeout_of(self->state), removed_atom::value)
      .then(
          [=](std::vector<std::string>& removed) {
            for (auto& pool : removed)
              if (self->state.removed_pools.insert(pool).second)
                spdlog::info("gateway: pool {} was removed (claimsched pool remove)", pool);
          },
          [](caf::error&) {});  // asked again at the next refresh
}

/// Asks every partition's owner `xs...` and answers with all replies (each a
/// Part) merged by `merge` into one T; a partition without an owner fails the
/// whole request (retry).
template <class T, class Part, class Merge, class... Ts>
caf::typed_response_promise<T> fan_out_with(self_ptr self, Merge merge, Ts... xs) {
  auto promise = self->make_response_promise<T>();
  auto result = std::make_shared<T>();
  auto& parts = self->state.config.partitions;
  for (const auto& p : parts)
    if (!p.scheduler) {
      promise.deliver(no_owner(p.id));
      return promise;
    }
  auto left = std::make_shared<size_t>(parts.size());
  if (*left == 0) {
    promise.deliver(*result);
    return promise;
  }
  for (const auto& p : parts)
    forward<Part>(
        self, p,
        [=](Part& part) mutable {
          if (*left == 0) return;
          merge(*result, part);
          if (--*left == 0) promise.deliver(*result);
        },
        [=](const caf::error& err) mutable {
          if (*left == 0) return;
          *left = 0;
          promise.deliver(err);
        },
        xs...);
  return promise;
}

template <class T, class Atom, class Merge>
caf::typed_response_promise<T> fan_out(self_ptr self, Atom atom, Merge merge) {
  return fan_out_with<T, T>(self, std::move(merge), atom);
}

/// Asks the partition that holds job `id` (every owned one if the gateway
/// has not seen the job: it may have been submitted through another member);
/// `on_answer(T&)` or `on_error` runs exactly once.
template <class T, class OnAnswer, class OnError, class... Ts>
void ask_holder(self_ptr self, core::JobId id, OnAnswer on_answer, OnError on_error, Ts... xs) {
  auto& st = self->state;
  std::vector<GatewayPartition> targets;
  if (auto it = st.jobs.find(id); it != st.jobs.end()) {
    if (auto* p = st.partition(it->second)) targets.push_back(*p);
  } else {
    for (const auto& p : st.config.partitions) targets.push_back(p);
  }
  struct Pending {
    size_t left = 0;
    bool done = false;
    caf::error last;
  };
  auto pending = std::make_shared<Pending>();
  pending->last = error_of(core::Errc::unknown_name, "unknown job " + std::to_string(id.value));
  for (const auto& p : targets) {
    if (p.scheduler) continue;
    // An unowned partition might hold it: say so rather than "unknown".
    pending->last = no_owner(p.id);
  }
  for (const auto& p : targets) pending->left += p.scheduler ? 1 : 0;
  if (pending->left == 0) {
    on_error(pending->last);
    return;
  }
  for (const auto& p : targets) {
    if (!p.scheduler) continue;
    auto partition = p.id;
    forward<T>(
        self, p,
        [=](T& answer) mutable {
          if (pending->done) return;
          pending->done = true;
          self->state.jobs[id] = partition;
          on_answer(answer);
        },
        [=](const caf::error& err) mutable {
          if (pending->done) return;
          auto e = messages::from_caf_error(err, &self->system());
          // "Unknown job" from one partition says nothing about the others.
          if (e.code != core::Errc::unknown_name || err.category() != messages::kErrorCategory) pending->last = err;
          if (--pending->left == 0) {
            pending->done = true;
            on_error(pending->last);
          }
        },
        xs...);
  }
}

template <class T, class... Ts>
caf::typed_response_promise<T> ask_about_job(self_ptr self, core::JobId id, Ts... xs) {
  auto promise = self->make_response_promise<T>();
  ask_holder<T>(
      self, id, [=](T& answer) mutable { promise.deliver(std::move(answer)); },
      [=](const caf::error& err) mutable { promise.deliver(err); }, xs...);
  return promise;
}

/// Registers every known node of partition `p` with its (new, local) owner.
/// Their silence so far counts from now: this member may have been paused
/// or cut off itself, and a new owner must not declare a node down (its
/// tasks lost and run again) for heartbeats that went to other members.
void register_nodes(self_ptr self, const GatewayPartition& p) {
  auto t = now(self);
  for (auto& [id, n] : self->state.nodes) {
    if (n.partition != p.id || !n.handle) continue;
    n.last_heartbeat = std::max(n.last_heartbeat, t);
    n.down = false;
    self->send(p.scheduler, register_atom::value, n.handle);
  }
}

/// The members view of a single server: it owns everything.
std::string static_members_view(const gateway_state& st) {
  auto partitions = nlohmann::json::array();
  for (const auto& p : st.config.partitions) {
    auto pools = nlohmann::json::array();
    for (const auto& pool : p.pools)
      if (!st.removed_pools.contains(pool)) pools.push_back(pool);
    partitions.push_back({{"partition", p.id.value},
                          {"pools", std::move(pools)},
                          {"owner", p.scheduler ? st.config.name : ""},
                          {"epoch", p.epoch},
                          {"standbys", nlohmann::json::array()}});
  }
  nlohmann::json members = nlohmann::json::array();
  members.push_back({{"name", st.config.name}, {"address", st.config.address}, {"live", true}});
  return nlohmann::json{{"mode", "static"}, {"members", members}, {"partitions", partitions}}.dump();
}

/// Names the nodes of a job's tasks (the schedulers know ids only).
void name_nodes(const gateway_state& st, core::JobView& v) {
  for (auto& t : v.tasks)
    if (auto it = st.nodes.find(t.node); t.node.value != 0 && it != st.nodes.end()) t.node_name = it->second.name;
}

/// Asks the job's scheduler for its view (`atom`: status or cancel) and names
/// the nodes in it.
template <class Atom>
caf::typed_response_promise<core::JobView> named_view(self_ptr self, core::JobId id, Atom atom) {
  auto promise = self->make_response_promise<core::JobView>();
  ask_holder<core::JobView>(
      self, id,
      [=](core::JobView& v) mutable {
        name_nodes(self->state, v);
        promise.deliver(std::move(v));
      },
      [=](const caf::error& err) mutable { promise.deliver(err); }, atom, id);
  return promise;
}

/// Reads a task's output: its scheduler says which node it ran on last, that
/// node's agent reads the file.
caf::typed_response_promise<core::LogChunk> read_logs(self_ptr self, core::LogRequest request) {
  auto promise = self->make_response_promise<core::LogChunk>();
  ask_holder<core::JobView>(
      self, request.task.job,
      [=](core::JobView& v) mutable {
        auto task = std::to_string(request.task.job.value) + "." + std::to_string(request.task.index);
        auto fail = [&](core::Errc code, const std::string& why) {
          promise.deliver(messages::to_caf_error(core::make_error(code, why)));
        };
        if (request.task.index >= v.tasks.size()) {
          fail(core::Errc::unknown_name, "job " + std::to_string(request.task.job.value) + " has no task " +
                                             std::to_string(request.task.index) + " (it has " +
                                             std::to_string(v.tasks.size()) + ")");
          return;
        }
        const auto& t = v.tasks[request.task.index];
        auto n = self->state.nodes.find(t.node);
        if (t.node.value == 0) {
          fail(core::Errc::wrong_state,
               "task " + task + " has not run yet (it is " + std::string(core::to_string(t.state)) + ")");
          return;
        }
        if (n == self->state.nodes.end() || !n->second.handle) {
          fail(core::Errc::wrong_state, "task " + task + " ran on node " + std::to_string(t.node.value) +
                                            ", which has not registered with this server since it started");
          return;
        }
        if (n->second.down) {
          fail(core::Errc::wrong_state, "task " + task + " ran on node " + n->second.name +
                                            ", which is down: its output is there when it comes back");
          return;
        }
        self->request(n->second.handle, timeout_of(self->state), logs_atom::value, request)
            .then([=](core::LogChunk& chunk) mutable { promise.deliver(std::move(chunk)); },
                  [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
      },
      [=](const caf::error& err) mutable { promise.deliver(err); }, status_atom::value, request.task.job);
  return promise;
}

}  // namespace

GatewayPartition* gateway_state::partition(core::PartitionId id) {
  for (auto& p : config.partitions)
    if (p.id == id) return &p;
  return nullptr;
}

core::Status GatewayConfig::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (partitions.empty()) return bad("gateway: no partitions");
  std::set<core::PartitionId> ids;
  std::set<std::string> pools;
  for (const auto& p : partitions) {
    if (p.id.value == 0) return bad("gateway: partition id 0");
    if (!ids.insert(p.id).second) return bad("gateway: partition " + std::to_string(p.id.value) + " twice");
    if (p.pools.empty()) return bad("gateway: partition " + std::to_string(p.id.value) + " has no pools");
    for (const auto& pool : p.pools)
      if (!pools.insert(pool).second) return bad("gateway: pool '" + pool + "' is in two partitions");
  }
  if (heartbeat_interval.count() <= 0) return bad("gateway: heartbeat_interval must be positive");
  if (node_grace.count() <= 0) return bad("gateway: node_grace must be positive");
  if (request_timeout.count() <= 0) return bad("gateway: request_timeout must be positive");
  return core::Status::ok();
}

core::Expected<gateway_actor> spawn_gateway(caf::actor_system& sys, GatewayConfig config) {
  if (auto st = config.validate(); !st) return st.error();
  return sys.spawn(gateway, std::move(config));
}

gateway_actor::behavior_type gateway(self_ptr self, GatewayConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  for (size_t i = 0; i < st.config.partitions.size(); ++i)
    for (const auto& pool : st.config.partitions[i].pools) st.pools[pool] = i;
  st.jobs = st.config.known_jobs;
  st.removed_pools = st.config.removed_pools;
  if (!st.jobs.empty()) st.next_job = st.jobs.rbegin()->first.value + 1;
  self->set_default_handler(messages::reject_unexpected);
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    // A partition's owner on another member went away: what waits for it
    // fails now (retryable), and jobs wait for the next owner's route.
    for (auto& p : st.config.partitions) {
      if (!p.scheduler || p.scheduler.address() != msg.source) continue;
      spdlog::info("gateway: lost the owner of partition {} ({})", p.id.value, self->system().render(msg.reason));
      p.scheduler = nullptr;
      p.feed = nullptr;
      p.local = false;
      std::vector<std::function<void(const caf::error&)>> failing;
      for (auto it = st.forwards.begin(); it != st.forwards.end();) {
        if (it->second.partition != p.id) {
          ++it;
          continue;
        }
        failing.push_back(std::move(it->second.fail));
        it = st.forwards.erase(it);
      }
      for (auto& fail : failing) fail(no_owner(p.id));
    }
    for (auto& [id, n] : self->state.nodes)
      if (n.handle && n.handle.address() == msg.source) {
        n.connected = false;
        spdlog::warn("gateway: lost the connection to node {} ({}); it is marked down after {} "
                     "without heartbeats",
                     n.name, self->system().render(msg.reason),
                     std::chrono::duration_cast<std::chrono::milliseconds>(self->state.config.node_grace).count());
      }
  });
  self->delayed_send(self, st.config.heartbeat_interval, tick_atom::value);
  return {
      [=](register_atom, core::NodeSpec& spec, node_actor node) -> caf::result<uint64_t> {
        auto& st = self->state;
        if (auto s = validate_node(st, spec); !s) {
          spdlog::warn("gateway: refusing a node registration: {}", s.error().message);
          return messages::to_caf_error(s.error());
        }
        if (!node) return error_of(core::Errc::invalid_argument, "node " + spec.name + ": no actor");
        // With TLS, a remote node needs an agent's proof (actors/peer_proof.hpp).
        if (tls_enabled() && node->node() != self->node())
          if (auto ok = st.proofs.admit(spec.name, caf::to_string(node.address()), now(self)); !ok) {
            spdlog::warn("gateway: refusing node {}: {}", spec.name, ok.error().message);
            return messages::to_caf_error(ok.error());
          }
        if (auto it = st.nodes.find(spec.id); it != st.nodes.end() && it->second.handle &&
                                              it->second.handle != node && it->second.connected && !it->second.down &&
                                              now(self) - it->second.last_heartbeat < 2 * st.config.heartbeat_interval) {
          // Names are unique: a second agent with a live one's name would
          // take its node over.
          spdlog::warn("gateway: refusing a second node named {}: another agent with that name is connected",
                       spec.name);
          return error_of(core::Errc::duplicate, "node name " + spec.name +
                                                     " is taken by another agent that is connected; give this one "
                                                     "another --name");
        }
        const auto& part = st.config.partitions[st.pools.at(spec.pool)];
        auto& n = st.nodes[spec.id];
        bool returning = n.handle != nullptr;
        n.name = spec.name;
        n.partition = part.id;
        n.handle = node;
        n.last_heartbeat = now(self);
        n.down = false;
        n.away = false;
        n.connected = true;
        if (node->node() != self->node()) self->monitor(node);
        if (part.local && part.scheduler) self->send(part.scheduler, register_atom::value, node);
        spdlog::info("gateway: node {} ({}, pool {}) {}", spec.name, spec.capacity.to_string(), spec.pool,
                     returning ? "registered again" : "registered");
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(st.config.heartbeat_interval).count());
      },
      [=](leave_atom, core::NodeId id) {
        auto& st = self->state;
        auto it = st.nodes.find(id);
        if (it == st.nodes.end()) return;
        it->second.away = true;
        it->second.last_heartbeat = now(self);
        spdlog::info("gateway: node {} stops and leaves its tasks running; down if not back within {} s",
                     it->second.name,
                     std::chrono::duration_cast<std::chrono::seconds>(st.config.agent_restart_grace).count());
      },
      [=](challenge_atom) -> caf::result<std::string, std::string> {
        auto own = own_identity();
        if (!own) return error_of(core::Errc::wrong_state, "TLS is off here: nothing to prove");
        return {self->state.proofs.challenge(now(self)), own->cn};
      },
      [=](prove_atom, const std::string& cert, const std::string& message,
          const std::string& signature) -> caf::result<std::string> {
        auto id = self->state.proofs.prove(cert, message, signature, now(self));
        if (!id) {
          spdlog::warn("gateway: refusing an agent's proof: {}", id.error().message);
          return messages::to_caf_error(id.error());
        }
        spdlog::info("gateway: agent '{}' proved its certificate for its nodes", id->cn);
        return id->cn;
      },
      [=](heartbeat_atom, core::NodeId id) {
        auto& st = self->state;
        auto it = st.nodes.find(id);
        if (it == st.nodes.end()) return;  // registers first; its agent retries
        it->second.last_heartbeat = now(self);
        // Not a return from `away`: the agent's last heartbeat may pass its
        // leave on the way (they come from different threads), and an agent
        // that comes back registers again, which clears it.
        if (it->second.down) {
          // Back after being declared down: its scheduler reconciles it.
          it->second.down = false;
          if (auto* p = st.partition(it->second.partition); p && p->local && p->scheduler)
            self->send(p->scheduler, register_atom::value, it->second.handle);
          spdlog::info("gateway: node {} is back", it->second.name);
        }
      },
      [=](core::JobSpec& job) { return submit_job(self, std::move(job)); },
      [=](repeat_atom, core::JobSpec& job, uint32_t count) { return submit_copies(self, std::move(job), count); },
      [=](status_atom, core::JobId id) { return named_view(self, id, status_atom::value); },
      [=](cancel_atom, core::JobId id) { return named_view(self, id, cancel_atom::value); },
      [=](ended_atom, std::vector<core::JobId>& jobs, uint32_t timeout_ms) {
        return wait_for_jobs(self, std::move(jobs), timeout_ms);
      },
      [=](watch_atom, const std::vector<core::JobId>&, std::vector<core::JobView>& ended) {
        jobs_ended(self, std::move(ended));
      },
      [=](ended_atom, uint64_t key) { job_wait_timed_out(self, key); },
      [=](drain_atom, std::string& name, bool drain) -> caf::result<std::string> {
        auto& st = self->state;
        auto node = std::find_if(st.nodes.begin(), st.nodes.end(), [&](const auto& n) { return n.second.name == name; });
        if (node == st.nodes.end()) return error_of(core::Errc::unknown_name, "no node named '" + name + "'");
        auto* p = st.partition(node->second.partition);
        if (!p || !p->scheduler) return no_owner(node->second.partition);
        auto promise = self->make_response_promise<std::string>();
        forward<std::string>(
            self, *p, [=](std::string& words) mutable { promise.deliver(std::move(words)); },
            [=](const caf::error& err) mutable { promise.deliver(err); }, drain_atom::value, node->first, name, drain);
        return promise;
      },
      [=](remove_pool_atom, std::string& pool, bool wait) -> caf::result<std::string> {
        auto& st = self->state;
        auto it = st.pools.find(pool);
        if (it == st.pools.end())
          return error_of(core::Errc::unknown_name, "unknown pool '" + pool + "' (known: " + known_pools(st) + ")");
        if (st.removed_pools.contains(pool)) return messages::to_caf_error(removed_pool("", pool));
        const auto& part = st.config.partitions[it->second];
        if (!part.scheduler) return no_owner(part.id);
        auto promise = self->make_response_promise<std::string>();
        forward<std::string>(
            self, part,
            [=](std::string& words) mutable {
              if (auto* p = self->state.partition(part.id)) learn_removed_pools(self, *p);
              promise.deliver(std::move(words));
            },
            [=](const caf::error& err) mutable { promise.deliver(err); }, remove_pool_atom::value, pool, wait);
        return promise;
      },
      [=](move_atom, uint32_t id, std::string& member, bool wait) -> caf::result<std::string> {
        auto& st = self->state;
        auto* p = st.partition(core::PartitionId{id});
        if (!p) return error_of(core::Errc::unknown_name, "unknown partition " + std::to_string(id));
        if (!st.config.member)
          return error_of(core::Errc::invalid_argument,
                          "a partition moves between the members of an HA cluster; this server runs without [ha] "
                          "and owns every partition");
        if (!p->scheduler) return no_owner(p->id);
        auto promise = self->make_response_promise<std::string>();
        forward<std::string>(
            self, *p, [=](std::string& words) mutable { promise.deliver(std::move(words)); },
            [=](const caf::error& err) mutable { promise.deliver(err); }, move_atom::value, member, wait);
        return promise;
      },
      [=](history_atom, core::JobFilter& filter) {
        auto limit = filter.limit;
        return fan_out_with<std::vector<core::JobView>, std::vector<core::JobView>>(
            self,
            [limit](std::vector<core::JobView>& all, std::vector<core::JobView>& part) {
              all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
              std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.spec.id > b.spec.id; });
              if (limit > 0 && all.size() > limit) all.resize(limit);
            },
            history_atom::value, filter);
      },
      [=](logs_atom, core::LogRequest& request) {
        return read_logs(self, std::move(request));
      },
      [=](explain_atom, core::JobId id) {
        return ask_about_job<std::string>(self, id, explain_atom::value, id);
      },
      [=](queue_atom) {
        return fan_out<std::vector<core::JobView>>(
            self, queue_atom::value, [](std::vector<core::JobView>& all, std::vector<core::JobView>& part) {
              all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
              std::sort(all.begin(), all.end(),
                        [](const auto& a, const auto& b) { return a.spec.id < b.spec.id; });
            });
      },
      [=](nodes_atom) {
        // The schedulers' views, with what the gateway knows (names, heartbeats).
        auto t = now(self);
        return fan_out<std::vector<core::NodeStatus>>(
            self, nodes_atom::value, [=](std::vector<core::NodeStatus>& all, std::vector<core::NodeStatus>& part) {
              for (auto& n : part) {
                if (auto it = self->state.nodes.find(n.spec.id); it != self->state.nodes.end()) {
                  n.spec.name = it->second.name;
                  n.alive = !it->second.down;
                  n.silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - it->second.last_heartbeat).count();
                }
                all.push_back(std::move(n));
              }
              std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.spec.id < b.spec.id; });
            });
      },
      [=](pools_atom) {
        return fan_out_with<std::vector<std::string>, std::string>(
            self, [](std::vector<std::string>& all, std::string& part) { all.push_back(std::move(part)); },
            pools_atom::value);
      },
      [=](members_atom) -> caf::result<std::string> {
        if (!self->state.config.member) return static_members_view(self->state);
        // Asked and answered here, not delegated: the member (a detached
        // actor) then never answers a remote client itself.
        auto promise = self->make_response_promise<std::string>();
        self->request(self->state.config.member, timeout_of(self->state), members_atom::value)
            .then(
                [=](std::string& text) mutable {
                  // What this member's gateway adds: the nodes registered
                  // here (a member takes over with the nodes it has).
                  auto view = nlohmann::json::parse(text, nullptr, false);
                  if (!view.is_object()) {
                    promise.deliver(std::move(text));
                    return;
                  }
                  size_t up = 0;
                  for (const auto& [id, n] : self->state.nodes) up += !n.down;
                  view["gateway_nodes"] = up;
                  promise.deliver(view.dump());
                },
                [=](caf::error& err) mutable { promise.deliver(err); });
        return promise;
      },
      [=](campaign_atom, core::campaign::CampaignRequest& request) {
        return ask_campaigns(self, std::move(request));
      },
      [=](login_atom, const std::string&) -> caf::result<caf::actor, std::string> {
        // Without [auth] this gateway is the door itself: a token is not checked.
        return caf::result<caf::actor, std::string>(caf::actor_cast<caf::actor>(self), std::string());
      },
      [=](challenge_atom, login_atom) -> caf::result<std::string, std::string> {
        auto own = own_identity();
        return {std::string(), own ? own->cn : std::string()};
      },
      [=](login_atom, const std::string&, const std::string&,
          const std::string&) -> caf::result<caf::actor, std::string> {
        // Without [auth] a certificate is not checked past TLS either.
        return caf::result<caf::actor, std::string>(caf::actor_cast<caf::actor>(self), std::string());
      },
      [=](campaign_atom, campaign_actor campaigns) { set_campaign_runner(self, std::move(campaigns)); },
      [=](campaign_atom) { return local_campaign_runner(self); },
      [=](watch_atom, caf::actor watcher) {
        // Local only: job ids of every user are no client's business.
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node() || !watcher) return;
        auto& watchers = self->state.job_watchers;
        if (std::find(watchers.begin(), watchers.end(), watcher) != watchers.end()) return;
        watchers.push_back(watcher);
        for (const auto& p : self->state.config.partitions)
          if (p.scheduler) self->send(p.scheduler, watch_atom::value, watcher);
      },
      [=](unwatch_atom, const caf::actor& watcher) {
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node() || !watcher) return;
        auto& watchers = self->state.job_watchers;
        auto it = std::find(watchers.begin(), watchers.end(), watcher);
        if (it == watchers.end()) return;
        watchers.erase(it);
        for (const auto& p : self->state.config.partitions)
          if (p.scheduler) self->send(p.scheduler, unwatch_atom::value, watcher);
      },
      [=](metrics_atom) -> caf::result<std::string> {
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node())
          return error_of(core::Errc::invalid_argument, "metrics are served over HTTP ([http] listen)");
        auto promise = self->make_response_promise<std::string>();
        answer_metrics(self, promise);
        return promise;
      },
      [=](changes_atom) -> caf::result<uint64_t> {
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node())
          return error_of(core::Errc::invalid_argument, "the change counter is served over HTTP ([http] listen)");
        auto promise = self->make_response_promise<uint64_t>();
        answer_changes(self, promise);
        return promise;
      },
      [=](partition_atom, uint32_t id) -> caf::result<scheduler_actor, change_feed_actor, uint64_t> {
        auto* p = self->state.partition(core::PartitionId{id});
        if (!p) return error_of(core::Errc::unknown_name, "unknown partition " + std::to_string(id));
        if (!p->local || !p->scheduler)
          return error_of(core::Errc::unavailable, "partition " + std::to_string(id) + " is not owned here");
        return caf::result<scheduler_actor, change_feed_actor, uint64_t>(p->scheduler, p->feed,
                                                                         static_cast<uint64_t>(p->epoch));
      },
      [=](route_atom, uint32_t id, scheduler_actor scheduler, change_feed_actor feed, uint64_t epoch, bool local) {
        auto sender = self->current_sender();
        if (!sender || sender->node() != self->node()) return;  // local only
        auto* p = self->state.partition(core::PartitionId{id});
        if (!p) return;
        bool newly_local = local && scheduler && (!p->local || p->scheduler != scheduler);
        if (scheduler && scheduler != p->scheduler && scheduler->node() != self->node()) self->monitor(scheduler);
        // A new owner tells the job watchers too (what the old one had not
        // told is found by their fallback status requests). A scheduler takes
        // them from a local sender only: another member's owner is told of its
        // watchers by that member's gateway.
        if (scheduler && scheduler != p->scheduler)
          for (const auto& w : self->state.job_watchers) self->send(scheduler, watch_atom::value, w);
        p->scheduler = std::move(scheduler);
        p->feed = std::move(feed);
        p->epoch = epoch;
        p->local = local;
        if (newly_local) register_nodes(self, *p);
        learn_removed_pools(self, *p);
      },
      [=](tick_atom) {
        auto& st = self->state;
        self->delayed_send(self, st.config.heartbeat_interval, tick_atom::value);
        auto t = now(self);
        // A tick far later than asked: this process stalled (paused, or
        // starved), and heard nothing meanwhile. The nodes' silence is ours:
        // it counts from now.
        auto gap = t - st.last_tick;
        bool stalled = st.last_tick.count() != 0 &&
                       gap > 2 * st.config.heartbeat_interval + st.config.node_grace / 4;
        st.last_tick = t;
        if (t - st.removed_pools_learned > gateway_state::kLearnRemovedPoolsEvery) {
          st.removed_pools_learned = t;
          for (const auto& p : st.config.partitions) learn_removed_pools(self, p);
        }
        if (stalled) {
          spdlog::warn("gateway: this process was stalled for {} ms; node heartbeats count from now",
                       std::chrono::duration_cast<std::chrono::milliseconds>(gap).count());
          for (auto& [id, n] : st.nodes) n.last_heartbeat = std::max(n.last_heartbeat, t);
        }
        for (auto& [id, n] : st.nodes) {
          auto grace = n.away ? st.config.agent_restart_grace : st.config.node_grace;
          if (n.down || t - n.last_heartbeat < grace) continue;
          n.down = true;
          spdlog::warn("gateway: node {} sent no heartbeat for {} ms: down", n.name,
                       std::chrono::duration_cast<std::chrono::milliseconds>(t - n.last_heartbeat).count());
          if (auto* p = st.partition(n.partition); p && p->local && p->scheduler)
            self->send(p->scheduler, node_down_atom::value, id);
        }
      },
  };
}

}  // namespace claimsched::actors
