#pragma once

// Small files that must be absent or complete after a crash at any instant
// (a run's descriptor, a member's identity): written to a temporary sibling,
// synced, renamed into place, and the directory synced.

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace claimsched::storage {

/// Replaces `path` with `contents` atomically and durably: after a crash the
/// file holds the old contents (or is absent) or the new ones, never a mix.
/// Errors name the file and the failing step (io_error).
core::Status write_file_atomically(const std::string& path, std::string_view contents);

/// fsync(2) of a directory, so a rename or a new entry in it survives a
/// crash of the machine.
core::Status sync_directory(const std::string& dir);

}  // namespace claimsched::storage
