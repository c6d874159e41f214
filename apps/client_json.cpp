#include "apps/client_json.hpp"

#include <algorithm>
#include <tuple>

#include "messages/json_views.hpp"

namespace claimsched::apps {

using nlohmann::json;

namespace {

json time_or_null(core::TimePoint wall) {
  auto s = messages::iso_time(wall);
  return s.empty() ? json(nullptr) : json(s);
}

}  // namespace

json end_json(const core::TaskEnd& e) {
  if (e.reason == core::EndReason::none) return nullptr;
  json j{{"reason", std::string(core::to_string(e.reason))}, {"text", core::describe(e)}};
  j["exit_code"] = e.reason == core::EndReason::spawn_failed || e.exit_code < 0 ? json(nullptr) : json(e.exit_code);
  j["signal"] = e.signal == 0 ? json(nullptr) : json(core::signal_name(e.signal));
  if (e.reason == core::EndReason::spawn_failed) {
    j["spawn_stage"] = std::string(core::to_string(e.stage));
    j["errno"] = e.exit_code;
  }
  return j;
}

json task_json(const core::TaskView& t) {
  json j{{"index", t.index},
         {"state", std::string(core::to_string(t.state))},
         {"node", t.node.value == 0 ? json(nullptr) : json(t.node.value)},
         {"node_name", t.node_name.empty() ? json(nullptr) : json(t.node_name)},
         {"exit_code", t.exit_code},
         {"failures", t.failures},
         {"losses", t.losses},
         {"end", end_json(t.end)},
         {"preempted_by", t.preempted_by.value == 0 ? json(nullptr) : json(t.preempted_by.value)}};
  return j;
}

json job_json(const core::JobView& v) {
  json by_state = json::object();
  for (size_t s = 0; s < v.by_state.size(); ++s)
    if (v.by_state[s] > 0) by_state[std::string(core::to_string(static_cast<core::TaskState>(s)))] = v.by_state[s];
  json j{{"job", v.spec.id.value},
         {"name", v.spec.name},
         {"user", v.spec.user},
         {"class", v.spec.job_class},
         {"pool", v.spec.pool},
         {"count", v.spec.count},
         {"resources", v.spec.per_task.to_string()},
         {"command", v.spec.command},
         {"state", std::string(core::to_string(v.state))},
         {"submitted_at", time_or_null(v.spec.submit_time)},
         {"started_at", time_or_null(v.started_at)},
         {"finished_at", time_or_null(v.finished_at)},
         {"tasks_by_state", by_state},
         {"waiting", v.reason},
         {"last_removal", v.last_removal},
         {"preemptions", v.preemptions},
         {"evictions", v.evictions},
         {"locks", v.spec.locks.to_string()},
         {"queue_weight", v.queue_weight ? json(*v.queue_weight) : json(nullptr)},
         {"queue_age_ticks", v.queue_weight ? json(v.queue_age_ticks) : json(nullptr)}};
  // The same times as integers (the server's wall clock, ns since the
  // epoch): scripts and benchmarks compare them with their own clock.
  for (auto [key, t] : {std::pair{"submitted_at_ns", v.spec.submit_time}, std::pair{"started_at_ns", v.started_at},
                        std::pair{"finished_at_ns", v.finished_at}})
    j[key] = t == core::kNever || t.count() == 0 ? json(nullptr) : json(t.count());
  bool ran = v.started_at != core::kNever && v.finished_at != core::kNever;
  j["run_seconds"] = ran ? json(std::chrono::duration<double>(v.finished_at - v.started_at).count()) : json(nullptr);
  if (!v.tasks.empty()) {
    auto& list = j["tasks"] = json::array();
    for (const auto& t : v.tasks) list.push_back(task_json(t));
  }
  return j;
}

json node_json(const core::NodeStatus& n) {
  return {{"node", n.spec.id.value},
          {"name", n.spec.name},
          {"pool", n.spec.pool},
          {"state", std::string(core::to_string(n.snapshot.state))},
          {"alive", n.alive},
          {"capacity", n.snapshot.capacity.to_string()},
          {"free", n.snapshot.free.to_string()},
          {"labels", n.spec.labels},
          {"silent_ms", n.silent_ms}};
}

json jobs_json(const std::vector<core::JobView>& jobs) {
  auto list = json::array();
  for (const auto& v : jobs) list.push_back(job_json(v));
  return list;
}

json nodes_json(std::vector<core::NodeStatus> nodes) {
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.spec.name, a.spec.id) < std::tie(b.spec.name, b.spec.id);
  });
  auto list = json::array();
  for (const auto& n : nodes) list.push_back(node_json(n));
  return list;
}

core::Expected<json> document_json(const std::string& doc, std::string_view what) {
  auto j = json::parse(doc, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return core::make_error(core::Errc::corrupt, "the server sent " + std::string(what) + " that is not JSON");
  return j;
}

core::Expected<json> pools_json(const std::vector<std::string>& docs) {
  json partitions = json::array();
  for (const auto& d : docs) {
    auto j = document_json(d, "pools");
    if (!j) return j.error();
    partitions.push_back(std::move(*j));
  }
  return json{{"partitions", std::move(partitions)}};
}

core::JobFilter queue_filter(core::JobFilter filter) {
  if (filter.states.empty()) filter.states = {core::JobState::pending, core::JobState::waiting, core::JobState::running};
  return filter;
}

}  // namespace claimsched::apps
