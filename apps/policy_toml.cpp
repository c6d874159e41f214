#include "apps/policy_toml.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <exception>

#include "core/duration.hpp"

namespace claimsched::apps::policy_toml {

namespace {

using core::Duration;
using core::Errc;
using core::Resources;
using namespace core::policy;

/// Edit distance with transpositions (optimal string alignment): a swapped
/// pair of letters ("intreval") is one edit, as typos usually are.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string_view closest(std::string_view word, std::span<const std::string_view> candidates) {
  // Keys and names are short; anything longer is not a typo of one (and the
  // distance table stays small whatever a file holds).
  if (word.empty() || word.size() > 64) return {};
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (auto c : candidates) {
    if (c.size() > 64) continue;
    size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  size_t limit = word.size() >= 8 ? 2 : 1;
  return best_distance <= limit ? best : std::string_view{};
}

// ---------------------------------------------------------------------------
// Reader

void Reader::problem(const toml::node& at, std::string field, std::string message) {
  problem(line_of(at), std::move(field), std::move(message));
}

void Reader::problem(uint32_t line, std::string field, std::string message) {
  problems_.push_back(TomlProblem{line, std::move(field), std::move(message)});
}

std::string Reader::format(const TomlProblem& p) const {
  std::string out = source_;
  if (p.line > 0) out += ":" + std::to_string(p.line);
  out += ": ";
  if (!p.field.empty()) out += p.field + ": ";
  return out + p.message;
}

core::Error Reader::first_error() const {
  return core::make_error(Errc::parse_error, problems_.empty() ? source_ : format(problems_.front()));
}

uint32_t Reader::line_of(const toml::table& t, std::string_view key) {
  const toml::node* n = t.get(key);
  return line_of(n ? *n : static_cast<const toml::node&>(t));
}

bool Reader::keys(const toml::table& t, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
  return keys(t, path, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

bool Reader::keys(const toml::table& t, const std::string& path, std::span<const std::string_view> allowed) {
  bool ok = true;
  for (auto&& [k, v] : t) {
    if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
    ok = false;
    std::string message = "unknown key";
    if (auto near = closest(k.str(), allowed); !near.empty()) {
      message += "; did you mean '" + std::string(near) + "'?";
    } else {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      message += " (known: " + list + ")";
    }
    problem(v, join(path, k.str()), std::move(message));
  }
  return ok;
}

bool Reader::string(const toml::table& t, std::string_view key, const std::string& path, std::string& out,
                    bool required) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) problem(t, join(path, key), "is required");
    return !required;
  }
  if (!n->is_string()) {
    problem(*n, join(path, key), "expected a string");
    return false;
  }
  out = *n->value<std::string>();
  return true;
}

bool Reader::integer(const toml::table& t, std::string_view key, const std::string& path, int64_t& out,
                     int64_t lo, int64_t hi, bool required) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) problem(t, join(path, key), "is required");
    return !required;
  }
  if (!n->is_integer()) {
    problem(*n, join(path, key), "expected an integer");
    return false;
  }
  int64_t v = *n->value<int64_t>();
  if (v < lo || v > hi) {
    problem(*n, join(path, key),
            "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    return false;
  }
  out = v;
  return true;
}

bool Reader::number(const toml::table& t, std::string_view key, const std::string& path, double& out) {
  const toml::node* n = t.get(key);
  if (!n) return true;
  if (!n->is_number()) {
    problem(*n, join(path, key), "expected a number");
    return false;
  }
  out = *n->value<double>();
  return true;
}

bool Reader::boolean(const toml::table& t, std::string_view key, const std::string& path, bool& out) {
  const toml::node* n = t.get(key);
  if (!n) return true;
  if (!n->is_boolean()) {
    problem(*n, join(path, key), "expected true or false");
    return false;
  }
  out = *n->value<bool>();
  return true;
}

bool Reader::duration(const toml::table& t, std::string_view key, const std::string& path, Duration& out,
                      bool required) {
  std::string text;
  if (!string(t, key, path, text, required)) return false;
  if (!t.get(key)) return true;
  auto d = core::parse_duration(text);
  if (!d) {
    problem(*t.get(key), join(path, key), d.error().message);
    return false;
  }
  out = *d;
  return true;
}

bool Reader::resources(const toml::table& t, std::string_view key, const std::string& path, Resources& out,
                       bool required) {
  std::string text;
  if (!string(t, key, path, text, required)) return false;
  if (!t.get(key)) return true;
  auto r = Resources::parse(text);
  if (!r) {
    problem(*t.get(key), join(path, key), r.error().message);
    return false;
  }
  out = *r;
  return true;
}

bool Reader::limits(const toml::table& t, std::string_view key, const std::string& path, Limits& out) {
  std::string text;
  if (!string(t, key, path, text)) return false;
  if (!t.get(key)) return true;
  auto l = Limits::parse(text);
  if (!l) {
    problem(*t.get(key), join(path, key), l.error().message);
    return false;
  }
  out = *l;
  return true;
}

bool Reader::strings(const toml::table& t, std::string_view key, const std::string& path,
                     std::vector<std::string>& out) {
  const toml::node* n = t.get(key);
  if (!n) return true;
  const toml::array* a = n->as_array();
  if (!a) {
    problem(*n, join(path, key), "expected an array of strings");
    return false;
  }
  std::vector<std::string> values;
  for (auto&& e : *a) {
    if (!e.is_string()) {
      problem(e, join(path, key), "expected an array of strings");
      return false;
    }
    values.push_back(*e.value<std::string>());
  }
  out.insert(out.end(), values.begin(), values.end());
  return true;
}

std::vector<const toml::table*> Reader::tables(const toml::table& t, std::string_view key,
                                               const std::string& path) {
  std::vector<const toml::table*> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) {
    problem(*n, join(path, key), "expected an array of tables ([[" + std::string(key) + "]])");
    return out;
  }
  for (auto&& e : *a) {
    if (!e.is_table()) {
      problem(e, join(path, key), "expected tables");
      continue;
    }
    out.push_back(e.as_table());
  }
  return out;
}

const toml::table* Reader::table(const toml::table& t, std::string_view key, const std::string& path) {
  const toml::node* n = t.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) {
    problem(*n, join(path, key), "expected a table");
    return nullptr;
  }
  return n->as_table();
}

std::optional<toml::table> parse(std::string_view text, Reader& r) {
  try {
    return toml::parse(text, r.source());
  } catch (const toml::parse_error& e) {
    r.problem(e.source().begin.line, "", std::string(e.description()));
  } catch (const std::exception& e) {
    // toml++ throws only parse_error; anything else (out of memory) is still
    // a file we cannot read, not a crash.
    r.problem(0, "", std::string("cannot parse: ") + e.what());
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The shared sections.

void read_preemption(Reader& r, const toml::table& t, PreemptionSettings& p) {
  const std::string path = "preemption";
  r.keys(t, path,
         {"fair_share_starvation_timeout", "fair_share_aggressive_starvation_timeout",
          "fair_share_starvation_tolerance", "enable_aggressive_starvation", "enable_pool_starvation",
          "preemption_satisfaction_threshold", "aggressive_preemption_satisfaction_threshold",
          "non_preemptible_resource_usage_threshold", "preemptive_scheduling_backoff",
          "allocation_preemption_timeout"});
  size_t before = r.problems().size();
  r.duration(t, "fair_share_starvation_timeout", path, p.fair_share_starvation_timeout);
  r.duration(t, "fair_share_aggressive_starvation_timeout", path, p.fair_share_aggressive_starvation_timeout);
  r.number(t, "fair_share_starvation_tolerance", path, p.fair_share_starvation_tolerance);
  r.boolean(t, "enable_aggressive_starvation", path, p.enable_aggressive_starvation);
  r.boolean(t, "enable_pool_starvation", path, p.enable_pool_starvation);
  r.number(t, "preemption_satisfaction_threshold", path, p.preemption_satisfaction_threshold);
  r.number(t, "aggressive_preemption_satisfaction_threshold", path,
           p.aggressive_preemption_satisfaction_threshold);
  r.limits(t, "non_preemptible_resource_usage_threshold", path, p.non_preemptible_resource_usage_threshold);
  r.duration(t, "preemptive_scheduling_backoff", path, p.preemptive_scheduling_backoff);
  r.duration(t, "allocation_preemption_timeout", path, p.allocation_preemption_timeout);
  // The ranges and the relation between the thresholds, once every value read.
  if (r.problems().size() == before)
    if (auto s = p.validate(); !s) r.problem(t, path, s.error().message);
}

void read_settings(Reader& r, const toml::table& t, PolicySettings& s) {
  const std::string path = "settings";
  r.keys(t, path, {"quantum", "defragmentation", "default_class", "global_allotment"});
  if (const toml::node* q = t.get("quantum")) {
    if (q->is_integer()) {
      if (*q->value<int64_t>() < 0)
        r.problem(*q, "settings.quantum", "must not be negative");
      else
        s.quantum = *q->value<int64_t>();
    } else if (q->is_string()) {
      auto v = core::parse_quantity(core::dim::memory, *q->value<std::string>());
      if (!v)
        r.problem(*q, "settings.quantum", v.error().message);
      else if (*v < 0)
        r.problem(*q, "settings.quantum", "must not be negative");
      else
        s.quantum = *v;
    } else {
      r.problem(*q, "settings.quantum", "expected a memory size like \"15Gi\"");
    }
  }
  r.boolean(t, "defragmentation", path, s.defragmentation);
  r.string(t, "default_class", path, s.default_class);
  r.limits(t, "global_allotment", path, s.global_allotment);
}

void read_pools(Reader& r, const toml::table& root, std::vector<PoolSpec>& out,
                std::vector<const toml::table*>* where) {
  auto pools = r.tables(root, "pools", "");
  for (size_t i = 0; i < pools.size(); ++i) {
    const auto& t = *pools[i];
    std::string path = Reader::item("pools", i);
    r.keys(t, path,
           {"name", "parent", "resource_limits", "fair_share_starvation_timeout",
            "fair_share_aggressive_starvation_timeout", "fair_share_starvation_tolerance",
            "enable_aggressive_starvation"});
    PoolSpec p;
    r.string(t, "name", path, p.name, true);
    r.string(t, "parent", path, p.parent);
    r.limits(t, "resource_limits", path, p.resource_limits);
    if (t.get("fair_share_starvation_timeout")) {
      Duration d{};
      if (r.duration(t, "fair_share_starvation_timeout", path, d))
        p.overrides.fair_share_starvation_timeout = d;
    }
    if (t.get("fair_share_aggressive_starvation_timeout")) {
      Duration d{};
      if (r.duration(t, "fair_share_aggressive_starvation_timeout", path, d))
        p.overrides.fair_share_aggressive_starvation_timeout = d;
    }
    if (t.get("fair_share_starvation_tolerance")) {
      double v = 0;
      if (r.number(t, "fair_share_starvation_tolerance", path, v))
        p.overrides.fair_share_starvation_tolerance = v;
    }
    if (t.get("enable_aggressive_starvation")) {
      bool v = false;
      if (r.boolean(t, "enable_aggressive_starvation", path, v)) p.overrides.enable_aggressive_starvation = v;
    }
    out.push_back(std::move(p));
    if (where) where->push_back(&t);
  }
}

/// Ganeti's job queue settings of a class (deploy/CONFIG.md).
static void read_lock_queue(Reader& r, const toml::table& t, const std::string& path, core::LockQueueSettings& q) {
  std::string order(core::to_string(q.order));
  if (r.string(t, "order", path, order)) {
    if (auto o = core::parse_queue_order(order))
      q.order = *o;
    else
      r.problem(*t.get("order"), path + ".order", "expected \"fifo\" or \"predictive\", got \"" + order + "\"");
  }
  int64_t v = q.running_limit;
  if (r.integer(t, "running_limit", path, v, 0, 1'000'000)) q.running_limit = static_cast<uint32_t>(v);
  double base = static_cast<double>(q.base_value) / core::kTenths;
  if (r.number(t, "base_value", path, base)) {
    double tenths = base * core::kTenths;
    if (base < 0 || base > 1000 || std::abs(tenths - std::round(tenths)) > 1e-6)
      r.problem(*t.get("base_value"), path + ".base_value", "expected 0..1000 in steps of 0.1");
    else
      q.base_value = static_cast<core::LockWeight>(std::lround(tenths));
  }
  r.duration(t, "aging_tick", path, q.aging_tick);
  if (t.get("aging_tick") && q.aging_tick.count() <= 0) r.problem(*t.get("aging_tick"), path + ".aging_tick", "must be positive");
  v = q.aging_k;
  if (r.integer(t, "aging_k", path, v, 1, 1'000'000)) q.aging_k = static_cast<uint32_t>(v);
}

void read_classes(Reader& r, const toml::table& root, std::vector<ClassSpec>& out,
                  std::vector<const toml::table*>* where, std::span<const std::string_view> extra_keys) {
  static constexpr std::string_view kKeys[] = {"name",
                                               "priority",
                                               "weight",
                                               "policy",
                                               "pool",
                                               "allotment",
                                               "user_allotment",
                                               "initialization_cap",
                                               "expand_by_doubling",
                                               "prediction",
                                               "prediction_fudge",
                                               "order",
                                               "running_limit",
                                               "base_value",
                                               "aging_tick",
                                               "aging_k",
                                               "backfill"};
  std::vector<std::string_view> allowed(std::begin(kKeys), std::end(kKeys));
  allowed.insert(allowed.end(), extra_keys.begin(), extra_keys.end());
  auto classes = r.tables(root, "classes", "");
  for (size_t i = 0; i < classes.size(); ++i) {
    const auto& t = *classes[i];
    std::string path = Reader::item("classes", i);
    r.keys(t, path, allowed);
    ClassSpec c;
    r.string(t, "name", path, c.name, true);
    int64_t v = c.priority;
    if (r.integer(t, "priority", path, v, INT32_MIN, INT32_MAX)) c.priority = static_cast<int32_t>(v);
    v = c.weight;
    if (r.integer(t, "weight", path, v, 1, 1'000'000)) c.weight = static_cast<uint32_t>(v);
    std::string policy = "fair_share";
    if (r.string(t, "policy", path, policy)) {
      if (auto pol = parse_class_policy(policy))
        c.policy = *pol;
      else
        r.problem(*t.get("policy"), path + ".policy", pol.error().message);
    }
    r.string(t, "pool", path, c.pool, true);
    r.limits(t, "allotment", path, c.allotment);
    if (const toml::table* overrides = r.table(t, "user_allotment", path)) {
      for (auto&& [user, value] : *overrides) {
        std::string at = path + ".user_allotment." + std::string(user.str());
        if (!value.is_string()) {
          r.problem(value, at, "expected a string like \"memory=64Gi\"");
          continue;
        }
        auto l = Limits::parse(*value.value<std::string>());
        if (!l) {
          r.problem(value, at, l.error().message);
          continue;
        }
        c.user_allotments.emplace_back(std::string(user.str()), *l);
      }
    }
    v = c.initialization_cap;
    if (r.integer(t, "initialization_cap", path, v, 0, 10'000'000))
      c.initialization_cap = static_cast<uint32_t>(v);
    r.boolean(t, "expand_by_doubling", path, c.expand_by_doubling);
    r.boolean(t, "prediction", path, c.prediction);
    r.duration(t, "prediction_fudge", path, c.prediction_fudge);
    read_lock_queue(r, t, path, c.queue);
    std::string backfill(core::to_string(c.backfill));
    if (r.string(t, "backfill", path, backfill)) {
      if (auto m = core::parse_backfill_mode(backfill))
        c.backfill = *m;
      else
        r.problem(*t.get("backfill"), path + ".backfill", m.error().message);
    }
    out.push_back(std::move(c));
    if (where) where->push_back(&t);
  }
}

void read_users(Reader& r, const toml::table& root, std::vector<UserSpec>& out,
                std::vector<const toml::table*>* where) {
  auto users = r.tables(root, "users", "");
  for (size_t i = 0; i < users.size(); ++i) {
    const auto& t = *users[i];
    std::string path = Reader::item("users", i);
    r.keys(t, path, {"name", "allotment"});
    UserSpec u;
    r.string(t, "name", path, u.name, true);
    if (t.get("allotment")) {
      Limits l;
      if (r.limits(t, "allotment", path, l)) u.allotment = l;
    }
    out.push_back(std::move(u));
    if (where) where->push_back(&t);
  }
}

}  // namespace claimsched::apps::policy_toml
