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

/// What the front door refuses before a job reaches its scheduler: no command
/// (no node could run it), resources the cluster does not declare (a typo
/// would wait forever).
core::Status check_job(const gateway_state& st, const core::JobSpec& job) {
  if (job.command.empty())
    return core::make_error(core::Errc::invalid_argument,
                            "job field 'command': a job needs a command (after --, or command = [...] in its file)");
  static const std::vector<std::string> kBuiltin{"cpu", "memory", "gpu", "disk"};
  for (size_t d = 0; d < core::kMaxDimensions; ++d) {
    if (job.per_task[static_cast<core::DimensionId>(d)] == 0) continue;
    std::string name(core::DimensionRegistry::name(static_cast<core::DimensionId>(d)));
    auto known = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (known(kBuiltin) || known(st.config.resources)) continue;
    std::string all = "cpu, memory, gpu, disk";
    for (const auto& r : st.config.resources) all += ", " + r;
    return core::make_error(core::Errc::unknown_name,
                            "job field 'resources': unknown resource '" + name + "' (this cluster knows " + all +
                                "; an operator declares others in the config's `resources`)");
  }
  return core::Status::ok();
}

/// Asks every scheduler `xs...` and answers with all replies (each a Part)
/// merged by `merge` into one T.
template <class T, class Part, class Merge, class... Ts>
caf::typed_response_promise<T> fan_out_with(self_ptr self, Merge merge, Ts... xs) {
  auto promise = self->make_response_promise<T>();
  auto result = std::make_shared<T>();
  auto left = std::make_shared<size_t>(self->state.config.schedulers.size());
  if (*left == 0) {
    promise.deliver(*result);
    return promise;
  }
  for (const auto& s : self->state.config.schedulers) {
    self->request(s, std::chrono::seconds(10), xs...)
        .then(
            [=](Part& part) mutable {
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

template <class T, class Atom, class Merge>
caf::typed_response_promise<T> fan_out(self_ptr self, Atom atom, Merge merge) {
  return fan_out_with<T, T>(self, std::move(merge), atom);
}

/// Names the nodes of a job's tasks (the schedulers know ids only).
void name_nodes(const gateway_state& st, core::JobView& v) {
  for (auto& t : v.tasks)
    if (auto it = st.nodes.find(t.node); t.node.value != 0 && it != st.nodes.end()) t.node_name = it->second.name;
}

/// Asks the job's scheduler for its view and names the nodes in it.
template <class... Ts>
caf::result<core::JobView> named_view(self_ptr self, core::JobId id, Ts... xs) {
  auto it = self->state.jobs.find(id);
  if (it == self->state.jobs.end()) return error_of(core::Errc::unknown_name, "unknown job " + std::to_string(id.value));
  auto promise = self->make_response_promise<core::JobView>();
  self->request(it->second, std::chrono::seconds(10), xs..., id)
      .then(
          [=](core::JobView& v) mutable {
            name_nodes(self->state, v);
            promise.deliver(std::move(v));
          },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// Reads a task's output: its scheduler says which node it ran on last, that
/// node's agent reads the file.
caf::result<core::LogChunk> read_logs(self_ptr self, core::LogRequest request) {
  auto route = self->state.jobs.find(request.task.job);
  if (route == self->state.jobs.end())
    return error_of(core::Errc::unknown_name, "unknown job " + std::to_string(request.task.job.value));
  auto promise = self->make_response_promise<core::LogChunk>();
  self->request(route->second, std::chrono::seconds(10), status_atom::value, request.task.job)
      .then(
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
                                                ", which has not registered since the server started");
              return;
            }
            if (n->second.down) {
              fail(core::Errc::wrong_state, "task " + task + " ran on node " + n->second.name +
                                                ", which is down: its output is there when it comes back");
              return;
            }
            self->request(n->second.handle, std::chrono::seconds(10), logs_atom::value, request)
                .then([=](core::LogChunk& chunk) mutable { promise.deliver(std::move(chunk)); },
                      [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
          },
          [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
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
        auto sched = st.config.pools.at(spec.pool);
        auto& n = st.nodes[spec.id];
        bool returning = n.handle != nullptr;
        n.name = spec.name;
        n.pool = spec.pool;
        n.scheduler = sched;
        n.handle = node;
        n.last_heartbeat = now(self);
        n.down = false;
        n.away = false;
        n.connected = true;
        if (node->node() != self->node()) self->monitor(node);
        self->send(sched, register_atom::value, node);
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
      [=](heartbeat_atom, core::NodeId id) {
        auto& st = self->state;
        auto it = st.nodes.find(id);
        if (it == st.nodes.end()) return;  // registers first; its agent retries
        it->second.last_heartbeat = now(self);
        it->second.away = false;
        if (it->second.down) {
          // Back after being declared down: its scheduler reconciles it.
          it->second.down = false;
          self->send(it->second.scheduler, register_atom::value, it->second.handle);
          spdlog::info("gateway: node {} is back", it->second.name);
        }
      },
      [=](core::JobSpec& job) -> caf::result<core::JobId> {
        auto& st = self->state;
        if (auto s = check_job(st, job); !s) return messages::to_caf_error(s.error());
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
        return named_view(self, id, status_atom::value);
      },
      [=](cancel_atom, core::JobId id) -> caf::result<core::JobView> {
        return named_view(self, id, cancel_atom::value);
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
      [=](logs_atom, core::LogRequest& request) -> caf::result<core::LogChunk> {
        return read_logs(self, std::move(request));
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
        return fan_out_with<std::vector<std::string>, std::string>(
            self, [](std::vector<std::string>& all, std::string& part) { all.push_back(std::move(part)); },
            pools_atom::value);
      },
      [=](tick_atom) {
        auto& st = self->state;
        self->delayed_send(self, st.config.heartbeat_interval, tick_atom::value);
        auto t = now(self);
        for (auto& [id, n] : st.nodes) {
          auto grace = n.away ? st.config.agent_restart_grace : st.config.node_grace;
          if (n.down || t - n.last_heartbeat < grace) continue;
          n.down = true;
          spdlog::warn("gateway: node {} sent no heartbeat for {} ms: down", n.name,
                       std::chrono::duration_cast<std::chrono::milliseconds>(t - n.last_heartbeat).count());
          self->send(n.scheduler, node_down_atom::value, id);
        }
      },
  };
}

}  // namespace claimsched::actors
