// Writing the wire messages (to_proto): the encoding half of codec.hpp. A
// core enum value v is written as v + 1 (codec.cpp checks the mapping), so
// that 0 stays UNSPECIFIED.

#include "messages/codec.hpp"

namespace claimsched::messages {

namespace {

template <class E>
constexpr int to_wire(E value) {
  return static_cast<int>(value) + 1;
}

void write(const core::TaskRef& in, pb::TaskRef& out) {
  out.set_job(in.job.value);
  out.set_index(in.index);
}

void write_launch(const core::LaunchRef& in, pb::TaskLaunch& out) {
  for (const auto& a : in->argv) out.add_argv(a);
  for (const auto& [k, v] : in->env) {
    auto* e = out.add_env();
    e->set_name(k);
    e->set_value(v);
  }
  out.set_workdir(in->workdir);
  out.set_max_run_time_ns(in->max_run_time.count());
  out.set_expected_output(in->expected_output);
}

void write_tasks(const std::vector<core::TaskIndex>& in,
                 google::protobuf::RepeatedField<uint64_t>& out) {
  out.Clear();
  out.Reserve(static_cast<int>(in.size()));
  for (auto index : in) out.AddAlreadyReserved(index);
}

}  // namespace

// -- Resources ----------------------------------------------------------------

void to_proto(const core::Resources& in, pb::Resources& out) {
  out.Clear();
  const auto& values = in.values();
  for (size_t d = 0; d < core::kMaxDimensions; ++d) {
    if (values[d] == 0) continue;
    auto* q = out.add_quantities();
    // An id that was never registered renders as "?", which no decoder
    // accepts: such a value is a bug on the sender and fails loudly there.
    q->set_name(std::string(core::DimensionRegistry::name(static_cast<core::DimensionId>(d))));
    q->set_value(values[d]);
  }
}

// -- to_proto -----------------------------------------------------------------

void to_proto(const core::TaskEnd& in, pb::TaskEnd& out) {
  out.Clear();
  out.set_reason(static_cast<pb::EndReason>(to_wire(in.reason)));
  out.set_stage(static_cast<pb::SpawnStage>(to_wire(in.stage)));
  out.set_signal(in.signal);
  out.set_exit_code(in.exit_code);
  out.set_peak_memory_bytes(in.peak_memory_bytes);
  out.set_output_missing(in.output_missing);
}

void to_proto(const core::NodeSpec& in, pb::NodeSpec& out) {
  out.Clear();
  out.set_id(in.id.value);
  out.set_name(in.name);
  out.set_pool(in.pool);
  to_proto(in.capacity, *out.mutable_capacity());
  for (const auto& label : in.labels) out.add_labels(label);
  out.set_max_starting(in.max_starting);
}

void to_proto(const core::NodeSnapshot& in, pb::NodeSnapshot& out) {
  out.Clear();
  out.set_node(in.node.value);
  out.set_generation(in.generation);
  out.set_state(static_cast<pb::NodeState>(to_wire(in.state)));
  to_proto(in.capacity, *out.mutable_capacity());
  to_proto(in.free, *out.mutable_free());
  out.set_starting(in.starting);
}

void to_proto(const core::JobSpec& in, pb::JobSpec& out) {
  out.Clear();
  out.set_id(in.id.value);
  out.set_name(in.name);
  out.set_user(in.user);
  out.set_job_class(in.job_class);
  out.set_pool(in.pool);
  out.set_count(in.count);
  to_proto(in.per_task, *out.mutable_per_task());
  for (const auto& c : in.constraints) out.add_constraints(c);
  out.set_gang(in.gang);
  out.set_preemptible(in.preemptible);
  out.set_max_run_time_ns(in.max_run_time.count());
  out.set_simulated_runtime_ns(in.simulated_runtime.count());
  out.set_submit_time_ns(in.submit_time.count());
  for (const auto& a : in.command) out.add_command(a);
  for (const auto& [k, v] : in.env) {
    auto* e = out.add_env();
    e->set_name(k);
    e->set_value(v);
  }
  out.set_workdir(in.workdir);
  out.set_max_retries(in.max_retries);
  out.set_max_lost_retries(in.max_lost_retries);
  out.set_wait_for_nodes(in.wait_for_nodes);
  out.set_locks(in.locks.to_string());
  out.set_expected_output(in.expected_output);
}

void to_proto(const core::ClaimRequest& in, pb::ClaimRequest& out) {
  out.Clear();
  out.set_claim_id(in.claim_id.value);
  out.set_partition(in.partition.value);
  out.set_epoch(in.epoch);
  out.set_node(in.node.value);
  if (in.expected_generation) out.set_expected_generation(*in.expected_generation);
  out.set_job(in.job.value);
  to_proto(in.per_task, *out.mutable_per_task());
  write_tasks(in.tasks, *out.mutable_tasks());
  out.set_simulated_runtime_ns(in.simulated_runtime.count());
  if (in.launch) write_launch(in.launch, *out.mutable_launch());
}

void to_proto(const core::ClaimReply& in, pb::ClaimReply& out) {
  out.Clear();
  out.set_claim_id(in.claim_id.value);
  out.set_outcome(static_cast<pb::ClaimOutcome>(to_wire(in.outcome)));
  to_proto(in.snapshot, *out.mutable_snapshot());
}

void to_proto(const core::ConfirmRequest& in, pb::ConfirmRequest& out) {
  out.Clear();
  out.set_claim_id(in.claim_id.value);
  out.set_partition(in.partition.value);
  out.set_epoch(in.epoch);
  out.set_node(in.node.value);
}

void to_proto(const core::ConfirmReply& in, pb::ConfirmReply& out) {
  out.Clear();
  out.set_claim_id(in.claim_id.value);
  out.set_outcome(static_cast<pb::ConfirmOutcome>(to_wire(in.outcome)));
  to_proto(in.snapshot, *out.mutable_snapshot());
}

void to_proto(const core::ReleaseRequest& in, pb::ReleaseRequest& out) {
  out.Clear();
  out.set_partition(in.partition.value);
  out.set_epoch(in.epoch);
  out.set_node(in.node.value);
  out.set_claim_id(in.claim_id.value);
  out.set_job(in.job.value);
  write_tasks(in.tasks, *out.mutable_tasks());
  out.set_reason(static_cast<pb::TaskState>(to_wire(in.reason)));
}

void to_proto(const core::ReleaseReply& in, pb::ReleaseReply& out) {
  out.Clear();
  out.set_claim_id(in.claim_id.value);
  out.set_released(in.released);
  out.set_stale_epoch(in.stale_epoch);
  to_proto(in.snapshot, *out.mutable_snapshot());
}

void to_proto(const core::NodeEvent& in, pb::NodeEvent& out) {
  out.Clear();
  out.set_kind(static_cast<pb::NodeEventKind>(to_wire(in.kind)));
  out.set_partition(in.partition.value);
  out.set_claim_id(in.claim_id.value);
  write(in.task, *out.mutable_task());
  out.set_final_state(static_cast<pb::TaskState>(to_wire(in.final_state)));
  out.set_exit_code(in.exit_code);
  if (!(in.end == core::TaskEnd{})) to_proto(in.end, *out.mutable_end());  // all a decode accepted
}

void to_proto(const core::NodeDelta& in, pb::NodeDelta& out) {
  out.Clear();
  to_proto(in.snapshot, *out.mutable_snapshot());
  out.mutable_events()->Reserve(static_cast<int>(in.events.size()));
  for (const auto& e : in.events) to_proto(e, *out.add_events());
  out.set_full(in.full);
  out.mutable_allocations()->Reserve(static_cast<int>(in.allocations.size()));
  for (const auto& a : in.allocations) to_proto(a, *out.add_allocations());
}

void to_proto(const core::LiveClaim& in, pb::LiveClaim& out) {
  out.Clear();
  out.set_id(in.id.value);
  out.set_partition(in.partition.value);
  out.set_expires_ns(in.expires.count());
  out.set_job(in.job.value);
  to_proto(in.per_task, *out.mutable_per_task());
  write_tasks(in.tasks, *out.mutable_tasks());
  out.set_simulated_runtime_ns(in.simulated_runtime.count());
  if (in.launch) write_launch(in.launch, *out.mutable_launch());
}

void to_proto(const core::Allocation& in, pb::Allocation& out) {
  out.Clear();
  write(in.task, *out.mutable_task());
  out.set_partition(in.partition.value);
  out.set_running(in.running);
  to_proto(in.resources, *out.mutable_resources());
  out.set_confirmed_at_ns(in.confirmed_at.count());
  out.set_finishes_at_ns(in.finishes_at.count());
  out.set_claim_id(in.claim_id.value);
  if (in.launch) write_launch(in.launch, *out.mutable_launch());
}

void to_proto(const core::NodeReport& in, pb::NodeReport& out) {
  out.Clear();
  to_proto(in.spec, *out.mutable_spec());
  to_proto(in.snapshot, *out.mutable_snapshot());
  for (const auto& [partition, epoch] : in.epochs) {
    auto* e = out.add_epochs();
    e->set_partition(partition.value);
    e->set_epoch(epoch);
  }
  out.mutable_claims()->Reserve(static_cast<int>(in.claims.size()));
  for (const auto& c : in.claims) to_proto(c, *out.add_claims());
  out.mutable_allocations()->Reserve(static_cast<int>(in.allocations.size()));
  for (const auto& a : in.allocations) to_proto(a, *out.add_allocations());
  out.mutable_finished()->Reserve(static_cast<int>(in.finished.size()));
  for (const auto& e : in.finished) to_proto(e, *out.add_finished());
}

void to_proto(const core::TaskView& in, pb::TaskView& out) {
  out.Clear();
  out.set_index(in.index);
  out.set_state(static_cast<pb::TaskState>(to_wire(in.state)));
  out.set_node(in.node.value);
  out.set_exit_code(in.exit_code);
  out.set_failures(in.failures);
  out.set_losses(in.losses);
  if (!(in.end == core::TaskEnd{})) to_proto(in.end, *out.mutable_end());  // all a decode accepted
  out.set_preempted_by(in.preempted_by.value);
  out.set_node_name(in.node_name);
}

void to_proto(const core::JobView& in, pb::JobView& out) {
  out.Clear();
  to_proto(in.spec, *out.mutable_spec());
  out.set_state(static_cast<pb::JobState>(to_wire(in.state)));
  for (auto n : in.by_state) out.add_by_state(n);
  out.set_reason(in.reason);
  out.set_last_removal(in.last_removal);
  out.set_preemptions(in.preemptions);
  out.set_evictions(in.evictions);
  out.mutable_tasks()->Reserve(static_cast<int>(in.tasks.size()));
  for (const auto& t : in.tasks) to_proto(t, *out.add_tasks());
  out.set_started_at_ns(in.started_at.count());
  out.set_finished_at_ns(in.finished_at.count());
  if (in.queue_weight) out.set_queue_weight(*in.queue_weight);
  out.set_queue_age_ticks(in.queue_age_ticks);
}

void to_proto(const core::NodeStatus& in, pb::NodeStatus& out) {
  out.Clear();
  to_proto(in.spec, *out.mutable_spec());
  to_proto(in.snapshot, *out.mutable_snapshot());
  out.set_alive(in.alive);
  out.set_silent_ms(in.silent_ms);
  out.set_running_tasks(in.running_tasks);
}

void to_proto(const core::JobFilter& in, pb::JobFilter& out) {
  out.Clear();
  out.set_user(in.user);
  out.set_pool(in.pool);
  for (auto s : in.states) out.add_states(static_cast<pb::JobState>(to_wire(s)));
  out.set_since_ns(in.since.count());
  out.set_limit(in.limit);
  out.set_older_than(in.older_than.value);
}

void to_proto(const core::LogRequest& in, pb::LogRequest& out) {
  out.Clear();
  write(in.task, *out.mutable_task());
  out.set_stderr_stream(in.stderr_stream);
  out.set_offset(in.offset);
  out.set_tail_lines(in.tail_lines);
  out.set_max_bytes(in.max_bytes);
}

void to_proto(const core::LogChunk& in, pb::LogChunk& out) {
  out.Clear();
  out.set_data(in.data);
  out.set_offset(in.offset);
  out.set_size(in.size);
  out.set_running(in.running);
  out.set_node(in.node);
}

}  // namespace claimsched::messages
