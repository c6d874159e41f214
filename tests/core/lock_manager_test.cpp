// The lock manager (level by level, no deadlock, no conflicting holders) and
// the lock-aware queue in front of placement (running limit, fifo and
// predictive order, aging).

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/locks/lock_queue.hpp"
#include "core/random.hpp"
#include "tests/core/builders.hpp"

namespace claimsched::core {
namespace {

LockDeclaration parse(std::string_view text) { return testing::locks(text); }

TEST(LockManager, TakesLevelsInOrderAndWaitsHoldingWhatItTook) {
  LockManager m;
  EXPECT_FALSE(m.acquire(JobId(1), parse("node=exclusive:n1")));
  auto b = m.acquire(JobId(2), parse("instance=exclusive:i1 node=exclusive:n1"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->level, LockLevel::node);
  EXPECT_EQ(b->lock, "n1");
  EXPECT_EQ(b->holder, JobId(1));
  EXPECT_EQ(b->to_string(), "node 'n1' held by job 1");
  // Job 2 holds instance i1 (the level before), not node n1.
  EXPECT_EQ(m.held_by(JobId(2)), parse("instance=exclusive:i1"));
  auto c = m.acquire(JobId(3), parse("instance=shared:i1"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->level, LockLevel::instance);
  EXPECT_EQ(c->holder, JobId(2));
  EXPECT_EQ(m.release(JobId(1)), std::vector<JobId>{JobId(2)});
  EXPECT_TRUE(m.holds_all(JobId(2)));
  EXPECT_FALSE(m.holds_all(JobId(3)));
  EXPECT_EQ(m.release(JobId(2)), std::vector<JobId>{JobId(3)});
  EXPECT_EQ(m.waiting(), 0u);
}

TEST(LockManager, SharedLocksMixAndAWaitingExclusiveIsNotOvertaken) {
  LockManager m;
  EXPECT_FALSE(m.acquire(JobId(1), parse("node=shared:n1")));
  EXPECT_FALSE(m.acquire(JobId(2), parse("node=shared:n1,n2")));
  auto x = m.acquire(JobId(3), parse("node=exclusive:n2"));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->holder, JobId(2));
  // A later shared job would not conflict with the holders, but job 3 asked first.
  auto s = m.acquire(JobId(4), parse("node=shared:n2"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->holder, JobId(3));
  EXPECT_TRUE(s->holder_waits);
  EXPECT_EQ(s->to_string(), "node 'n2' wanted first by job 3");
  EXPECT_TRUE(m.release(JobId(1)).empty());
  EXPECT_EQ(m.release(JobId(2)), std::vector<JobId>{JobId(3)});
  EXPECT_EQ(m.release(JobId(3)), std::vector<JobId>{JobId(4)});
}

TEST(LockManager, UnknownAndAllTakeTheWholeLevel) {
  LockManager m;
  EXPECT_FALSE(m.acquire(JobId(1), parse("node=unknown-exclusive")));
  auto b = m.acquire(JobId(2), parse("node=shared:zz"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lock, "*");
  EXPECT_FALSE(m.acquire(JobId(3), parse("instance=all-exclusive")));  // another level
  m.release(JobId(1));
  EXPECT_TRUE(m.acquire(JobId(4), parse("node=all-shared")).has_value() == false);
  EXPECT_TRUE(m.acquire(JobId(5), parse("node=exclusive:q")));
}

TEST(LockManager, TheBigLockConflictsWithEveryJobThatDeclaresALock) {
  LockManager m;
  EXPECT_FALSE(m.acquire(JobId(1), parse("network=shared:x")));
  auto b = m.acquire(JobId(2), parse("bgl"));
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->level.has_value());
  EXPECT_EQ(b->to_string(), "the big lock (bgl) held by job 1");
  // Behind a waiting bgl job, even an unrelated lock waits (no starvation of bgl).
  auto c = m.acquire(JobId(3), parse("group=shared:g"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->holder, JobId(2));
  EXPECT_EQ(m.release(JobId(1)), std::vector<JobId>{JobId(2)});
  EXPECT_EQ(m.held_by(JobId(2)), parse("bgl"));
  EXPECT_EQ(m.release(JobId(2)), std::vector<JobId>{JobId(3)});
}

TEST(LockManager, AdoptedJobsHoldTheirLocksAfterARestart) {
  LockManager m;
  m.adopt(JobId(7), parse("node=exclusive:n1"));
  auto b = m.acquire(JobId(8), parse("node=shared:n1"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->holder, JobId(7));
}

// Every (level, name) of a small universe, from what each job holds.
void check_no_conflicting_holders(const LockManager& m, const std::vector<std::string>& universe) {
  std::map<std::pair<LockLevel, std::string>, std::pair<int, int>> use;  // (exclusive, shared) holders
  std::optional<JobId> bgl_holder;
  for (const auto& h : m.holders()) {
    if (h.locks.bgl) {
      ASSERT_FALSE(bgl_holder) << "two bgl holders";
      bgl_holder = h.job;
    }
    for (LockLevel level : kAllLockLevels) {
      const LevelLock& l = h.locks[level];
      if (l.mode == LockMode::none) continue;
      std::vector<std::string> names = is_named(l.mode) ? l.names : universe;
      for (const auto& n : names) (is_exclusive(l.mode) ? use[{level, n}].first : use[{level, n}].second)++;
    }
  }
  for (const auto& [key, counts] : use) {
    EXPECT_LE(counts.first, 1) << to_string(key.first) << " " << key.second << ": two exclusive holders";
    EXPECT_TRUE(counts.first == 0 || counts.second == 0) << key.second << ": exclusive and shared at once";
  }
  if (bgl_holder)
    for (const auto& h : m.holders())
      if (h.job != *bgl_holder) {
        auto b = m.blocked_on(h.job);
        ASSERT_TRUE(b) << "job " << h.job.value << " runs beside the bgl holder";
        EXPECT_FALSE(b->level.has_value()) << "job " << h.job.value << " passed the big lock beside its holder";
      }
}

// Every waiting job waits on a chain that ends at a job holding all its locks.
void check_no_deadlock(const LockManager& m) {
  for (const auto& h : m.holders()) {
    std::set<JobId> seen;
    JobId at = h.job;
    while (auto b = m.blocked_on(at)) {
      ASSERT_TRUE(seen.insert(at).second) << "wait cycle through job " << at.value;
      ASSERT_TRUE(m.knows(b->holder));
      at = b->holder;
    }
    EXPECT_TRUE(m.holds_all(at));
  }
}

LockDeclaration random_declaration(Rng& rng, const std::vector<std::string>& universe) {
  LockDeclaration d;
  if (rng.chance(0.03)) {
    d.bgl = true;
    return d;
  }
  for (LockLevel level : kAllLockLevels) {
    if (rng.chance(0.5)) continue;
    auto mode = static_cast<LockMode>(1 + rng.below(kLockModes - 1));
    std::vector<std::string> names;
    if (is_named(mode))
      for (size_t k = 1 + rng.below(2); k > 0; --k) names.push_back(universe[rng.below(universe.size())]);
    d[level] = LevelLock::of(mode, std::move(names));
  }
  return d;
}

TEST(LockManagerProperty, RandomDeclarationsNeverDeadlockNorShareAConflictingLock) {
  const std::vector<std::string> universe{"a", "b", "c"};
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    LockManager m;
    std::map<JobId, LockDeclaration> declared;
    uint64_t next = 1;
    for (int step = 0; step < 300; ++step) {
      if (declared.empty() || rng.chance(0.55)) {
        JobId id(next++);
        declared[id] = random_declaration(rng, universe);
        auto block = m.acquire(id, declared[id]);
        EXPECT_EQ(block.has_value(), !m.holds_all(id));
      } else {
        // A job ends: running ones mostly, sometimes a waiting one (cancelled).
        std::vector<JobId> running, all;
        for (const auto& [id, d] : declared) (m.holds_all(id) ? running : all).push_back(id);
        all.insert(all.end(), running.begin(), running.end());
        const auto& from = !running.empty() && rng.chance(0.9) ? running : all;
        JobId gone = from[rng.below(from.size())];
        for (JobId g : m.release(gone)) EXPECT_TRUE(m.holds_all(g));
        declared.erase(gone);
      }
      // Levels are taken in order: a job waiting at level L holds exactly the levels before it.
      for (const auto& [id, d] : declared) {
        auto b = m.blocked_on(id);
        if (!b) {
          EXPECT_EQ(m.held_by(id), d);
          continue;
        }
        LockDeclaration expect;
        if (b->level && !d.bgl)
          for (LockLevel l : kAllLockLevels)
            if (l < *b->level) expect[l] = d[l];
        EXPECT_EQ(m.held_by(id), expect);
      }
      check_no_conflicting_holders(m, universe);
      check_no_deadlock(m);
      if (::testing::Test::HasFailure()) return;
    }
    // Running jobs finishing drains every waiting job.
    while (!declared.empty()) {
      std::optional<JobId> running;
      for (const auto& [id, d] : declared)
        if (m.holds_all(id)) {
          running = id;
          break;
        }
      ASSERT_TRUE(running) << "deadlock: " << declared.size() << " jobs and none holds its locks";
      m.release(*running);
      declared.erase(*running);
    }
    EXPECT_EQ(m.jobs(), 0u);
  }
}

// --- the queue in front of placement ------------------------------------------

using std::chrono::seconds;

LockQueueSettings predictive(uint32_t limit, uint32_t k = 10) {
  LockQueueSettings s;
  s.order = QueueOrder::predictive;
  s.running_limit = limit;
  s.aging_k = k;
  return s;
}

TEST(LockQueue, FifoStartsInSubmitOrderUpToTheRunningLimit) {
  LockQueueSettings fifo;
  fifo.running_limit = 2;
  LockQueue q({fifo});
  q.add(JobId(1), 0, seconds(1), seconds(1), parse("node=exclusive:n1"));
  q.add(JobId(2), 0, seconds(2), seconds(2), parse("node=exclusive:n1"));
  q.add(JobId(3), 0, seconds(3), seconds(3), parse("node=exclusive:n2"));
  auto started = q.start_ready(seconds(4));
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0].job, JobId(1));
  EXPECT_FALSE(started[0].block);
  EXPECT_EQ(started[1].job, JobId(2));
  ASSERT_TRUE(started[1].block);  // it holds a slot and waits, as in Ganeti
  EXPECT_EQ(started[1].block->holder, JobId(1));
  EXPECT_EQ(q.waiting_transitions(), 1u);
  EXPECT_TRUE(q.start_ready(seconds(5)).empty());  // no slot free: job 3 waits in line
  EXPECT_EQ(q.finish(JobId(1)), std::vector<JobId>{JobId(2)});
  auto next = q.start_ready(seconds(6));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].job, JobId(3));
}

TEST(LockQueue, PredictiveStartsTheJobLeastLikelyToBlockFirst) {
  LockQueue q({predictive(2)});
  q.add(JobId(1), 0, seconds(1), seconds(1), parse("node=exclusive:n1"));
  ASSERT_EQ(q.start_ready(seconds(1)).size(), 1u);
  q.add(JobId(2), 0, seconds(2), seconds(2), parse("node=exclusive:n1"));  // 1 + 3
  q.add(JobId(3), 0, seconds(3), seconds(3), parse("node=exclusive:n2"));  // 1 + 0.5
  auto st = q.standing(JobId(2), seconds(3));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->value.value, 40);
  EXPECT_EQ(st->value.levels[size_t(LockLevel::node)].against, JobId(1));
  EXPECT_DOUBLE_EQ(st->weight, 4.0);
  EXPECT_DOUBLE_EQ(q.standing(JobId(3), seconds(3))->weight, 1.5);
  auto started = q.start_ready(seconds(3));
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, JobId(3));
  EXPECT_FALSE(started[0].block);
  EXPECT_EQ(q.waiting_transitions(), 0u);
  EXPECT_EQ(q.oldest_passed_over_ticks(), 0);
}

TEST(LockQueue, AgingLetsAnOldHeavyJobGoBeforeFreshLightOnes) {
  auto settings = predictive(1, 4);  // K = 4 ticks of 30 s
  LockQueue q({settings});
  q.add(JobId(1), 0, seconds(0), seconds(0), parse("node=exclusive:n1"));
  q.start_ready(seconds(0));
  q.add(JobId(2), 0, seconds(0), seconds(0), parse("bgl"));  // 16
  q.add(JobId(3), 0, seconds(200), seconds(200), parse("node=shared:n9"));  // 1.3, fresh
  // At 200 s job 2 is 6 ticks old: weight 0 (floored), job 3 weighs 1.3.
  EXPECT_DOUBLE_EQ(q.standing(JobId(2), seconds(200))->weight, 0.0);
  EXPECT_EQ(q.standing(JobId(2), seconds(200))->age_ticks, 6);
  q.finish(JobId(1));
  auto started = q.start_ready(seconds(200));
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, JobId(2));
  // Earlier, at 60 s (2 ticks: 16 * 1/2 = 8 > 1.3), the light job would have passed it.
  LockQueue early({settings});
  early.add(JobId(2), 0, seconds(0), seconds(0), parse("bgl"));
  early.add(JobId(3), 0, seconds(50), seconds(50), parse("node=shared:n9"));
  EXPECT_EQ(early.start_ready(seconds(60)).at(0).job, JobId(3));
  EXPECT_EQ(early.oldest_passed_over_ticks(), 2);
}

TEST(LockQueue, JobsWithoutLocksTakeSlotsButNoLocks) {
  LockQueue q({predictive(1)});
  q.add(JobId(1), 0, seconds(1), seconds(1), LockDeclaration{});
  q.add(JobId(2), 0, seconds(2), seconds(2), parse("bgl"));
  auto s = q.start_ready(seconds(3));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].job, JobId(1));
  EXPECT_FALSE(q.locks().knows(JobId(1)));
  q.finish(JobId(1));
  EXPECT_EQ(q.start_ready(seconds(4)).at(0).job, JobId(2));
  // A pending job that leaves the line (cancelled) frees nothing and is gone.
  q.add(JobId(3), 0, seconds(5), seconds(5), parse("node=shared:a"));
  EXPECT_TRUE(q.finish(JobId(3)).empty());
  EXPECT_FALSE(q.is_pending(JobId(3)));
}

TEST(LockQueue, SettingsAreValidated) {
  LockQueueSettings s;
  EXPECT_TRUE(s.validate());
  s.aging_k = 0;
  EXPECT_FALSE(s.validate());
  s = {};
  s.aging_tick = Duration{0};
  EXPECT_FALSE(s.validate());
  EXPECT_EQ(parse_queue_order("predictive"), QueueOrder::predictive);
  EXPECT_FALSE(parse_queue_order("lifo"));
}

}  // namespace
}  // namespace claimsched::core
