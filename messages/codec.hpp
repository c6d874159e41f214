#pragma once

// Core values <-> Protobuf (messages/claimsched.proto). The same encoding is
// the wire format between processes and the record format on disk. Decoding
// validates: a malformed or out-of-range field gives an Error naming the
// field, never a crash and never a silently defaulted value.

#include <string>
#include <string_view>

#include "core/campaign/report.hpp"
#include "core/error.hpp"
#include "core/job.hpp"
#include "core/node.hpp"
#include "core/protocol.hpp"
#include "core/status.hpp"
#include "core/task_output.hpp"
#include "messages/claimsched.pb.h"

namespace claimsched::messages {

// -- Protobuf objects ---------------------------------------------------------

void to_proto(const core::Resources& in, pb::Resources& out);
core::Status from_proto(const pb::Resources& in, core::Resources& out);

#define CLAIMSCHED_CODEC(Type)                                      \
  void to_proto(const core::Type& in, pb::Type& out);               \
  core::Status from_proto(const pb::Type& in, core::Type& out);     \
  std::string encode(const core::Type& in);                         \
  core::Status decode(std::string_view bytes, core::Type& out);

CLAIMSCHED_CODEC(TaskEnd)
CLAIMSCHED_CODEC(NodeSpec)
CLAIMSCHED_CODEC(NodeSnapshot)
CLAIMSCHED_CODEC(JobSpec)
CLAIMSCHED_CODEC(ClaimRequest)
CLAIMSCHED_CODEC(ClaimReply)
CLAIMSCHED_CODEC(ConfirmRequest)
CLAIMSCHED_CODEC(ConfirmReply)
CLAIMSCHED_CODEC(ReleaseRequest)
CLAIMSCHED_CODEC(ReleaseReply)
CLAIMSCHED_CODEC(NodeEvent)
CLAIMSCHED_CODEC(NodeDelta)
CLAIMSCHED_CODEC(LiveClaim)
CLAIMSCHED_CODEC(Allocation)
CLAIMSCHED_CODEC(NodeReport)
CLAIMSCHED_CODEC(TaskView)
CLAIMSCHED_CODEC(JobView)
CLAIMSCHED_CODEC(NodeStatus)
CLAIMSCHED_CODEC(JobFilter)
CLAIMSCHED_CODEC(LogRequest)
CLAIMSCHED_CODEC(LogChunk)

#undef CLAIMSCHED_CODEC

// Campaign requests and replies (core/campaign/report.hpp).
#define CLAIMSCHED_CAMPAIGN_CODEC(Type)                                   \
  void to_proto(const core::campaign::Type& in, pb::Type& out);           \
  core::Status from_proto(const pb::Type& in, core::campaign::Type& out); \
  std::string encode(const core::campaign::Type& in);                     \
  core::Status decode(std::string_view bytes, core::campaign::Type& out);

CLAIMSCHED_CAMPAIGN_CODEC(CampaignSpec)
CLAIMSCHED_CAMPAIGN_CODEC(CampaignRequest)
CLAIMSCHED_CAMPAIGN_CODEC(CampaignReply)

#undef CLAIMSCHED_CAMPAIGN_CODEC

}  // namespace claimsched::messages
