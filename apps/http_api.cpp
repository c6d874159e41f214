#include "apps/http_api.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/client_commands.hpp"
#include "apps/client_json.hpp"

namespace claimsched::apps {

namespace {

using nlohmann::json;

/// A page has at most this many jobs (limit=0 asks for all: the CLI's --limit 0).
constexpr uint32_t kDefaultLimit = 50;
constexpr uint64_t kMaxLimit = 100'000;

ApiAnswer error_answer(int status, std::string_view code, const std::string& message) {
  json body{{"error", {{"status", status}, {"code", code}, {"message", message}}}};
  return {status, body.dump(), {}};
}

/// The HTTP status that says what went wrong in the cluster's terms.
ApiAnswer cluster_error(const core::Error& e) {
  switch (e.code) {
    case core::Errc::parse_error:
    case core::Errc::invalid_argument:
      return error_answer(400, core::to_string(e.code), e.message);
    case core::Errc::unknown_name:
      return error_answer(404, core::to_string(e.code), e.message);
    case core::Errc::wrong_state:
      return error_answer(409, core::to_string(e.code), e.message);
    case core::Errc::unavailable:
      return error_answer(503, core::to_string(e.code), e.message);
    case core::Errc::unauthenticated:
      return error_answer(401, core::to_string(e.code), e.message);
    case core::Errc::permission_denied:
      return error_answer(403, core::to_string(e.code), e.message);
    default:
      return error_answer(500, core::to_string(e.code), e.message);
  }
}

/// The body (JSON text), with its ETag; 304 without a body if the client
/// has it already.
ApiAnswer json_answer(std::string body, const ApiRequest& request,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
  ApiAnswer a{200, std::move(body), std::move(headers)};
  std::string tag = etag_of(a.body);
  a.headers.emplace_back("ETag", tag);
  if (!request.if_none_match.empty() && request.if_none_match.find(tag) != std::string::npos) {
    a.status = 304;
    a.body.clear();
  }
  return a;
}

ApiAnswer json_answer(const json& body, const ApiRequest& request,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
  // Never throw on a string that is not UTF-8 (a node label, a job's name).
  return json_answer(body.dump(-1, ' ', false, json::error_handler_t::replace), request, std::move(headers));
}

std::string param(const ApiRequest& r, const std::string& name) {
  auto it = r.params.find(name);
  return it == r.params.end() ? "" : it->second;
}

/// A parameter nobody reads is refused: a misspelt `limt` must not pass
/// silently as "the default page".
std::optional<ApiAnswer> unknown_params(const ApiRequest& r, const std::set<std::string>& known) {
  for (const auto& [name, value] : r.params)
    if (!known.contains(name)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return error_answer(400, "invalid_argument",
                          "unknown parameter '" + name + "'" + (list.empty() ? " (this path takes none)" : " (known: " + list + ")"));
    }
  return std::nullopt;
}

std::optional<uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(text);
}

/// `since=N`: whether the job records are as they were at N. The counter is
/// read first, so a write that races the list moves it for the next poll.
struct Changes {
  std::optional<uint64_t> now;
  bool unchanged = false;
};

core::Expected<Changes> read_changes(const ClusterReader& reader, const ApiRequest& r) {
  Changes c;
  auto now = reader.changes ? reader.changes() : core::Expected<uint64_t>(uint64_t{0});
  if (!now) return now.error();
  if (*now != 0) c.now = *now;
  std::string since = param(r, "since");
  if (since.empty()) return c;
  auto n = parse_count(since);
  if (!n) return core::make_error(core::Errc::invalid_argument, "since: '" + since + "' is not a change counter "
                                                                "(the X-Claimsched-Changes of an earlier answer)");
  c.unchanged = c.now && *c.now == *n;
  return c;
}

void add_changes_header(std::vector<std::pair<std::string, std::string>>& headers, const Changes& c) {
  if (c.now) headers.emplace_back("X-Claimsched-Changes", std::to_string(*c.now));
}

ApiAnswer not_modified(const Changes& c) {
  ApiAnswer a{304, "", {}};
  add_changes_header(a.headers, c);
  return a;
}

/// The filter the query asks for (`queue`: unended jobs unless states are given).
core::Expected<core::JobFilter> job_filter(const ApiRequest& r, bool queue) {
  core::JobFilter f;
  f.user = param(r, "user");
  f.pool = param(r, "pool");
  f.limit = kDefaultLimit;
  if (std::string limit = param(r, "limit"); !limit.empty()) {
    auto n = parse_count(limit);
    if (!n || *n > kMaxLimit)
      return core::make_error(core::Errc::invalid_argument, "limit: '" + limit + "' is not a page size from 0 (all) to " +
                                                                std::to_string(kMaxLimit));
    f.limit = static_cast<uint32_t>(*n);
  }
  if (std::string after = param(r, "after"); !after.empty()) {
    auto id = parse_job_id(after);
    if (!id)
      return core::make_error(core::Errc::invalid_argument,
                              "after: " + id.error().message + " (the last job of the previous page)");
    f.older_than = *id;
  }
  for (auto [it, end] = r.params.equal_range("state"); it != end; ++it) {
    std::string_view list = it->second;
    while (!list.empty()) {
      auto comma = list.find(',');
      auto state = core::parse_job_state(list.substr(0, comma));
      if (!state) return core::make_error(core::Errc::invalid_argument, "state: " + state.error().message);
      f.states.push_back(*state);
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    }
  }
  return queue ? queue_filter(std::move(f)) : f;
}

/// The same query with `after` moved on: the next page's address.
std::string next_page(const ApiRequest& r, uint64_t last_job) {
  std::string query;
  for (const auto& [name, value] : r.params)
    if (name != "after" && name != "since") query += name + "=" + value + "&";
  return r.path + "?" + query + "after=" + std::to_string(last_job);
}

ApiAnswer list_jobs(const ClusterReader& reader, const ApiRequest& r, bool queue) {
  if (auto bad = unknown_params(r, {"user", "pool", "state", "limit", "after", "since"})) return *bad;
  auto filter = job_filter(r, queue);
  if (!filter) return cluster_error(filter.error());
  auto changes = read_changes(reader, r);
  if (!changes) return cluster_error(changes.error());
  if (changes->unchanged) return not_modified(*changes);
  auto jobs = reader.jobs(*filter);
  if (!jobs) return cluster_error(jobs.error());
  std::vector<std::pair<std::string, std::string>> headers;
  add_changes_header(headers, *changes);
  if (filter->limit > 0 && jobs->size() == filter->limit) {
    uint64_t last = jobs->back().spec.id.value;
    headers.emplace_back("Link", "<" + next_page(r, last) + ">; rel=\"next\"");
    headers.emplace_back("X-Claimsched-Next-After", std::to_string(last));
  }
  return json_answer(jobs_json(*jobs), r, std::move(headers));
}

ApiAnswer one_job(const ClusterReader& reader, const ApiRequest& r, const std::string& id_text, bool explain) {
  if (auto bad = unknown_params(r, explain ? std::set<std::string>{} : std::set<std::string>{"since"})) return *bad;
  auto id = parse_job_id(id_text);
  if (!id) return error_answer(400, "parse_error", id.error().message);
  if (explain) {
    auto doc = reader.explain(*id);
    if (!doc) return cluster_error(doc.error());
    auto j = document_json(*doc, "an explanation");
    if (!j) return cluster_error(j.error());
    return json_answer(*j, r);
  }
  auto changes = read_changes(reader, r);
  if (!changes) return cluster_error(changes.error());
  if (changes->unchanged) return not_modified(*changes);
  auto view = reader.job(*id);
  if (!view) return cluster_error(view.error());
  std::vector<std::pair<std::string, std::string>> headers;
  add_changes_header(headers, *changes);
  return json_answer(job_json(*view), r, std::move(headers));
}

json index_json() {
  return {{"api", "claimsched/v1"},
          {"paths",
           {{"/api/v1/jobs", "jobs, newest first: ?limit=50&after=JOB&user=&pool=&state=a,b&since=CHANGES (jobs --json)"},
            {"/api/v1/jobs/JOB", "one job with its tasks (status --json JOB)"},
            {"/api/v1/jobs/JOB/explain", "why it waits (explain --json JOB)"},
            {"/api/v1/queue", "jobs that have not ended, as /api/v1/jobs (queue --json)"},
            {"/api/v1/nodes", "nodes (nodes --json)"},
            {"/api/v1/pools", "fair share, demand and usage per pool (pools --json)"},
            {"/api/v1/partitions", "members, partition owners and epochs (status --json)"}}}};
}

}  // namespace

std::string etag_of(const std::string& body) {
  // FNV-1a over 8 bytes at a time: a 5 MB list hashes in about 1 ms.
  uint64_t h = 14695981039346656037ull;
  size_t i = 0;
  for (; i + 8 <= body.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, body.data() + i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  for (; i < body.size(); ++i) h = (h ^ static_cast<unsigned char>(body[i])) * 1099511628211ull;
  h ^= body.size();
  char text[24];
  std::snprintf(text, sizeof text, "\"%016" PRIx64 "\"", h);
  return text;
}

ApiAnswer answer_api(const ClusterReader& reader, const ApiRequest& r) {
  const std::string prefix = "/api/v1";
  std::string path = r.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == prefix) return json_answer(index_json(), r);
  if (!path.starts_with(prefix + "/"))
    return error_answer(404, "unknown_name", "no such path: " + r.path + " (the API is under " + prefix + "/)");
  std::string rest = path.substr(prefix.size() + 1);
  if (rest == "jobs") return list_jobs(reader, r, false);
  if (rest == "queue") return list_jobs(reader, r, true);
  if (rest.starts_with("jobs/")) {
    std::string id = rest.substr(5);
    bool explain = id.ends_with("/explain");
    if (explain) id.resize(id.size() - std::string("/explain").size());
    if (id.find('/') == std::string::npos) return one_job(reader, r, id, explain);
  }
  auto no_params = [&](auto&& answer) -> ApiAnswer {
    if (auto bad = unknown_params(r, {})) return *bad;
    return answer();
  };
  if (rest == "nodes")
    return no_params([&] {
      auto nodes = reader.nodes();
      return nodes ? json_answer(nodes_json(std::move(*nodes)), r) : cluster_error(nodes.error());
    });
  if (rest == "pools")
    return no_params([&] {
      auto docs = reader.pools();
      if (!docs) return cluster_error(docs.error());
      auto j = pools_json(*docs);
      return j ? json_answer(*j, r) : cluster_error(j.error());
    });
  if (rest == "partitions")
    return no_params([&] {
      auto doc = reader.members();
      if (!doc) return cluster_error(doc.error());
      auto j = document_json(*doc, "a members view");
      return j ? json_answer(*j, r) : cluster_error(j.error());
    });
  return error_answer(404, "unknown_name", "no such path: " + r.path + " (GET " + prefix + " lists the paths)");
}

}  // namespace claimsched::apps
