#pragma once

// Crash points: named places in creation, recovery and group commit (and in
// an agent, between a task's end and its report) where a test can have the
// process killed (SIGKILL, exactly as `kill -9`) to prove
// that every store is absent or complete after a crash at that instant and
// that nothing acknowledged is lost.
//
// A process dies at a point when the environment names it:
//   CLAIMSCHED_CRASH_POINT=<point>[@<n>]   (the n-th time it is reached; default 1)
// Before dying it writes one line to stderr naming the point, so a test can
// tell "killed at the point" from "crashed elsewhere". Without the variable a
// point costs one load of a cached flag. Built in unless the build turns
// CLAIMSCHED_CRASH_POINTS off (a packager's choice); crash_points_enabled()
// says which, so tests can skip.

#include <span>
#include <string_view>

namespace claimsched::storage::crash {

// -- creating a store (Database::open of a directory that holds none) ----------
/// The store is being made under its temporary name with every column family,
/// before its identity record is written.
inline constexpr std::string_view kCreateColumnFamilies = "store.create.column_families";
/// The identity record is written but not yet synced.
inline constexpr std::string_view kCreateIdentityUnsynced = "store.create.identity_unsynced";
/// The identity is synced; the store has not been renamed into place.
inline constexpr std::string_view kCreateBeforeRename = "store.create.before_rename";
/// Renamed into place; the parent directory is not yet synced.
inline constexpr std::string_view kCreateRenamed = "store.create.renamed";

// -- small files written atomically (write_file_atomically) --------------------
/// The temporary file is written and synced, not yet renamed.
inline constexpr std::string_view kFileWritten = "file.written";
/// Renamed into place; the directory is not yet synced.
inline constexpr std::string_view kFileRenamed = "file.renamed";

// -- recovery (PartitionStore::recover, NodeStore::load) ------------------------
/// The store is open and nothing of it has been read yet.
inline constexpr std::string_view kRecoverStarted = "store.recover.started";
/// Every record has been read; the caller has not resumed writing.
inline constexpr std::string_view kRecoverFinished = "store.recover.finished";

// -- group commit (the writer thread) --------------------------------------------
/// A burst is taken from the queue and not yet written.
inline constexpr std::string_view kCommitBeforeWrite = "commit.before_write";
/// A burst is durable; its callbacks (the acknowledgements) have not fired.
inline constexpr std::string_view kCommitWritten = "commit.written";

/// Every point above, in the order a process meets them.
std::span<const std::string_view> all_points();

// -- an agent's tasks (not in all_points(): only an agent with tasks meets it) --
/// A task's keeper has ended and the agent reaped it; the end is about to
/// go to the task's node, which has not heard of it yet.
inline constexpr std::string_view kTaskExitSeen = "task.exit_seen";

/// True when this build honours CLAIMSCHED_CRASH_POINT.
bool crash_points_enabled();

/// Kills the process if the environment names `point` and this is the
/// requested hit. Thread-safe.
void point(std::string_view point);

}  // namespace claimsched::storage::crash
