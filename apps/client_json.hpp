#pragma once

// The JSON the client prints with --json: stable keys, documented in
// deploy/CLI.md. Times are ISO 8601 UTC strings (null when not yet), ids are
// numbers, node names beside node ids.

#include <nlohmann/json.hpp>

#include "core/status.hpp"

namespace claimsched::apps {

/// A job (with its tasks if the view has them).
nlohmann::json job_json(const core::JobView& v);
nlohmann::json task_json(const core::TaskView& t);
nlohmann::json end_json(const core::TaskEnd& end);
nlohmann::json node_json(const core::NodeStatus& n);

}  // namespace claimsched::apps
