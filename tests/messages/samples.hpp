#pragma once

// One sample of every core type that crosses a process, with a non-default
// value in every field (codec_test checks that through Protobuf reflection,
// so a field added to the schema without a sample value fails the tests).

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "core/campaign/report.hpp"
#include "core/protocol.hpp"
#include "core/resources.hpp"

namespace claimsched::messages::samples {

using namespace std::chrono_literals;

/// An operator-defined dimension every sample uses, interned on first use.
inline core::DimensionId fpga() {
  static const core::DimensionId id = *core::DimensionRegistry::intern("fpga");
  return id;
}

/// Every built-in dimension plus an operator-defined one, all non-zero.
inline core::Resources sample_resources(int64_t base) {
  auto r = core::Resources::of({{core::dim::cpu, 1500 + base},
                                {core::dim::memory, (int64_t{4} << 30) + base},
                                {core::dim::gpu, 2 + base},
                                {core::dim::disk, (int64_t{100} << 30) + base}});
  r.set(fpga(), 1 + base);
  return r;
}

inline core::NodeSpec sample_node_spec() {
  core::NodeSpec s;
  s.id = core::NodeId{4'000'000'001u};
  s.name = "node-17.rack3";
  s.pool = "batch/gpu";
  s.capacity = sample_resources(100);
  s.labels = {"ssd", "os=linux", "zone=b"};
  s.max_starting = 4;
  return s;
}

inline core::NodeSnapshot sample_snapshot() {
  core::NodeSnapshot s;
  s.node = core::NodeId{17};
  s.generation = 0xFFFF'FFFF'FFFF'0001ULL;
  s.state = core::NodeState::draining;
  s.capacity = sample_resources(200);
  // Over-committed after a capacity shrink: free may be negative.
  s.free = core::Resources::of({{core::dim::cpu, -250}, {core::dim::memory, 1 << 20}});
  s.starting = 3;
  return s;
}

inline core::JobSpec sample_job(bool preemptible = true) {
  core::JobSpec j;
  j.id = core::JobId{0x1234'5678'9ABC'DEF0ULL};
  j.name = "train-resnet";
  j.user = "alice";
  j.job_class = "research";
  j.pool = "batch/gpu";
  j.count = 250;
  j.per_task = sample_resources(1);
  j.constraints = {"ssd", "!preempted", "os=linux"};
  j.gang = true;
  j.preemptible = preemptible;
  j.max_run_time = 2h;
  j.simulated_runtime = 1500ms;
  j.submit_time = core::TimePoint{1'700'000'000'123'456'789LL};
  j.command = {"/usr/bin/train", "--epochs", "90"};
  j.env = {{"CUDA_VISIBLE_DEVICES", "0,1"}, {"MODE", "fast"}};
  j.workdir = "/srv/train";
  j.max_retries = 2;
  j.max_lost_retries = 5;
  j.wait_for_nodes = true;
  j.locks = *core::parse_lock_declaration("group=shared:gpu instance=unknown-exclusive node=exclusive:n1,n2");
  j.expected_output = "out/model-7.pt";
  return j;
}

inline core::LaunchRef sample_launch() {
  return core::LaunchRef(
      core::TaskLaunch{{"/bin/sh", "-c", "echo $MODE"}, {{"MODE", "fast"}}, "/tmp", 90s, "results/7.csv"});
}

inline core::ClaimRequest sample_claim() {
  core::ClaimRequest c;
  c.claim_id = core::ClaimId{(uint64_t{3} << 48) | 77};
  c.partition = core::PartitionId{5};
  c.epoch = 42;
  c.node = core::NodeId{17};
  c.expected_generation = 9001;
  c.job = core::JobId{123};
  c.per_task = sample_resources(2);
  c.tasks = {0, 7, 4'294'967'295u};
  c.simulated_runtime = 250ms;
  c.launch = sample_launch();
  return c;
}

inline core::ClaimReply sample_claim_reply() {
  core::ClaimReply r;
  r.claim_id = core::ClaimId{77};
  r.outcome = core::ClaimOutcome::insufficient;
  r.snapshot = sample_snapshot();
  return r;
}

inline core::ConfirmRequest sample_confirm() {
  core::ConfirmRequest c;
  c.claim_id = core::ClaimId{77};
  c.partition = core::PartitionId{5};
  c.epoch = 42;
  c.node = core::NodeId{17};
  return c;
}

inline core::ConfirmReply sample_confirm_reply() {
  core::ConfirmReply r;
  r.claim_id = core::ClaimId{77};
  r.outcome = core::ConfirmOutcome::unknown_claim;
  r.snapshot = sample_snapshot();
  return r;
}

inline core::ReleaseRequest sample_release() {
  core::ReleaseRequest r;
  r.partition = core::PartitionId{5};
  r.epoch = 42;
  r.node = core::NodeId{17};
  r.claim_id = core::ClaimId{77};
  r.job = core::JobId{123};
  r.tasks = {1, 2, 3};
  r.reason = core::TaskState::preempted;
  return r;
}

inline core::ReleaseReply sample_release_reply() {
  core::ReleaseReply r;
  r.claim_id = core::ClaimId{77};
  r.released = 3;
  r.stale_epoch = true;
  r.snapshot = sample_snapshot();
  return r;
}

inline core::NodeEvent sample_event(int n = 0) {
  core::NodeEvent e;
  e.kind = n % 2 == 0 ? core::NodeEvent::Kind::claim_expired : core::NodeEvent::Kind::task_started;
  e.partition = core::PartitionId{5};
  e.claim_id = core::ClaimId{77 + static_cast<uint64_t>(n)};
  e.task = core::TaskRef{core::JobId{123}, 4'000'000'000u};
  e.final_state = core::TaskState::lost;
  e.exit_code = -9;
  e.end = core::TaskEnd::spawn_failed(core::SpawnStage::bad_workdir, 2);
  e.end.signal = 9;
  e.end.peak_memory_bytes = 3u << 20;
  e.end.output_missing = true;
  return e;
}

inline core::LiveClaim sample_live_claim(int n = 0) {
  core::LiveClaim c;
  c.id = core::ClaimId{500 + static_cast<uint64_t>(n)};
  c.partition = core::PartitionId{5};
  c.expires = core::TimePoint{10s + std::chrono::milliseconds{n}};
  c.job = core::JobId{123};
  c.per_task = sample_resources(3);
  c.tasks = {static_cast<core::TaskIndex>(10 + n), static_cast<core::TaskIndex>(11 + n)};
  c.simulated_runtime = 3s;
  c.launch = sample_launch();
  return c;
}

inline core::Allocation sample_allocation(int n = 0) {
  core::Allocation a;
  a.task = core::TaskRef{core::JobId{123}, static_cast<core::TaskIndex>(20 + n)};
  a.partition = core::PartitionId{5};
  a.running = true;
  a.resources = sample_resources(4);
  a.confirmed_at = core::TimePoint{5s};
  a.finishes_at = n == 0 ? core::kNever : core::TimePoint{8s};
  a.claim_id = core::ClaimId{400};
  a.launch = sample_launch();
  return a;
}

inline core::NodeDelta sample_delta() {
  core::NodeDelta d;
  d.snapshot = sample_snapshot();
  d.events = {sample_event(0), sample_event(1)};
  d.full = true;
  d.allocations = {sample_allocation(0), sample_allocation(1)};
  return d;
}

inline core::NodeReport sample_report() {
  core::NodeReport r;
  r.spec = sample_node_spec();
  r.snapshot = sample_snapshot();
  r.epochs = {{core::PartitionId{5}, 42}, {core::PartitionId{6}, 7}};
  r.claims = {sample_live_claim(0), sample_live_claim(1)};
  r.allocations = {sample_allocation(0), sample_allocation(1)};
  r.finished = {sample_event(0), sample_event(1)};
  return r;
}

// -- by type, for typed tests -------------------------------------------------

template <class T>
T sample();

template <>
inline core::NodeSpec sample<core::NodeSpec>() {
  return sample_node_spec();
}
template <>
inline core::NodeSnapshot sample<core::NodeSnapshot>() {
  return sample_snapshot();
}
template <>
inline core::JobSpec sample<core::JobSpec>() {
  return sample_job();
}
template <>
inline core::ClaimRequest sample<core::ClaimRequest>() {
  return sample_claim();
}
template <>
inline core::ClaimReply sample<core::ClaimReply>() {
  return sample_claim_reply();
}
template <>
inline core::ConfirmRequest sample<core::ConfirmRequest>() {
  return sample_confirm();
}
template <>
inline core::ConfirmReply sample<core::ConfirmReply>() {
  return sample_confirm_reply();
}
template <>
inline core::ReleaseRequest sample<core::ReleaseRequest>() {
  return sample_release();
}
template <>
inline core::ReleaseReply sample<core::ReleaseReply>() {
  return sample_release_reply();
}
template <>
inline core::NodeEvent sample<core::NodeEvent>() {
  return sample_event();
}
template <>
inline core::NodeDelta sample<core::NodeDelta>() {
  return sample_delta();
}
template <>
inline core::LiveClaim sample<core::LiveClaim>() {
  return sample_live_claim();
}
template <>
inline core::Allocation sample<core::Allocation>() {
  return sample_allocation();
}
template <>
inline core::NodeReport sample<core::NodeReport>() {
  return sample_report();
}

inline core::TaskView sample_task_view(int n = 0) {
  core::TaskView t;
  t.index = static_cast<core::TaskIndex>(3 + n);
  t.state = core::TaskState::failed;
  t.node = core::NodeId{17};
  t.exit_code = -9;
  t.failures = 2;
  t.losses = 1;
  t.end = core::TaskEnd::observed(core::EndReason::preempted, 0, 15);
  t.end.exit_code = 7;
  t.end.peak_memory_bytes = 123456789;
  t.end.output_missing = true;
  t.preempted_by = core::JobId{99};
  t.node_name = "node-17";
  return t;
}
template <>
inline core::TaskView sample<core::TaskView>() {
  return sample_task_view();
}
template <>
inline core::JobView sample<core::JobView>() {
  core::JobView v;
  v.spec = sample_job();
  v.state = core::JobState::running;
  for (size_t i = 0; i < v.by_state.size(); ++i) v.by_state[i] = static_cast<uint32_t>(i + 1);
  v.reason = "waiting for capacity";
  v.last_removal = "preempted task 3 on node 17";
  v.preemptions = 4;
  v.evictions = 1;
  v.tasks = {sample_task_view(0), sample_task_view(1)};
  v.started_at = core::TimePoint{5s};
  v.finished_at = core::TimePoint{9s};
  v.queue_weight = 2.5;
  v.queue_age_ticks = 3;
  return v;
}
template <>
inline core::NodeStatus sample<core::NodeStatus>() {
  core::NodeStatus n;
  n.spec = sample_node_spec();
  n.snapshot = sample_snapshot();
  n.alive = true;
  n.silent_ms = 1234;
  n.running_tasks = 7;
  return n;
}

template <>
inline core::TaskEnd sample<core::TaskEnd>() {
  core::TaskEnd e = core::TaskEnd::spawn_failed(core::SpawnStage::permission_denied, 13);
  e.signal = 6;
  e.peak_memory_bytes = (5ull << 30) + 17;
  e.output_missing = true;
  return e;
}

template <>
inline core::JobFilter sample<core::JobFilter>() {
  core::JobFilter f;
  f.user = "alice";
  f.pool = "gpu";
  f.states = {core::JobState::failed, core::JobState::cancelled};
  f.since = core::TimePoint{1'700'000'000'000'000'000LL};
  f.limit = 25;
  f.older_than = core::JobId{4242};
  return f;
}

template <>
inline core::LogRequest sample<core::LogRequest>() {
  core::LogRequest r;
  r.task = core::TaskRef{core::JobId{42}, 3};
  r.stderr_stream = true;
  r.offset = 1'000'000;
  r.tail_lines = 20;
  r.max_bytes = 4096;
  return r;
}

template <>
inline core::LogChunk sample<core::LogChunk>() {
  core::LogChunk c;
  c.data = std::string("line 1\n\0binary\n", 16);
  c.offset = 1'000'000;
  c.size = 1'000'016;
  c.running = true;
  c.node = "gpu-01";
  return c;
}

// -- campaigns ----------------------------------------------------------------

inline core::campaign::CampaignSpec sample_campaign_spec() {
  namespace cc = core::campaign;
  cc::CampaignSpec c;
  c.name = "sweep";
  c.user = "alice";
  c.command = {"/bin/sim", "--seed={param}", "--out=out/{index}.txt"};
  c.parameters = {"1", "2", "three"};
  c.per_task = sample_resources(5);
  c.pools = {"lyon", "nancy"};
  c.other_pools = {"grenoble"};
  c.type = cc::CampaignType::test;
  c.priority = -3;
  c.best_effort = true;
  c.test_first = true;
  c.algorithm = cc::RatioAlgorithm::adaptive_down_exp_up;
  c.max_waiting = 40;
  c.allowed_waiting = 10;
  c.finalize_replicas = 2;
  c.sink_runtime = 1500ms;
  c.declared_output = "out/{index}.txt";
  return c;
}

template <>
inline core::campaign::CampaignSpec sample<core::campaign::CampaignSpec>() {
  return sample_campaign_spec();
}
template <>
inline core::campaign::CampaignRequest sample<core::campaign::CampaignRequest>() {
  return {core::campaign::CampaignVerb::submit, core::campaign::CampaignId{12}, sample_campaign_spec()};
}
template <>
inline core::campaign::CampaignReply sample<core::campaign::CampaignReply>() {
  namespace cc = core::campaign;
  cc::CampaignReport c;
  c.id = cc::CampaignId{12};
  c.name = "sweep";
  c.user = "alice";
  c.type = cc::CampaignType::test;
  c.algorithm = cc::RatioAlgorithm::two_way_adaptive;
  c.state = cc::CampaignState::failed;
  c.tasks = 100;
  c.done = 40;
  c.pending = 30;
  c.waiting = 10;
  c.running = 20;
  c.copies = 75;
  c.submitted_at = core::TimePoint{1'700'000'000'000'000'000};
  c.throughput_per_s = 0.25;
  c.eta = core::TimePoint{1'700'000'240'000'000'000};
  c.mean_run_time = 12s;
  c.max_waiting = 40;
  c.allowed_waiting = 10;
  c.finalize_replicas = 2;
  c.finalizing = true;
  c.pools = {{"lyon", true, 4, 5, 6, true, "succeeded without the declared output", true, 0.5, 1.5,
              cc::RatioMove::decrease, 7}};
  c.test = {{"lyon", true, 3, 2500ms}};
  c.failure = "no task produced the declared output out/{index}.txt in any pool";
  cc::CampaignReply r;
  r.campaigns = {c, c};
  r.campaigns[1].id = cc::CampaignId{13};
  return r;
}

}  // namespace claimsched::messages::samples
