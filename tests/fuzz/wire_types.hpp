#pragma once

// Every core type messages/codec.hpp decodes, in a fixed order: the first
// byte of a `wire` (or `records`) input picks one (byte % count), the rest are
// the encoded bytes. APPEND ONLY: reordering changes what the committed corpus
// means. The seeds (seeds.cpp) and the targets share these lists.

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "messages/codec.hpp"
#include "messages/record_codec.hpp"

namespace claimsched::fuzz {

template <class T>
struct Named {
  using type = T;
  /// The root of the type's error paths ("JobSpec.count: ...").
  std::string_view root;
};

/// Calls f(Named<T>) for the entry `index` of `entries`.
template <class F, class... E>
void visit_entry(size_t index, F&& f, const E&... entries) {
  size_t i = 0;
  (void)((i++ == index ? (f(entries), true) : false) || ...);
}

template <class F>
void visit_wire_type(size_t index, F&& f) {
  visit_entry(index, f, Named<core::NodeSpec>{"NodeSpec"}, Named<core::NodeSnapshot>{"NodeSnapshot"},
              Named<core::JobSpec>{"JobSpec"}, Named<core::ClaimRequest>{"ClaimRequest"},
              Named<core::ClaimReply>{"ClaimReply"}, Named<core::ConfirmRequest>{"ConfirmRequest"},
              Named<core::ConfirmReply>{"ConfirmReply"}, Named<core::ReleaseRequest>{"ReleaseRequest"},
              Named<core::ReleaseReply>{"ReleaseReply"}, Named<core::NodeEvent>{"NodeEvent"},
              Named<core::NodeDelta>{"NodeDelta"}, Named<core::LiveClaim>{"LiveClaim"},
              Named<core::Allocation>{"Allocation"}, Named<core::NodeReport>{"NodeReport"},
              Named<core::TaskView>{"TaskView"}, Named<core::JobView>{"JobView"},
              Named<core::NodeStatus>{"NodeStatus"},
              Named<core::campaign::CampaignSpec>{"CampaignSpec"},
              Named<core::campaign::CampaignRequest>{"CampaignRequest"},
              Named<core::campaign::CampaignReply>{"CampaignReply"});
}
inline constexpr size_t kWireTypes = 20;

template <class F>
void visit_record_type(size_t index, F&& f) {
  visit_entry(index, f, Named<messages::StoredJob>{"StoredJob"},
              Named<messages::StoredTask>{"StoredTask"}, Named<messages::StoredNode>{"StoredNode"},
              Named<messages::StoreIdentity>{"StoreIdentity"},
              Named<messages::StoredNodeHeader>{"StoredNodeHeader"},
              Named<messages::ChangeBatch>{"ChangeBatch"});
}
inline constexpr size_t kRecordTypes = 6;

}  // namespace claimsched::fuzz
