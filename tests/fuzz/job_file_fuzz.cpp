// Fuzz target `job_file`: job files for `claimsched submit --file`, TOML or
// JSON (apps/job_file.hpp). Beyond "never a crash": what parses keeps the
// documented bounds, and a job the client would send (defaults filled in,
// core::validate passed) crosses the wire unchanged: a job the server's
// decoder refused would be dropped without an answer.

#include <cstddef>
#include <cstdint>
#include <string>

#include "apps/job_file.hpp"
#include "messages/codec.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

using namespace claimsched;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::fill_dimension_registry();
  fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto parsed = apps::parse_job_file(text, "job.toml");
  if (!parsed) {
    fuzz::require_message(parsed.error(), text);
    fuzz::require(parsed.error().message.starts_with("job.toml"), "error does not name the file",
                  parsed.error().message);
    return 0;
  }
  core::JobSpec job = parsed->spec;
  fuzz::require(job.count >= 1 && job.count <= core::kMaxTasksPerJob, "count out of bounds", text);
  fuzz::require(job.max_retries <= 1000 && job.max_lost_retries <= 1000, "retries out of bounds", text);
  fuzz::require(job.max_run_time.count() >= 0 && job.simulated_runtime.count() >= 0,
                "negative duration", text);
  if (job.user.empty()) job.user = "fuzz";
  if (job.pool.empty()) job.pool = "default";
  if (!core::validate(job)) return 0;
  std::string bytes = messages::encode(job);
  core::JobSpec received;
  if (auto st = messages::decode(bytes, received); !st)
    fuzz::fail("a valid job from a job file does not decode on the server", st.error().message);
  fuzz::require(received == job, "a job from a job file changed on the wire", text);
  return 0;
}
