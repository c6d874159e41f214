#include "messages/codec.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/limits.hpp"
#include "messages/codec_detail.hpp"

// Decoding contract (see codec.hpp):
// - every error names the offending field by its path from the top-level
//   message: "ClaimRequest.per_task.cpu: negative quantity -5",
//   "NodeReport.claims[2].tasks: empty";
// - structural problems (unparseable bytes, a missing sub-message or enum, an
//   enum value out of range, a number that does not fit the core type, a
//   negative quantity or duration, a duplicate name) are Errc::corrupt;
//   DimensionRegistry's own errors (invalid name, too many dimensions) are
//   passed on with their code, prefixed with the field;
// - sizes are bounded (core/limits.hpp): a message above kMaxMessageBytes
//   (kMaxBulkMessageBytes for a node's or a job's whole state), a list above
//   its limit, a duration above kMaxDuration is Errc::corrupt naming the
//   limit, checked before anything is built from it;
// - a message that fails to decode registers no resource name: the registry
//   is process-wide, append-only and small, and garbage must not fill it (a
//   message naming new dimensions is decoded twice: once to check it, once to
//   register the names, see DecodeContext);
// - proto3 cannot tell a missing scalar from a zero, so a zero is rejected
//   wherever zero is not a legal value (claim ids of claims and confirms, a
//   job's count, a claim's task list), and enums start with UNSPECIFIED;
// - on error the output value is left untouched;
// - unknown fields are ignored (a newer writer), as Protobuf intends.
// Semantic checks that need configuration or state (core::validate(JobSpec),
// duplicate task indices, a claim for the wrong node) stay with their owners:
// a request rejected here over the network is dropped without a reply.

namespace claimsched::messages {

namespace codec_detail {

// -- enum mapping: a core value v is written as v + 1 -------------------------

static_assert(pb::NODE_STATE_UP == static_cast<int>(core::NodeState::up) + 1);
static_assert(pb::NODE_STATE_DRAINING == static_cast<int>(core::NodeState::draining) + 1);
static_assert(pb::NODE_STATE_DOWN == static_cast<int>(core::NodeState::down) + 1);

static_assert(pb::TASK_STATE_PENDING == static_cast<int>(core::TaskState::pending) + 1);
static_assert(pb::TASK_STATE_CLAIMED == static_cast<int>(core::TaskState::claimed) + 1);
static_assert(pb::TASK_STATE_RUNNING == static_cast<int>(core::TaskState::running) + 1);
static_assert(pb::TASK_STATE_SUCCEEDED == static_cast<int>(core::TaskState::succeeded) + 1);
static_assert(pb::TASK_STATE_FAILED == static_cast<int>(core::TaskState::failed) + 1);
static_assert(pb::TASK_STATE_PREEMPTED == static_cast<int>(core::TaskState::preempted) + 1);
static_assert(pb::TASK_STATE_EVICTED == static_cast<int>(core::TaskState::evicted) + 1);
static_assert(pb::TASK_STATE_LOST == static_cast<int>(core::TaskState::lost) + 1);
static_assert(pb::TASK_STATE_CANCELLED == static_cast<int>(core::TaskState::cancelled) + 1);

static_assert(pb::CLAIM_OUTCOME_ACCEPTED == static_cast<int>(core::ClaimOutcome::accepted) + 1);
static_assert(pb::CLAIM_OUTCOME_STALE_EPOCH ==
              static_cast<int>(core::ClaimOutcome::stale_epoch) + 1);
static_assert(pb::CLAIM_OUTCOME_CONFLICT == static_cast<int>(core::ClaimOutcome::conflict) + 1);
static_assert(pb::CLAIM_OUTCOME_INSUFFICIENT ==
              static_cast<int>(core::ClaimOutcome::insufficient) + 1);
static_assert(pb::CLAIM_OUTCOME_NOT_SCHEDULABLE ==
              static_cast<int>(core::ClaimOutcome::not_schedulable) + 1);
static_assert(pb::CLAIM_OUTCOME_INVALID == static_cast<int>(core::ClaimOutcome::invalid) + 1);

static_assert(pb::CONFIRM_OUTCOME_CONFIRMED ==
              static_cast<int>(core::ConfirmOutcome::confirmed) + 1);
static_assert(pb::CONFIRM_OUTCOME_UNKNOWN_CLAIM ==
              static_cast<int>(core::ConfirmOutcome::unknown_claim) + 1);
static_assert(pb::CONFIRM_OUTCOME_STALE_EPOCH ==
              static_cast<int>(core::ConfirmOutcome::stale_epoch) + 1);

static_assert(pb::NODE_EVENT_KIND_CLAIM_EXPIRED ==
              static_cast<int>(core::NodeEvent::Kind::claim_expired) + 1);
static_assert(pb::NODE_EVENT_KIND_TASK_FINISHED ==
              static_cast<int>(core::NodeEvent::Kind::task_finished) + 1);
static_assert(pb::NODE_EVENT_KIND_TASK_STARTED ==
              static_cast<int>(core::NodeEvent::Kind::task_started) + 1);
static_assert(pb::NODE_EVENT_KIND_TASK_EXITED ==
              static_cast<int>(core::NodeEvent::Kind::task_exited) + 1);
static_assert(pb::END_REASON_NONE == static_cast<int>(core::EndReason::none) + 1);
static_assert(pb::END_REASON_AGENT_STOPPED == static_cast<int>(core::EndReason::agent_stopped) + 1);
static_assert(pb::SPAWN_STAGE_NONE == static_cast<int>(core::SpawnStage::none) + 1);
static_assert(pb::SPAWN_STAGE_SYSTEM == static_cast<int>(core::SpawnStage::system) + 1);

// The last value of each core enum: decoding rejects anything above it.
constexpr core::NodeState kLastNodeState = core::NodeState::down;
constexpr core::TaskState kLastTaskState = core::TaskState::cancelled;
constexpr core::ClaimOutcome kLastClaimOutcome = core::ClaimOutcome::invalid;
constexpr core::ConfirmOutcome kLastConfirmOutcome = core::ConfirmOutcome::stale_epoch;
constexpr core::NodeEvent::Kind kLastNodeEventKind = core::NodeEvent::Kind::task_exited;
constexpr core::EndReason kLastEndReason = core::EndReason::agent_stopped;
constexpr core::SpawnStage kLastSpawnStage = core::SpawnStage::system;
static_assert(pb::EndReason_MAX == static_cast<int>(kLastEndReason) + 1);
static_assert(pb::SpawnStage_MAX == static_cast<int>(kLastSpawnStage) + 1);
constexpr core::JobState kLastJobState = core::JobState::waiting;
static_assert(pb::JobState_MAX == static_cast<int>(kLastJobState) + 1);

static_assert(pb::NodeState_MAX == static_cast<int>(kLastNodeState) + 1);
static_assert(pb::TaskState_MAX == static_cast<int>(kLastTaskState) + 1);
static_assert(pb::ClaimOutcome_MAX == static_cast<int>(kLastClaimOutcome) + 1);
static_assert(pb::ConfirmOutcome_MAX == static_cast<int>(kLastConfirmOutcome) + 1);
static_assert(pb::NodeEventKind_MAX == static_cast<int>(kLastNodeEventKind) + 1);


// -- building blocks ----------------------------------------------------------

Status read(const pb::TaskRef& in, const Path& p, core::TaskRef& out) {
  out.job.value = in.job();
  return read_u32(in.index(), Path{p, "index"}, out.index);
}

Status read(const pb::TaskEnd& in, const Path& p, core::TaskEnd& out) {
  CLAIMSCHED_TRY(read_enum(in.reason(), kLastEndReason, Path{p, "reason"}, out.reason));
  CLAIMSCHED_TRY(read_enum(in.stage(), kLastSpawnStage, Path{p, "stage"}, out.stage));
  if (in.signal() > 255) return corrupt(Path{p, "signal"}, "value " + std::to_string(in.signal()) + " is not a signal");
  out.signal = static_cast<uint8_t>(in.signal());
  out.exit_code = in.exit_code();
  out.peak_memory_bytes = in.peak_memory_bytes();
  out.output_missing = in.output_missing();
  return Status::ok();
}

/// An absent TaskEnd (an older writer) reads as reason none.
Status read_end(bool present, const pb::TaskEnd& in, const Path& p, core::TaskEnd& out) {
  out = core::TaskEnd{};
  return present ? read(in, p, out) : Status::ok();
}

// -- nodes --------------------------------------------------------------------

Status read(const pb::NodeSpec& in, const Path& p, core::NodeSpec& out) {
  CLAIMSCHED_TRY(read_id(in.id(), Path{p, "id"}, out.id));
  out.name = in.name();
  out.pool = in.pool();
  CLAIMSCHED_TRY(read_resources(in.has_capacity(), in.capacity(), Path{p, "capacity"},
                                Negatives::reject, out.capacity));
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.labels_size(), kMaxLabels, Path(p, "labels")));
  out.labels.assign(in.labels().begin(), in.labels().end());
  return read_u32(in.max_starting(), Path{p, "max_starting"}, out.max_starting);
}

Status read(const pb::NodeSnapshot& in, const Path& p, core::NodeSnapshot& out) {
  CLAIMSCHED_TRY(read_id(in.node(), Path{p, "node"}, out.node));
  out.generation = in.generation();
  CLAIMSCHED_TRY(read_enum(in.state(), kLastNodeState, Path{p, "state"}, out.state));
  CLAIMSCHED_TRY(read_resources(in.has_capacity(), in.capacity(), Path{p, "capacity"},
                                Negatives::reject, out.capacity));
  // A node whose capacity shrank under running work is over-committed:
  // free is negative there, and that must reach the scheduler as it is.
  CLAIMSCHED_TRY(
      read_resources(in.has_free(), in.free(), Path{p, "free"}, Negatives::allow, out.free));
  return read_u32(in.starting(), Path{p, "starting"}, out.starting);
}

Status read_snapshot(bool present, const pb::NodeSnapshot& in, const Path& p,
                     core::NodeSnapshot& out) {
  if (!present) return corrupt(p, "missing");
  return read(in, p, out);
}

// -- jobs ---------------------------------------------------------------------

Status read_env(const google::protobuf::RepeatedPtrField<pb::EnvVar>& in, const Path& p,
                std::vector<std::pair<std::string, std::string>>& out) {
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.size(), kMaxEnvironment, p));
  out.clear();
  out.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    const auto& e = in.Get(i);
    if (e.name().empty() || e.name().find('=') != std::string::npos ||
        e.name().find('\0') != std::string::npos)
      return corrupt(Path{Path{p, i}, "name"}, "invalid variable name");
    if (e.value().find('\0') != std::string::npos)
      return corrupt(Path{Path{p, i}, "value"}, "contains a NUL byte");
    out.emplace_back(e.name(), e.value());
  }
  return Status::ok();
}

Status read_argv(const google::protobuf::RepeatedPtrField<std::string>& in, const Path& p,
                 std::vector<std::string>& out) {
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.size(), kMaxArguments, p));
  out.assign(in.begin(), in.end());
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].find('\0') != std::string::npos)
      return corrupt(Path{p, static_cast<int>(i)}, "contains a NUL byte");
  return Status::ok();
}

/// A file name the agent opens: no NUL byte (it would cut the name short).
Status read_path(const std::string& in, const Path& p, std::string& out) {
  if (in.find('\0') != std::string::npos) return corrupt(p, "contains a NUL byte");
  out = in;
  return Status::ok();
}

Status read_launch(bool present, const pb::TaskLaunch& in, const Path& p, core::LaunchRef& out) {
  if (!present) {
    out = core::LaunchRef{};
    return Status::ok();
  }
  core::TaskLaunch l;
  CLAIMSCHED_TRY(read_argv(in.argv(), Path{p, "argv"}, l.argv));
  if (l.argv.empty() || l.argv.front().empty()) return corrupt(Path{p, "argv"}, "no program");
  CLAIMSCHED_TRY(read_env(in.env(), Path{p, "env"}, l.env));
  l.workdir = in.workdir();
  CLAIMSCHED_TRY(read_duration(in.max_run_time_ns(), Path{p, "max_run_time_ns"}, l.max_run_time));
  CLAIMSCHED_TRY(read_path(in.expected_output(), Path{p, "expected_output"}, l.expected_output));
  out = core::LaunchRef(std::move(l));
  return Status::ok();
}

Status read(const pb::JobSpec& in, const Path& p, core::JobSpec& out) {
  CLAIMSCHED_TRY(read_id(in.id(), Path{p, "id"}, out.id));
  out.name = in.name();
  out.user = in.user();
  out.job_class = in.job_class();
  out.pool = in.pool();
  if (in.count() == 0) return corrupt(Path{p, "count"}, "missing (a job has at least one task)");
  CLAIMSCHED_TRY(read_u32(in.count(), Path{p, "count"}, out.count));
  CLAIMSCHED_TRY(read_resources(in.has_per_task(), in.per_task(), Path{p, "per_task"},
                                Negatives::reject, out.per_task));
  CLAIMSCHED_TRY(
      CLAIMSCHED_CHECK_ENTRIES(in.constraints_size(), kMaxLabels, Path(p, "constraints")));
  out.constraints.assign(in.constraints().begin(), in.constraints().end());
  out.gang = in.gang();
  out.preemptible = in.preemptible();
  CLAIMSCHED_TRY(read_duration(in.max_run_time_ns(), Path{p, "max_run_time_ns"}, out.max_run_time));
  CLAIMSCHED_TRY(read_duration(in.simulated_runtime_ns(), Path{p, "simulated_runtime_ns"},
                               out.simulated_runtime));
  out.submit_time = read_time(in.submit_time_ns());
  CLAIMSCHED_TRY(read_argv(in.command(), Path{p, "command"}, out.command));
  CLAIMSCHED_TRY(read_env(in.env(), Path{p, "env"}, out.env));
  out.workdir = in.workdir();
  CLAIMSCHED_TRY(read_u32(in.max_retries(), Path{p, "max_retries"}, out.max_retries));
  if (in.has_max_lost_retries())
    CLAIMSCHED_TRY(read_u32(in.max_lost_retries(), Path{p, "max_lost_retries"}, out.max_lost_retries));
  out.wait_for_nodes = in.wait_for_nodes();
  CLAIMSCHED_TRY(read_path(in.expected_output(), Path{p, "expected_output"}, out.expected_output));
  out.locks = {};
  if (!in.locks().empty()) {
    auto locks = core::parse_lock_declaration(in.locks());
    if (!locks) return corrupt(Path{p, "locks"}, locks.error().message);
    out.locks = std::move(*locks);
  }
  return Status::ok();
}

// -- the claim protocol -------------------------------------------------------

Status read(const pb::ClaimRequest& in, const Path& p, core::ClaimRequest& out) {
  CLAIMSCHED_TRY(read_claim_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  out.epoch = in.epoch();
  CLAIMSCHED_TRY(read_id(in.node(), Path{p, "node"}, out.node));
  if (in.has_expected_generation())
    out.expected_generation = in.expected_generation();
  else
    out.expected_generation.reset();
  CLAIMSCHED_TRY(read_id(in.job(), Path{p, "job"}, out.job));
  CLAIMSCHED_TRY(read_resources(in.has_per_task(), in.per_task(), Path{p, "per_task"},
                                Negatives::reject, out.per_task));
  CLAIMSCHED_TRY(read_tasks(in.tasks(), Path{p, "tasks"}, true, out.tasks));
  CLAIMSCHED_TRY(read_launch(in.has_launch(), in.launch(), Path{p, "launch"}, out.launch));
  return read_duration(in.simulated_runtime_ns(), Path{p, "simulated_runtime_ns"},
                       out.simulated_runtime);
}

Status read(const pb::ClaimReply& in, const Path& p, core::ClaimReply& out) {
  CLAIMSCHED_TRY(read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_enum(in.outcome(), kLastClaimOutcome, Path{p, "outcome"}, out.outcome));
  return read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot);
}

Status read(const pb::ConfirmRequest& in, const Path& p, core::ConfirmRequest& out) {
  CLAIMSCHED_TRY(read_claim_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  out.epoch = in.epoch();
  return read_id(in.node(), Path{p, "node"}, out.node);
}

Status read(const pb::ConfirmReply& in, const Path& p, core::ConfirmReply& out) {
  CLAIMSCHED_TRY(read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_enum(in.outcome(), kLastConfirmOutcome, Path{p, "outcome"}, out.outcome));
  return read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot);
}

Status read(const pb::ReleaseRequest& in, const Path& p, core::ReleaseRequest& out) {
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  out.epoch = in.epoch();
  CLAIMSCHED_TRY(read_id(in.node(), Path{p, "node"}, out.node));
  CLAIMSCHED_TRY(read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_id(in.job(), Path{p, "job"}, out.job));
  CLAIMSCHED_TRY(read_tasks(in.tasks(), Path{p, "tasks"}, false, out.tasks));
  return read_enum(in.reason(), kLastTaskState, Path{p, "reason"}, out.reason);
}

Status read(const pb::ReleaseReply& in, const Path& p, core::ReleaseReply& out) {
  CLAIMSCHED_TRY(read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  CLAIMSCHED_TRY(read_u32(in.released(), Path{p, "released"}, out.released));
  out.stale_epoch = in.stale_epoch();
  return read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot);
}

// -- node update stream and node state ----------------------------------------

Status read(const pb::NodeEvent& in, const Path& p, core::NodeEvent& out) {
  CLAIMSCHED_TRY(read_enum(in.kind(), kLastNodeEventKind, Path{p, "kind"}, out.kind));
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  CLAIMSCHED_TRY(read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id));
  if (!in.has_task()) return corrupt(Path{p, "task"}, "missing");
  CLAIMSCHED_TRY(read(in.task(), Path{p, "task"}, out.task));
  CLAIMSCHED_TRY(
      read_enum(in.final_state(), kLastTaskState, Path{p, "final_state"}, out.final_state));
  CLAIMSCHED_TRY(read_end(in.has_end(), in.end(), Path{p, "end"}, out.end));
  return read_exit_code(in.exit_code(), Path{p, "exit_code"}, out.exit_code);
}

Status read(const pb::LiveClaim& in, const Path& p, core::LiveClaim& out) {
  CLAIMSCHED_TRY(read_claim_id(in.id(), Path{p, "id"}, out.id));
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  out.expires = read_time(in.expires_ns());
  CLAIMSCHED_TRY(read_id(in.job(), Path{p, "job"}, out.job));
  CLAIMSCHED_TRY(read_resources(in.has_per_task(), in.per_task(), Path{p, "per_task"},
                                Negatives::reject, out.per_task));
  CLAIMSCHED_TRY(read_tasks(in.tasks(), Path{p, "tasks"}, true, out.tasks));
  CLAIMSCHED_TRY(read_launch(in.has_launch(), in.launch(), Path{p, "launch"}, out.launch));
  return read_duration(in.simulated_runtime_ns(), Path{p, "simulated_runtime_ns"},
                       out.simulated_runtime);
}

Status read(const pb::Allocation& in, const Path& p, core::Allocation& out) {
  if (!in.has_task()) return corrupt(Path{p, "task"}, "missing");
  CLAIMSCHED_TRY(read(in.task(), Path{p, "task"}, out.task));
  CLAIMSCHED_TRY(read_id(in.partition(), Path{p, "partition"}, out.partition));
  out.running = in.running();
  CLAIMSCHED_TRY(read_resources(in.has_resources(), in.resources(), Path{p, "resources"},
                                Negatives::reject, out.resources));
  out.confirmed_at = read_time(in.confirmed_at_ns());
  out.finishes_at = read_time(in.finishes_at_ns());
  CLAIMSCHED_TRY(read_launch(in.has_launch(), in.launch(), Path{p, "launch"}, out.launch));
  return read_id(in.claim_id(), Path{p, "claim_id"}, out.claim_id);
}

Status read(const pb::NodeDelta& in, const Path& p, core::NodeDelta& out) {
  CLAIMSCHED_TRY(
      read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot));
  Path events{p, "events"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.events_size(), kMaxTasksPerNode, events));
  out.events.clear();
  out.events.resize(static_cast<size_t>(in.events_size()));
  for (int i = 0; i < in.events_size(); ++i)
    CLAIMSCHED_TRY(read(in.events(i), Path{events, i}, out.events[static_cast<size_t>(i)]));
  out.full = in.full();
  Path allocations{p, "allocations"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.allocations_size(), kMaxTasksPerNode, allocations));
  out.allocations.clear();
  out.allocations.resize(static_cast<size_t>(in.allocations_size()));
  for (int i = 0; i < in.allocations_size(); ++i)
    CLAIMSCHED_TRY(
        read(in.allocations(i), Path{allocations, i}, out.allocations[static_cast<size_t>(i)]));
  return Status::ok();
}

Status read(const pb::NodeReport& in, const Path& p, core::NodeReport& out) {
  if (!in.has_spec()) return corrupt(Path{p, "spec"}, "missing");
  CLAIMSCHED_TRY(read(in.spec(), Path{p, "spec"}, out.spec));
  CLAIMSCHED_TRY(
      read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot));

  Path epochs{p, "epochs"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.epochs_size(), kMaxPartitions, epochs));
  out.epochs.clear();
  out.epochs.reserve(static_cast<size_t>(in.epochs_size()));
  for (int i = 0; i < in.epochs_size(); ++i) {
    Path item{epochs, i};
    core::PartitionId partition;
    CLAIMSCHED_TRY(read_id(in.epochs(i).partition(), Path{item, "partition"}, partition));
    out.epochs.emplace_back(partition, in.epochs(i).epoch());
  }
  std::vector<core::PartitionId> partitions;
  partitions.reserve(out.epochs.size());
  for (const auto& [partition, epoch] : out.epochs) partitions.push_back(partition);
  std::sort(partitions.begin(), partitions.end());
  if (auto dup = std::adjacent_find(partitions.begin(), partitions.end()); dup != partitions.end())
    return corrupt(epochs, "duplicate partition " + std::to_string(dup->value));

  Path claims{p, "claims"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.claims_size(), kMaxTasksPerNode, claims));
  out.claims.clear();
  out.claims.resize(static_cast<size_t>(in.claims_size()));
  for (int i = 0; i < in.claims_size(); ++i)
    CLAIMSCHED_TRY(read(in.claims(i), Path{claims, i}, out.claims[static_cast<size_t>(i)]));

  Path allocations{p, "allocations"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.allocations_size(), kMaxTasksPerNode, allocations));
  out.allocations.clear();
  out.allocations.resize(static_cast<size_t>(in.allocations_size()));
  for (int i = 0; i < in.allocations_size(); ++i)
    CLAIMSCHED_TRY(
        read(in.allocations(i), Path{allocations, i}, out.allocations[static_cast<size_t>(i)]));
  Path finished{p, "finished"};
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.finished_size(), kMaxTasksPerNode, finished));
  out.finished.clear();
  out.finished.resize(static_cast<size_t>(in.finished_size()));
  for (int i = 0; i < in.finished_size(); ++i)
    CLAIMSCHED_TRY(read(in.finished(i), Path{finished, i}, out.finished[static_cast<size_t>(i)]));
  return Status::ok();
}

Status read(const pb::TaskView& in, const Path& p, core::TaskView& out) {
  CLAIMSCHED_TRY(read_u32(in.index(), Path{p, "index"}, out.index));
  CLAIMSCHED_TRY(read_enum(in.state(), kLastTaskState, Path{p, "state"}, out.state));
  out.node = core::NodeId{};
  if (in.node() != 0) CLAIMSCHED_TRY(read_id(in.node(), Path{p, "node"}, out.node));
  out.exit_code = in.exit_code();
  CLAIMSCHED_TRY(read_u32(in.failures(), Path{p, "failures"}, out.failures));
  CLAIMSCHED_TRY(read_end(in.has_end(), in.end(), Path{p, "end"}, out.end));
  out.preempted_by = core::JobId{in.preempted_by()};
  out.node_name = in.node_name();
  return read_u32(in.losses(), Path{p, "losses"}, out.losses);
}

Status read(const pb::JobView& in, const Path& p, core::JobView& out) {
  if (!in.has_spec()) return corrupt(Path{p, "spec"}, "missing");
  CLAIMSCHED_TRY(read(in.spec(), Path{p, "spec"}, out.spec));
  CLAIMSCHED_TRY(read_enum(in.state(), kLastJobState, Path{p, "state"}, out.state));
  if (in.by_state_size() != static_cast<int>(out.by_state.size()))
    return corrupt(Path{p, "by_state"}, "needs " + std::to_string(out.by_state.size()) + " entries");
  for (int i = 0; i < in.by_state_size(); ++i)
    CLAIMSCHED_TRY(read_u32(in.by_state(i), Path{Path{p, "by_state"}, i}, out.by_state[static_cast<size_t>(i)]));
  out.reason = in.reason();
  out.last_removal = in.last_removal();
  CLAIMSCHED_TRY(read_u32(in.preemptions(), Path{p, "preemptions"}, out.preemptions));
  CLAIMSCHED_TRY(read_u32(in.evictions(), Path{p, "evictions"}, out.evictions));
  Path tasks{p, "tasks"};
  // One entry per task of the job, at most.
  CLAIMSCHED_TRY(CLAIMSCHED_CHECK_ENTRIES(in.tasks_size(), kMaxTasksPerJob, tasks));
  if (static_cast<uint64_t>(in.tasks_size()) > out.spec.count)
    return corrupt(tasks, std::to_string(in.tasks_size()) + " entries, more than the job's count " +
                              std::to_string(out.spec.count));
  out.tasks.clear();
  out.tasks.resize(static_cast<size_t>(in.tasks_size()));
  for (int i = 0; i < in.tasks_size(); ++i)
    CLAIMSCHED_TRY(read(in.tasks(i), Path{tasks, i}, out.tasks[static_cast<size_t>(i)]));
  out.started_at = read_time(in.started_at_ns());
  out.finished_at = read_time(in.finished_at_ns());
  out.queue_weight.reset();
  if (in.has_queue_weight()) {
    double weight = 0;
    CLAIMSCHED_TRY(read_finite(in.queue_weight(), Path{p, "queue_weight"}, weight));
    out.queue_weight = weight;
  }
  out.queue_age_ticks = in.queue_age_ticks();
  return Status::ok();
}

Status read(const pb::NodeStatus& in, const Path& p, core::NodeStatus& out) {
  if (!in.has_spec()) return corrupt(Path{p, "spec"}, "missing");
  CLAIMSCHED_TRY(read(in.spec(), Path{p, "spec"}, out.spec));
  CLAIMSCHED_TRY(read_snapshot(in.has_snapshot(), in.snapshot(), Path{p, "snapshot"}, out.snapshot));
  out.alive = in.alive();
  out.silent_ms = in.silent_ms();
  return read_u32(in.running_tasks(), Path{p, "running_tasks"}, out.running_tasks);
}

Status read(const pb::JobFilter& in, const Path& p, core::JobFilter& out) {
  out.user = in.user();
  out.pool = in.pool();
  out.states.clear();
  for (int i = 0; i < in.states_size(); ++i) {
    core::JobState s{};
    CLAIMSCHED_TRY(read_enum(in.states(i), kLastJobState, Path{Path{p, "states"}, i}, s));
    out.states.push_back(s);
  }
  out.since = read_time(in.since_ns());
  out.older_than = core::JobId{in.older_than()};
  return read_u32(in.limit(), Path{p, "limit"}, out.limit);
}

Status read(const pb::LogRequest& in, const Path& p, core::LogRequest& out) {
  if (!in.has_task()) return corrupt(Path{p, "task"}, "missing");
  CLAIMSCHED_TRY(read(in.task(), Path{p, "task"}, out.task));
  out.stderr_stream = in.stderr_stream();
  out.offset = in.offset();
  CLAIMSCHED_TRY(read_u32(in.tail_lines(), Path{p, "tail_lines"}, out.tail_lines));
  return read_u32(in.max_bytes(), Path{p, "max_bytes"}, out.max_bytes);
}

Status read(const pb::LogChunk& in, const Path&, core::LogChunk& out) {
  out.data = in.data();
  out.offset = in.offset();
  out.size = in.size();
  out.running = in.running();
  out.node = in.node();
  return Status::ok();
}


}  // namespace codec_detail

using namespace codec_detail;

// -- Resources ----------------------------------------------------------------

Status from_proto(const pb::Resources& in, core::Resources& out) {
  return from_proto_as(in, "Resources", out, Negatives::reject);
}

// -- from_proto / encode / decode ---------------------------------------------

#define CLAIMSCHED_CODEC_IMPL(Type)                                            \
  core::Status from_proto(const pb::Type& in, core::Type& out) {               \
    return from_proto_as(in, #Type, out);                                      \
  }                                                                            \
  std::string encode(const core::Type& in) { return encode_as<pb::Type>(in); } \
  core::Status decode(std::string_view bytes, core::Type& out) {               \
    return decode_as<pb::Type>(bytes, #Type, out);                             \
  }

CLAIMSCHED_CODEC_IMPL(TaskEnd)
CLAIMSCHED_CODEC_IMPL(NodeSpec)
CLAIMSCHED_CODEC_IMPL(NodeSnapshot)
CLAIMSCHED_CODEC_IMPL(JobSpec)
CLAIMSCHED_CODEC_IMPL(ClaimRequest)
CLAIMSCHED_CODEC_IMPL(ClaimReply)
CLAIMSCHED_CODEC_IMPL(ConfirmRequest)
CLAIMSCHED_CODEC_IMPL(ConfirmReply)
CLAIMSCHED_CODEC_IMPL(ReleaseRequest)
CLAIMSCHED_CODEC_IMPL(ReleaseReply)
CLAIMSCHED_CODEC_IMPL(NodeEvent)
CLAIMSCHED_CODEC_IMPL(NodeDelta)
CLAIMSCHED_CODEC_IMPL(LiveClaim)
CLAIMSCHED_CODEC_IMPL(Allocation)
CLAIMSCHED_CODEC_IMPL(NodeReport)
CLAIMSCHED_CODEC_IMPL(TaskView)
CLAIMSCHED_CODEC_IMPL(JobView)
CLAIMSCHED_CODEC_IMPL(NodeStatus)
CLAIMSCHED_CODEC_IMPL(JobFilter)
CLAIMSCHED_CODEC_IMPL(LogRequest)
CLAIMSCHED_CODEC_IMPL(LogChunk)

#undef CLAIMSCHED_CODEC_IMPL

}  // namespace claimsched::messages
