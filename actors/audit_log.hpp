#pragma once

// The audit log ([auth] audit_log): one JSON object per line for every
// refusal and every privileged action that went through (drain, pool and
// partition changes, another user's job cancelled). Keys: time (ISO 8601,
// UTC), user (null: not authenticated), roles, action, object, outcome
// ("allowed" or "refused"), reason, door ("cli" or "http"), peer. Written
// and flushed line by line; safe from several threads (HTTP and actors).
// Tokens are never written.

#include <memory>
#include <string>

#include "core/auth.hpp"

namespace spdlog {
class logger;
}

namespace claimsched::actors {

class AuditLog {
 public:
  /// Appends to the file at `path` (created, with its directory, if absent).
  static core::Expected<std::shared_ptr<AuditLog>> open(const std::string& path);

  void write(const core::auth::AuditRecord& record);
  const std::string& path() const { return path_; }

  /// The JSON line of `record` (without the newline).
  static std::string line(const core::auth::AuditRecord& record);

 private:
  AuditLog(std::shared_ptr<spdlog::logger> logger, std::string path);
  std::shared_ptr<spdlog::logger> logger_;
  std::string path_;
};

}  // namespace claimsched::actors
