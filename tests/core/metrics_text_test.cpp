// The Prometheus text format as a scraper reads it: one HELP and TYPE per
// family however many samples it has, escaped label values, cumulative
// histogram buckets in seconds ending with +Inf, _sum and _count.

#include "core/metrics_text.hpp"

#include <gtest/gtest.h>

namespace claimsched::core {
namespace {

TEST(MetricsText, AFamilyIsDescribedOnceAndItsSamplesStayTogether) {
  MetricsText m;
  m.counter("claimsched_jobs_submitted_total", "jobs accepted", {{"partition", "1"}}, 5);
  m.gauge("claimsched_queued_jobs", "jobs waiting", {}, 3);
  m.counter("claimsched_jobs_submitted_total", "jobs accepted", {{"partition", "2"}}, 7);
  EXPECT_EQ(m.text(),
            "# HELP claimsched_jobs_submitted_total jobs accepted\n"
            "# TYPE claimsched_jobs_submitted_total counter\n"
            "claimsched_jobs_submitted_total{partition=\"1\"} 5\n"
            "claimsched_jobs_submitted_total{partition=\"2\"} 7\n"
            "# HELP claimsched_queued_jobs jobs waiting\n"
            "# TYPE claimsched_queued_jobs gauge\n"
            "claimsched_queued_jobs 3\n");
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(MetricsText::escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricsText m;
  m.gauge("x", "help with \\ and\nnewline", {{"pool", "we\"ird"}}, 0.5);
  EXPECT_EQ(m.text(), "# HELP x help with \\\\ and\\nnewline\n# TYPE x gauge\nx{pool=\"we\\\"ird\"} 0.5\n");
}

TEST(MetricsText, AHistogramHasCumulativeBucketsInSecondsThenSumAndCount) {
  Histogram h;
  h.record(2'000'000);    // 2 ms
  h.record(40'000'000);   // 40 ms
  h.record(3'000'000'000);  // 3 s
  MetricsText m;
  m.histogram_seconds("claimsched_placement_latency_seconds", "submit to confirmed", {{"partition", "1"}}, h,
                      {0.005, 0.1, 1});
  EXPECT_EQ(m.text(),
            "# HELP claimsched_placement_latency_seconds submit to confirmed\n"
            "# TYPE claimsched_placement_latency_seconds histogram\n"
            "claimsched_placement_latency_seconds_bucket{partition=\"1\",le=\"0.005\"} 1\n"
            "claimsched_placement_latency_seconds_bucket{partition=\"1\",le=\"0.1\"} 2\n"
            "claimsched_placement_latency_seconds_bucket{partition=\"1\",le=\"1\"} 2\n"
            "claimsched_placement_latency_seconds_bucket{partition=\"1\",le=\"+Inf\"} 3\n"
            "claimsched_placement_latency_seconds_sum{partition=\"1\"} 3.042\n"
            "claimsched_placement_latency_seconds_count{partition=\"1\"} 3\n");
}

}  // namespace
}  // namespace claimsched::core
