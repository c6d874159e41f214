#include "apps/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace claimsched::apps {

namespace {

constexpr int kBarWidth = 30;

double fraction(uint64_t done, uint64_t total) {
  if (total == 0) return 1.0;
  return std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
}

/// "3.0s", "2m05s", "1h02m": short enough to sit beside a bar.
std::string seconds_text(double s) {
  char out[32];
  if (s < 60) {
    std::snprintf(out, sizeof out, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(out, sizeof out, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(out, sizeof out, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
  }
  return out;
}

/// "3.0s", or "3.0s, about 4s left" once the rate is known.
std::string time_text(uint64_t done, uint64_t total, double elapsed_s) {
  std::string out = seconds_text(elapsed_s);
  if (done > 0 && done < total) {
    double left = elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
    out += ", about " + seconds_text(left) + " left";
  }
  return out;
}

}  // namespace

ProgressStyle progress_style_for_stderr(bool quiet) {
  if (quiet) return ProgressStyle::none;
  return isatty(STDERR_FILENO) ? ProgressStyle::bar : ProgressStyle::lines;
}

std::string render_progress_bar(std::string_view label, uint64_t done, uint64_t total, double elapsed_s,
                                std::string_view detail) {
  double f = fraction(done, total);
  int filled = static_cast<int>(f * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kBarWidth) bar += '>' + std::string(static_cast<size_t>(kBarWidth - filled - 1), ' ');
  char head[64];
  std::snprintf(head, sizeof head, "] %3.0f%%  %llu/%llu  ", f * 100, static_cast<unsigned long long>(done),
                static_cast<unsigned long long>(total));
  std::string out = std::string(label) + " [" + bar + head + time_text(done, total, elapsed_s);
  if (!detail.empty()) out += "  " + std::string(detail);
  return out;
}

std::string render_progress_line(std::string_view label, uint64_t done, uint64_t total, double elapsed_s,
                                 std::string_view detail) {
  char head[64];
  std::snprintf(head, sizeof head, ": %llu/%llu (%.0f%%) after ", static_cast<unsigned long long>(done),
                static_cast<unsigned long long>(total), fraction(done, total) * 100);
  std::string out = std::string(label) + head + time_text(done, total, elapsed_s);
  if (!detail.empty()) out += "; " + std::string(detail);
  return out;
}

Progress::Progress(ProgressStyle style, std::string label)
    : style_(style),
      label_(std::move(label)),
      started_(std::chrono::steady_clock::now()),
      // The first line of a plain log waits an interval too: a short run
      // says nothing but its end.
      shown_(started_) {}

Progress::~Progress() { finish(); }

void Progress::finish() {
  if (drawn_) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
  completed_ = true;
}

bool Progress::due(uint64_t done, uint64_t total) const {
  if (style_ == ProgressStyle::none || completed_) return false;
  // A log gets the end of a run it was told about, not one line per short
  // command (a script's `submit --wait` of one quick job).
  if (done >= total) return style_ == ProgressStyle::bar || shown_ != started_;
  auto interval = style_ == ProgressStyle::bar ? std::chrono::steady_clock::duration(kBarInterval)
                                               : std::chrono::steady_clock::duration(kLineInterval);
  return std::chrono::steady_clock::now() - shown_ >= interval;
}

void Progress::update(uint64_t done, uint64_t total, std::string_view detail) {
  if (!due(done, total)) return;
  auto now = std::chrono::steady_clock::now();
  bool last = done >= total;
  shown_ = now;
  completed_ = last;
  double elapsed = std::chrono::duration<double>(now - started_).count();
  if (style_ == ProgressStyle::bar) {
    // Clear to the end of the line: a shorter bar leaves no tail behind.
    std::fprintf(stderr, "\r%s\033[K", render_progress_bar(label_, done, total, elapsed, detail).c_str());
    drawn_ = true;
    if (last) {
      std::fputc('\n', stderr);
      drawn_ = false;
    }
  } else {
    std::fprintf(stderr, "%s\n", render_progress_line(label_, done, total, elapsed, detail).c_str());
  }
  std::fflush(stderr);
}

}  // namespace claimsched::apps
