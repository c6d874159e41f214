#pragma once

// The server's read-only JSON API under /api/v1/ (deploy/CLI.md, "HTTP
// API"). Each answer's body is exactly what the matching CLI command prints
// with --json (client_json.hpp makes both), so a script may switch between
// them. Lists are paged newest first (?limit=&after=JOB, the next page in a
// Link header); every answer has an ETag (If-None-Match: 304), and job
// answers an X-Claimsched-Changes counter (?since=N: 304 at once while
// nothing was written since, without building the list).
//
// Plain C++: the server hands in a ClusterReader that asks its gateway.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/status.hpp"

namespace claimsched::apps {

/// What the API reads from the cluster; each answers the value or the
/// cluster's error (an unknown job is Errc::unknown_name).
struct ClusterReader {
  std::function<core::Expected<std::vector<core::JobView>>(const core::JobFilter&)> jobs;
  /// One job with its tasks.
  std::function<core::Expected<core::JobView>(core::JobId)> job;
  /// The explanation document (explain --json).
  std::function<core::Expected<std::string>(core::JobId)> explain;
  std::function<core::Expected<std::vector<core::NodeStatus>>()> nodes;
  /// One document per partition.
  std::function<core::Expected<std::vector<std::string>>()> pools;
  /// Members, partition owners and epochs (status --json without a job).
  std::function<core::Expected<std::string>()> members;
  /// A number that moves whenever a job's record is written (0: unknown).
  std::function<core::Expected<uint64_t>()> changes;
};

struct ApiRequest {
  /// The path without the query, e.g. "/api/v1/jobs/12".
  std::string path;
  std::multimap<std::string, std::string> params;
  /// The If-None-Match header (empty if none).
  std::string if_none_match;
};

struct ApiAnswer {
  int status = 200;
  /// JSON (empty for 304).
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Answers a GET under /api/v1/; a bad request is a 4xx with a JSON
/// {"error": {"status", "code", "message"}} that says what was wrong.
ApiAnswer answer_api(const ClusterReader& reader, const ApiRequest& request);

/// A 64-bit FNV-1a hash of `body` (word by word) as a quoted strong ETag.
std::string etag_of(const std::string& body);

}  // namespace claimsched::apps
