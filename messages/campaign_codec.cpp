// Campaign requests and replies <-> Protobuf (codec.hpp): what the client and
// the server say about campaigns. Decoding follows codec.cpp's contract (an
// error names the field, enums must be set, sizes are bounded); what needs
// the cluster's pools (unknown pool, bad template, no parameters) is the
// server's check, as for a campaign file.

#include "messages/codec_detail.hpp"

namespace claimsched::messages {

namespace cc = core::campaign;

namespace codec_detail {

static_assert(pb::CAMPAIGN_TYPE_TEST == static_cast<int>(cc::CampaignType::test) + 1);
static_assert(pb::RATIO_ALGORITHM_ADAPTIVE_DOWN_EXP_UP ==
              static_cast<int>(cc::RatioAlgorithm::adaptive_down_exp_up) + 1);
static_assert(pb::CAMPAIGN_VERB_EXPLAIN == static_cast<int>(cc::CampaignVerb::explain) + 1);
static_assert(pb::CAMPAIGN_STATE_FAILED == static_cast<int>(cc::CampaignState::failed) + 1);
static_assert(pb::RATIO_MOVE_DECREASE == static_cast<int>(cc::RatioMove::decrease) + 1);
constexpr cc::CampaignType kLastCampaignType = cc::CampaignType::test;
constexpr cc::RatioAlgorithm kLastRatioAlgorithm = cc::RatioAlgorithm::adaptive_down_exp_up;
constexpr cc::CampaignVerb kLastCampaignVerb = cc::CampaignVerb::explain;
constexpr cc::CampaignState kLastCampaignState = cc::CampaignState::failed;
constexpr cc::RatioMove kLastRatioMove = cc::RatioMove::decrease;
static_assert(pb::CampaignType_MAX == static_cast<int>(kLastCampaignType) + 1);
static_assert(pb::RatioAlgorithm_MAX == static_cast<int>(kLastRatioAlgorithm) + 1);
static_assert(pb::CampaignVerb_MAX == static_cast<int>(kLastCampaignVerb) + 1);
static_assert(pb::CampaignState_MAX == static_cast<int>(kLastCampaignState) + 1);
static_assert(pb::RatioMove_MAX == static_cast<int>(kLastRatioMove) + 1);

template <class E>
constexpr int campaign_wire(E value) {
  return static_cast<int>(value) + 1;
}

Status read_string_list(const google::protobuf::RepeatedPtrField<std::string>& in, size_t limit,
                        std::string_view limit_name, const Path& p, std::vector<std::string>& out) {
  CLAIMSCHED_TRY(check_entries(in.size(), limit, limit_name, p));
  out.assign(in.begin(), in.end());
  return Status::ok();
}

Status read(const pb::CampaignSpec& in, const Path& p, cc::CampaignSpec& out) {
  out.name = in.name();
  out.user = in.user();
  CLAIMSCHED_TRY(read_string_list(in.command(), core::kMaxArguments, "kMaxArguments", Path{p, "command"}, out.command));
  CLAIMSCHED_TRY(read_string_list(in.parameters(), core::kMaxTasksPerJob, "kMaxTasksPerJob", Path{p, "parameters"},
                                  out.parameters));
  // Absent: all zero (the server's check refuses a task that asks for nothing).
  out.per_task = core::Resources{};
  if (in.has_per_task()) CLAIMSCHED_TRY(read(in.per_task(), Path{p, "per_task"}, Negatives::reject, out.per_task));
  CLAIMSCHED_TRY(read_string_list(in.pools(), core::kMaxPartitions, "kMaxPartitions", Path{p, "pools"}, out.pools));
  CLAIMSCHED_TRY(read_string_list(in.other_pools(), core::kMaxPartitions, "kMaxPartitions", Path{p, "other_pools"},
                                  out.other_pools));
  CLAIMSCHED_TRY(read_enum(in.type(), kLastCampaignType, Path{p, "type"}, out.type));
  out.priority = in.priority();
  out.best_effort = in.best_effort();
  out.test_first = in.test_first();
  CLAIMSCHED_TRY(read_enum(in.algorithm(), kLastRatioAlgorithm, Path{p, "algorithm"}, out.algorithm));
  CLAIMSCHED_TRY(read_u32(in.max_waiting(), Path{p, "max_waiting"}, out.max_waiting));
  CLAIMSCHED_TRY(read_u32(in.allowed_waiting(), Path{p, "allowed_waiting"}, out.allowed_waiting));
  CLAIMSCHED_TRY(read_u32(in.finalize_replicas(), Path{p, "finalize_replicas"}, out.finalize_replicas));
  CLAIMSCHED_TRY(read_duration(in.sink_runtime_ns(), Path{p, "sink_runtime_ns"}, out.sink_runtime));
  out.declared_output = in.declared_output();
  return Status::ok();
}

Status read(const pb::CampaignRequest& in, const Path& p, cc::CampaignRequest& out) {
  CLAIMSCHED_TRY(read_enum(in.verb(), kLastCampaignVerb, Path{p, "verb"}, out.verb));
  out.id = cc::CampaignId{in.id()};
  out.spec = cc::CampaignSpec{};
  if (out.verb == cc::CampaignVerb::submit) {
    if (!in.has_spec()) return corrupt(Path{p, "spec"}, "missing (a submit carries the campaign)");
    return read(in.spec(), Path{p, "spec"}, out.spec);
  }
  return Status::ok();
}

Status read(const pb::CampaignPoolReport& in, const Path& p, cc::PoolReport& out) {
  out.pool = in.pool();
  out.affinity = in.affinity();
  CLAIMSCHED_TRY(read_u32(in.waiting(), Path{p, "waiting"}, out.waiting));
  CLAIMSCHED_TRY(read_u32(in.running(), Path{p, "running"}, out.running));
  CLAIMSCHED_TRY(read_u32(in.succeeded(), Path{p, "succeeded"}, out.succeeded));
  out.abandoned = in.abandoned();
  out.sink_reason = in.sink_reason();
  out.offered = in.offered();
  CLAIMSCHED_TRY(read_finite(in.throughput_per_s(), Path{p, "throughput_per_s"}, out.throughput_per_s));
  CLAIMSCHED_TRY(read_finite(in.ratio(), Path{p, "ratio"}, out.ratio));
  out.last_move = cc::RatioMove::increase;
  if (out.offered) CLAIMSCHED_TRY(read_enum(in.last_move(), kLastRatioMove, Path{p, "last_move"}, out.last_move));
  return read_u32(in.last_free(), Path{p, "last_free"}, out.last_free);
}

Status read(const pb::CampaignTestReport& in, const Path& p, cc::TestReport& out) {
  out.pool = in.pool();
  out.reported = in.reported();
  out.exit_code = in.exit_code();
  return read_duration(in.run_time_ns(), Path{p, "run_time_ns"}, out.run_time);
}

Status read(const pb::CampaignReport& in, const Path& p, cc::CampaignReport& out) {
  out.id = cc::CampaignId{in.id()};
  out.name = in.name();
  out.user = in.user();
  CLAIMSCHED_TRY(read_enum(in.type(), kLastCampaignType, Path{p, "type"}, out.type));
  CLAIMSCHED_TRY(read_enum(in.algorithm(), kLastRatioAlgorithm, Path{p, "algorithm"}, out.algorithm));
  CLAIMSCHED_TRY(read_enum(in.state(), kLastCampaignState, Path{p, "state"}, out.state));
  CLAIMSCHED_TRY(read_u32(in.tasks(), Path{p, "tasks"}, out.tasks));
  CLAIMSCHED_TRY(read_u32(in.done(), Path{p, "done"}, out.done));
  CLAIMSCHED_TRY(read_u32(in.pending(), Path{p, "pending"}, out.pending));
  CLAIMSCHED_TRY(read_u32(in.waiting(), Path{p, "waiting"}, out.waiting));
  CLAIMSCHED_TRY(read_u32(in.running(), Path{p, "running"}, out.running));
  CLAIMSCHED_TRY(read_u32(in.copies(), Path{p, "copies"}, out.copies));
  out.submitted_at = read_time(in.submitted_at_ns());
  CLAIMSCHED_TRY(read_finite(in.throughput_per_s(), Path{p, "throughput_per_s"}, out.throughput_per_s));
  out.eta.reset();
  if (in.has_eta_ns()) out.eta = read_time(in.eta_ns());
  out.mean_run_time.reset();
  if (in.has_mean_run_time_ns()) {
    core::Duration mean{0};
    CLAIMSCHED_TRY(read_duration(in.mean_run_time_ns(), Path{p, "mean_run_time_ns"}, mean));
    out.mean_run_time = mean;
  }
  CLAIMSCHED_TRY(read_u32(in.max_waiting(), Path{p, "max_waiting"}, out.max_waiting));
  CLAIMSCHED_TRY(read_u32(in.allowed_waiting(), Path{p, "allowed_waiting"}, out.allowed_waiting));
  CLAIMSCHED_TRY(read_u32(in.finalize_replicas(), Path{p, "finalize_replicas"}, out.finalize_replicas));
  out.finalizing = in.finalizing();
  Path pools{p, "pools"};
  CLAIMSCHED_TRY(check_entries(in.pools_size(), core::kMaxPartitions, "kMaxPartitions", pools));
  out.pools.assign(static_cast<size_t>(in.pools_size()), cc::PoolReport{});
  for (int i = 0; i < in.pools_size(); ++i)
    CLAIMSCHED_TRY(read(in.pools(i), Path{pools, i}, out.pools[static_cast<size_t>(i)]));
  Path tests{p, "test"};
  CLAIMSCHED_TRY(check_entries(in.test_size(), core::kMaxPartitions, "kMaxPartitions", tests));
  out.test.assign(static_cast<size_t>(in.test_size()), cc::TestReport{});
  for (int i = 0; i < in.test_size(); ++i)
    CLAIMSCHED_TRY(read(in.test(i), Path{tests, i}, out.test[static_cast<size_t>(i)]));
  out.failure = in.failure();
  return Status::ok();
}

Status read(const pb::CampaignReply& in, const Path& p, cc::CampaignReply& out) {
  Path all{p, "campaigns"};
  CLAIMSCHED_TRY(check_entries(in.campaigns_size(), core::kMaxTasksPerNode, "kMaxTasksPerNode", all));
  out.campaigns.assign(static_cast<size_t>(in.campaigns_size()), cc::CampaignReport{});
  for (int i = 0; i < in.campaigns_size(); ++i)
    CLAIMSCHED_TRY(read(in.campaigns(i), Path{all, i}, out.campaigns[static_cast<size_t>(i)]));
  return Status::ok();
}

void write_strings(const std::vector<std::string>& in, google::protobuf::RepeatedPtrField<std::string>& out) {
  out.Clear();
  for (const auto& s : in) out.Add(std::string(s));
}

void write(const cc::PoolReport& in, pb::CampaignPoolReport& out) {
  out.set_pool(in.pool);
  out.set_affinity(in.affinity);
  out.set_waiting(in.waiting);
  out.set_running(in.running);
  out.set_succeeded(in.succeeded);
  out.set_abandoned(in.abandoned);
  out.set_sink_reason(in.sink_reason);
  out.set_offered(in.offered);
  out.set_throughput_per_s(in.throughput_per_s);
  out.set_ratio(in.ratio);
  out.set_last_move(static_cast<pb::RatioMove>(campaign_wire(in.last_move)));
  out.set_last_free(in.last_free);
}

void write(const cc::TestReport& in, pb::CampaignTestReport& out) {
  out.set_pool(in.pool);
  out.set_reported(in.reported);
  out.set_exit_code(in.exit_code);
  out.set_run_time_ns(in.run_time.count());
}

void write(const cc::CampaignReport& in, pb::CampaignReport& out) {
  out.set_id(in.id.value);
  out.set_name(in.name);
  out.set_user(in.user);
  out.set_type(static_cast<pb::CampaignType>(campaign_wire(in.type)));
  out.set_algorithm(static_cast<pb::RatioAlgorithm>(campaign_wire(in.algorithm)));
  out.set_state(static_cast<pb::CampaignState>(campaign_wire(in.state)));
  out.set_tasks(in.tasks);
  out.set_done(in.done);
  out.set_pending(in.pending);
  out.set_waiting(in.waiting);
  out.set_running(in.running);
  out.set_copies(in.copies);
  out.set_submitted_at_ns(in.submitted_at.count());
  out.set_throughput_per_s(in.throughput_per_s);
  if (in.eta) out.set_eta_ns(in.eta->count());
  if (in.mean_run_time) out.set_mean_run_time_ns(in.mean_run_time->count());
  out.set_max_waiting(in.max_waiting);
  out.set_allowed_waiting(in.allowed_waiting);
  out.set_finalize_replicas(in.finalize_replicas);
  out.set_finalizing(in.finalizing);
  for (const auto& pool : in.pools) write(pool, *out.add_pools());
  for (const auto& test : in.test) write(test, *out.add_test());
  out.set_failure(in.failure);
}

}  // namespace codec_detail

using namespace codec_detail;

void to_proto(const cc::CampaignSpec& in, pb::CampaignSpec& out) {
  out.Clear();
  out.set_name(in.name);
  out.set_user(in.user);
  write_strings(in.command, *out.mutable_command());
  write_strings(in.parameters, *out.mutable_parameters());
  to_proto(in.per_task, *out.mutable_per_task());
  write_strings(in.pools, *out.mutable_pools());
  write_strings(in.other_pools, *out.mutable_other_pools());
  out.set_type(static_cast<pb::CampaignType>(campaign_wire(in.type)));
  out.set_priority(in.priority);
  out.set_best_effort(in.best_effort);
  out.set_test_first(in.test_first);
  out.set_algorithm(static_cast<pb::RatioAlgorithm>(campaign_wire(in.algorithm)));
  out.set_max_waiting(in.max_waiting);
  out.set_allowed_waiting(in.allowed_waiting);
  out.set_finalize_replicas(in.finalize_replicas);
  out.set_sink_runtime_ns(in.sink_runtime.count());
  out.set_declared_output(in.declared_output);
}

void to_proto(const cc::CampaignRequest& in, pb::CampaignRequest& out) {
  out.Clear();
  out.set_verb(static_cast<pb::CampaignVerb>(campaign_wire(in.verb)));
  out.set_id(in.id.value);
  if (in.verb == cc::CampaignVerb::submit) to_proto(in.spec, *out.mutable_spec());
}

void to_proto(const cc::CampaignReply& in, pb::CampaignReply& out) {
  out.Clear();
  for (const auto& c : in.campaigns) write(c, *out.add_campaigns());
}

#define CLAIMSCHED_CAMPAIGN_CODEC_IMPL(Type)                                                           \
  core::Status from_proto(const pb::Type& in, cc::Type& out) { return from_proto_as(in, #Type, out); } \
  std::string encode(const cc::Type& in) { return encode_as<pb::Type>(in); }                           \
  core::Status decode(std::string_view bytes, cc::Type& out) { return decode_as<pb::Type>(bytes, #Type, out); }

CLAIMSCHED_CAMPAIGN_CODEC_IMPL(CampaignSpec)
CLAIMSCHED_CAMPAIGN_CODEC_IMPL(CampaignRequest)
CLAIMSCHED_CAMPAIGN_CODEC_IMPL(CampaignReply)

#undef CLAIMSCHED_CAMPAIGN_CODEC_IMPL

}  // namespace claimsched::messages
