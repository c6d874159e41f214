#include "core/locks/declaration.hpp"

#include <algorithm>

namespace claimsched::core {

namespace {

constexpr std::array<std::string_view, kLockLevels> kLevelNames{"group", "instance", "node", "node_res", "network"};
constexpr std::array<std::string_view, kLockModes> kModeNames{
    "none", "shared", "unknown-shared", "all-shared", "exclusive", "unknown-exclusive", "all-exclusive"};

Error lock_error(std::string_view clause, const std::string& why) {
  return make_error(Errc::invalid_argument, "lock '" + std::string(clause) + "': " + why);
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 256) return false;
  return std::none_of(n.begin(), n.end(), [](char c) {
    return c == ',' || c == '=' || c == ':' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
  });
}

Status check_level(std::string_view clause, const LevelLock& l) {
  if (is_named(l.mode)) {
    if (l.names.empty())
      return lock_error(clause, std::string(to_string(l.mode)) + " needs at least one name (or use unknown-" +
                                    std::string(to_string(l.mode)) + " / all-" + std::string(to_string(l.mode)) + ")");
    for (const auto& n : l.names) {
      if (n == "all")
        return lock_error(clause, "names and 'all' mixed: use all-" + std::string(to_string(l.mode)) + " alone");
      if (!valid_name(n)) return lock_error(clause, "bad name '" + n + "' (1-256 characters, no spaces , = :)");
    }
    if (!std::is_sorted(l.names.begin(), l.names.end()) ||
        std::adjacent_find(l.names.begin(), l.names.end()) != l.names.end())
      return lock_error(clause, "names must be sorted and distinct");
  } else if (!l.names.empty()) {
    return lock_error(clause, std::string(to_string(l.mode)) + " takes no names (names and 'all' mixed?)");
  }
  return Status::ok();
}

}  // namespace

std::string_view to_string(LockLevel level) { return kLevelNames[static_cast<size_t>(level)]; }

std::optional<LockLevel> parse_lock_level(std::string_view text) {
  for (size_t i = 0; i < kLockLevels; ++i)
    if (kLevelNames[i] == text) return static_cast<LockLevel>(i);
  if (text == "nodegroup" || text == "pool") return LockLevel::group;
  if (text == "node-res") return LockLevel::node_res;
  return std::nullopt;
}

std::string_view to_string(LockMode mode) { return kModeNames[static_cast<size_t>(mode)]; }

std::optional<LockMode> parse_lock_mode(std::string_view text) {
  for (size_t i = 0; i < kLockModes; ++i)
    if (kModeNames[i] == text) return static_cast<LockMode>(i);
  return std::nullopt;
}

LevelLock LevelLock::of(LockMode mode, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return LevelLock{mode, std::move(names)};
}

std::string LevelLock::to_string() const {
  std::string s(core::to_string(mode));
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? ":" : ",") + names[i];
  return s;
}

bool names_meet(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  auto i = a.begin(), j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j)
      ++i;
    else
      ++j;
  }
  return false;
}

bool LockDeclaration::empty() const {
  return !bgl && std::all_of(levels.begin(), levels.end(), [](const LevelLock& l) { return l.mode == LockMode::none; });
}

bool LockDeclaration::has_unknown() const {
  return std::any_of(levels.begin(), levels.end(), [](const LevelLock& l) { return is_unknown(l.mode); });
}

std::string LockDeclaration::to_string() const {
  if (bgl) return "bgl";
  std::string s;
  for (LockLevel level : kAllLockLevels) {
    const LevelLock& l = (*this)[level];
    if (l.mode == LockMode::none) continue;
    if (!s.empty()) s += ' ';
    s += std::string(core::to_string(level)) + "=" + l.to_string();
  }
  return s;
}

Status add_lock_clause(LockDeclaration& into, std::string_view clause) {
  if (clause == "bgl") {
    if (!into.empty() && !into.bgl) return lock_error(clause, "bgl takes every lock: declare nothing else with it");
    into.bgl = true;
    return Status::ok();
  }
  if (into.bgl) return lock_error(clause, "bgl takes every lock: declare nothing else with it");
  auto eq = clause.find('=');
  if (eq == std::string_view::npos)
    return lock_error(clause, "expected LEVEL=MODE[:NAMES] or bgl (levels: group, instance, node, node_res, network)");
  auto level = parse_lock_level(clause.substr(0, eq));
  if (!level)
    return lock_error(clause, "unknown level '" + std::string(clause.substr(0, eq)) +
                                  "' (group, instance, node, node_res, network)");
  std::string_view rest = clause.substr(eq + 1);
  auto colon = rest.find(':');
  std::string_view mode_text = rest.substr(0, colon);
  auto mode = parse_lock_mode(mode_text);
  if (!mode)
    return lock_error(clause, "unknown mode '" + std::string(mode_text) +
                                  "' (none, shared, unknown-shared, all-shared, exclusive, unknown-exclusive, "
                                  "all-exclusive)");
  std::vector<std::string> names;
  if (colon != std::string_view::npos) {
    std::string_view list = rest.substr(colon + 1);
    if (list.empty()) return lock_error(clause, "empty name list");
    size_t start = 0;
    while (true) {
      size_t comma = list.find(',', start);
      std::string_view name = list.substr(start, comma == std::string_view::npos ? list.size() - start : comma - start);
      if (name.empty()) return lock_error(clause, "empty name in the list");
      names.emplace_back(name);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  LevelLock l = LevelLock::of(*mode, std::move(names));
  if (auto st = check_level(clause, l); !st) return st;
  LevelLock& slot = into[*level];
  if (slot.mode != LockMode::none)
    return lock_error(clause, "level " + std::string(to_string(*level)) + " given twice");
  slot = std::move(l);
  return Status::ok();
}

Expected<LockDeclaration> parse_lock_declaration(std::string_view text) {
  LockDeclaration d;
  size_t start = 0;
  while (start < text.size()) {
    if (text[start] == ' ') {
      ++start;
      continue;
    }
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    if (auto st = add_lock_clause(d, text.substr(start, end - start)); !st) return st.error();
    start = end;
  }
  return d;
}

Status validate(const LockDeclaration& d) {
  if (d.bgl && !d.empty() &&
      std::any_of(d.levels.begin(), d.levels.end(), [](const LevelLock& l) { return l.mode != LockMode::none; }))
    return lock_error("bgl", "bgl takes every lock: declare nothing else with it");
  for (LockLevel level : kAllLockLevels) {
    const LevelLock& l = d[level];
    if (auto st = check_level(std::string(to_string(level)) + "=" + l.to_string(), l); !st) return st;
  }
  return Status::ok();
}

}  // namespace claimsched::core
