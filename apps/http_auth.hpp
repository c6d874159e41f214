#pragma once

// The HTTP API's side of [auth]: the same rules as the client's port
// (core/auth.hpp). A request carries `Authorization: Bearer TOKEN`; without
// a known token the API answers 401. A plain user's job lists are their own
// jobs, and another user's job is 403; operators and admins read
// everything. Nodes, pools and partitions are readable by any user the
// tokens file names. /metrics stays open (aggregates only, for scrapers).

#include <memory>
#include <string>
#include <string_view>

#include "actors/audit_log.hpp"
#include "apps/http_api.hpp"
#include "core/auth.hpp"

namespace claimsched::apps {

/// The token of an Authorization header's value "Bearer TOKEN" (the scheme
/// in any case), or empty.
std::string bearer_token(std::string_view header);

/// `inner` as `who` may read it; refusals go to `audit` (may be null) with
/// the client's address `peer`.
ClusterReader authorized_reader(ClusterReader inner, core::auth::Principal who, std::shared_ptr<actors::AuditLog> audit,
                                std::string peer);

}  // namespace claimsched::apps
