#pragma once

// Lock declarations (Ganeti's predictive queue, seeds/ganeti-predictive-queue.txt):
// what a job says it will lock, per level, before it runs. Five levels plus
// the big lock (bgl), which conflicts with every job that declares a lock.
//
// Text form, one clause per level (the CLI's --lock, the job file's `locks`):
//   LEVEL=MODE[:NAME,NAME...]   e.g. node=exclusive:n1,n2  instance=unknown-shared
//   bgl
// LEVEL: group, instance, node, node_res, network. MODE: none, shared,
// unknown-shared, all-shared, exclusive, unknown-exclusive, all-exclusive;
// names only (and at least one) with shared and exclusive.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace claimsched::core {

/// The levels, in the order a lock manager takes them (the fixed order that
/// rules out deadlock).
enum class LockLevel : uint8_t { group = 0, instance, node, node_res, network };
inline constexpr size_t kLockLevels = 5;
inline constexpr std::array<LockLevel, kLockLevels> kAllLockLevels{
    LockLevel::group, LockLevel::instance, LockLevel::node, LockLevel::node_res, LockLevel::network};
std::string_view to_string(LockLevel level);
std::optional<LockLevel> parse_lock_level(std::string_view text);

/// The seven lock types of the seed, in its table's order.
enum class LockMode : uint8_t {
  none = 0,
  /// Shared(k): these names, shared.
  shared,
  /// At least one name, shared, which is not known before the job runs.
  unknown_shared,
  all_shared,
  /// Exclusive(k): these names, exclusive.
  exclusive,
  unknown_exclusive,
  all_exclusive,
};
inline constexpr size_t kLockModes = 7;
std::string_view to_string(LockMode mode);
std::optional<LockMode> parse_lock_mode(std::string_view text);
inline bool is_named(LockMode m) { return m == LockMode::shared || m == LockMode::exclusive; }
inline bool is_exclusive(LockMode m) { return m >= LockMode::exclusive; }
inline bool is_unknown(LockMode m) { return m == LockMode::unknown_shared || m == LockMode::unknown_exclusive; }

/// One level's lock: a mode and, for shared/exclusive, the names (sorted,
/// without repeats).
struct LevelLock {
  LockMode mode = LockMode::none;
  std::vector<std::string> names;

  static LevelLock of(LockMode mode, std::vector<std::string> names = {});
  /// "exclusive:n1,n2", "unknown-shared", "none".
  std::string to_string() const;
  friend bool operator==(const LevelLock&, const LevelLock&) = default;
};

/// True when some name is in both sorted lists (the seed's "j = i": with
/// lists of names, two named locks meet when they share a name).
bool names_meet(const std::vector<std::string>& a, const std::vector<std::string>& b);

struct LockDeclaration {
  /// The big lock: every lock at once.
  bool bgl = false;
  std::array<LevelLock, kLockLevels> levels;

  const LevelLock& operator[](LockLevel l) const { return levels[static_cast<size_t>(l)]; }
  LevelLock& operator[](LockLevel l) { return levels[static_cast<size_t>(l)]; }
  /// Declares nothing: the job takes no part in locking.
  bool empty() const;
  /// Some level is unknown-shared or unknown-exclusive.
  bool has_unknown() const;
  /// The text form, clauses separated by spaces ("" when empty).
  std::string to_string() const;
  friend bool operator==(const LockDeclaration&, const LockDeclaration&) = default;
};

/// Parses one clause ("node=exclusive:n1,n2" or "bgl") into `into`. Errors
/// name the clause: unknown level or mode, a level given twice, names with a
/// mode that takes none ("all" and names mixed), shared/exclusive without
/// names, bgl with other clauses.
Status add_lock_clause(LockDeclaration& into, std::string_view clause);
/// Parses clauses separated by spaces, commas between names only.
Expected<LockDeclaration> parse_lock_declaration(std::string_view text);
/// Checks a declaration built in code or received (the same rules).
Status validate(const LockDeclaration& d);

}  // namespace claimsched::core
