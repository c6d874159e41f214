#pragma once

// The one place that knows both CAF and Protobuf: every core value that travels
// in a CAF message is registered here, and crosses a process boundary as its
// Protobuf encoding (one length-prefixed byte string). Inside a process CAF
// passes the C++ value itself, so local messages pay no serialization.
//
// Decoding failures: the load callback returns a CAF error naming the type and
// the field ("claimsched.ClaimRequest: ClaimRequest.tasks: empty"), and a
// half-parsed value is never delivered. But CAF 0.17.6 loses that error:
// caf::message is deserialized through `serialize(Processor&,
// type_erased_tuple&)` (caf/type_erased_tuple.hpp), which ignores the result
// of `load`. So a message from another process whose payload does not decode
// arrives at the receiving actor as an EMPTY message `()`; the connection
// stays up. The actor's default handler sees it: the stock one
// (print_and_drop) prints to stderr and answers a request with
// sec::unexpected_message. Actors that receive from other processes should
// install `reject_unexpected` below as their default handler, and processes
// should install a decode-failure hook to log the reason (CAF's own logging is
// compiled out in Debian's build). `caf::message::load` and `caf::inspect` on
// a caf::message do return the error; `deserializer(msg)` does not.

#include <caf/all.hpp>

#include "core/protocol.hpp"
#include "messages/codec.hpp"
#include "messages/record_codec.hpp"
#include "messages/errors.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(claimsched, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeId))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::JobId))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeSpec))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeSnapshot))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::JobSpec))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ClaimRequest))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ClaimReply))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ConfirmRequest))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ConfirmReply))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ReleaseRequest))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::ReleaseReply))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeDelta))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeReport))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::messages::ChangeBatch))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::JobView))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::NodeStatus))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::JobFilter))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::LogRequest))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::LogChunk))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::campaign::CampaignRequest))
  CAF_ADD_TYPE_ID(claimsched, (claimsched::core::campaign::CampaignReply))

CAF_END_TYPE_ID_BLOCK(claimsched)

namespace claimsched::messages {

// -- payloads that do not decode (see the file comment) -----------------------

/// Called with the error of every value that fails to decode while CAF
/// deserializes a message, on the CAF thread doing so (a middleman worker for
/// remote messages): keep it short and thread-safe, e.g. a log line.
using DecodeFailureHook = void (*)(const core::Error& error);
/// Installs `hook` (nullptr: none, the default) for the whole process.
void set_decode_failure_hook(DecodeFailureHook hook);
/// How many values failed to decode in this process so far (a metric).
uint64_t decode_failures();
/// Counts a failure and calls the hook; inspect_as_proto's load callback uses it.
void note_decode_failure(const core::Error& error);

/// A default handler for actors that receive messages from other processes
/// (`self->set_default_handler(messages::reject_unexpected)`): an empty
/// message (a payload that did not decode) is answered with Errc::corrupt,
/// anything else with sec::unexpected_message. Unlike CAF's print_and_drop it
/// prints nothing. A request's sender gets that error; for a one-way message
/// CAF sends it back as a response nobody awaits, which an event-based sender
/// drops (a blocking/scoped sender does receive it): one-way protocols learn
/// of a bad message only through their own timeouts.
caf::result<caf::message> reject_unexpected(caf::scheduled_actor* self, caf::message_view& x);

/// Serializes `x` through its Protobuf encoding (see the file comment).
template <class Inspector, class T>
typename Inspector::result_type inspect_as_proto(Inspector& f, T& x, const char* name) {
  std::string bytes;
  auto save = [&]() -> caf::error {
    bytes = encode(x);
    return caf::none;
  };
  auto load = [&]() -> caf::error {
    if (auto st = decode(bytes, x); !st) {
      core::Error e{st.error().code, std::string(name) + ": " + st.error().message};
      note_decode_failure(e);
      return to_caf_error(e);
    }
    return caf::none;
  };
  return f(caf::meta::type_name(name), caf::meta::save_callback(save), bytes,
           caf::meta::load_callback(load));
}

/// Adds every claimsched message type and the error category to `cfg`. Every
/// process calls this (a type known only to the sender arrives empty).
void register_types(caf::actor_system_config& cfg);

}  // namespace claimsched::messages

namespace claimsched::core {

template <class Inspector, class Tag, class Rep>
typename Inspector::result_type inspect(Inspector& f, StrongId<Tag, Rep>& x) {
  return f(x.value);
}

#define CLAIMSCHED_INSPECT_AS_PROTO(Type)                                      \
  template <class Inspector>                                                   \
  typename Inspector::result_type inspect(Inspector& f, Type& x) {             \
    return ::claimsched::messages::inspect_as_proto(f, x, "claimsched." #Type); \
  }

CLAIMSCHED_INSPECT_AS_PROTO(NodeSpec)
CLAIMSCHED_INSPECT_AS_PROTO(NodeSnapshot)
CLAIMSCHED_INSPECT_AS_PROTO(JobSpec)
CLAIMSCHED_INSPECT_AS_PROTO(ClaimRequest)
CLAIMSCHED_INSPECT_AS_PROTO(ClaimReply)
CLAIMSCHED_INSPECT_AS_PROTO(ConfirmRequest)
CLAIMSCHED_INSPECT_AS_PROTO(ConfirmReply)
CLAIMSCHED_INSPECT_AS_PROTO(ReleaseRequest)
CLAIMSCHED_INSPECT_AS_PROTO(ReleaseReply)
CLAIMSCHED_INSPECT_AS_PROTO(NodeDelta)
CLAIMSCHED_INSPECT_AS_PROTO(NodeReport)
CLAIMSCHED_INSPECT_AS_PROTO(JobView)
CLAIMSCHED_INSPECT_AS_PROTO(NodeStatus)
CLAIMSCHED_INSPECT_AS_PROTO(JobFilter)
CLAIMSCHED_INSPECT_AS_PROTO(LogRequest)
CLAIMSCHED_INSPECT_AS_PROTO(LogChunk)

}  // namespace claimsched::core

namespace claimsched::core::campaign {

CLAIMSCHED_INSPECT_AS_PROTO(CampaignRequest)
CLAIMSCHED_INSPECT_AS_PROTO(CampaignReply)

}  // namespace claimsched::core::campaign

#undef CLAIMSCHED_INSPECT_AS_PROTO

namespace claimsched::messages {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ChangeBatch& x) {
  return inspect_as_proto(f, x, "claimsched.ChangeBatch");
}

}  // namespace claimsched::messages
