#include "core/locks/lock_manager.hpp"

#include "core/locks/operations.hpp"

namespace claimsched::core {

namespace {

bool whole_level(LockMode m) {
  return m == LockMode::all_shared || m == LockMode::all_exclusive || is_unknown(m);
}

/// The name two conflicting locks meet on, or "*" when one takes the level.
std::string meeting_name(const LevelLock& a, const LevelLock& b) {
  if (whole_level(a.mode) || whole_level(b.mode)) return "*";
  for (const auto& n : a.names)
    if (std::binary_search(b.names.begin(), b.names.end(), n)) return n;
  return "*";
}

}  // namespace

std::string LockBlock::to_string() const {
  std::string what = level ? std::string(core::to_string(*level)) + (lock == "*" ? " (whole level)" : " '" + lock + "'")
                           : std::string("the big lock (bgl)");
  std::string who = is_operation(holder) ? "operation " + std::to_string(holder.value - kFirstOperationId)
                                         : "job " + std::to_string(holder.value);
  return what + (holder_waits ? " wanted first by " : " held by ") + who;
}

bool locks_conflict(const LevelLock& a, const LevelLock& b) {
  if (a.mode == LockMode::none || b.mode == LockMode::none) return false;
  bool a_excl = is_exclusive(a.mode), b_excl = is_exclusive(b.mode);
  if (!a_excl && !b_excl) return false;
  if (whole_level(a.mode) || whole_level(b.mode)) return true;
  return names_meet(a.names, b.names);
}

std::optional<LockBlock> LockManager::conflict_at(JobId job, const Entry& e) const {
  const uint8_t s = e.stage;
  for (const auto& [other_id, other] : entries_) {
    if (other_id == job) continue;
    bool holds = other.stage > s;
    // An earlier job waiting at this very stage goes first (no overtaking).
    bool queued_first = other.stage == s && other.block && other.seq < e.seq;
    if (!holds && !queued_first) continue;
    if (s == 0) {
      if (e.locks.bgl || other.locks.bgl) return LockBlock{std::nullopt, "*", other_id, !holds};
      continue;
    }
    auto level = static_cast<LockLevel>(s - 1);
    const LevelLock& mine = e.locks[level];
    const LevelLock& theirs = other.locks[level];
    if (locks_conflict(mine, theirs)) return LockBlock{level, meeting_name(mine, theirs), other_id, !holds};
  }
  return std::nullopt;
}

bool LockManager::advance(JobId job, Entry& e) {
  while (e.stage < kStages) {
    if (e.stage > 0 && e.locks.bgl) {
      e.stage = kStages;  // the big lock is every lock
      break;
    }
    if (auto block = conflict_at(job, e)) {
      e.block = std::move(block);
      return false;
    }
    ++e.stage;
  }
  e.block.reset();
  return true;
}

std::optional<LockBlock> LockManager::acquire(JobId job, const LockDeclaration& locks) {
  if (auto it = entries_.find(job); it != entries_.end()) return it->second.block;
  Entry& e = entries_[job];
  e.locks = locks;
  e.seq = next_seq_++;
  if (advance(job, e)) return std::nullopt;
  waiting_.emplace(e.seq, job);
  return e.block;
}

void LockManager::adopt(JobId job, const LockDeclaration& locks) {
  Entry& e = entries_[job];
  if (e.block) waiting_.erase(e.seq);
  e.locks = locks;
  e.seq = next_seq_++;
  e.stage = kStages;
  e.block.reset();
}

std::vector<JobId> LockManager::release(JobId job) {
  std::vector<JobId> granted;
  auto it = entries_.find(job);
  if (it == entries_.end()) return granted;
  if (it->second.block) waiting_.erase(it->second.seq);
  entries_.erase(it);
  // One pass in start order is enough: a job that goes on only takes more,
  // which can block later jobs but never unblocks them.
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    Entry& e = entries_.at(w->second);
    if (advance(w->second, e)) {
      granted.push_back(w->second);
      w = waiting_.erase(w);
    } else {
      ++w;
    }
  }
  return granted;
}

bool LockManager::holds_all(JobId job) const {
  auto it = entries_.find(job);
  return it != entries_.end() && it->second.stage == kStages;
}

std::optional<LockBlock> LockManager::blocked_on(JobId job) const {
  auto it = entries_.find(job);
  return it == entries_.end() ? std::nullopt : it->second.block;
}

LockDeclaration LockManager::held_by(JobId job) const {
  LockDeclaration held;
  auto it = entries_.find(job);
  if (it == entries_.end()) return held;
  const Entry& e = it->second;
  if (e.locks.bgl) {
    held.bgl = e.stage == kStages;
    return held;
  }
  for (uint8_t s = 1; s < e.stage; ++s) held.levels[s - 1] = e.locks.levels[s - 1];
  return held;
}

std::vector<HeldLocks> LockManager::holders() const {
  std::vector<HeldLocks> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(HeldLocks{id, held_by(id)});
  return out;
}

}  // namespace claimsched::core
