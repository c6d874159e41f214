#include "core/metrics_text.hpp"

#include <cmath>
#include <cstdio>

namespace claimsched::core {

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

}  // namespace

std::string MetricsText::escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string& MetricsText::family(std::string_view name, std::string_view help, std::string_view type) {
  if (auto it = index_.find(name); it != index_.end()) return families_[it->second];
  index_.emplace(std::string(name), families_.size());
  std::string& out = families_.emplace_back();
  out += "# HELP ";
  out += name;
  out += ' ';
  // HELP text escapes only backslash and newline.
  for (char c : help) out += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  return out;
}

void MetricsText::sample(std::string& out, std::string_view name, const MetricLabels& labels, std::string_view value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out += ',';
      out += labels[i].first;
      out += "=\"";
      out += escape_label_value(labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

std::string MetricsText::text() const {
  std::string out;
  for (const auto& f : families_) out += f;
  return out;
}

void MetricsText::counter(std::string_view name, std::string_view help, const MetricLabels& labels, uint64_t value) {
  sample(family(name, help, "counter"), name, labels, std::to_string(value));
}

void MetricsText::gauge(std::string_view name, std::string_view help, const MetricLabels& labels, double value) {
  sample(family(name, help, "gauge"), name, labels, number(value));
}

void MetricsText::histogram_seconds(std::string_view name, std::string_view help, const MetricLabels& labels,
                                    const Histogram& nanoseconds, const std::vector<double>& bounds_seconds) {
  std::vector<uint64_t> at_most;
  at_most.reserve(bounds_seconds.size());
  for (double le : bounds_seconds) at_most.push_back(nanoseconds.count_at_most(static_cast<uint64_t>(std::llround(le * 1e9))));
  histogram(name, help, labels, bounds_seconds, at_most, static_cast<double>(nanoseconds.sum()) / 1e9,
            nanoseconds.count());
}

void MetricsText::histogram(std::string_view name, std::string_view help, const MetricLabels& labels,
                            const std::vector<double>& bounds, const std::vector<uint64_t>& at_most, double sum,
                            uint64_t count) {
  std::string& out = family(name, help, "histogram");
  std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < bounds.size() && i < at_most.size(); ++i) {
    MetricLabels with_le = labels;
    with_le.emplace_back("le", number(bounds[i]));
    sample(out, bucket, with_le, std::to_string(at_most[i]));
  }
  MetricLabels inf = labels;
  inf.emplace_back("le", "+Inf");
  sample(out, bucket, inf, std::to_string(count));
  sample(out, std::string(name) + "_sum", labels, number(sum));
  sample(out, std::string(name) + "_count", labels, std::to_string(count));
}

}  // namespace claimsched::core
