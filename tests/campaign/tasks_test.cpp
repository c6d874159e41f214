#include "core/campaign/tasks.hpp"

#include <gtest/gtest.h>

namespace claimsched::core::campaign {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

/// Starts every copy in `copies` at `at`.
void start_all(CampaignTasks& tasks, const std::vector<CopyId>& copies, TimePoint at) {
  for (CopyId c : copies) tasks.started(c, at);
}

TEST(CampaignTasks, DispatchTakesTheLowestPendingIndicesAndWithdrawalPutsThemBack) {
  CampaignTasks tasks(5);
  auto sent = tasks.dispatch("lyon", 3, seconds(0));
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(tasks.copy(sent[2]).index, 2u);
  EXPECT_EQ(tasks.waiting("lyon"), 3u);
  auto withdrawn = tasks.withdraw("lyon", 2, seconds(1));
  EXPECT_EQ(withdrawn, (std::vector<CopyId>{sent[2], sent[1]})) << "newest first";
  EXPECT_EQ(tasks.copy(sent[2]).state, CopyState::withdrawn);
  EXPECT_EQ(tasks.waiting("lyon"), 1u);
  EXPECT_EQ(tasks.pending(), 4u) << "withdrawn, not failed: the indices wait for the next round";
  auto again = tasks.dispatch("grenoble", 1, seconds(2));
  EXPECT_EQ(tasks.copy(again[0]).index, 1u);
}

TEST(CampaignTasks, AFailureRunsTheIndexAgain) {
  CampaignTasks tasks(1);
  auto sent = tasks.dispatch("lyon", 1, seconds(0));
  tasks.started(sent[0], seconds(1));
  tasks.failed(sent[0], seconds(2));
  EXPECT_EQ(tasks.pending(), 1u);
  EXPECT_EQ(tasks.done(), 0u);
}

TEST(Finalize, StartsOnlyWhenNothingIsLeftToDispatch) {
  CampaignTasks tasks(3);
  auto sent = tasks.dispatch("lyon", 2, seconds(0));
  start_all(tasks, sent, seconds(0));
  EXPECT_FALSE(tasks.finalizing());
  EXPECT_TRUE(tasks.replicate("grenoble", 5, 1, seconds(1)).empty());
  start_all(tasks, tasks.dispatch("lyon", 1, seconds(1)), seconds(1));
  EXPECT_TRUE(tasks.finalizing());
}

TEST(Finalize, ReplicatesTheOldestRunningTasksFirstWithinTheReplicaLimit) {
  CampaignTasks tasks(3);
  auto sent = tasks.dispatch("lyon", 3, seconds(0));
  tasks.started(sent[0], seconds(30));
  tasks.started(sent[1], seconds(10));
  tasks.started(sent[2], seconds(20));
  auto replicas = tasks.replicate("grenoble", 2, 1, seconds(40));
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(tasks.copy(replicas[0]).index, 1u);
  EXPECT_EQ(tasks.copy(replicas[1]).index, 2u);
  EXPECT_TRUE(tasks.copy(replicas[0]).replica);
  auto more = tasks.replicate("grenoble", 5, 1, seconds(41));
  ASSERT_EQ(more.size(), 1u) << "tasks 1 and 2 already have their one replica";
  EXPECT_EQ(tasks.copy(more[0]).index, 0u);
  EXPECT_TRUE(tasks.replicate("grenoble", 5, 1, seconds(42)).empty());
  EXPECT_EQ(tasks.replicate("nancy", 5, 2, seconds(42)).size(), 3u) << "a second replica each when allowed";
}

TEST(Finalize, FirstSuccessWinsTheOthersAreCancelledByReplicaAndItCountsOnce) {
  CampaignTasks tasks(1);
  auto original = tasks.dispatch("lyon", 1, seconds(0));
  tasks.started(original[0], seconds(0));
  auto replicas = tasks.replicate("grenoble", 1, 2, seconds(50));
  auto replicas2 = tasks.replicate("nancy", 1, 2, seconds(50));
  start_all(tasks, replicas, seconds(50));
  start_all(tasks, replicas2, seconds(50));

  SuccessOutcome win = tasks.succeeded(replicas[0], seconds(90));
  EXPECT_TRUE(win.counted);
  EXPECT_EQ(win.cancel, (std::vector<CopyId>{original[0], replicas2[0]}));
  EXPECT_EQ(tasks.done(), 1u);
  EXPECT_TRUE(tasks.complete());

  tasks.cancelled(original[0], seconds(91));
  EXPECT_EQ(tasks.copy(original[0]).state, CopyState::cancelled_by_replica);
  // The cancel raced with the copy's own success: it still does not count.
  SuccessOutcome late = tasks.succeeded(replicas2[0], seconds(91));
  EXPECT_FALSE(late.counted);
  EXPECT_EQ(tasks.copy(replicas2[0]).state, CopyState::cancelled_by_replica);
  EXPECT_EQ(tasks.done(), 1u);
  EXPECT_EQ(tasks.winner(0), replicas[0]);
}

TEST(Sink, QuickSuccessesWhileTasksElsewhereRunLongFlagThePool) {
  CampaignTasks tasks(20);
  auto slow = tasks.dispatch("lyon", 4, seconds(0));
  start_all(tasks, slow, seconds(0));
  auto sink = tasks.dispatch("blackhole", 4, seconds(0));
  start_all(tasks, sink, seconds(0));
  for (CopyId c : sink) (void)tasks.succeeded(c, milliseconds(50));
  EXPECT_EQ(tasks.sink_reason("blackhole", milliseconds(500), seconds(1)), std::nullopt)
      << "nothing elsewhere has run longer yet";
  auto reason = tasks.sink_reason("blackhole", seconds(2), seconds(1));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("4 of 4 tasks succeeded in under 1s"), std::string::npos) << *reason;
  EXPECT_EQ(tasks.sink_reason("lyon", seconds(2), seconds(1)), std::nullopt);
}

TEST(Sink, AFewShortTasksAmongLongOnesAreNotASink) {
  CampaignTasks tasks(20);
  start_all(tasks, tasks.dispatch("lyon", 4, seconds(0)), seconds(0));
  auto mixed = tasks.dispatch("grenoble", 8, seconds(0));
  start_all(tasks, mixed, seconds(0));
  for (size_t i = 0; i < 3; ++i) (void)tasks.succeeded(mixed[i], milliseconds(50));
  for (size_t i = 3; i < 8; ++i) (void)tasks.succeeded(mixed[i], seconds(30));
  EXPECT_EQ(tasks.sink_reason("grenoble", seconds(60), seconds(1)), std::nullopt);
}

TEST(Sink, SuccessWithoutTheDeclaredOutputFlagsThePool) {
  CampaignTasks tasks(10);
  auto sent = tasks.dispatch("blackhole", 3, seconds(0));
  start_all(tasks, sent, seconds(0));
  for (CopyId c : sent) (void)tasks.succeeded(c, seconds(40), /*output_present=*/false);
  auto reason = tasks.sink_reason("blackhole", seconds(40), seconds(1));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("without the declared output"), std::string::npos);
}

TEST(Sink, AbandoningAPoolStopsDispatchAndRunsItsSuspectTasksAgain) {
  CampaignTasks tasks(6);
  auto sink = tasks.dispatch("blackhole", 4, seconds(0));
  start_all(tasks, sink, seconds(0));
  for (size_t i = 0; i < 3; ++i) (void)tasks.succeeded(sink[i], milliseconds(10));
  EXPECT_EQ(tasks.done(), 3u);
  auto leftovers = tasks.abandon("blackhole", "too quick");
  EXPECT_EQ(leftovers, (std::vector<CopyId>{sink[3]}));
  for (CopyId c : leftovers) tasks.cancelled(c, seconds(1));
  EXPECT_EQ(tasks.done(), 0u) << "successes on a sink are suspect";
  EXPECT_EQ(tasks.copy(sink[0]).state, CopyState::suspect);
  EXPECT_EQ(tasks.pending(), 6u);
  EXPECT_TRUE(tasks.dispatch("blackhole", 6, seconds(1)).empty());
  EXPECT_EQ(tasks.dispatch("lyon", 6, seconds(1)).size(), 6u);
  EXPECT_EQ(tasks.abandoned_pools().at("blackhole"), "too quick");
}

TEST(CampaignTasks, CancellingTheCampaignCancelsWhatItDispatchedAndNothingElse) {
  CampaignTasks tasks(5);
  auto sent = tasks.dispatch("lyon", 3, seconds(0));
  tasks.started(sent[0], seconds(0));
  (void)tasks.succeeded(sent[0], seconds(5));
  auto cancelled = tasks.cancel_all(seconds(6));
  EXPECT_EQ(cancelled, (std::vector<CopyId>{sent[1], sent[2]}));
  EXPECT_EQ(tasks.copy(sent[0]).state, CopyState::succeeded);
  EXPECT_EQ(tasks.pending(), 0u);
  EXPECT_TRUE(tasks.dispatch("lyon", 5, seconds(7)).empty());
}

TEST(Restore, ARestartedCampaignDispatchesOnlyWhatWasNeitherDoneNorInFlight) {
  // Before the restart: index 0 succeeded, index 2 was in flight on lyon.
  CampaignTasks tasks(4);
  ASSERT_TRUE(tasks.restore(0, "lyon", false, true, seconds(1)));
  auto in_flight = tasks.restore(2, "lyon", false, false, seconds(2));
  ASSERT_TRUE(in_flight);
  EXPECT_EQ(tasks.done(), 1u);
  EXPECT_EQ(tasks.waiting("lyon"), 1u) << "followed again until its job says how it ended";
  auto sent = tasks.dispatch("lyon", 10, seconds(3));
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(tasks.copy(sent[0]).index, 1u);
  EXPECT_EQ(tasks.copy(sent[1]).index, 3u);
  EXPECT_FALSE(tasks.restore(0, "grenoble", false, false, seconds(4))) << "a done index is not run again";
  tasks.started(*in_flight, seconds(4));
  EXPECT_TRUE(tasks.succeeded(*in_flight, seconds(5)).counted);
  EXPECT_EQ(tasks.done(), 2u);
}

TEST(Withdrawal, ACopyFoundRunningAfterItsWithdrawalCountsOnceAndItsIndexIsNotSentAgain) {
  CampaignTasks tasks(2);
  auto sent = tasks.dispatch("lyon", 2, seconds(0));
  auto withdrawn = tasks.withdraw("lyon", 1, seconds(1));
  ASSERT_EQ(withdrawn, (std::vector<CopyId>{sent[1]}));
  EXPECT_EQ(tasks.pending(), 1u);
  // Its job had started before the withdrawal reached the pool.
  ASSERT_TRUE(tasks.reclaim(sent[1], seconds(1)));
  EXPECT_EQ(tasks.pending(), 0u) << "not sent again while it runs";
  EXPECT_EQ(tasks.running("lyon"), 1u);
  EXPECT_TRUE(tasks.succeeded(sent[1], seconds(3)).counted);
  EXPECT_EQ(tasks.done(), 1u);
  EXPECT_FALSE(tasks.reclaim(sent[1], seconds(4))) << "only a withdrawn copy comes back";
}

TEST(WrongOutput, OnePoolMissingTheOutputWhileAnotherProducesItIsASinkNotAWrongPath) {
  std::vector<OutputHistory> pools{{"blackhole", true, 3, 3}, {"lyon", true, 2, 0}};
  EXPECT_EQ(wrong_output_reason("out/{index}.txt", pools), std::nullopt);
  // And the pool rule still flags the sink (CampaignTasks, real events).
  CampaignTasks tasks(10);
  auto sink = tasks.dispatch("blackhole", 3, seconds(0));
  auto good = tasks.dispatch("lyon", 1, seconds(0));
  start_all(tasks, sink, seconds(0));
  start_all(tasks, good, seconds(0));
  (void)tasks.succeeded(good[0], seconds(20), /*output_present=*/true);
  for (CopyId c : sink) (void)tasks.succeeded(c, seconds(20), /*output_present=*/false);
  EXPECT_EQ(wrong_output_reason("out/{index}.txt", tasks.output_histories()), std::nullopt);
  EXPECT_TRUE(tasks.sink_reason("blackhole", seconds(20), seconds(1)).has_value());
}

TEST(WrongOutput, TheOutputMissingInTwoPoolsAndProducedNowhereIsAWrongPathNamingTheTemplate) {
  std::vector<OutputHistory> pools{{"lyon", true, 1, 1}, {"grenoble", true, 1, 1}, {"nancy", true, 0, 0}};
  auto reason = wrong_output_reason("out/{index}.txt", pools);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("no task produced the declared output out/{index}.txt in any pool"), std::string::npos)
      << *reason;
  EXPECT_NE(reason->find("lyon, grenoble"), std::string::npos) << *reason;
  EXPECT_EQ(wrong_output_reason("", pools), std::nullopt) << "no output declared: nothing to be wrong";
}

TEST(WrongOutput, EveryPoolTriedMissingItIsAWrongPathOnceThereIsEnoughEvidence) {
  // The only pool tried: two misses could be bad luck, three are not.
  EXPECT_EQ(wrong_output_reason("o", {{"lyon", true, 2, 2}, {"grenoble", false, 0, 0}}), std::nullopt);
  EXPECT_TRUE(wrong_output_reason("o", {{"lyon", true, 3, 3}, {"grenoble", false, 0, 0}}).has_value());
  // A second pool tried but silent so far: wait for its first task.
  EXPECT_EQ(wrong_output_reason("o", {{"lyon", true, 3, 3}, {"grenoble", true, 0, 0}}), std::nullopt);
}

}  // namespace
}  // namespace claimsched::core::campaign
