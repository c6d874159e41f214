#pragma once

// Prometheus' text exposition format (version 0.0.4), written by hand: the
// `# HELP` and `# TYPE` lines once per metric family, then one sample per
// line with its labels, each family's samples together (the format asks for
// it) in the order the families were first written. Names follow Prometheus' conventions (callers pass
// `claimsched_...`, counters end in `_total`, times are in seconds); label
// values are escaped here. Pure: the caller gathers the values.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/histogram.hpp"

namespace claimsched::core {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsText {
 public:
  /// A monotonic count (the family's name ends in `_total`).
  void counter(std::string_view name, std::string_view help, const MetricLabels& labels, uint64_t value);
  /// A value that goes up and down.
  void gauge(std::string_view name, std::string_view help, const MetricLabels& labels, double value);
  /// A histogram of nanoseconds, exposed in seconds with cumulative buckets
  /// at `bounds_seconds` (ascending) and +Inf, `_sum` and `_count`.
  void histogram_seconds(std::string_view name, std::string_view help, const MetricLabels& labels,
                         const Histogram& nanoseconds, const std::vector<double>& bounds_seconds);
  /// A histogram from counts already cumulative: `at_most[i]` values were at
  /// most `bounds[i]`; `count` in all (the +Inf bucket), summing to `sum`.
  void histogram(std::string_view name, std::string_view help, const MetricLabels& labels,
                 const std::vector<double>& bounds, const std::vector<uint64_t>& at_most, double sum, uint64_t count);

  /// Every family, in the order first written.
  std::string text() const;

  /// `value` with backslash, double quote and newline escaped.
  static std::string escape_label_value(std::string_view value);

 private:
  /// The family's text so far (its HELP and TYPE lines written on first use).
  std::string& family(std::string_view name, std::string_view help, std::string_view type);
  static void sample(std::string& out, std::string_view name, const MetricLabels& labels, std::string_view value);

  std::deque<std::string> families_;  // in order (references stay valid)
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace claimsched::core
