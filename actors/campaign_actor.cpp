#include "actors/campaign_actor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/campaign_views.hpp"
#include "actors/gateway_actor.hpp"
#include "core/campaign/metascheduler.hpp"
#include "messages/errors.hpp"

namespace claimsched::actors {

namespace cc = core::campaign;

namespace {

using self_ptr = campaign_actor::stateful_pointer<campaign_state>;

/// The pool's slots are counted in tasks; a task that asks for nothing would
/// fit without end, so a pool offers at most this many at once.
constexpr int64_t kMostSlotsPerPool = 100'000;

core::TimePoint wall_now() {
  return std::chrono::duration_cast<core::TimePoint>(std::chrono::system_clock::now().time_since_epoch());
}

caf::error error_of(core::Errc code, std::string message) {
  return messages::to_caf_error(core::make_error(code, std::move(message)));
}

std::chrono::milliseconds timeout_of(const campaign_state& st) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(st.config.request_timeout);
}

CampaignRun* find_run(self_ptr self, cc::CampaignId id) {
  auto it = self->state.campaigns.find(id);
  return it == self->state.campaigns.end() ? nullptr : &it->second;
}

bool finished(const CampaignRun& run) { return run.finished(); }

storage::StoredCampaign record_of(const CampaignRun& run) {
  return {run.id.value, run.sequence, run.submitted_at, run.cancelled, run.spec_json};
}

storage::StoredCopy record_of(const CampaignRun& run, cc::CopyId copy, storage::StoredCopy::State state) {
  const cc::TaskCopy& c = run.scheduler.tasks().copy(copy);
  return {run.id.value, run.job_of.at(copy), c.index, c.pool, c.replica, c.dispatched, state};
}

/// Records the campaign (submitted, cancelled); ok without a store.
core::Status save(self_ptr self, const CampaignRun& run) {
  auto& store = self->state.config.store;
  return store ? store->put(record_of(run)) : core::Status::ok();
}

/// Records copies; ok without a store.
core::Status save(self_ptr self, const std::vector<storage::StoredCopy>& copies) {
  auto& store = self->state.config.store;
  return store ? store->put(copies) : core::Status::ok();
}

/// Asks the gateway to cancel a copy's job; the copy is followed until its
/// job is seen to end (the core hears of it then).
void cancel_copy(self_ptr self, CampaignRun& run, cc::CopyId copy) {
  auto job = run.job_of.find(copy);
  if (job == run.job_of.end()) return;
  run.cancelling.insert(copy);
  auto campaign = run.id;
  self->request(self->state.config.gateway, timeout_of(self->state), cancel_atom::value, job->second)
      .then([](core::JobView&) {},
            [=](caf::error& err) {
              // Not accepted yet, or already gone: the next status tells.
              spdlog::debug("campaign {}: cancelling copy {}: {}", campaign.value, copy,
                            self->system().render(err));
            });
}

/// Job events reach this actor while it follows a job, and only then.
void watch_while_following(self_ptr self) {
  auto& st = self->state;
  bool want = !st.by_job.empty();
  if (want == st.watching) return;
  st.watching = want;
  // Through the gateway, as the job itself: so the schedulers hear of the
  // watch before they see the job.
  auto me = caf::actor_cast<caf::actor>(self);
  if (want)
    self->send(st.config.gateway, watch_atom::value, me);
  else
    self->send(st.config.gateway, unwatch_atom::value, me);
}

void follow_job(self_ptr self, core::JobId job, campaign_state::Followed what) {
  self->state.by_job[job.value] = std::move(what);
  watch_while_following(self);
}

void forget_job(self_ptr self, core::JobId job) {
  self->state.by_job.erase(job.value);
  watch_while_following(self);
}

/// Stops following a job: its end was seen, or it was never accepted.
void unfollow(self_ptr self, CampaignRun& run, cc::CopyId copy) {
  run.followed.erase(copy);
  if (auto job = run.job_of.find(copy); job != run.job_of.end()) forget_job(self, job->second);
}

/// Sends a copy's job (its id recorded already) to its pool, followed from
/// now on (an event may come before the gateway's answer); its status is
/// asked at `due` unless an event comes first. Sent again after a restart,
/// the same id is the same job: never a second run.
void send_copy(self_ptr self, CampaignRun& run, cc::CopyId copy, core::TimePoint due) {
  core::JobId id = run.job_of.at(copy);
  core::JobSpec job = job_for_copy(run, run.scheduler.tasks().copy(copy), id);
  auto campaign = run.id;
  run.followed[copy] = due;
  follow_job(self, id, {campaign, copy, ""});
  self->request(self->state.config.gateway, timeout_of(self->state), std::move(job))
      .then([](core::JobId&) {},
            [=](caf::error& err) {
              auto* r = find_run(self, campaign);
              if (!r) return;
              unfollow(self, *r, copy);
              spdlog::warn("campaign {}: the job of copy {} was refused: {}", campaign.value, copy,
                           self->system().render(err));
              // Refused: the index goes back to pending and is dispatched again.
              auto ended = save(self, {record_of(*r, copy, storage::StoredCopy::State::ended)});
              if (!ended) spdlog::error("campaign {}: {}", campaign.value, ended.error().message);
              if (r->scheduler.tasks().copy(copy).live()) r->scheduler.failed(copy, wall_now());
            });
}

/// A round's new copies: each gets its job id, recorded durably before any
/// job is sent (a crash in between sends the same ids again on restart).
void dispatch_copies(self_ptr self, CampaignRun& run, const std::vector<cc::CopyId>& copies) {
  std::vector<storage::StoredCopy> records;
  for (cc::CopyId copy : copies) {
    run.job_of[copy] = fresh_job_id();
    records.push_back(record_of(run, copy, storage::StoredCopy::State::live));
  }
  if (auto st = save(self, records); !st) {
    // Not recorded, not sent: the indices go back to pending.
    spdlog::error("campaign {}: {}; its {} new task(s) wait for the next round", run.id.value, st.error().message,
                  copies.size());
    for (cc::CopyId copy : copies) {
      run.job_of.erase(copy);
      run.scheduler.failed(copy, wall_now());
    }
    return;
  }
  auto due = wall_now() + self->state.config.fallback_poll;
  for (cc::CopyId copy : copies) send_copy(self, run, copy, due);
}

/// A copy's job ended: recorded, so that a restart neither follows it again
/// nor (when it succeeded) runs its index again. A failed write is logged:
/// the restart then asks the job's status again, which tells the same.
void record_end(self_ptr self, const CampaignRun& run, cc::CopyId copy, storage::StoredCopy::State state) {
  if (auto st = save(self, {record_of(run, copy, state)}); !st)
    spdlog::error("campaign {}: {}", run.id.value, st.error().message);
}

/// When a job says it started or ended (`reported`, kNever if it does not
/// say), not before `floor`, not in the future, and never before the
/// campaign's previous event: run times as the job ran them, not as late as
/// the status poll saw them, and the predictor's events in order.
core::TimePoint event_time(CampaignRun& run, core::TimePoint reported, core::TimePoint floor, core::TimePoint now) {
  if (reported == core::kNever) reported = now;
  core::TimePoint lowest = std::min(std::max(floor, run.last_event), now);
  run.last_event = std::clamp(reported, lowest, now);
  return run.last_event;
}

/// The core failed the campaign (its declared output is wrong): it stops as
/// a cancelled one does, with the reason for `campaign status`.
void note_failure(self_ptr self, CampaignRun& run) {
  const auto& failure = run.scheduler.failure();
  if (!failure || !run.failure.empty()) return;
  run.cancelled = true;
  run.failure = *failure;
  spdlog::warn("campaign {}: failed: {}", run.id.value, run.failure);
  if (auto st = save(self, run); !st) spdlog::error("campaign {}: {}", run.id.value, st.error().message);
}

/// A copy's job as the gateway reports it now: feed the change to the core.
void observe(self_ptr self, CampaignRun& run, cc::CopyId copy, const core::JobView& view) {
  auto now = wall_now();
  const cc::TaskCopy& c = run.scheduler.tasks().copy(copy);
  bool ended = view.state == core::JobState::succeeded || view.state == core::JobState::failed ||
               view.state == core::JobState::cancelled;
  if (ended)
    unfollow(self, run, copy);
  else
    run.followed[copy] = now + self->state.config.fallback_poll;
  bool ran = view.state == core::JobState::running || view.state == core::JobState::succeeded ||
             view.started_at != core::kNever;
  // Withdrawn while its job was starting: it runs, so it counts (the core
  // takes it back), rather than being killed and run again.
  if (c.state == cc::CopyState::withdrawn && ran &&
      run.scheduler.reclaim(copy, event_time(run, view.started_at, c.dispatched, now)))
    spdlog::debug("campaign {}: copy {} had started before its withdrawal", run.id.value, copy);
  if (!c.live()) {
    // The core ended it already (withdrawn, cancelled with the campaign):
    // its job's end is history.
    if (ended) record_end(self, run, copy, storage::StoredCopy::State::ended);
    return;
  }
  if (c.state == cc::CopyState::waiting && ran)
    run.scheduler.started(copy, event_time(run, view.started_at, c.dispatched, now));
  switch (view.state) {
    case core::JobState::succeeded: {
      // Its agent looked for the declared output (TaskEnd::output_missing):
      // success without it is sink evidence.
      bool output_present = view.tasks.empty() || !view.tasks.front().end.output_missing;
      auto ended_at = event_time(run, view.finished_at, c.started.value_or(c.dispatched), now);
      auto outcome = run.scheduler.succeeded(copy, ended_at, output_present);
      record_end(self, run, copy,
                 outcome.counted ? storage::StoredCopy::State::succeeded : storage::StoredCopy::State::ended);
      for (cc::CopyId other : outcome.cancel) cancel_copy(self, run, other);
      note_failure(self, run);
      break;
    }
    case core::JobState::failed:
      run.scheduler.failed(copy, now);
      record_end(self, run, copy, storage::StoredCopy::State::ended);
      break;
    case core::JobState::cancelled:
      run.scheduler.cancelled(copy, now);
      record_end(self, run, copy, storage::StoredCopy::State::ended);
      break;
    default: break;
  }
}

/// The test wave has heard from every pool. A `test_first` campaign goes on
/// with the pools whose test exited 0 (recorded so, so that a restart does
/// not test again), or fails when none did; a test campaign is done.
void wave_complete(self_ptr self, CampaignRun& run) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  spdlog::info("campaign {}: every pool reported its test", run.id.value);
  if (!spec.test_first) return;
  auto passing = cc::pools_passing_test(spec, run.test_wave->results());
  if (passing.empty()) {
    run.cancelled = true;
    run.failure = "no pool passed its test";
  } else {
    cc::CampaignSpec bulk = spec;
    bulk.test_first = false;
    auto keep = [&](std::vector<std::string>& pools) {
      std::erase_if(pools, [&](const std::string& p) {
        return std::find(passing.begin(), passing.end(), p) == passing.end();
      });
    };
    keep(bulk.pools);
    keep(bulk.other_pools);
    run.spec_json = self->state.config.write_campaign(bulk);
    run.scheduler = cc::CampaignScheduler(std::move(bulk));
  }
  if (auto st = save(self, run); !st) spdlog::error("campaign {}: {}", run.id.value, st.error().message);
}

/// A tested pool's job as the gateway reports it now.
void observe_test(self_ptr self, CampaignRun& run, const std::string& pool, const core::JobView& view) {
  bool ended = view.state == core::JobState::succeeded || view.state == core::JobState::failed ||
               view.state == core::JobState::cancelled;
  if (!ended) run.test_followed[pool] = wall_now() + self->state.config.fallback_poll;
  if (!ended || !run.test_wave) return;
  run.test_followed.erase(pool);
  forget_job(self, view.spec.id);
  // A task that could not start, was lost or cancelled has no exit code of
  // its own: it did not pass.
  int exit_code = view.state == core::JobState::succeeded ? 0 : -1;
  if (!view.tasks.empty() && view.tasks.front().exit_code != 0) exit_code = view.tasks.front().exit_code;
  core::Duration run_time{0};
  if (view.started_at != core::kNever && view.finished_at != core::kNever)
    run_time = view.finished_at - view.started_at;
  run.test_wave->ended(pool, exit_code, run_time);
  if (run.test_wave->complete()) wave_complete(self, run);
}

/// Sends the test task (index 0) to `pool`.
void send_test(self_ptr self, CampaignRun& run, const std::string& pool) {
  core::JobId id = fresh_job_id();
  run.test_jobs[pool] = id;
  cc::TaskCopy copy;
  copy.pool = pool;
  core::JobSpec job = job_for_copy(run, copy, id);
  job.name += "-test";
  auto campaign = run.id;
  run.test_followed[pool] = wall_now() + self->state.config.fallback_poll;
  follow_job(self, id, {campaign, std::nullopt, pool});
  self->request(self->state.config.gateway, timeout_of(self->state), std::move(job))
      .then([](core::JobId&) {},
            [=](caf::error& err) {
              auto* r = find_run(self, campaign);
              if (!r || !r->test_wave) return;
              r->test_followed.erase(pool);
              forget_job(self, id);
              spdlog::warn("campaign {}: the test job for pool {} was refused: {}", campaign.value, pool,
                           self->system().render(err));
              r->test_wave->ended(pool, -1, core::Duration{0});
              if (r->test_wave->complete()) wave_complete(self, *r);
            });
}

/// Asks the status of a followed job and feeds what it says to its campaign.
void ask_status(self_ptr self, core::JobId job) {
  auto it = self->state.by_job.find(job.value);
  if (it == self->state.by_job.end()) return;
  campaign_state::Followed f = it->second;
  self->request(self->state.config.gateway, timeout_of(self->state), status_atom::value, job)
      .then(
          [=](core::JobView& view) {
            auto* r = find_run(self, f.campaign);
            if (!r) return;
            if (f.copy) {
              if (r->followed.contains(*f.copy)) observe(self, *r, *f.copy, view);
            } else if (r->test_followed.contains(f.test_pool)) {
              observe_test(self, *r, f.test_pool, view);
            }
          },
          [=](caf::error& err) {
            spdlog::debug("campaign {}: status of job {}: {}", f.campaign.value, job.value, self->system().render(err));
          });
}

/// The fallback: the status of jobs not heard of for `fallback_poll` (an
/// event lost with a partition's owner, or a restart), at most
/// `fallback_polls_per_round` of them, the most overdue campaign first.
void follow_jobs(self_ptr self) {
  auto& st = self->state;
  auto now = wall_now();
  uint32_t budget = st.config.fallback_polls_per_round;
  auto next = now + st.config.fallback_poll;
  for (auto& [id, run] : st.campaigns) {
    for (auto& [pool, due] : run.test_followed) {
      if (budget == 0) return;
      if (due > now) continue;
      due = next;
      --budget;
      ask_status(self, run.test_jobs.at(pool));
    }
    for (auto& [copy, due] : run.followed) {
      if (budget == 0) return;
      if (due > now) continue;
      due = next;
      --budget;
      ask_status(self, run.job_of.at(copy));
    }
  }
}

/// Flow control took a waiting copy back: its job is cancelled only while it
/// has not started (a started one is taken back by observe, not killed).
void withdraw_copy(self_ptr self, CampaignRun& run, cc::CopyId copy) {
  auto job = run.job_of.find(copy);
  if (job == run.job_of.end()) return;
  auto campaign = run.id;
  self->request(self->state.config.gateway, timeout_of(self->state), status_atom::value, job->second)
      .then(
          [=](core::JobView& view) {
            auto* r = find_run(self, campaign);
            bool queued = view.state == core::JobState::pending || view.state == core::JobState::waiting;
            if (r && queued && view.started_at == core::kNever)
              cancel_copy(self, *r, copy);
          },
          [=](caf::error&) {
            // Not accepted yet: cancel, which fails harmlessly if it never is.
            if (auto* r = find_run(self, campaign)) cancel_copy(self, *r, copy);
          });
}

/// Free and total task slots of one pool for tasks of `per_task`.
struct PoolSlots {
  uint32_t free = 0;
  uint32_t size = 0;
};

PoolSlots slots_in(const std::vector<core::NodeStatus>& nodes, const std::string& pool,
                   const core::Resources& per_task) {
  int64_t free = 0;
  int64_t size = 0;
  for (const auto& n : nodes) {
    if (n.spec.pool != pool || !n.alive || n.snapshot.state != core::NodeState::up) continue;
    free += std::min(kMostSlotsPerPool, per_task.copies_fitting_in(n.snapshot.free));
    size += std::min(kMostSlotsPerPool, per_task.copies_fitting_in(n.spec.capacity));
  }
  return {static_cast<uint32_t>(std::min(free, kMostSlotsPerPool)),
          static_cast<uint32_t>(std::min(size, kMostSlotsPerPool))};
}

/// One metascheduler round over the campaigns with something to dispatch.
void run_round(self_ptr self, const std::vector<core::NodeStatus>& nodes) {
  auto& st = self->state;
  auto now = wall_now();
  std::vector<cc::QueuedCampaign> queued;
  std::set<std::string> available;
  // Tasks sent to each pool this round, so that later launches see less room.
  std::map<std::string, uint32_t> taken;
  // Test waves first, FIFO (the seed: test campaigns ahead of every default
  // one, as soon as a slot is free in the pool).
  for (auto& [id, run] : st.campaigns) {
    if (finished(run) || !run.testing()) continue;
    std::vector<cc::PoolOffer> offers;
    for (const auto& pool : run.scheduler.spec().all_pools()) {
      PoolSlots slots = slots_in(nodes, pool, run.scheduler.spec().per_task);
      offers.push_back({pool, slots.free - std::min(slots.free, taken[pool]), slots.size});
    }
    for (const auto& pool : run.test_wave->dispatch(offers)) {
      ++taken[pool];
      send_test(self, run, pool);
    }
  }
  for (auto& [id, run] : st.campaigns) {
    // A bulk campaign goes on once its wave is over; a test one has no bulk.
    if (finished(run) || run.testing() || run.scheduler.spec().type == cc::CampaignType::test) continue;
    const auto& spec = run.scheduler.spec();
    queued.push_back({id, spec.type, spec.priority, run.sequence, spec.pools, spec.other_pools});
    for (const auto& pool : spec.all_pools())
      if (slots_in(nodes, pool, spec.per_task).size > 0) available.insert(pool);
  }
  for (const cc::Launch& launch : cc::metaschedule(std::move(queued), available)) {
    CampaignRun* run = find_run(self, launch.campaign);
    if (!run) continue;
    std::vector<cc::PoolOffer> offers;
    for (const auto& pool : launch.pools) {
      PoolSlots slots = slots_in(nodes, pool, run->scheduler.spec().per_task);
      uint32_t used = std::min(slots.free, taken[pool]);
      offers.push_back({pool, slots.free - used, slots.size});
    }
    cc::RoundPlan plan = run->scheduler.round(now, offers);
    for (const auto& [pool, reason] : plan.abandoned)
      spdlog::warn("campaign {}: pool {} abandoned as a sink: {}", run->id.value, pool, reason);
    for (cc::CopyId copy : plan.withdrawn) withdraw_copy(self, *run, copy);
    for (cc::CopyId copy : plan.cancel) cancel_copy(self, *run, copy);
    for (cc::CopyId copy : plan.dispatched) ++taken[run->scheduler.tasks().copy(copy).pool];
    dispatch_copies(self, *run, plan.dispatched);
    note_failure(self, *run);
  }
}

void tick(self_ptr self) {
  auto& st = self->state;
  self->delayed_send(self, st.config.round_interval, tick_atom::value);
  follow_jobs(self);
  if (st.round_in_flight) return;
  bool any = std::any_of(st.campaigns.begin(), st.campaigns.end(), [](const auto& c) { return !finished(c.second); });
  if (!any) return;
  st.round_in_flight = true;
  self->request(st.config.gateway, timeout_of(st), nodes_atom::value)
      .then(
          [=](std::vector<core::NodeStatus>& nodes) {
            self->state.round_in_flight = false;
            run_round(self, nodes);
          },
          [=](caf::error& err) {
            self->state.round_in_flight = false;
            spdlog::warn("campaigns: no node list from the gateway: {}", self->system().render(err));
          });
}

/// One reply: the campaign a request is about.
cc::CampaignReply reply_of(cc::CampaignReport report) {
  cc::CampaignReply out;
  out.campaigns.push_back(std::move(report));
  return out;
}

caf::result<cc::CampaignReply> submit(self_ptr self, const cc::CampaignSpec& sent) {
  auto& st = self->state;
  // Checked as a campaign file is (the reader names the field: unknown pool,
  // bad template, no parameters, out-of-range limits), through the JSON the
  // store keeps: one validation for files, requests and restarts.
  std::string json = st.config.write_campaign(sent);
  auto spec = st.config.read_campaign(json);
  if (!spec) return messages::to_caf_error(spec.error());
  cc::CampaignId id{st.next_id};
  CampaignRun run(id, id.value, wall_now(), std::move(*spec), json);
  // Accepted once recorded: a campaign the store does not hold would vanish
  // at the next restart.
  if (auto saved = save(self, run); !saved) return messages::to_caf_error(saved.error());
  ++st.next_id;
  spdlog::info("campaign {} ({}) of {}: {} task(s) on {}", id.value, run.scheduler.spec().name,
               run.scheduler.spec().user, run.scheduler.tasks().task_count(), run.scheduler.spec().all_pools().size());
  auto& placed = st.campaigns.emplace(id, std::move(run)).first->second;
  return reply_of(campaign_summary(placed));
}

caf::result<cc::CampaignReply> cancel(self_ptr self, CampaignRun& run) {
  if (!finished(run)) {
    run.cancelled = true;
    if (auto saved = save(self, run); !saved) {
      run.cancelled = false;
      return messages::to_caf_error(saved.error());
    }
    auto live = run.scheduler.cancel_all(wall_now());
    for (cc::CopyId copy : live) cancel_copy(self, run, copy);
    for (const auto& [pool, due] : run.test_followed)
      self->request(self->state.config.gateway, timeout_of(self->state), cancel_atom::value, run.test_jobs.at(pool))
          .then([](core::JobView&) {}, [](caf::error&) {});
    spdlog::info("campaign {}: cancelled ({} copies stopped)", run.id.value, live.size());
  }
  return reply_of(campaign_summary(run));
}

/// Rebuilds every recorded campaign: succeeded copies make their index done,
/// live ones are followed again (their job sent again under the same id, so
/// one the crash kept from the partition arrives now, and one it holds is
/// answered as the same job); ended ones are history.
void restore(self_ptr self) {
  auto& st = self->state;
  auto contents = st.config.store->load();
  if (!contents) {
    spdlog::error("campaigns: {}; no campaign restored", contents.error().message);
    return;
  }
  for (auto& stored : contents->campaigns) {
    st.next_id = std::max(st.next_id, stored.id + 1);
    auto spec = st.config.read_campaign(stored.spec_json);
    if (!spec) {
      spdlog::error("campaign {}: not restored: {}", stored.id, spec.error().message);
      continue;
    }
    cc::CampaignId id{stored.id};
    CampaignRun fresh(id, stored.sequence, stored.submitted_at, std::move(*spec), stored.spec_json);
    auto& run = st.campaigns.emplace(id, std::move(fresh)).first->second;
    std::vector<cc::CopyId> resend;
    std::vector<core::JobId> surplus;
    for (const auto& c : contents->copies[stored.id]) {
      if (c.state == storage::StoredCopy::State::ended) continue;
      bool succeeded = c.state == storage::StoredCopy::State::succeeded;
      auto copy = run.scheduler.restore(c.index, c.pool, c.replica, succeeded, c.dispatched);
      if (!copy) {
        // Its index is done by another copy: this one is not needed.
        if (!succeeded) surplus.push_back(c.job);
        continue;
      }
      run.job_of[*copy] = c.job;
      if (!succeeded) resend.push_back(*copy);
    }
    // Their status is asked at once (the fallback's budget spreads the
    // requests): what ended while the server was down sends no event now.
    for (cc::CopyId copy : resend) send_copy(self, run, copy, wall_now());
    for (core::JobId job : surplus)
      self->request(st.config.gateway, timeout_of(st), cancel_atom::value, job)
          .then([](core::JobView&) {}, [](caf::error&) {});
    if (stored.cancelled) {
      run.cancelled = true;
      for (cc::CopyId copy : run.scheduler.cancel_all(wall_now())) cancel_copy(self, run, copy);
    }
    spdlog::info("campaign {}: restored, {}/{} done, {} task(s) followed again", id.value,
                 run.scheduler.tasks().done(), run.scheduler.tasks().task_count(), resend.size());
  }
}

}  // namespace

CampaignRun::CampaignRun(cc::CampaignId id, uint64_t sequence, core::TimePoint submitted_at, cc::CampaignSpec spec,
                         std::string spec_json)
    : id(id), sequence(sequence), submitted_at(submitted_at), scheduler(std::move(spec)),
      spec_json(std::move(spec_json)) {
  const cc::CampaignSpec& s = scheduler.spec();
  if (s.type == cc::CampaignType::test || s.test_first) test_wave.emplace(s.all_pools());
}

bool CampaignRun::finished() const {
  if (cancelled) return true;
  if (scheduler.spec().type == cc::CampaignType::test) return test_wave && test_wave->complete();
  return scheduler.tasks().complete();
}

core::JobSpec job_for_copy(const CampaignRun& run, const cc::TaskCopy& copy, core::JobId id) {
  const cc::CampaignSpec& spec = run.scheduler.spec();
  const std::string& param = spec.parameters.at(copy.index);
  core::JobSpec job;
  job.id = id;
  job.name = (spec.name.empty() ? "campaign" : spec.name) + "-" + std::to_string(run.id.value) + "-" +
             std::to_string(copy.index);
  job.user = spec.user;
  job.pool = copy.pool;
  job.count = 1;
  job.per_task = spec.per_task;
  job.preemptible = spec.best_effort;
  job.command = cc::render_command(spec.command, run.id, copy.index, param);
  job.env = {{"CLAIMSCHED_CAMPAIGN_ID", std::to_string(run.id.value)},
             {"CLAIMSCHED_TASK_INDEX", std::to_string(copy.index)},
             {"CLAIMSCHED_PARAM", param}};
  // A failed copy is retried by the campaign (elsewhere if need be), not by
  // its job: the campaign decides where the index runs next.
  job.max_retries = 0;
  // The campaign waits for room itself; a pool without a node up now must
  // not refuse the copy.
  job.wait_for_nodes = true;
  // Checked by the task's agent when it exits 0 (sink detection).
  if (!spec.declared_output.empty())
    job.expected_output = cc::render_command({spec.declared_output}, run.id, copy.index, param).front();
  return job;
}

campaign_actor::behavior_type campaigns(self_ptr self, CampaignActorConfig config) {
  self->state.config = std::move(config);
  self->set_default_handler(messages::reject_unexpected);
  if (self->state.config.store) restore(self);
  // Job events come while a job is followed (watch_while_following); the
  // fallback polls the jobs whose events were missed (follow_jobs).
  self->delayed_send(self, self->state.config.round_interval, tick_atom::value);
  return {
      [=](campaign_atom, cc::CampaignRequest& request) -> caf::result<cc::CampaignReply> {
        auto& st = self->state;
        if (request.verb == cc::CampaignVerb::submit) return submit(self, request.spec);
        if (request.verb == cc::CampaignVerb::list) return campaign_list(st.campaigns);
        CampaignRun* run = find_run(self, request.id);
        if (!run) return error_of(core::Errc::unknown_name, "no campaign " + std::to_string(request.id.value));
        if (request.verb == cc::CampaignVerb::cancel) return cancel(self, *run);
        return reply_of(campaign_report(*run, wall_now()));
      },
      [=](tick_atom) { tick(self); },
      [=](watch_atom, std::vector<core::JobId>& jobs, std::vector<core::JobView>&) {
        // Asked even for a job that ended (whose view came along): a copy's
        // end goes through one path, also when it is polled.
        for (core::JobId job : jobs) ask_status(self, job);
      },
  };
}

}  // namespace claimsched::actors
