// The progress display's text (apps/progress.hpp): what a user reads on a
// terminal (the bar) and in a log (the plain line).

#include "apps/progress.hpp"

#include <gtest/gtest.h>

namespace claimsched::apps {
namespace {

TEST(ProgressText, TheBarFillsInProportionAndEstimatesTheTimeLeft) {
  EXPECT_EQ(render_progress_bar("sim", 450, 1000, 3.0, "running 12"),
            "sim [=============>                ]  45%  450/1000  3.0s, about 3.7s left  running 12");
}

TEST(ProgressText, AnEmptyBarHasNoEstimateYet) {
  EXPECT_EQ(render_progress_bar("sim", 0, 1000, 0.5, ""), "sim [>                             ]   0%  0/1000  0.5s");
}

TEST(ProgressText, AFullBarSaysOnlyHowLongItTook) {
  EXPECT_EQ(render_progress_bar("jobs", 20, 20, 125.0, ""), "jobs [==============================] 100%  20/20  2m05s");
}

TEST(ProgressText, MoreDoneThanExpectedStaysAFullBar) {
  EXPECT_EQ(render_progress_bar("x", 30, 20, 1.0, ""), "x [==============================] 100%  30/20  1.0s");
}

TEST(ProgressText, APlainLineSaysTheSameInWords) {
  EXPECT_EQ(render_progress_line("claimsched sim", 250, 1000, 7200.0, "placed 250 (1/s)"),
            "claimsched sim: 250/1000 (25%) after 2h00m, about 6h00m left; placed 250 (1/s)");
  EXPECT_EQ(render_progress_line("submit", 3, 3, 1.25, ""), "submit: 3/3 (100%) after 1.2s");
}

TEST(ProgressText, NothingToDoIsDone) {
  EXPECT_EQ(render_progress_line("submit", 0, 0, 0.0, ""), "submit: 0/0 (100%) after 0.0s");
}

TEST(ProgressStyle, QuietShowsNothing) { EXPECT_EQ(progress_style_for_stderr(true), ProgressStyle::none); }

}  // namespace
}  // namespace claimsched::apps
