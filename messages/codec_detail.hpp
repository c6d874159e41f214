#pragma once

// What the decoders of messages/codec.cpp and messages/campaign_codec.cpp
// share: field paths for errors, bounded scalars and lists, resources, and
// the top-level decode (record_codec.cpp takes CLAIMSCHED_TRY). Internal to
// messages/ (include codec.hpp instead).

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/limits.hpp"
#include "messages/codec.hpp"

namespace claimsched::messages::codec_detail {

using core::Errc;
using core::Error;
using core::Status;

// -- field paths, rendered only when an error names them ----------------------

/// What one decode shares across its fields: whether resource names this
/// process has not seen yet may be registered. The first pass may not; it
/// records the new names, and only if the whole message decodes does a second
/// pass register them (DimensionRegistry is append-only: a name registered by
/// a message that turns out to be garbage would hold a slot for ever).
struct DecodeContext {
  bool register_names = false;
  std::vector<std::string> new_names;
};

/// A field's path from the top-level message, as a chain of stack frames:
/// building one costs nothing, rendering happens only on error. Every frame
/// points to its decode's context.
class Path {
 public:
  Path(std::string_view root, DecodeContext& context) : context_(&context), name_(root) {}
  Path(const Path& parent, std::string_view field)
      : parent_(&parent), context_(parent.context_), name_(field) {}
  Path(const Path& parent, int index) : parent_(&parent), context_(parent.context_), index_(index) {}

  DecodeContext& context() const { return *context_; }

  std::string str() const {
    std::string out;
    append_to(out);
    return out;
  }

 private:
  void append_to(std::string& out) const {
    if (parent_ != nullptr) parent_->append_to(out);
    if (index_ >= 0) {
      out += '[';
      out += std::to_string(index_);
      out += ']';
      return;
    }
    if (parent_ != nullptr) out += '.';
    out += name_;
  }

  const Path* parent_ = nullptr;
  DecodeContext* context_;
  std::string_view name_;
  int index_ = -1;
};

inline Error corrupt(const Path& p, std::string_view what) {
  std::string msg = p.str();
  msg += ": ";
  msg += what;
  return Error{Errc::corrupt, std::move(msg)};
}

#define CLAIMSCHED_TRY(expr)       \
  do {                             \
    if (auto st_ = (expr); !st_) { \
      return st_;                  \
    }                              \
  } while (false)

// -- sizes (core/limits.hpp) --------------------------------------------------

/// "NodeReport.claims: 1000001 entries, above the limit of 1000000 (kMaxTasksPerNode)".
inline Status check_entries(int entries, size_t limit, std::string_view limit_name, const Path& p) {
  if (static_cast<size_t>(entries) <= limit) return Status::ok();
  return corrupt(p, std::to_string(entries) + " entries, above the limit of " + std::to_string(limit) +
                        " (" + std::string(limit_name) + ")");
}
#define CLAIMSCHED_CHECK_ENTRIES(entries, limit, path) check_entries(entries, core::limit, #limit, path)

// -- scalars ------------------------------------------------------------------

inline Status read_u32(uint64_t in, const Path& p, uint32_t& out) {
  if (in > std::numeric_limits<uint32_t>::max())
    return corrupt(p, "value " + std::to_string(in) + " does not fit in 32 bits");
  out = static_cast<uint32_t>(in);
  return Status::ok();
}

/// A real number off the wire: NaN and the infinities are refused (NaN is
/// not even equal to itself, so nothing downstream could compare or sum it).
inline Status read_finite(double in, const Path& p, double& out) {
  if (!std::isfinite(in)) return corrupt(p, "value " + std::to_string(in) + " is not a finite number");
  out = in;
  return Status::ok();
}

template <class Tag>
inline Status read_id(uint64_t in, const Path& p, core::StrongId<Tag, uint32_t>& out) {
  return read_u32(in, p, out.value);
}

template <class Tag>
inline Status read_id(uint64_t in, const Path&, core::StrongId<Tag, uint64_t>& out) {
  out.value = in;
  return Status::ok();
}

/// Claim ids are never 0 where a claim is named (0 means "none" elsewhere).
inline Status read_claim_id(uint64_t in, const Path& p, core::ClaimId& out) {
  if (in == 0) return corrupt(p, "missing (claim ids are never 0)");
  out.value = in;
  return Status::ok();
}

inline Status read_exit_code(int64_t in, const Path& p, int32_t& out) {
  if (in < std::numeric_limits<int32_t>::min() || in > std::numeric_limits<int32_t>::max())
    return corrupt(p, "value " + std::to_string(in) + " does not fit in 32 bits");
  out = static_cast<int32_t>(in);
  return Status::ok();
}

inline Status read_duration(int64_t ns, const Path& p, core::Duration& out) {
  if (ns < 0) return corrupt(p, "negative duration " + std::to_string(ns) + "ns");
  if (ns > core::kMaxDuration.count())
    return corrupt(p, "duration " + std::to_string(ns) + "ns, above the limit of " +
                          std::to_string(core::kMaxDuration.count()) + "ns (kMaxDuration)");
  out = core::Duration{ns};
  return Status::ok();
}

inline core::TimePoint read_time(int64_t ns) { return core::TimePoint{ns}; }

template <class E>
inline Status read_enum(int wire, E last, const Path& p, E& out) {
  if (wire == 0) return corrupt(p, "missing (unspecified)");
  if (wire < 0 || wire > static_cast<int>(last) + 1)
    return corrupt(p, "unknown enum value " + std::to_string(wire));
  out = static_cast<E>(wire - 1);
  return Status::ok();
}

inline Status read_tasks(const google::protobuf::RepeatedField<uint64_t>& in, const Path& p,
                  bool non_empty, std::vector<core::TaskIndex>& out) {
  if (non_empty && in.empty()) return corrupt(p, "empty");
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.size(), kMaxTasksPerNode, p));
  out.clear();
  out.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    core::TaskIndex index = 0;
    CLAIMSCHED_TRY(read_u32(in.Get(i), Path{p, i}, index));
    out.push_back(index);
  }
  return Status::ok();
}

// -- resources ----------------------------------------------------------------

enum class Negatives { reject, allow };

inline Status read(const pb::Resources& in, const Path& p, Negatives negatives, core::Resources& out) {
  Path list{p, "quantities"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.quantities_size(), kMaxDimensions, list));
  for (int i = 0; i < in.quantities_size(); ++i)
    for (int k = 0; k < i; ++k)
      if (in.quantities(k).name() == in.quantities(i).name())
        return corrupt(Path{p, in.quantities(i).name()}, "duplicate resource name");
  DecodeContext& context = p.context();
  core::Resources r;
  for (int i = 0; i < in.quantities_size(); ++i) {
    const auto& q = in.quantities(i);
    Path dim_path{p, q.name()};
    if (q.value() < 0 && negatives == Negatives::reject)
      return corrupt(dim_path, "negative quantity " + std::to_string(q.value()));
    auto name_error = [&](const core::Error& e) {
      Path item{list, i};
      Path name{item, "name"};
      return Error{e.code, name.str() + ": " + e.message};
    };
    auto id = core::DimensionRegistry::find(q.name());
    if (!id && !context.register_names) {
      // New to this process: checked now, registered only once the whole
      // message has decoded (the second pass, DecodeContext).
      if (auto st = core::DimensionRegistry::check_new_name(q.name(), context.new_names); !st)
        return name_error(st.error());
      if (std::find(context.new_names.begin(), context.new_names.end(), q.name()) ==
          context.new_names.end())
        context.new_names.push_back(q.name());
      continue;
    }
    if (!id) {
      auto interned = core::DimensionRegistry::intern(q.name());
      if (!interned) return name_error(interned.error());
      id = *interned;
    }
    r.set(*id, q.value());
  }
  out = r;
  return Status::ok();
}

inline Status read_resources(bool present, const pb::Resources& in, const Path& p, Negatives negatives,
                      core::Resources& out) {
  if (!present) return corrupt(p, "missing");
  return read(in, p, negatives, out);
}

// -- top level ----------------------------------------------------------------

/// Decodes into a fresh value, so `out` changes only on success; registers
/// the resource names new to this process only once the message decoded
/// (DecodeContext).
template <class Core, class Pb, class... Args>
inline Status from_proto_as(const Pb& in, std::string_view root, Core& out, Args... args) {
  DecodeContext context;
  Core tmp;
  CLAIMSCHED_TRY(read(in, Path{root, context}, args..., tmp));
  if (!context.new_names.empty()) {
    context.register_names = true;
    tmp = Core{};
    CLAIMSCHED_TRY(read(in, Path{root, context}, args..., tmp));
  }
  out = std::move(tmp);
  return Status::ok();
}

/// The largest encoding of `Pb` a decoder accepts (core/limits.hpp).
template <class Pb>
constexpr std::pair<size_t, std::string_view> byte_limit() {
  if constexpr (std::is_same_v<Pb, pb::NodeReport> || std::is_same_v<Pb, pb::NodeDelta> ||
                std::is_same_v<Pb, pb::JobView> || std::is_same_v<Pb, pb::CampaignSpec> ||
                std::is_same_v<Pb, pb::CampaignRequest> || std::is_same_v<Pb, pb::CampaignReply>)
    return {core::kMaxBulkMessageBytes, "kMaxBulkMessageBytes"};
  else
    return {core::kMaxMessageBytes, "kMaxMessageBytes"};
}

template <class Pb, class Core>
std::string encode_as(const Core& in) {
  Pb msg;
  to_proto(in, msg);
  return msg.SerializeAsString();
}

template <class Pb, class Core>
inline Status decode_as(std::string_view bytes, std::string_view root, Core& out) {
  constexpr auto limit = byte_limit<Pb>();
  static_assert(limit.first <= static_cast<size_t>(INT_MAX));
  if (bytes.size() > limit.first)
    return Error{Errc::corrupt, std::string(root) + ": " + std::to_string(bytes.size()) +
                                    " bytes, above the limit of " + std::to_string(limit.first) + " (" +
                                    std::string(limit.second) + ")"};
  Pb msg;
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error{Errc::corrupt, std::string(root) + ": bytes are not a valid " + msg.GetTypeName()};
  return from_proto_as(msg, root, out);
}

}  // namespace claimsched::messages::codec_detail
