#pragma once

// The server's campaigns (issue 16): a thin actor over core/campaign. Every
// round (a timer) it asks the gateway which nodes are free, lets the
// metascheduler order the campaigns and each campaign's scheduler decide,
// and sends every task copy it dispatches as an ordinary one-task job through
// the gateway, which routes it to the partition owning the copy's pool (a
// campaign spans partitions that way). It then follows each of those jobs
// until it ends and feeds the end back to the campaign core (finalize, sinks
// and retries live there): the schedulers tell it which jobs were placed or
// ended (watch_atom), and only then is that job's status asked; a job not
// heard of for `fallback_poll` is asked anyway (an event lost with a
// partition's owner, or sent before the watch was in place).

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "actors/actors.hpp"
#include "core/campaign/campaign_scheduler.hpp"
#include "core/campaign/test_wave.hpp"
#include "storage/campaign_store.hpp"

namespace claimsched::actors {

struct CampaignActorConfig {
  /// Where jobs go and where free nodes are learned.
  gateway_actor gateway;
  /// Reads a campaign's JSON (the campaign file's keys: what the store keeps)
  /// and checks it against the cluster's pools; the error names the field.
  /// Supplied by the server (apps/campaign_file.*), so that files, submitted
  /// campaigns and restarts are checked alike.
  std::function<core::Expected<core::campaign::CampaignSpec>(const std::string& json)> read_campaign;
  /// The inverse: a campaign as that JSON (a submitted campaign, to check and
  /// store; one whose test wave has narrowed its pools).
  std::function<std::string(const core::campaign::CampaignSpec& spec)> write_campaign;
  /// How often a round runs.
  core::Duration round_interval = std::chrono::seconds(1);
  /// A followed job not heard of for this long has its status asked.
  core::Duration fallback_poll = std::chrono::seconds(30);
  /// At most this many of those fallback status requests per round (a
  /// restart follows every live copy again without a burst of requests).
  uint32_t fallback_polls_per_round = 500;
  core::Duration request_timeout = std::chrono::seconds(10);
  /// Where campaigns and their dispatched copies are recorded; the actor
  /// rebuilds every campaign from it when it starts. Null: nothing survives
  /// a restart. Writes are synced on the actor's own thread (it is detached).
  std::shared_ptr<storage::CampaignStore> store;
};

/// One campaign as the server runs it.
struct CampaignRun {
  CampaignRun(core::campaign::CampaignId id, uint64_t sequence, core::TimePoint submitted_at,
              core::campaign::CampaignSpec spec, std::string spec_json);

  core::campaign::CampaignId id;
  /// Submission order (FIFO among equals).
  uint64_t sequence = 0;
  core::TimePoint submitted_at{0};
  core::campaign::CampaignScheduler scheduler;
  bool cancelled = false;
  /// The campaign as the JSON the store keeps.
  std::string spec_json;
  /// The time of the last start or end fed to the core: its throughput
  /// window wants events in time order.
  core::TimePoint last_event{0};
  /// Each dispatched copy's job.
  std::map<core::campaign::CopyId, core::JobId> job_of;
  /// Copies whose job the gateway accepted and that have not been seen to
  /// end, with when their status is next asked unless an event comes first.
  std::map<core::campaign::CopyId, core::TimePoint> followed;
  /// Copies whose job was asked to cancel (withdrawn, lost a replica race,
  /// abandoned pool, campaign cancelled).
  std::set<core::campaign::CopyId> cancelling;
  /// A test campaign's wave, or a `test_first` campaign's before its bulk:
  /// one task per pool (index 0), a report per pool. Kept once complete,
  /// for `campaign status`.
  std::optional<core::campaign::TestWave> test_wave;
  /// Each tested pool's job; those still followed (as `followed`).
  std::map<std::string, core::JobId> test_jobs;
  std::map<std::string, core::TimePoint> test_followed;
  /// Why the campaign stopped by itself (no pool passed its test), or empty.
  std::string failure;

  /// The test wave still has pools to hear from.
  bool testing() const { return test_wave && !test_wave->complete(); }
  /// Nothing more to do: cancelled, failed, or every task done (a test
  /// campaign: every pool reported).
  bool finished() const;
};

struct campaign_state {
  explicit campaign_state(caf::local_actor*) {}
  CampaignActorConfig config;
  std::map<core::campaign::CampaignId, CampaignRun> campaigns;
  uint64_t next_id = 1;
  /// A round waits for the gateway's node list; ticks meanwhile are skipped.
  bool round_in_flight = false;
  /// What each followed job is: its campaign and copy, or its campaign's
  /// test on a pool (copy unset). Events for other jobs are ignored.
  struct Followed {
    core::campaign::CampaignId campaign;
    std::optional<core::campaign::CopyId> copy;
    std::string test_pool;
  };
  std::unordered_map<uint64_t, Followed> by_job;
  /// Whether the schedulers tell this actor of job events: only while it
  /// follows a job (follow_job, forget_job), so that a server whose
  /// campaigns follow none sends no message per scheduling pass.
  bool watching = false;
  static inline const char* name = "campaigns";
};

campaign_actor::behavior_type campaigns(campaign_actor::stateful_pointer<campaign_state> self,
                                        CampaignActorConfig config);

/// The job that runs one copy of a campaign's task: the rendered command, the
/// campaign's resources, and the task's identity in its environment
/// (CLAIMSCHED_CAMPAIGN_ID, CLAIMSCHED_TASK_INDEX, CLAIMSCHED_PARAM).
core::JobSpec job_for_copy(const CampaignRun& run, const core::campaign::TaskCopy& copy, core::JobId id);

}  // namespace claimsched::actors
