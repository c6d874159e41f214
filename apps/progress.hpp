#pragma once

// Progress where people look: a bar redrawn in place when stderr is a
// terminal, a plain line at most every few seconds when it is not (a log or
// CI keeps a readable history, not thousands of carriage returns), nothing
// with --quiet. Used by `claimsched sim`, `replay` and `submit --wait`; the
// rendering is pure, so tests can read it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace claimsched::apps {

enum class ProgressStyle { none, bar, lines };

/// A bar if stderr is a terminal, lines if not; none when `quiet`.
ProgressStyle progress_style_for_stderr(bool quiet);

/// One bar, without the carriage return that redraws it:
/// "LABEL [=========>          ]  45%  450/1000  3.0s, about 4s left  DETAIL".
/// The estimate assumes the rate so far holds; none before anything is done.
std::string render_progress_bar(std::string_view label, uint64_t done, uint64_t total, double elapsed_s,
                                std::string_view detail);

/// One plain line: "LABEL: 450/1000 (45%) after 3.0s, about 4s left; DETAIL".
std::string render_progress_line(std::string_view label, uint64_t done, uint64_t total, double elapsed_s,
                                 std::string_view detail);

/// Shows progress on stderr in `style`, throttled: a bar at most ten times a
/// second, a line every kLineInterval; the moment done reaches total always
/// on a bar, and in lines once a line was shown (a run shorter than
/// kLineInterval leaves a log alone).
class Progress {
 public:
  static constexpr auto kBarInterval = std::chrono::milliseconds(100);
  static constexpr auto kLineInterval = std::chrono::seconds(5);

  Progress(ProgressStyle style, std::string label);
  /// Ends the bar's line, so what follows starts on its own.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// True if update(done, total) would show something now: lets a caller
  /// called often build its detail only when it is shown.
  bool due(uint64_t done, uint64_t total) const;
  void update(uint64_t done, uint64_t total, std::string_view detail = {});
  /// Ends the bar's line (if one is drawn) and shows nothing more.
  void finish();

 private:
  ProgressStyle style_;
  std::string label_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point shown_;  // the last time shown (at first: started)
  bool drawn_ = false;      // a bar is on the terminal's current line
  bool completed_ = false;  // done reached total, and was shown
};

}  // namespace claimsched::apps
