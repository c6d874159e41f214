#pragma once

// Reading claimsched's TOML files: the pools, classes, users, [settings] and
// [preemption] sections that `claimsched policy eval` snapshots
// (deploy/POLICY.md) and the cluster configuration (deploy/CONFIG.md) share,
// and the Reader both use.
//
// The Reader collects problems instead of stopping at the first: a config
// check names every problem of a file at once, each with its line. Every
// reader below records what is wrong and goes on with what it can read; a
// value that is wrong leaves its target unchanged (its default). A caller that
// wants the first problem only (policy eval) takes first_error().

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/policy/model.hpp"
#include "core/resources.hpp"

namespace claimsched::apps::policy_toml {

/// One problem: the line (1-based; 0 for the file as a whole), the dotted
/// field ("pools[1].parent") and what is wrong.
struct TomlProblem {
  uint32_t line = 0;
  std::string field;
  std::string message;
};

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  const std::string& source() const { return source_; }
  const std::vector<TomlProblem>& problems() const { return problems_; }
  bool ok() const { return problems_.empty(); }

  /// Records a problem at the line of `at`.
  void problem(const toml::node& at, std::string field, std::string message);
  void problem(uint32_t line, std::string field, std::string message);

  /// "source:line: field: message" (parts that are empty or 0 left out).
  std::string format(const TomlProblem& p) const;
  /// The first problem as a parse_error; only when !ok().
  core::Error first_error() const;

  /// Unknown keys are usually typos: each one is a problem, with the closest
  /// known key when one is near ("did you mean ...").
  bool keys(const toml::table& t, const std::string& path, std::initializer_list<std::string_view> allowed);
  bool keys(const toml::table& t, const std::string& path, std::span<const std::string_view> allowed);

  // Typed values. Absent: true and `out` unchanged (a problem if `required`).
  // Present but wrong: a problem, false, `out` unchanged.
  bool string(const toml::table& t, std::string_view key, const std::string& path, std::string& out,
              bool required = false);
  bool integer(const toml::table& t, std::string_view key, const std::string& path, int64_t& out, int64_t lo,
               int64_t hi, bool required = false);
  bool number(const toml::table& t, std::string_view key, const std::string& path, double& out);
  bool boolean(const toml::table& t, std::string_view key, const std::string& path, bool& out);
  /// Durations and times are strings with a unit ("30s", "2h"): a bare
  /// number would leave the unit to a guess.
  bool duration(const toml::table& t, std::string_view key, const std::string& path, core::Duration& out,
                bool required = false);
  bool resources(const toml::table& t, std::string_view key, const std::string& path, core::Resources& out,
                 bool required = false);
  bool limits(const toml::table& t, std::string_view key, const std::string& path, core::policy::Limits& out);
  /// An array of strings; on a problem `out` is unchanged.
  bool strings(const toml::table& t, std::string_view key, const std::string& path,
               std::vector<std::string>& out);
  /// An array of tables (`[[jobs]]` or `jobs = [{...}, ...]`); missing is
  /// empty; elements that are not tables are problems and left out.
  std::vector<const toml::table*> tables(const toml::table& t, std::string_view key, const std::string& path);
  /// A sub-table; nullptr when missing or not a table (a problem).
  const toml::table* table(const toml::table& t, std::string_view key, const std::string& path);

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  static std::string item(std::string_view what, size_t i) {
    return std::string(what) + "[" + std::to_string(i) + "]";
  }
  static uint32_t line_of(const toml::node& n) { return n.source().begin.line; }
  /// The line of `key` in `t`, or of `t` itself when the key is absent.
  static uint32_t line_of(const toml::table& t, std::string_view key);

 private:
  std::string source_;
  std::vector<TomlProblem> problems_;
};

/// The candidate closest to `word` when it is near enough to be a typo of it
/// (at most 1 edit, 2 for words of 8 or more characters); empty otherwise.
std::string_view closest(std::string_view word, std::span<const std::string_view> candidates);

/// Parses TOML text. A syntax error is recorded (with the parser's line)
/// and gives nullopt. Never throws.
std::optional<toml::table> parse(std::string_view text, Reader& r);

/// [settings] and [preemption] (`t` is the section's table).
void read_settings(Reader& r, const toml::table& t, core::policy::PolicySettings& out);
void read_preemption(Reader& r, const toml::table& t, core::policy::PreemptionSettings& out);

/// [[pools]], [[classes]] and [[users]] of `root`, appended to `out`, one per
/// table (even one with problems). `where`, when given, receives each one's
/// table, for callers that check more and need lines. `extra_keys` are keys
/// of [[classes]] the caller reads itself (the cluster config's `scorer`).
void read_pools(Reader& r, const toml::table& root, std::vector<core::policy::PoolSpec>& out,
                std::vector<const toml::table*>* where = nullptr);
void read_classes(Reader& r, const toml::table& root, std::vector<core::policy::ClassSpec>& out,
                  std::vector<const toml::table*>* where = nullptr,
                  std::span<const std::string_view> extra_keys = {});
void read_users(Reader& r, const toml::table& root, std::vector<core::policy::UserSpec>& out,
                std::vector<const toml::table*>* where = nullptr);

}  // namespace claimsched::apps::policy_toml
