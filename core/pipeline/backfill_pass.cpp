// Backfilling's wiring in the placement pass (the rules: backfill.hpp).
//
// A pass with some class backfilling: backfill_begin books a future start
// for each waiting job that may have one (queue order); every job the pass
// then places goes through place_backfilling, which withholds in the view,
// while that job is placed, the room of the future starts that bind it —
// those ahead of it in queue order that it does not end before — so
// placement itself finds the nodes and room it may use. A job that then
// finds no room but would have fitted without the withheld room waits,
// kept from starting (WaitCause::reservation); a job that waits for room
// books a future start of its own. backfill_end gives the withheld room back.

#include <algorithm>
#include <set>

#include "core/duration.hpp"
#include "core/pipeline/scheduler.hpp"

namespace claimsched::core {

namespace {

std::string node_list(const ClusterView& view, const FutureStart& fs) {
  std::string out = fs.parts.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < fs.parts.size(); ++i)
    out += (i ? ", " : "") + std::to_string(view.node(fs.parts[i].node).id.value);
  return out;
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
      if (t.state == TaskState::running && t.node) profile_.add_end(end_of_run(t.started, j.spec.max_run_time), *t.node, room);
  }
  // Claims in flight run from now.
  for (const auto& [cid, c] : window_.claims()) {
    const JobRecord* j = table_.find(c.request.job);
    if (!j || j->spec.max_run_time.count() <= 0) continue;
    uint32_t claimed = 0;
    for (TaskIndex t : c.request.tasks) claimed += j->in_state(t, TaskState::claimed);
    if (claimed > 0) profile_.add_end(end_of_run(now, j->spec.max_run_time), c.node, c.request.per_task.times(claimed));
  }
  profile_built_ = true;
}

void Scheduler::backfill_begin(TimePoint now) {
  previous_starts_ = std::move(future_starts_);
  future_starts_.clear();
  applied_.clear();
  starts_on_node_.clear();
  profile_built_ = false;
  if (queue_.waiting() == 0) return;
  std::vector<JobId> waiting;
  queue_.for_each_waiting([&](JobId id) { waiting.push_back(id); });
  for (JobId id : waiting) book(table_.at(id), now);
}

void Scheduler::backfill_end(TimePoint now) {
  apply_binding(std::vector<char>(future_starts_.size(), 0));
  withheld_.clear();
  // Jobs kept from starting may go now if a start they were kept for went,
  // moved later (more time before it than the last pass saw) or needs less
  // room: they wait for capacity, so tell the queue room grew. Not when a
  // start only follows the clock (an overdue task makes T = now each pass).
  bool freed = false;
  for (const auto& p : previous_starts_) {
    const FutureStart* c = future_start(p.job);
    if (!c || c->at - now > p.at - previous_pass_ || c->parts.size() != p.parts.size()) {
      freed = true;
      break;
    }
    for (size_t i = 0; i < p.parts.size() && !freed; ++i)
      freed = c->parts[i].node != p.parts[i].node || !p.parts[i].keep.fits_in(c->parts[i].keep);
    if (freed) break;
  }
  if (freed) queue_.note_growth();
  previous_starts_.clear();
  previous_pass_ = now;
}

bool Scheduler::may_book(const JobRecord& j) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  if (cls.backfill == BackfillMode::none || cls.policy == ClassPolicy::reserve) return false;
  if (j.cancelled || j.pending() == 0 || j.queue.state != QueueState::waiting_for_capacity) return false;
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
      if (!JobQueue::ahead(j, other)) return;
      replaces = k;
      break;
    }
  if (!profile_built_) build_profile(now);
  std::vector<NodeRoom> rooms;
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
  std::optional<FutureStart> fs;
  if (replaces) {
    std::vector<FutureStart> others = future_starts_;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(*replaces));
    fs = profile_.earliest(rooms, j.spec.per_task, tasks, j.spec.max_run_time, now, others);
  } else {
    fs = profile_.earliest(rooms, j.spec.per_task, tasks, j.spec.max_run_time, now, future_starts_);
  }
  JobNotes& notes = views_.note(j.spec.id);
  if (!fs) {
    notes.no_reservation = "no reservation (backfill " + std::string(to_string(cls.backfill)) +
                           "): it fits only once tasks without a max_run_time end, which may be never";
    return;
  }
  notes.no_reservation.clear();
  if (replaces) drop_start(*replaces);
  fs->job = j.spec.id;
  fs->pool = j.pool;
  fs->mode = cls.backfill;
  future_starts_.push_back(std::move(*fs));
  applied_.push_back(0);
  index_start(future_starts_.size() - 1);
}

void Scheduler::index_start(size_t k) {
  for (const auto& p : future_starts_[k].parts) starts_on_node_[p.node].push_back(k);
}

void Scheduler::drop_start(size_t k) {
  std::vector<char> want = applied_;
  want[k] = 0;
  apply_binding(want);
  future_starts_.erase(future_starts_.begin() + static_cast<std::ptrdiff_t>(k));
  applied_.erase(applied_.begin() + static_cast<std::ptrdiff_t>(k));
  starts_on_node_.clear();
  for (size_t i = 0; i < future_starts_.size(); ++i) index_start(i);
}

void Scheduler::apply_binding(const std::vector<char>& want) {
  std::set<NodeIndex> touched;
  for (size_t k = 0; k < future_starts_.size(); ++k)
    if (applied_[k] != want[k])
      for (const auto& p : future_starts_[k].parts) touched.insert(p.node);
  applied_ = want;
  if (touched.empty()) return;
  // Withholding and giving back is not growth (as planning in place_whole).
  bool grew = view_.take_grew();
  for (NodeIndex n : touched) {
    Resources target;
    for (size_t k : starts_on_node_[n]) {
      if (!applied_[k]) continue;
      for (const auto& p : future_starts_[k].parts)
        if (p.node == n) target = target.max(p.keep);
    }
    Resources& current = withheld_[n];
    if (target == current) continue;
    view_.withhold(n, target - current);
    current = target;
  }
  (void)view_.take_grew();
  if (grew) queue_.note_growth();
}

bool Scheduler::fits_unbound(const JobRecord& j) const {
  const ClassConfig& cls = config_.classes[j.class_index];
  if (cls.policy == ClassPolicy::reserve)
    return find_free_machine(view_, j.pool, j.spec.per_task, config_.quantum,
                             j.spec.constraints.empty() ? nullptr : &j.spec.constraints)
        .has_value();
  uint32_t need = j.spec.gang || cls.policy == ClassPolicy::fixed_share ? j.pending() : 1;
  return count_placement(view_, j.pool, j.spec.per_task, j.spec.constraints, need).tasks_fitting_now >= need;
}

bool Scheduler::place_backfilling(JobRecord& j, bool squat, TimePoint now, Outbox& out) {
  // The future starts that bind j: ahead of it in queue order, and it does
  // not end by their time.
  TimePoint ends = end_of_run(now, j.spec.max_run_time);
  std::vector<char> binds(future_starts_.size(), 0);
  std::optional<size_t> binding, passed;  // the first of each in j's pool
  for (size_t k = 0; k < future_starts_.size(); ++k) {
    const FutureStart& fs = future_starts_[k];
    if (fs.job == j.spec.id || !JobQueue::ahead(table_.at(fs.job), j)) continue;
    binds[k] = ends > fs.at;
    if (fs.pool != j.pool) continue;
    if (binds[k] && !binding) binding = k;
    if (!passed) passed = k;
  }
  apply_binding(binds);
  size_t sent = out.claims.size();
  bool result = squat ? place_batch(j, true, now, out) : place_next(j, now, out);
  if (out.claims.size() > sent) {
    // Placed: its claims run from now (the profile learns their ends), and
    // the words say whether it went ahead of a future start.
    if (profile_built_ && j.spec.max_run_time.count() > 0)
      for (size_t c = sent; c < out.claims.size(); ++c)
        if (auto n = view_.find_node(out.claims[c].node))
          profile_.add_end(ends, *n, out.claims[c].total());
    if (passed) {
      const FutureStart& fs = future_starts_[*passed];
      std::string at = format_duration(fs.at) + " (job " + std::to_string(fs.job.value) + ")";
      views_.note(j.spec.id).backfilled = ends <= fs.at ? "backfilled: ends before the reservation at " + at
                                                        : "backfilled: uses room the reservation at " + at +
                                                              " does not need";
    }
    for (size_t k = 0; k < future_starts_.size(); ++k)
      if (future_starts_[k].job == j.spec.id) {
        drop_start(k);
        break;
      }
    return result;
  }
  if (squat) return result;
  const JobNotes* n = views_.notes(j.spec.id);
  bool any = std::find(binds.begin(), binds.end(), 1) != binds.end();
  if (any && n && n->waits == WaitCause::no_room && j.queue.state == QueueState::waiting_for_capacity) {
    apply_binding(std::vector<char>(future_starts_.size(), 0));
    if (fits_unbound(j)) {
      size_t k = binding ? *binding : static_cast<size_t>(std::find(binds.begin(), binds.end(), 1) - binds.begin());
      const FutureStart& fs = future_starts_[k];
      wait(j, WaitCause::reservation,
           "kept from starting: it would delay the reservation at " + format_duration(fs.at) + " (job " +
               std::to_string(fs.job.value) + ", on " + node_list(view_, fs) + "): " +
               (ends == kNever ? std::string("it has no max_run_time")
                               : "it would run until " + format_duration(ends)));
    }
  }
  book(j, now);
  return result;
}

}  // namespace claimsched::core
