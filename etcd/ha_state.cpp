#include "etcd/ha_state.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace claimsched::etcd {

using nlohmann::json;

namespace {

std::optional<uint64_t> parse_number(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next < v) return std::nullopt;
    v = next;
  }
  return v;
}

std::optional<core::PartitionId> parse_partition(std::string_view text) {
  auto n = parse_number(text);
  if (!n || *n == 0 || *n > UINT32_MAX) return std::nullopt;
  return core::PartitionId{static_cast<uint32_t>(*n)};
}

std::optional<json> object(const std::string& value) {
  auto j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

/// Splits "a/b/c" into its parts.
std::vector<std::string_view> parts(std::string_view rest) {
  std::vector<std::string_view> out;
  while (true) {
    auto slash = rest.find('/');
    out.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    rest.remove_prefix(slash + 1);
  }
}

}  // namespace

HaKeys::HaKeys(std::string prefix, const std::string& cluster_id) {
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  root_ = prefix + "/" + cluster_id + "/";
}

std::string HaKeys::history(core::PartitionId p, core::Epoch e) const {
  char epoch[24];
  std::snprintf(epoch, sizeof epoch, "%020llu", static_cast<unsigned long long>(e));
  return root_ + "history/" + std::to_string(p.value) + "/" + epoch;
}

std::string HaKeys::member_value(const MemberRecord& m) {
  return json{{"address", m.address}, {"host", m.host}, {"pid", m.pid}}.dump();
}

std::string HaKeys::owner_value(const std::string& member, core::Epoch epoch) {
  return json{{"member", member}, {"epoch", epoch}}.dump();
}

std::string HaKeys::pin_value(const std::string& member) { return json{{"member", member}}.dump(); }

std::string HaKeys::candidate_value(core::Epoch round, uint64_t applied, core::Epoch store_epoch, bool eligible) {
  return json{{"round", round}, {"applied", applied}, {"epoch", store_epoch}, {"eligible", eligible}}.dump();
}

HaState HaKeys::parse(const Range& range) const {
  HaState st;
  st.revision = range.revision;
  for (const auto& kv : range.kvs) {
    if (kv.key.rfind(root_, 0) != 0) continue;
    auto p = parts(std::string_view(kv.key).substr(root_.size()));
    bool ok = false;
    try {
      if (p.size() == 2 && p[0] == "members" && !p[1].empty()) {
        if (auto j = object(kv.value)) {
          MemberRecord m;
          m.name = std::string(p[1]);
          m.address = j->value("address", "");
          m.host = j->value("host", "");
          m.pid = j->value("pid", int64_t{0});
          m.lease = kv.lease;
          ok = !m.address.empty();
          if (ok) st.members[m.name] = std::move(m);
        }
      } else if (p.size() == 2 && p[0] == "owner") {
        auto id = parse_partition(p[1]);
        auto j = object(kv.value);
        if (id && j) {
          OwnerRecord o{j->value("member", ""), j->value("epoch", core::Epoch{0}), kv.lease, kv.create_revision};
          ok = !o.member.empty() && o.epoch > 0;
          if (ok) st.partitions[*id].owner = std::move(o);
        }
      } else if (p.size() == 2 && p[0] == "epoch") {
        auto id = parse_partition(p[1]);
        auto n = parse_number(kv.value);
        if (id && n) {
          st.partitions[*id].epoch_counter = *n;
          st.partitions[*id].epoch_mod_revision = kv.mod_revision;
          ok = true;
        }
      } else if (p.size() == 3 && p[0] == "history") {
        auto id = parse_partition(p[1]);
        auto e = parse_number(p[2]);
        auto n = parse_number(kv.value);
        if (id && e && n) {
          st.partitions[*id].history.push_back({*e, *n});
          ok = true;
        }
      } else if (p.size() == 2 && p[0] == "pin") {
        auto id = parse_partition(p[1]);
        auto j = object(kv.value);
        if (id && j) {
          st.partitions[*id].pinned_to = j->value("member", "");
          ok = !st.partitions[*id].pinned_to.empty();
        }
      } else if (p.size() == 3 && p[0] == "candidate") {
        auto id = parse_partition(p[1]);
        auto j = object(kv.value);
        if (id && j && !p[2].empty()) {
          st.partitions[*id].candidates.push_back({std::string(p[2]), j->value("round", core::Epoch{0}),
                                                   j->value("applied", uint64_t{0}), j->value("epoch", core::Epoch{0}),
                                                   j->value("eligible", true)});
          ok = true;
        }
      }
    } catch (const json::exception&) {
      ok = false;  // a field of the wrong type
    }
    if (!ok) st.malformed.push_back(kv.key);
  }
  return st;
}

}  // namespace claimsched::etcd
