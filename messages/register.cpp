#include <atomic>

#include "messages/caf_types.hpp"

namespace claimsched::messages {

namespace {

std::atomic<DecodeFailureHook> decode_failure_hook{nullptr};
std::atomic<uint64_t> decode_failure_count{0};

}  // namespace

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::claimsched>();
  // add_message_types registers each type but not std::vector of it (unlike
  // add_message_type): the vectors that travel in messages are added here.
  cfg.add_message_type<core::JobId>("claimsched::core::JobId");
  cfg.add_message_type<core::JobView>("claimsched::core::JobView");
  cfg.add_message_type<core::NodeStatus>("claimsched::core::NodeStatus");
  cfg.add_message_type<messages::ChangeBatch>("claimsched::messages::ChangeBatch");
  // 0.17.6: add_error_category<T>(atom) does not compile; the renderer
  // overload does. The rendering is core::Error::to_string, prefixed with the
  // category, e.g. "claimsched: corrupt data: ClaimRequest.tasks: empty".
  cfg.add_error_category(kErrorCategory,
                         [](uint8_t code, caf::atom_value category, const caf::message& context) {
                           auto e = from_caf_error(caf::error{code, category, context});
                           return "claimsched: " + e.to_string();
                         });
}

void set_decode_failure_hook(DecodeFailureHook hook) { decode_failure_hook.store(hook); }

uint64_t decode_failures() { return decode_failure_count.load(std::memory_order_relaxed); }

void note_decode_failure(const core::Error& error) {
  decode_failure_count.fetch_add(1, std::memory_order_relaxed);
  if (auto hook = decode_failure_hook.load()) hook(error);
}

caf::result<caf::message> reject_unexpected(caf::scheduled_actor*, caf::message_view& x) {
  if (x.content().empty())
    return to_caf_error(core::make_error(
        core::Errc::corrupt,
        "received a message whose payload did not decode (it arrived empty; the decode-failure "
        "hook has the reason)"));
  return caf::make_error(caf::sec::unexpected_message);
}

}  // namespace claimsched::messages
