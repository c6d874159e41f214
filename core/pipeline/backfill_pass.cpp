// Backfilling's wiring in the placement pass (the rules: backfill.hpp).
//
// A pass with some class backfilling: backfill_begin books a future start
// for each job that found no room before and may have one, in queue order.
// Every job the pass then places goes through place_backfilling: a job whose
// own start is due takes its booked room; any other is placed with the room
// it may not take withheld in the view (on the nodes of the future starts
// that bind it, what its run would need of the room they hold), so
// placement itself finds the nodes and room it may use. A job that then
// finds no room but would have fitted without the withheld room waits, kept
// from starting (WaitCause::reservation); a job that waits books a start of
// its own. backfill_end gives the withheld room back.

#include <algorithm>
#include <set>

#include "core/duration.hpp"
#include "core/random.hpp"
#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

namespace {

std::string node_list(const ClusterView& view, const FutureStart& fs) {
  std::string out = fs.parts.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < fs.parts.size(); ++i)
    out += (i ? ", " : "") + std::to_string(view.node(fs.parts[i].node).id.value);
  return out;
}

/// Sets `withheld` (the room withheld per node, and in the view) to
/// `target`, (node, room) pairs in node order: a node it does not name
/// withholds nothing. Withholding and giving back is not growth (as planning
/// in place_whole).
template <class Target>
void set_withheld_to(std::map<NodeIndex, Resources>& withheld, const Target& target, ClusterView& view,
                     JobQueue& queue) {
  if (withheld.empty() && target.empty()) return;
  bool grew = view.take_grew();
  auto t = target.begin();
  for (auto it = withheld.begin(); it != withheld.end();) {
    while (t != target.end() && t->first < it->first) ++t;
    if (t == target.end() || t->first != it->first) {
      view.unwithhold(it->first, it->second);
      it = withheld.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [n, room] : target) {
    Resources& current = withheld[n];
    if (room == current) continue;
    view.withhold(n, room - current);
    current = room;
  }
  (void)view.take_grew();
  if (grew) queue.note_growth();
}

/// now + run, or kNever without a run time (or past it).
TimePoint end_of_run(TimePoint now, Duration run) {
  if (run.count() <= 0 || now > kNever - run) return kNever;
  return now + run;
}

}  // namespace

const FutureStart* Scheduler::future_start(JobId job) const {
  for (const auto& fs : future_starts_)
    if (fs.job == job) return &fs;
  return nullptr;
}

std::string Scheduler::start_words(const FutureStart& fs) const {
  return "reserved to start at " + format_duration(fs.at) + " on " + node_list(view_, fs) + " (backfill " +
         std::string(to_string(fs.mode)) + ")";
}

Resources Scheduler::task_room(const JobRecord& j) const {
  if (config_.classes[j.class_index].policy == ClassPolicy::reserve)
    if (auto it = machines_.find(j.spec.id); it != machines_.end()) return it->second;
  return j.spec.per_task;
}

void Scheduler::build_profile(TimePoint now) {
  profile_.clear();
  // Running tasks end at their start plus their job's max_run_time (the
  // node kills them then); a job without one holds its room for ever here.
  for (JobId id : table_.holders()) {
    const JobRecord& j = table_.at(id);
    if (j.spec.max_run_time.count() <= 0) continue;
    Resources room = task_room(j);
    for (const auto& t : j.tasks)
      if (t.state == TaskState::running && t.node)
        profile_.add_end(end_of_run(t.started, j.spec.max_run_time), *t.node, room);
  }
  // Claims in flight run from now.
  for (const auto& [cid, c] : window_.claims()) {
    const JobRecord* j = table_.find(c.request.job);
    if (!j || j->spec.max_run_time.count() <= 0) continue;
    uint32_t claimed = 0;
    for (TaskIndex t : c.request.tasks) claimed += j->in_state(t, TaskState::claimed);
    if (claimed > 0)
      profile_.add_end(end_of_run(now, j->spec.max_run_time), c.node, c.request.per_task.times(claimed));
  }
  profile_built_ = true;
}

void Scheduler::backfill_begin(TimePoint now) {
  previous_starts_ = std::move(future_starts_);
  future_starts_.clear();
  had_start_.clear();
  start_nodes_.clear();
  least_key_.clear();
  profile_built_ = false;
  searched_ = 0;
  // The jobs that found no room before: still waiting, or back in line
  // because room grew. Each gets its start in queue order, against the
  // starts of the jobs ahead of it.
  std::vector<JobRecord*> jobs;
  auto take = [&](JobId id) {
    JobRecord& j = table_.at(id);
    if (may_book(j)) jobs.push_back(&j);
  };
  queue_.for_each_waiting(take);
  if (queue_.queued() > 0) queue_.for_each_queued(take);
  std::sort(jobs.begin(), jobs.end(), [](const JobRecord* a, const JobRecord* b) { return JobQueue::ahead(*a, *b); });
  if (jobs.empty()) {
    booked_.clear();
    return;
  }
  // A start depends on the room of its pool's nodes now, on when the room
  // held frees, and on the starts before it. If none of that changed since
  // the last pass began, and no time the search looked at has passed, the
  // same jobs in the same order get the same starts: the first of them are
  // kept rather than searched again (most passes move nothing: a tick, a
  // job that arrives behind the others and does not fit).
  build_profile(now);
  uint64_t print = profile_.print();
  std::set<uint32_t> pools;
  for (const JobRecord* j : jobs) pools.insert(j->pool);
  for (uint32_t p : pools)
    for (NodeIndex n : view_.pool(p).nodes) {
      const NodeView& v = view_.node(n);
      print = mix64(print ^ n) ^ mix64(static_cast<uint64_t>(v.state));
      Resources free = v.available();
      for (size_t d = 0; d < kMaxDimensions; ++d)
        if (int64_t x = free.values()[d]; x != 0) print = mix64(print ^ (d << 59) ^ static_cast<uint64_t>(x));
    }
  bool still = now == booked_at_;
  if (!still) {
    still = profile_.first_end() > now;
    for (const auto& b : booked_)
      if (b.start && b.start->at <= now) still = false;
  }
  size_t kept = 0;
  if (still && print == booked_print_)
    while (kept < jobs.size() && kept < booked_.size() && booked_[kept].job == jobs[kept]->spec.id &&
           booked_[kept].pending == jobs[kept]->pending())
      ++kept;
  for (size_t i = 0; i < kept; ++i)
    if (booked_[i].start) {
      had_start_.insert(booked_[i].job);
      future_starts_.push_back(*booked_[i].start);
    }
  for (size_t i = kept; i < jobs.size(); ++i) book(*jobs[i], now);
  booked_.resize(jobs.size());
  for (size_t i = kept; i < jobs.size(); ++i) {
    const FutureStart* fs = future_start(jobs[i]->spec.id);
    booked_[i] = Booked{jobs[i]->spec.id, jobs[i]->pending(), fs ? std::optional<FutureStart>(*fs) : std::nullopt};
  }
  booked_print_ = print;
  booked_at_ = now;
}

void Scheduler::backfill_end(TimePoint now) {
  set_withheld({});
  // Jobs kept from starting may go now if a start they were kept for went,
  // moved later (more time before it than the last pass saw) or changed
  // where it goes: they wait for capacity, so tell the queue room grew. Not
  // when a start only follows the clock (an overdue task makes T = now).
  bool freed = false;
  for (const auto& p : previous_starts_) {
    const FutureStart* c = future_start(p.job);
    if (!c || c->at - now > p.at - previous_pass_ || c->parts != p.parts) {
      freed = true;
      break;
    }
  }
  if (freed) queue_.note_growth();
  previous_starts_.clear();
  previous_pass_ = now;
}

bool Scheduler::may_book(const JobRecord& j) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  if (cls.backfill == BackfillMode::none || cls.policy == ClassPolicy::reserve) return false;
  if (j.cancelled || j.pending() == 0) return false;
  if (j.queue.state != QueueState::waiting_for_capacity && j.queue.state != QueueState::queued) return false;
  const JobNotes* n = views_.notes(j.spec.id);
  if (!n) return false;
  bool no_room = n->waits == WaitCause::no_room && n->verdict == PlacementVerdict::unschedulable;
  if (!no_room && n->waits != WaitCause::reservation) return false;
  return !reservations_.of(j.spec.id) && !future_start(j.spec.id);
}

void Scheduler::book(JobRecord& j, TimePoint now) {
  if (!may_book(j)) return;
  const ClassConfig& cls = config_.classes[j.class_index];
  // easy: one future start per class, the first waiting job's in queue order.
  std::optional<size_t> replaces;
  if (cls.backfill == BackfillMode::easy)
    for (size_t k = 0; k < future_starts_.size(); ++k) {
      const JobRecord& other = table_.at(future_starts_[k].job);
      if (other.class_index != j.class_index) continue;
      if (!JobQueue::ahead(j, other)) {
        views_.note(j.spec.id).no_reservation.clear();  // not the first: none is due to it
        return;
      }
      replaces = k;
      break;
    }
  if (!replaces && future_starts_.size() >= config_.max_future_starts) {
    views_.note(j.spec.id).no_reservation = "no reservation yet (backfill " + std::string(to_string(cls.backfill)) +
                                            "): " + std::to_string(config_.max_future_starts) +
                                            " jobs ahead of it hold one";
    return;
  }
  if (!profile_built_) build_profile(now);
  std::vector<NodeRoom> rooms;
  rooms.reserve(view_.pool(j.pool).nodes.size());
  const std::vector<std::string>* constraints = j.spec.constraints.empty() ? nullptr : &j.spec.constraints;
  for (NodeIndex n : view_.pool(j.pool).nodes) {
    const NodeView& v = view_.node(n);
    if (!node_accepts(v, constraints)) continue;
    Resources free = v.available();
    if (auto w = withheld_.find(n); w != withheld_.end()) free += w->second;  // the room as it is
    rooms.push_back(NodeRoom{n, free});
  }
  // A gang or a fixed_share request starts all at once; other work starts
  // with one task (its reservation is for the next, renewed as each starts).
  bool whole = j.spec.gang || cls.policy == ClassPolicy::fixed_share;
  uint32_t tasks = whole ? j.pending() : 1;
  std::vector<const FutureStart*> before;
  for (size_t k = 0; k < future_starts_.size(); ++k)
    if (!replaces || k != *replaces) before.push_back(&future_starts_[k]);
  // The first few searches of a pass are kept (each holds a copy of the
  // profile): easy makes one per class, and the first is the one that recurs.
  constexpr size_t kSearchesKept = 4;
  std::optional<FutureStart> fs;
  if (searched_ < kSearchesKept) {
    if (searched_ == searches_.size()) searches_.emplace_back();
    fs = profile_.earliest_again(searches_[searched_++], rooms, j.spec.per_task, tasks, j.spec.max_run_time, now,
                                 before);
  } else {
    fs = profile_.earliest(rooms, j.spec.per_task, tasks, j.spec.max_run_time, now, before);
  }
  JobNotes& notes = views_.note(j.spec.id);
  if (!fs) {
    notes.no_reservation = "no reservation (backfill " + std::string(to_string(cls.backfill)) +
                           "): it fits only once tasks without a max_run_time end, which may be never";
    return;
  }
  notes.no_reservation.clear();
  if (replaces) drop_start(*replaces);
  least_key_.clear();  // pointers into future_starts_ may move
  fs->job = j.spec.id;
  fs->pool = j.pool;
  fs->mode = cls.backfill;
  had_start_.insert(j.spec.id);
  future_starts_.push_back(std::move(*fs));
}

void Scheduler::drop_start(size_t k) {
  future_starts_.erase(future_starts_.begin() + static_cast<std::ptrdiff_t>(k));
  least_key_.clear();  // pointers into future_starts_ moved
}

void Scheduler::set_withheld(const std::map<NodeIndex, Resources>& target) {
  set_withheld_to(withheld_, target, view_, queue_);
}

void Scheduler::withhold_for(const std::vector<const FutureStart*>& binding, TimePoint now, TimePoint until) {
  if (!binding.empty()) {
    if (!profile_built_) build_profile(now);
    // The least room of each node over time under these starts, kept while
    // nothing is placed or booked: the jobs a pass looks at in a row are
    // mostly bound by the same starts, and differ only in how long they run.
    // Compared in place: this runs for every job a backfilling pass places.
    bool same =
        binding.size() == least_key_.size() && std::equal(binding.begin(), binding.end(), least_key_.begin(),
                                                          [](const FutureStart* s, JobId id) { return s->job == id; });
    if (!same) {
      least_key_.clear();
      for (const FutureStart* s : binding) least_key_.push_back(s->job);
      // The starts on each node, in binding order: one sorted list rather
      // than a vector per node (this runs after every placement of a pass).
      std::vector<std::pair<NodeIndex, const FutureStart*>> on_node;
      for (const FutureStart* s : binding)
        for (const auto& p : s->parts) on_node.emplace_back(p.node, s);
      std::stable_sort(on_node.begin(), on_node.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      // Entries of nodes that stay are overwritten in place (no map node made
      // per node per pass), the others go.
      std::vector<const FutureStart*> starts;
      auto at = least_.begin();
      for (size_t i = 0; i < on_node.size();) {
        NodeIndex n = on_node[i].first;
        starts.clear();
        for (; i < on_node.size() && on_node[i].first == n; ++i) starts.push_back(on_node[i].second);
        Resources free = view_.node(n).available();
        if (auto w = withheld_.find(n); w != withheld_.end()) free += w->second;  // the room as it is
        while (at != least_.end() && at->first < n) at = least_.erase(at);
        auto value = std::make_pair(free, profile_.least_rooms(n, free, now, starts));
        if (at != least_.end() && at->first == n)
          (at++)->second = std::move(value);
        else
          least_.emplace_hint(at, n, std::move(value));
      }
      least_.erase(at, least_.end());
    }
    // A sorted vector rather than a map built per job (this runs for every
    // job a backfilling pass places).
    std::vector<std::pair<NodeIndex, Resources>> target;
    target.reserve(least_.size());
    for (const auto& [n, at] : least_) {
      const Resources& free = at.first;
      Resources least = at.second.least_until(until);
      Resources keep = (free - least).max(Resources{}).min(free.max(Resources{}));
      if (!keep.is_zero()) target.emplace_back(n, keep);  // least_ is in node order
    }
    set_withheld_to(withheld_, target, view_, queue_);
    return;
  }
  set_withheld({});
}

bool Scheduler::might_fit(const JobRecord& j) const {
  // What the job needs at once against all the room of its pool, withheld
  // room included: a necessary condition, O(withheld nodes).
  const ClassConfig& cls = config_.classes[j.class_index];
  uint32_t need = j.spec.gang || cls.policy == ClassPolicy::fixed_share ? j.pending() : 1;
  Resources room = view_.pool(j.pool).total_available;
  for (uint32_t p : view_.pool(j.pool).descendants) room += view_.pool(p).total_available;
  for (const auto& [n, r] : withheld_) room += r;
  return j.spec.per_task.times(need).fits_in(room);
}

bool Scheduler::fits_unbound(const JobRecord& j) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  // A machine is looked for in the view: the caller gives the withheld room back first.
  if (cls.policy == ClassPolicy::reserve)
    return find_free_machine(view_, j.pool, j.spec.per_task, config_.quantum,
                             j.spec.constraints.empty() ? nullptr : &j.spec.constraints)
        .has_value();
  // count_placement's tasks_fitting_now, with the withheld room counted back
  // in rather than given back to the view and taken again (two re-indexings
  // of every withheld node per job kept from starting), and stopping once
  // enough fit.
  uint32_t need = j.spec.gang || cls.policy == ClassPolicy::fixed_share ? j.pending() : 1;
  if (need == 0) return true;
  uint64_t fitting = 0;
  for (NodeIndex n : view_.pool(j.pool).nodes) {
    const NodeView& v = view_.node(n);
    if (!label_selectors_match(j.spec.constraints, v.labels)) continue;
    if (j.spec.per_task.copies_fitting_in(v.capacity) <= 0 || v.state != NodeState::up) continue;
    Resources room = v.available();
    if (auto w = withheld_.find(n); w != withheld_.end()) room += w->second;
    fitting += tasks_fitting(v, j.spec.per_task, room, need);
    if (fitting >= need) return true;
  }
  return false;
}

bool Scheduler::place_backfilling(JobRecord& j, bool squat, TimePoint now, Outbox& out) {
  // The future starts that bind j: those ahead of it in queue order — and,
  // if j held one itself this pass, every other (they were computed with
  // j's room at its own start; elsewhere or earlier it may take only room
  // none of them needs). One that begins after j ends binds it to nothing.
  TimePoint ends = end_of_run(now, j.spec.max_run_time);
  bool had = had_start_.contains(j.spec.id);
  // `over`: every start that binds j for some run; of those, the ones that
  // begin before j's run ends bind it now (least_room's window leaves the
  // others out): the first of them, and the first in j's pool, name the
  // reservation that keeps it from starting.
  std::vector<const FutureStart*> over;
  over.reserve(future_starts_.size());
  const FutureStart* binding = nullptr;
  const FutureStart* binding_here = nullptr;
  std::optional<size_t> passed;  // the first start ahead of j in its pool
  for (size_t k = 0; k < future_starts_.size(); ++k) {
    const FutureStart& fs = future_starts_[k];
    if (fs.job == j.spec.id) continue;
    bool in_front = JobQueue::ahead(table_.at(fs.job), j);
    if (in_front || had) over.push_back(&fs);
    if ((in_front || had) && ends > fs.at) {
      if (!binding) binding = &fs;
      if (!binding_here && fs.pool == j.pool) binding_here = &fs;
    }
    if (in_front && fs.pool == j.pool && !passed) passed = k;
  }
  std::optional<JobId> passed_job;
  if (passed) passed_job = future_starts_[*passed].job;
  size_t sent = out.claims.size();
  bool result = false;
  // Placed: its claims run from now (the profile learns their ends), the
  // words say whether it went ahead of a future start, its own start goes.
  auto placed = [&] {
    if (out.claims.size() == sent) return false;
    if (profile_built_ && j.spec.max_run_time.count() > 0)
      for (size_t c = sent; c < out.claims.size(); ++c)
        if (auto n = view_.find_node(out.claims[c].node)) profile_.add_end(ends, *n, out.claims[c].total());
    // The room changed on the nodes it claimed only: their least room under
    // the starts of least_key_ is worked out again (as withhold_for would),
    // the other nodes' stands (their room, ends and starts are as they were).
    if (!least_key_.empty())
      for (size_t c = sent; c < out.claims.size(); ++c) {
        auto n = view_.find_node(out.claims[c].node);
        if (!n) continue;
        auto it = least_.find(*n);
        if (it == least_.end()) continue;
        std::vector<const FutureStart*> starts;
        for (JobId id : least_key_)
          if (const FutureStart* fs = future_start(id))
            for (const auto& p : fs->parts)
              if (p.node == *n) starts.push_back(fs);
        Resources free = view_.node(*n).available();
        if (auto w = withheld_.find(*n); w != withheld_.end()) free += w->second;  // the room as it is
        it->second = std::make_pair(free, profile_.least_rooms(*n, free, now, starts));
      }
    if (passed_job)
      if (const FutureStart* fs = future_start(*passed_job)) {
        std::string at = format_duration(fs->at) + " (job " + std::to_string(fs->job.value) + ")";
        views_.note(j.spec.id).backfilled = ends <= fs->at ? "backfilled: ends before the reservation at " + at
                                                           : "backfilled: uses room the reservation at " + at +
                                                                 " does not need";
      }
    for (size_t k = 0; k < future_starts_.size(); ++k)
      if (future_starts_[k].job == j.spec.id) {
        drop_start(k);
        break;
      }
    return true;
  };
  // Its own start is due and its room is there: it takes exactly that room.
  // The search put it where the starts before it leave room over its whole
  // run, and the starts after it counted on it being there.
  auto take_due = [&]() -> bool {
    const FutureStart* fs = future_start(j.spec.id);
    if (squat || !fs || fs->at > now) return false;
    set_withheld({});
    for (const auto& p : fs->parts)
      if (tasks_that_fit(view_.node(p.node), fs->per_task, p.tasks) < p.tasks) return false;
    due_ = fs;
    result = place_next(j, now, out);
    due_ = nullptr;
    return placed();
  };
  if (take_due()) return result;
  // Its own start is later: the search found no room for it before then
  // around the starts ahead of it, so there is none around all of them.
  if (const FutureStart* fs = future_start(j.spec.id); fs && !squat) {
    wait_for_room(j, PlacementVerdict::unschedulable);
    return false;
  }
  // Withhold only for a job that could fit at all: most jobs a pass looks at
  // in a full pool cannot, and the room their runs would leave the starts
  // costs a walk over the ends of every node of those starts.
  bool withheld = binding && might_fit(j);
  if (withheld) withhold_for(over, now, ends);
  // (A job that cannot fit at all is placed under whatever is withheld: it
  // fails either way, and giving room back and taking it again costs.)
  if (!binding) set_withheld({});
  result = squat ? place_batch(j, true, now, out) : place_next(j, now, out);
  if (placed() || squat) return result;
  // Kept from starting: it would have fitted but for the room withheld (a
  // job with a start of its own says that instead).
  const JobNotes* n = views_.notes(j.spec.id);
  bool own = future_start(j.spec.id) != nullptr;
  if (withheld && !own && n && n->waits == WaitCause::no_room &&
      j.queue.state == QueueState::waiting_for_capacity) {
    if (config_.classes[j.class_index].policy == ClassPolicy::reserve) set_withheld({});
    if (fits_unbound(j)) {
      const FutureStart* fs = binding_here ? binding_here : binding;
      std::string& where = start_nodes_[fs->job];
      if (where.empty()) where = node_list(view_, *fs);
      wait(j, WaitCause::reservation,
           "kept from starting: it would delay the reservation at " + format_duration(fs->at) + " (job " +
               std::to_string(fs->job.value) + ", on " + where + "): " +
               (ends == kNever ? std::string("it has no max_run_time")
                               : "it would run until " + format_duration(ends)));
    }
  }
  // It waits: a start of its own, taken at once if that is now.
  if (!own) {
    book(j, now);
    if (take_due() && j.pending() > 0) queue_.wake(j);
  }
  return result;
}

}  // namespace claimsched::core
