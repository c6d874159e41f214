#include "apps/job_file.hpp"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "core/duration.hpp"

namespace claimsched::apps {

namespace {

using core::Errc;
using core::make_error;

/// A key/value view over either format, so both read the same keys the same way.
class Fields {
 public:
  virtual ~Fields() = default;
  virtual bool has(std::string_view key) const = 0;
  virtual core::Expected<std::string> string(std::string_view key) const = 0;
  virtual core::Expected<int64_t> integer(std::string_view key) const = 0;
  virtual core::Expected<bool> boolean(std::string_view key) const = 0;
  virtual core::Expected<std::vector<std::string>> strings(std::string_view key) const = 0;
  virtual core::Expected<std::vector<std::pair<std::string, std::string>>> table(std::string_view key) const = 0;
  virtual std::vector<std::string> keys() const = 0;
  virtual std::string where(std::string_view key) const = 0;
};

class TomlFields : public Fields {
 public:
  TomlFields(const toml::table& t, std::string source) : t_(t), source_(std::move(source)) {}
  bool has(std::string_view key) const override { return t_.contains(key); }
  std::string where(std::string_view key) const override {
    auto* n = t_.get(key);
    if (!n) return source_;
    return source_ + ":" + std::to_string(n->source().begin.line);
  }
  core::Expected<std::string> string(std::string_view key) const override {
    if (auto v = t_[key].value<std::string>()) return *v;
    return wrong(key, "a string");
  }
  core::Expected<int64_t> integer(std::string_view key) const override {
    if (auto v = t_[key].value<int64_t>()) return *v;
    return wrong(key, "an integer");
  }
  core::Expected<bool> boolean(std::string_view key) const override {
    if (auto v = t_[key].value<bool>()) return *v;
    return wrong(key, "true or false");
  }
  core::Expected<std::vector<std::string>> strings(std::string_view key) const override {
    auto* a = t_[key].as_array();
    if (!a) return wrong(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& e : *a) {
      auto v = e.value<std::string>();
      if (!v) return wrong(key, "an array of strings");
      out.push_back(*v);
    }
    return out;
  }
  core::Expected<std::vector<std::pair<std::string, std::string>>> table(std::string_view key) const override {
    auto* tab = t_[key].as_table();
    if (!tab) return wrong(key, "a table of strings");
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : *tab) {
      auto s = v.value<std::string>();
      if (!s) return wrong(key, "a table of strings");
      out.emplace_back(std::string(k.str()), *s);
    }
    return out;
  }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    for (const auto& [k, v] : t_) out.emplace_back(k.str());
    return out;
  }

 private:
  core::Error wrong(std::string_view key, const char* what) const {
    return make_error(Errc::invalid_argument, where(key) + ": job field '" + std::string(key) + "' must be " + what);
  }
  const toml::table& t_;
  std::string source_;
};

class JsonFields : public Fields {
 public:
  JsonFields(const nlohmann::json& j, std::string source) : j_(j), source_(std::move(source)) {}
  bool has(std::string_view key) const override { return j_.contains(std::string(key)); }
  std::string where(std::string_view) const override { return source_; }
  core::Expected<std::string> string(std::string_view key) const override {
    const auto& v = j_.at(std::string(key));
    if (v.is_string()) return v.get<std::string>();
    return wrong(key, "a string");
  }
  core::Expected<int64_t> integer(std::string_view key) const override {
    const auto& v = j_.at(std::string(key));
    if (v.is_number_integer()) return v.get<int64_t>();
    return wrong(key, "an integer");
  }
  core::Expected<bool> boolean(std::string_view key) const override {
    const auto& v = j_.at(std::string(key));
    if (v.is_boolean()) return v.get<bool>();
    return wrong(key, "true or false");
  }
  core::Expected<std::vector<std::string>> strings(std::string_view key) const override {
    const auto& v = j_.at(std::string(key));
    if (!v.is_array()) return wrong(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.is_string()) return wrong(key, "an array of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  core::Expected<std::vector<std::pair<std::string, std::string>>> table(std::string_view key) const override {
    const auto& v = j_.at(std::string(key));
    if (!v.is_object()) return wrong(key, "an object of strings");
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it.value().is_string()) return wrong(key, "an object of strings");
      out.emplace_back(it.key(), it.value().get<std::string>());
    }
    return out;
  }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    for (auto it = j_.begin(); it != j_.end(); ++it) out.push_back(it.key());
    return out;
  }

 private:
  core::Error wrong(std::string_view key, const char* what) const {
    return make_error(Errc::invalid_argument, source_ + ": job field '" + std::string(key) + "' must be " + what);
  }
  const nlohmann::json& j_;
  std::string source_;
};

#define CLAIMSCHED_FIELD(expr, target)   \
  do {                                  \
    auto v_ = (expr);                   \
    if (!v_) return v_.error();         \
    target = std::move(*v_);            \
  } while (false)

core::Expected<core::JobSpec> read_job(const Fields& f) {
  static const char* kKnown[] = {"name", "user", "class", "pool", "count", "resources", "command", "env",
                                 "workdir", "max_run_time", "max_retries", "max_lost_retries", "gang",
                                 "preemptible", "constraints", "duration"};
  for (const auto& k : f.keys())
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown))
      return make_error(Errc::invalid_argument, f.where(k) + ": unknown job field '" + k + "'");
  core::JobSpec j;
  auto bad = [&](std::string_view key, std::string why) {
    return make_error(Errc::invalid_argument, f.where(key) + ": job field '" + std::string(key) + "': " + why);
  };
  if (f.has("name")) CLAIMSCHED_FIELD(f.string("name"), j.name);
  if (f.has("user")) CLAIMSCHED_FIELD(f.string("user"), j.user);
  if (f.has("class")) CLAIMSCHED_FIELD(f.string("class"), j.job_class);
  if (f.has("pool")) CLAIMSCHED_FIELD(f.string("pool"), j.pool);
  if (f.has("count")) {
    int64_t n = 0;
    CLAIMSCHED_FIELD(f.integer("count"), n);
    if (n < 1 || n > core::kMaxTasksPerJob) return bad("count", "must be in 1.." + std::to_string(core::kMaxTasksPerJob));
    j.count = static_cast<uint32_t>(n);
  }
  if (f.has("resources")) {
    std::string text;
    CLAIMSCHED_FIELD(f.string("resources"), text);
    auto r = core::Resources::parse(text);
    if (!r) return bad("resources", r.error().message);
    j.per_task = *r;
  }
  if (f.has("command")) CLAIMSCHED_FIELD(f.strings("command"), j.command);
  if (f.has("env")) CLAIMSCHED_FIELD(f.table("env"), j.env);
  if (f.has("workdir")) CLAIMSCHED_FIELD(f.string("workdir"), j.workdir);
  for (const char* key : {"max_run_time", "duration"}) {
    if (!f.has(key)) continue;
    std::string text;
    CLAIMSCHED_FIELD(f.string(key), text);
    auto d = core::parse_duration(text);
    if (!d) return bad(key, d.error().message);
    (std::string_view(key) == "duration" ? j.simulated_runtime : j.max_run_time) = *d;
  }
  for (const char* key : {"max_retries", "max_lost_retries"}) {
    if (!f.has(key)) continue;
    int64_t n = 0;
    CLAIMSCHED_FIELD(f.integer(key), n);
    if (n < 0 || n > 1000) return bad(key, "must be in 0..1000");
    (std::string_view(key) == "max_retries" ? j.max_retries : j.max_lost_retries) = static_cast<uint32_t>(n);
  }
  if (f.has("gang")) CLAIMSCHED_FIELD(f.boolean("gang"), j.gang);
  if (f.has("preemptible")) CLAIMSCHED_FIELD(f.boolean("preemptible"), j.preemptible);
  if (f.has("constraints")) CLAIMSCHED_FIELD(f.strings("constraints"), j.constraints);
  return j;
}

#undef CLAIMSCHED_FIELD

}  // namespace

core::Expected<core::JobSpec> parse_job_file(std::string_view text, std::string_view source) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(Errc::parse_error, std::string(source) + ": not a JSON object");
    return read_job(JsonFields(j, std::string(source)));
  }
  try {
    toml::table t = toml::parse(text, source);
    return read_job(TomlFields(t, std::string(source)));
  } catch (const toml::parse_error& e) {
    return make_error(Errc::parse_error, std::string(source) + ":" + std::to_string(e.source().begin.line) +
                                             ": " + std::string(e.description()));
  }
}

}  // namespace claimsched::apps
