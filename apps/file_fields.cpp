#include "apps/file_fields.hpp"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

namespace claimsched::apps {

namespace {

using core::Errc;
using core::make_error;

class TomlFields : public Fields {
 public:
  TomlFields(const toml::table& t, std::string source, std::string noun)
      : t_(t), source_(std::move(source)), noun_(std::move(noun)) {}
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
    return make_error(Errc::invalid_argument, where(key) + ": " + noun_ + " field '" + std::string(key) + "' must be " + what);
  }
  const toml::table& t_;
  std::string source_;
  std::string noun_;
};

class JsonFields : public Fields {
 public:
  JsonFields(const nlohmann::json& j, std::string source, std::string noun)
      : j_(j), source_(std::move(source)), noun_(std::move(noun)) {}
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
    return make_error(Errc::invalid_argument, source_ + ": " + noun_ + " field '" + std::string(key) + "' must be " + what);
  }
  const nlohmann::json& j_;
  std::string source_;
  std::string noun_;
};

}  // namespace

core::Status read_fields(std::string_view text, std::string_view source, std::string_view noun,
                         const std::function<core::Status(const Fields&)>& read) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(Errc::parse_error, std::string(source) + ": not a JSON object");
    return read(JsonFields(j, std::string(source), std::string(noun)));
  }
  try {
    toml::table t = toml::parse(text, source);
    return read(TomlFields(t, std::string(source), std::string(noun)));
  } catch (const toml::parse_error& e) {
    return make_error(Errc::parse_error, std::string(source) + ":" + std::to_string(e.source().begin.line) +
                                             ": " + std::string(e.description()));
  }
}

}  // namespace claimsched::apps
