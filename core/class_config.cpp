#include "core/class_config.hpp"

#include <map>
#include <set>

#include "core/text.hpp"

namespace claimsched::core {

namespace {

Error invalid(std::string message) { return make_error(Errc::invalid_argument, std::move(message)); }

}  // namespace

bool Limits::allows(const Resources& usage) const {
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (has(d) && usage[d] > values[d]) return false;
  return true;
}

bool Limits::strictly_above(const Resources& usage) const {
  if (empty()) return false;
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (has(d) && !(values[d] > usage[d])) return false;
  return true;
}

std::string Limits::to_string() const {
  std::string out;
  for (DimensionId d = 0; d < kMaxDimensions; ++d) {
    if (!has(d)) continue;
    if (!out.empty()) out += ',';
    out += DimensionRegistry::name(d);
    out += '=';
    out += format_quantity(d, values[d]);
  }
  return out;
}

Expected<Limits> Limits::parse(std::string_view text) {
  Limits out;
  text = trim(text);
  if (text.empty()) return out;
  // Resources::parse checks everything (names, quantities, duplicates); each
  // item is then parsed alone to learn which dimension it sets, even at zero.
  auto all = Resources::parse(text);
  if (!all) return all.error();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    auto name = trim(item.substr(0, item.find('=')));
    auto id = DimensionRegistry::find(name);
    if (!id) return make_error(Errc::parse_error, "unknown resource '" + std::string(name) + "'");
    out.set(*id, (*all)[*id]);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string_view to_string(ClassPolicy p) {
  switch (p) {
    case ClassPolicy::fair_share:
      return "fair_share";
    case ClassPolicy::fixed_share:
      return "fixed_share";
    case ClassPolicy::reserve:
      return "reserve";
  }
  return "unknown";
}

Expected<ClassPolicy> parse_class_policy(std::string_view s) {
  if (s == "fair_share") return ClassPolicy::fair_share;
  if (s == "fixed_share") return ClassPolicy::fixed_share;
  if (s == "reserve") return ClassPolicy::reserve;
  return make_error(Errc::parse_error,
                    "unknown policy '" + std::string(s) + "' (fair_share, fixed_share, reserve)");
}

std::string_view to_string(BackfillMode m) {
  switch (m) {
    case BackfillMode::none:
      return "none";
    case BackfillMode::easy:
      return "easy";
    case BackfillMode::conservative:
      return "conservative";
  }
  return "unknown";
}

Expected<BackfillMode> parse_backfill_mode(std::string_view s) {
  if (s == "none") return BackfillMode::none;
  if (s == "easy") return BackfillMode::easy;
  if (s == "conservative") return BackfillMode::conservative;
  return make_error(Errc::parse_error,
                    "expected \"none\", \"easy\" or \"conservative\", got \"" + std::string(s) + "\"");
}

const Limits& ClassConfig::allotment_of(std::string_view user) const {
  for (const auto& [name, limits] : user_allotments)
    if (name == user) return limits;
  return allotment;
}

Status validate(const ClassConfig& c) {
  if (c.name.empty()) return invalid("classes: a class has no name");
  if (c.weight == 0) return invalid("class '" + c.name + "': weight must be at least 1");
  if (c.weight > 1'000'000) return invalid("class '" + c.name + "': weight must be at most 1000000");
  if (c.prediction_fudge.count() < 0)
    return invalid("class '" + c.name + "': prediction_fudge must not be negative");
  if (auto st = c.queue.validate(); !st) return invalid("class '" + c.name + "': " + st.error().message);
  if (c.allotment.values.any_negative())
    return invalid("class '" + c.name + "': allotment must not be negative");
  std::set<std::string_view> seen;
  for (const auto& [user, limits] : c.user_allotments) {
    if (user.empty()) return invalid("class '" + c.name + "': user_allotment names an empty user");
    if (!seen.insert(user).second)
      return make_error(Errc::duplicate, "class '" + c.name + "': user_allotment for '" + user + "' given twice");
    if (limits.values.any_negative())
      return invalid("class '" + c.name + "': user_allotment for '" + user + "' must not be negative");
  }
  return Status::ok();
}

Status validate_classes(const std::vector<ClassConfig>& classes) {
  std::set<std::string_view> names;
  // priority -> (policy, first class with it)
  std::map<int32_t, std::pair<ClassPolicy, const ClassConfig*>> by_priority;
  for (const auto& c : classes) {
    if (auto s = validate(c); !s) return s;
    if (!names.insert(c.name).second)
      return make_error(Errc::duplicate, "classes: class '" + c.name + "' is defined twice");
    auto [it, inserted] = by_priority.emplace(c.priority, std::make_pair(c.policy, &c));
    if (!inserted && it->second.first != c.policy)
      return invalid("class '" + c.name + "' (" + std::string(to_string(c.policy)) + ") has priority " +
                     std::to_string(c.priority) + " like class '" + it->second.second->name + "' (" +
                     std::string(to_string(it->second.first)) +
                     "): classes of one priority must share one policy (DUCC divides a priority's "
                     "resources by weight for fair_share and by allotment otherwise; give them "
                     "different priorities)");
  }
  return Status::ok();
}

Resources reservation_charge(Resources machine, int64_t quantum) {
  if (quantum > 0) machine.set(dim::memory, machine[dim::memory] / quantum * quantum);
  return machine;
}

}  // namespace claimsched::core
