// The decoders' size limits (core/limits.hpp) and what the fuzz targets
// (tests/fuzz) taught: every message and every list in it is bounded, the
// error names the field and the limit, and a message that fails to decode
// leaves nothing behind in the process (no resource name registered).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/limits.hpp"
#include "messages/codec.hpp"
#include "messages/record_codec.hpp"
#include "tests/messages/decode_helpers.hpp"
#include "tests/messages/samples.hpp"

namespace claimsched::messages {
namespace {

using namespace samples;
using namespace decode_testing;
using ::testing::StartsWith;

// -- whole messages -----------------------------------------------------------

TEST(Limits, MessagesAboveTheirByteLimitAreRefusedBeforeParsing) {
  std::string big(core::kMaxMessageBytes + 1, '\0');
  auto e = decode_error<core::JobSpec>(big);
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_EQ(e.message, "JobSpec: 16777217 bytes, above the limit of 16777216 (kMaxMessageBytes)");

  // A node's whole state may be larger: the same size is parsed (and then
  // fails on its content, not its size).
  e = decode_error<core::NodeReport>(big);
  EXPECT_THAT(e.message, StartsWith("NodeReport"));
  EXPECT_EQ(e.message.find("kMaxMessageBytes"), std::string::npos) << e.message;

  StoredTask task;
  auto st = decode(big, task);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "StoredTask: 16777217 bytes, above the limit of 16777216 (kMaxMessageBytes)");
}

// -- lists --------------------------------------------------------------------

TEST(Limits, EveryListNamesItsLimit) {
  pb::ClaimRequest claim;
  to_proto(sample_claim(), claim);
  claim.clear_tasks();
  for (size_t i = 0; i <= core::kMaxTasksPerNode; ++i) claim.add_tasks(i);
  EXPECT_EQ(decode_error_of<core::ClaimRequest>(claim).message,
            "ClaimRequest.tasks: 1000001 entries, above the limit of 1000000 (kMaxTasksPerNode)");

  pb::NodeSpec spec;
  to_proto(sample_node_spec(), spec);
  for (size_t i = spec.labels_size(); i <= core::kMaxLabels; ++i) spec.add_labels("l");
  EXPECT_EQ(decode_error_of<core::NodeSpec>(spec).message,
            "NodeSpec.labels: 1025 entries, above the limit of 1024 (kMaxLabels)");

  pb::JobSpec job;
  to_proto(sample_job(), job);
  for (size_t i = job.command_size(); i <= core::kMaxArguments; ++i) job.add_command("");
  EXPECT_EQ(decode_error_of<core::JobSpec>(job).message,
            "JobSpec.command: 65537 entries, above the limit of 65536 (kMaxArguments)");

  to_proto(sample_job(), job);
  for (size_t i = job.env_size(); i <= core::kMaxEnvironment; ++i) job.add_env()->set_name("V");
  EXPECT_EQ(decode_error_of<core::JobSpec>(job).message,
            "JobSpec.env: 65537 entries, above the limit of 65536 (kMaxEnvironment)");

  pb::NodeReport report;
  to_proto(sample_report(), report);
  for (size_t i = report.epochs_size(); i <= core::kMaxPartitions; ++i) report.add_epochs();
  EXPECT_EQ(decode_error_of<core::NodeReport>(report).message,
            "NodeReport.epochs: 65537 entries, above the limit of 65536 (kMaxPartitions)");

  // A claim's launch is bounded like a job's command.
  to_proto(sample_claim(), claim);
  for (size_t i = claim.launch().argv_size(); i <= core::kMaxArguments; ++i)
    claim.mutable_launch()->add_argv("x");
  EXPECT_EQ(decode_error_of<core::ClaimRequest>(claim).message,
            "ClaimRequest.launch.argv: 65537 entries, above the limit of 65536 (kMaxArguments)");

  pb::Resources resources;
  for (size_t i = 0; i <= core::kMaxDimensions; ++i) resources.add_quantities()->set_name("cpu");
  core::Resources out;
  auto st = from_proto(resources, out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "Resources.quantities: 9 entries, above the limit of 8 (kMaxDimensions)");
}

TEST(Limits, AJobViewListsAtMostOneEntryPerTask) {
  auto view = sample<core::JobView>();
  view.spec.count = 1;  // the sample lists two tasks
  auto e = decode_error<core::JobView>(encode(view));
  EXPECT_EQ(e.message, "JobView.tasks: 2 entries, more than the job's count 1");
}

TEST(Limits, StoredEpochListsAreBoundedAndCheckedInLinearithmicTime) {
  // The pairwise duplicate check took quadratic time in a list a corrupt
  // record chooses; now the list is bounded and sorted.
  pb::StoredNodeHeader header;
  StoredNodeHeader sample_header;
  sample_header.spec = sample_node_spec();
  to_proto(sample_header, header);
  for (uint64_t i = 1; i <= core::kMaxPartitions; ++i) {
    auto* e = header.add_epochs();
    e->set_partition(i);
    e->set_epoch(i);
  }
  StoredNodeHeader out;
  ASSERT_TRUE(from_proto(header, out));
  EXPECT_EQ(out.epochs.size(), core::kMaxPartitions);

  header.mutable_epochs(core::kMaxPartitions - 1)->set_partition(7);
  auto st = from_proto(header, out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "StoredNodeHeader.epochs[65535].partition: duplicate partition 7");

  header.add_epochs()->set_partition(core::kMaxPartitions + 1);
  st = from_proto(header, out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "StoredNodeHeader.epochs: 65537 entries, above the limit of 65536 (kMaxPartitions)");
}

// -- values -------------------------------------------------------------------

TEST(Limits, DurationsAboveTheLimitWouldOverflowTimePoints) {
  // A node adds a claim's simulated runtime to its clock (now + runtime): a
  // runtime of INT64_MAX ns from the wire was a signed overflow there.
  pb::ClaimRequest claim;
  to_proto(sample_claim(), claim);
  claim.set_simulated_runtime_ns(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(decode_error_of<core::ClaimRequest>(claim).message,
            "ClaimRequest.simulated_runtime_ns: duration 9223372036854775807ns, above the limit of "
            "3153600000000000000ns (kMaxDuration)");
  claim.set_simulated_runtime_ns(core::kMaxDuration.count());
  core::ClaimRequest out;
  EXPECT_TRUE(from_proto(claim, out));
}

// -- the dimension registry ---------------------------------------------------

TEST(Limits, AMessageThatFailsToDecodeRegistersNoResourceName) {
  run_isolated([] {
    fpga();  // the samples' own dimension, registered before counting
    size_t before = core::DimensionRegistry::count();
    // A job asking for a new dimension whose later field is bad: it used to
    // register the name before failing, using up one of the few slots.
    pb::JobSpec job;
    to_proto(sample_job(), job);
    auto* q = job.mutable_per_task()->add_quantities();
    q->set_name("quantum_annealers");
    q->set_value(1);
    job.set_max_run_time_ns(-1);
    core::JobSpec out;
    if (decode(job.SerializeAsString(), out)) return false;
    if (core::DimensionRegistry::count() != before) return false;
    if (core::DimensionRegistry::find("quantum_annealers")) return false;
    // The same job, well formed: the name is registered and the value read.
    job.set_max_run_time_ns(0);
    if (!decode(job.SerializeAsString(), out)) return false;
    auto id = core::DimensionRegistry::find("quantum_annealers");
    return id && out.per_task[*id] == 1 && core::DimensionRegistry::count() == before + 1;
  });
}

TEST(Limits, GarbageCannotFillTheRegistry) {
  run_isolated([] {
    fpga();
    size_t before = core::DimensionRegistry::count();
    // Many messages, each with a fresh name and a bad field.
    for (int i = 0; i < 100; ++i) {
      pb::NodeSpec spec;
      to_proto(sample_node_spec(), spec);
      auto* q = spec.mutable_capacity()->add_quantities();
      q->set_name("garbage" + std::to_string(i));
      q->set_value(1);
      spec.set_max_starting(uint64_t{1} << 40);  // does not fit in 32 bits
      core::NodeSpec out;
      if (decode(spec.SerializeAsString(), out)) return false;
    }
    if (core::DimensionRegistry::count() != before) return false;
    // A real operator-defined dimension still finds a slot.
    return core::DimensionRegistry::intern("licenses").has_value();
  });
}

}  // namespace
}  // namespace claimsched::messages
