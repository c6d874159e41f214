#include "apps/client_json.hpp"

#include <algorithm>
#include <charconv>
#include <concepts>
#include <cstdio>
#include <tuple>

#include "apps/json_string.hpp"
#include "messages/json_views.hpp"

namespace claimsched::apps {

using nlohmann::json;

json end_json(const core::TaskEnd& e) {
  if (e.reason == core::EndReason::none) return nullptr;
  json j{{"reason", std::string(core::to_string(e.reason))}, {"text", core::describe(e)}};
  j["exit_code"] = e.reason == core::EndReason::spawn_failed || e.exit_code < 0 ? json(nullptr) : json(e.exit_code);
  j["signal"] = e.signal == 0 ? json(nullptr) : json(core::signal_name(e.signal));
  if (e.reason == core::EndReason::spawn_failed) {
    j["spawn_stage"] = std::string(core::to_string(e.stage));
    j["errno"] = e.exit_code;
  }
  j["peak_memory_bytes"] = e.peak_memory_bytes == 0 ? json(nullptr) : json(e.peak_memory_bytes);
  j["output_missing"] = e.output_missing;
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

namespace {

/// Appends JSON values exactly as nlohmann's dump() writes them (compact,
/// UTF-8 as is, the same escapes and number forms), so a job written here
/// reads the same as one built as a json object and dumped.
struct Writer {
  std::string& out;

  void string(std::string_view s) {
    out += '"';
    append_json_escaped(out, s);
    out += '"';
  }
  void integer(std::integral auto n) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.append(digits, end);
  }
  /// Doubles are rare (two per job): nlohmann's own shortest form.
  void real(double d) { out += json(d).dump(); }
  void null() { out += "null"; }
  /// `"key":`, after a comma unless it is the object's first.
  void key(std::string_view k, bool first = false) {
    if (!first) out += ',';
    string(k);
    out += ':';
  }
  void time_or_null(core::TimePoint wall) {
    auto s = messages::iso_time(wall);
    s.empty() ? null() : string(s);
  }
  void ns_or_null(core::TimePoint t) { t == core::kNever || t.count() == 0 ? null() : integer(t.count()); }
};

}  // namespace

void append_job_json(std::string& out, const core::JobView& v) {
  // Keys in the order nlohmann's objects keep them (sorted), so this is
  // byte for byte what dumping the same object printed before.
  Writer w{out};
  out += '{';
  w.key("class", true);
  w.string(v.spec.job_class);
  w.key("command");
  out += '[';
  for (size_t i = 0; i < v.spec.command.size(); ++i) {
    if (i > 0) out += ',';
    w.string(v.spec.command[i]);
  }
  out += ']';
  w.key("count");
  w.integer(v.spec.count);
  w.key("evictions");
  w.integer(v.evictions);
  w.key("finished_at");
  w.time_or_null(v.finished_at);
  // The times also as integers (the server's wall clock, ns since the
  // epoch): scripts and benchmarks compare them with their own clock.
  w.key("finished_at_ns");
  w.ns_or_null(v.finished_at);
  w.key("job");
  w.integer(v.spec.id.value);
  w.key("last_removal");
  w.string(v.last_removal);
  w.key("locks");
  w.string(v.spec.locks.to_string());
  w.key("name");
  w.string(v.spec.name);
  w.key("pool");
  w.string(v.spec.pool);
  w.key("preemptions");
  w.integer(v.preemptions);
  w.key("queue_age_ticks");
  v.queue_weight ? w.integer(v.queue_age_ticks) : w.null();
  w.key("queue_weight");
  v.queue_weight ? w.real(*v.queue_weight) : w.null();
  w.key("resources");
  w.string(v.spec.per_task.to_string());
  w.key("run_seconds");
  bool ran = v.started_at != core::kNever && v.finished_at != core::kNever;
  ran ? w.real(std::chrono::duration<double>(v.finished_at - v.started_at).count()) : w.null();
  w.key("started_at");
  w.time_or_null(v.started_at);
  w.key("started_at_ns");
  w.ns_or_null(v.started_at);
  w.key("state");
  w.string(core::to_string(v.state));
  w.key("submitted_at");
  w.time_or_null(v.spec.submit_time);
  w.key("submitted_at_ns");
  w.ns_or_null(v.spec.submit_time);
  if (!v.tasks.empty()) {
    w.key("tasks");
    out += '[';
    for (size_t i = 0; i < v.tasks.size(); ++i) {
      if (i > 0) out += ',';
      out += task_json(v.tasks[i]).dump();
    }
    out += ']';
  }
  w.key("tasks_by_state");
  std::vector<std::pair<std::string_view, uint32_t>> by_state;
  for (size_t s = 0; s < v.by_state.size(); ++s)
    if (v.by_state[s] > 0) by_state.emplace_back(core::to_string(static_cast<core::TaskState>(s)), v.by_state[s]);
  std::sort(by_state.begin(), by_state.end());
  out += '{';
  for (size_t i = 0; i < by_state.size(); ++i) {
    w.key(by_state[i].first, i == 0);
    w.integer(by_state[i].second);
  }
  out += '}';
  w.key("user");
  w.string(v.spec.user);
  w.key("waiting");
  w.string(v.reason);
  out += '}';
}

json job_json(const core::JobView& v) {
  std::string text;
  append_job_json(text, v);
  // Valid by construction; a sequence the writer let through that the
  // parser refuses (an overlong UTF-8 form) must not throw at a caller.
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return {{"job", v.spec.id.value}, {"error", "the job's fields are not valid UTF-8"}};
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

std::string jobs_json(const std::vector<core::JobView>& jobs) {
  std::string text = "[";
  // About 500 bytes a job: one allocation for most lists.
  text.reserve(jobs.size() * 560 + 2);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i > 0) text += ',';
    append_job_json(text, jobs[i]);
  }
  text += ']';
  return text;
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

namespace {

nlohmann::json iso_or_null(core::TimePoint wall) {
  auto s = messages::iso_time(wall);
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json campaign_pool_json(const core::campaign::PoolReport& p, CampaignDetail detail) {
  nlohmann::json out{{"pool", p.pool},       {"affinity", p.affinity},   {"waiting", p.waiting},
                     {"running", p.running}, {"succeeded", p.succeeded}, {"abandoned", p.abandoned}};
  if (p.abandoned) out["sink_reason"] = p.sink_reason;
  if (p.offered) {
    out["throughput_per_s"] = p.throughput_per_s;
    if (detail == CampaignDetail::explain) {
      out["ratio"] = p.ratio;
      out["last_move"] = p.last_move == core::campaign::RatioMove::increase ? "increase" : "decrease";
      out["last_free"] = p.last_free;
    }
  } else if (detail == CampaignDetail::explain) {
    out["ratio"] = nullptr;  // never offered: no round has looked at it
  }
  return out;
}

}  // namespace

nlohmann::json campaign_report_json(const core::campaign::CampaignReport& c, CampaignDetail detail) {
  namespace cc = core::campaign;
  nlohmann::json out{{"id", c.id.value},
                     {"name", c.name},
                     {"user", c.user},
                     {"type", std::string(cc::to_string(c.type))},
                     {"algorithm", std::string(cc::to_string(c.algorithm))},
                     {"state", std::string(cc::to_string(c.state))},
                     {"tasks", c.tasks},
                     {"done", c.done},
                     {"pending", c.pending},
                     {"waiting", c.waiting},
                     {"running", c.running},
                     {"copies", c.copies},
                     {"submitted_at", messages::iso_time(c.submitted_at)}};
  if (detail == CampaignDetail::summary) return out;
  out["throughput_per_s"] = c.throughput_per_s;
  out["eta"] = c.eta ? iso_or_null(*c.eta) : nlohmann::json(nullptr);
  out["mean_run_time_s"] = c.mean_run_time ? nlohmann::json(std::chrono::duration<double>(*c.mean_run_time).count())
                                           : nlohmann::json(nullptr);
  if (detail == CampaignDetail::explain) {
    out["max_waiting"] = c.max_waiting;
    out["allowed_waiting"] = c.allowed_waiting;
    out["finalize_replicas"] = c.finalize_replicas;
    out["finalizing"] = c.finalizing;
  }
  out["pools"] = nlohmann::json::array();
  for (const auto& p : c.pools) out["pools"].push_back(campaign_pool_json(p, detail));
  if (!c.test.empty()) {
    out["test"] = nlohmann::json::array();
    for (const auto& r : c.test) {
      nlohmann::json t{{"pool", r.pool}, {"reported", r.reported}};
      if (r.reported) {
        t["exit_code"] = r.exit_code;
        t["run_time_s"] = std::chrono::duration<double>(r.run_time).count();
        t["passed"] = r.exit_code == 0;
      }
      out["test"].push_back(std::move(t));
    }
  }
  if (!c.failure.empty()) out["failure"] = c.failure;
  return out;
}

nlohmann::json campaign_list_json(const core::campaign::CampaignReply& reply) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& c : reply.campaigns) all.push_back(campaign_report_json(c, CampaignDetail::summary));
  return nlohmann::json{{"campaigns", std::move(all)}};
}

}  // namespace claimsched::apps
