#include "core/resources.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <vector>

#include "core/decimal.hpp"
#include "core/text.hpp"

namespace claimsched::core {

namespace {

struct Registry {
  std::mutex mutex;
  std::array<std::string, kMaxDimensions> names{"cpu", "memory", "gpu", "disk"};
  std::atomic<size_t> count{4};
};

Registry& registry() {
  static Registry r;
  return r;
}

bool valid_dimension_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

Error invalid_name_error(std::string_view name) {
  return make_error(Errc::invalid_argument,
                    "invalid resource name '" + std::string(name) +
                        "' (letters, digits, '_', '-', '.', '/'; at most 63 characters)");
}

struct Suffix {
  std::string_view text;
  int64_t factor;
};

// Longest suffixes first so "Mi" wins over "M".
constexpr Suffix kByteSuffixes[] = {
    {"Ki", 1LL << 10}, {"Mi", 1LL << 20},   {"Gi", 1LL << 30},   {"Ti", 1LL << 40},
    {"Pi", 1LL << 50}, {"K", 1000},         {"k", 1000},         {"M", 1000000},
    {"G", 1000000000}, {"T", 1000000000000}, {"P", 1000000000000000},
};

bool is_byte_dimension(DimensionId d) { return d == dim::memory || d == dim::disk; }

Error too_many_dimensions_error(std::string_view name, size_t number) {
  return make_error(Errc::capacity_exceeded,
                    "too many resource dimensions: '" + std::string(name) + "' would be number " +
                        std::to_string(number) + ", the limit is " + std::to_string(kMaxDimensions));
}

}  // namespace

Status DimensionRegistry::check_new_name(std::string_view name, const std::vector<std::string>& pending) {
  if (!valid_dimension_name(name)) return invalid_name_error(name);
  size_t number = count() + 1;
  for (const auto& other : pending)
    if (other != name && !find(other)) ++number;
  if (number > kMaxDimensions) return too_many_dimensions_error(name, number);
  return Status::ok();
}

Expected<DimensionId> DimensionRegistry::intern(std::string_view name) {
  if (auto found = find(name)) return *found;
  if (!valid_dimension_name(name)) return invalid_name_error(name);
  auto& r = registry();
  std::lock_guard<std::mutex> guard(r.mutex);
  size_t n = r.count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i)
    if (r.names[i] == name) return static_cast<DimensionId>(i);
  if (n == kMaxDimensions) return too_many_dimensions_error(name, n + 1);
  r.names[n] = std::string(name);
  r.count.store(n + 1, std::memory_order_release);
  return static_cast<DimensionId>(n);
}

std::optional<DimensionId> DimensionRegistry::find(std::string_view name) {
  auto& r = registry();
  size_t n = r.count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i)
    if (r.names[i] == name) return static_cast<DimensionId>(i);
  return std::nullopt;
}

std::string_view DimensionRegistry::name(DimensionId id) {
  auto& r = registry();
  if (id >= r.count.load(std::memory_order_acquire)) return "?";
  return r.names[id];
}

size_t DimensionRegistry::count() { return registry().count.load(std::memory_order_acquire); }

Expected<int64_t> parse_quantity(DimensionId d, std::string_view text) {
  text = trim(text);
  if (text.empty()) return make_error(Errc::parse_error, "empty quantity");
  if (text.front() == '-')
    return make_error(Errc::parse_error, "negative quantity: " + std::string(text));
  if (d == dim::cpu) {
    if (text.back() == 'm') {
      text.remove_suffix(1);
      return parse_scaled_decimal(text, 1);
    }
    return parse_scaled_decimal(text, 1000);
  }
  int64_t factor = 1;
  if (is_byte_dimension(d) || d >= 4) {
    for (const auto& s : kByteSuffixes) {
      if (text.size() > s.text.size() && text.ends_with(s.text)) {
        factor = s.factor;
        text.remove_suffix(s.text.size());
        break;
      }
    }
  }
  return parse_scaled_decimal(text, factor);
}

std::string format_quantity(DimensionId d, int64_t value) {
  if (d == dim::cpu) {
    if (value % 1000 == 0) return std::to_string(value / 1000);
    return std::to_string(value) + "m";
  }
  if (is_byte_dimension(d) && value != 0) {
    static constexpr Suffix kBinary[] = {
        {"Pi", 1LL << 50}, {"Ti", 1LL << 40}, {"Gi", 1LL << 30}, {"Mi", 1LL << 20}, {"Ki", 1LL << 10}};
    for (const auto& s : kBinary)
      if (value % s.factor == 0) return std::to_string(value / s.factor) + std::string(s.text);
  }
  return std::to_string(value);
}

Expected<Resources> Resources::parse(std::string_view text) {
  // Everything is checked before any new name is registered: a rejected text
  // (a typo in a job that is refused) must not use up one of the few slots of
  // the process-wide, append-only registry.
  struct Item {
    std::string_view name;
    std::optional<DimensionId> id;  // nullopt: a name to register
    int64_t quantity = 0;
  };
  std::vector<Item> items;
  text = trim(text);
  if (text.empty()) return Resources{};
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    if (item.empty())
      return make_error(Errc::parse_error, "empty item in resources '" + std::string(text) + "'");
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return make_error(Errc::parse_error,
                        "expected name=quantity, got '" + std::string(item) + "'");
    std::string_view name = trim(item.substr(0, eq));
    if (!valid_dimension_name(name)) return invalid_name_error(name);
    for (const auto& earlier : items)
      if (earlier.name == name)
        return make_error(Errc::parse_error, "resource '" + std::string(name) + "' given twice");
    auto id = DimensionRegistry::find(name);
    // A new name will be operator-defined: it parses like any id >= 4.
    DimensionId kind = id ? *id : static_cast<DimensionId>(kMaxDimensions - 1);
    auto qty = parse_quantity(kind, item.substr(eq + 1));
    if (!qty)
      return make_error(Errc::parse_error,
                        "resource '" + std::string(name) + "': " + qty.error().message);
    items.push_back(Item{name, id, *qty});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  Resources out;
  for (auto& item : items) {
    if (!item.id) {
      auto id = DimensionRegistry::intern(item.name);
      if (!id) return id.error();
      item.id = *id;
    }
    out.values_[*item.id] = item.quantity;
  }
  return out;
}

std::string Resources::to_string() const {
  std::string out;
  for (size_t i = 0; i < kMaxDimensions; ++i) {
    if (values_[i] == 0) continue;
    if (!out.empty()) out += ',';
    out += DimensionRegistry::name(static_cast<DimensionId>(i));
    out += '=';
    out += format_quantity(static_cast<DimensionId>(i), values_[i]);
  }
  return out;
}

double Resources::dominant_share(const Resources& total) const {
  double best = 0;
  for (size_t i = 0; i < kMaxDimensions; ++i) {
    if (values_[i] <= 0) continue;
    if (total.values_[i] <= 0) return std::numeric_limits<double>::infinity();
    best = std::max(best, static_cast<double>(values_[i]) / static_cast<double>(total.values_[i]));
  }
  return best;
}

DimensionId Resources::dominant_dimension(const Resources& total) const {
  DimensionId best_dim = dim::cpu;
  double best = -1;
  for (size_t i = 0; i < kMaxDimensions; ++i) {
    if (values_[i] <= 0) continue;
    double share = total.values_[i] <= 0 ? std::numeric_limits<double>::infinity()
                                         : static_cast<double>(values_[i]) /
                                               static_cast<double>(total.values_[i]);
    if (share > best) {
      best = share;
      best_dim = static_cast<DimensionId>(i);
    }
  }
  return best_dim;
}

}  // namespace claimsched::core
