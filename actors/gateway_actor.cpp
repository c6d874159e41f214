#include "actors/gateway_actor.hpp"

#include <spdlog/spdlog.h>

#include "actors/clock.hpp"

namespace claimsched::actors {

namespace {

using self_ptr = gateway_actor::stateful_pointer<gateway_state>;

caf::error error_of(core::Errc code, std::string message) {
  return messages::to_caf_error(core::make_error(code, std::move(message)));
}

/// A node's spec as it arrived from the network, checked before use.
core::Status validate_node(const gateway_state& st, const core::NodeSpec& spec) {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (spec.id.value == 0) return bad("node id must not be zero");
  if (spec.name.empty()) return bad("node name must not be empty");
  if (spec.capacity.any_negative() || spec.capacity.is_zero())
    return bad("node " + spec.name + ": capacity must be positive (got '" + spec.capacity.to_string() + "')");
  for (const auto& l : spec.labels)
    if (l.empty()) return bad("node " + spec.name + ": empty label");
  if (!st.config.pools.contains(spec.pool)) {
    std::string known;
    for (const auto& [name, _] : st.config.pools) known += (known.empty() ? "" : ", ") + name;
    return core::make_error(core::Errc::unknown_name,
                            "node " + spec.name + ": unknown pool '" + spec.pool + "' (known: " + known + ")");
  }
  if (auto it = st.nodes.find(spec.id); it != st.nodes.end() && it->second.name != spec.name)
    return core::make_error(core::Errc::duplicate, "node id " + std::to_string(spec.id.value) +
                                                       " is taken by node " + it->second.name);
  return core::Status::ok();
}

/// Asks every scheduler and answers with all replies merged by `merge`.
template <class T, class Atom, class Merge>
caf::typed_response_promise<T> fan_out(self_ptr self, Atom atom, Merge merge) {
  // Every scheduler answers the same type as the merged result.
  auto promise = self->make_response_promise<T>();
  auto result = std::make_shared<T>();
  auto left = std::make_shared<size_t>(self->state.config.schedulers.size());
  if (*left == 0) {
    promise.deliver(*result);
    return promise;
  }
  for (const auto& s : self->state.config.schedulers) {
    self->request(s, std::chrono::seconds(10), atom)
        .then(
            [=](T& part) mutable {
              merge(*result, part);
              if (--*left == 0) promise.deliver(*result);
            },
            [=](caf::error& err) mutable {
              if (*left == 0) return;
              *left = 0;
              promise.deliver(err);
            });
  }
  return promise;
}

}  // namespace

gateway_actor::behavior_type gateway(self_ptr self, GatewayConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.jobs = st.config.known_jobs;
  if (!st.jobs.empty()) st.next_job = st.jobs.rbegin()->first.value + 1;
  self->set_default_handler(messages::reject_unexpected);
  self->set_down_handler([=](const caf::down_msg& msg) {
    for (auto& [id, n] : self->state.nodes)
      if (n.handle && n.handle.address() == msg.source)
        spdlog::warn("gateway: lost the connection to node {} ({}); it is marked down after {} "
                     "without heartbeats",
                     n.name, self->system().render(msg.reason),
                     std::chrono::duration_cast<std::chrono::milliseconds>(self->state.config.node_grace).count());
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
        auto sched = st.config.pools.at(spec.pool);
        auto& n = st.nodes[spec.id];
        bool returning = n.handle != nullptr;
        n.name = spec.name;
        n.pool = spec.pool;
        n.scheduler = sched;
        n.handle = node;
        n.last_heartbeat = now(self);
        n.down = false;
        if (node->node() != self->node()) self->monitor(node);
        self->send(sched, register_atom::value, node);
        spdlog::info("gateway: node {} ({}, pool {}) {}", spec.name, spec.capacity.to_string(), spec.pool,
                     returning ? "registered again" : "registered");
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(st.config.heartbeat_interval).count());
      },
      [=](heartbeat_atom, core::NodeId id) {
        auto& st = self->state;
        auto it = st.nodes.find(id);
        if (it == st.nodes.end()) return;  // registers first; its agent retries
        it->second.last_heartbeat = now(self);
        if (it->second.down) {
          // Back after being declared down: its scheduler reconciles it.
          it->second.down = false;
          self->send(it->second.scheduler, register_atom::value, it->second.handle);
          spdlog::info("gateway: node {} is back", it->second.name);
        }
      },
      [=](core::JobSpec& job) -> caf::result<core::JobId> {
        auto& st = self->state;
        auto it = st.config.pools.find(job.pool);
        if (it == st.config.pools.end()) {
          std::string known;
          for (const auto& [name, _] : st.config.pools) known += (known.empty() ? "" : ", ") + name;
          return error_of(core::Errc::unknown_name,
                          "job field 'pool': unknown pool '" + job.pool + "' (known: " + known + ")");
        }
        if (job.id.value == 0) job.id = core::JobId{st.next_job++};
        if (st.jobs.contains(job.id))
          return error_of(core::Errc::duplicate, "job " + std::to_string(job.id.value) + " already exists");
        st.next_job = std::max(st.next_job, job.id.value + 1);
        if (job.submit_time.count() == 0) job.submit_time = now(self);
        st.jobs.emplace(job.id, it->second);
        return self->delegate(it->second, std::move(job));
      },
      [=](status_atom, core::JobId id) -> caf::result<core::JobView> {
        auto it = self->state.jobs.find(id);
        if (it == self->state.jobs.end())
          return error_of(core::Errc::unknown_name, "unknown job " + std::to_string(id.value));
        return self->delegate(it->second, status_atom::value, id);
      },
      [=](cancel_atom, core::JobId id) -> caf::result<core::JobView> {
        auto it = self->state.jobs.find(id);
        if (it == self->state.jobs.end())
          return error_of(core::Errc::unknown_name, "unknown job " + std::to_string(id.value));
        return self->delegate(it->second, cancel_atom::value, id);
      },
      [=](explain_atom, core::JobId id) -> caf::result<std::string> {
        auto it = self->state.jobs.find(id);
        if (it == self->state.jobs.end())
          return error_of(core::Errc::unknown_name, "unknown job " + std::to_string(id.value));
        return self->delegate(it->second, explain_atom::value, id);
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
        return fan_out<std::string>(self, pools_atom::value,
                                    [](std::string& all, std::string& part) { all += part; });
      },
      [=](tick_atom) {
        auto& st = self->state;
        self->delayed_send(self, st.config.heartbeat_interval, tick_atom::value);
        auto t = now(self);
        for (auto& [id, n] : st.nodes) {
          if (n.down || t - n.last_heartbeat < st.config.node_grace) continue;
          n.down = true;
          spdlog::warn("gateway: node {} sent no heartbeat for {} ms: down", n.name,
                       std::chrono::duration_cast<std::chrono::milliseconds>(t - n.last_heartbeat).count());
          self->send(n.scheduler, node_down_atom::value, id);
        }
      },
  };
}

}  // namespace claimsched::actors
